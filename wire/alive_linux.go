package wire

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the peer of the socket has closed its end (or
// the connection failed): poll with POLLRDHUP and no timeout, which reads
// nothing.
func peerClosed(rc syscall.RawConn) bool {
	closed := false
	err := rc.Control(func(fd uintptr) {
		fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds[:], 0)
		closed = err == nil && n > 0 &&
			fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
	})
	return err == nil && closed
}
