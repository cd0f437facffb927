//go:build !linux

package wire

import "syscall"

// peerClosed is only implemented on Linux (POLLRDHUP); elsewhere a
// disconnected client is noticed at the next read or write.
func peerClosed(syscall.RawConn) bool { return false }
