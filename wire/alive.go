package wire

import (
	"context"
	"log/slog"
	"sync"
	"syscall"
	"time"
)

// aliveInterval is how often a running statement checks that its client is
// still connected, as PostgreSQL 14's client_connection_check_interval
// does. A statement blocked on a live change stream (or on a long batch
// query) reads nothing from the socket, so without the check it would only
// learn that the client left when it next writes, which for a quiet stream
// may be never.
const aliveInterval = 250 * time.Millisecond

// peerWatch runs the check every aliveInterval while one statement runs;
// it needs no goroutine between checks.
type peerWatch struct {
	rc     syscall.RawConn
	cancel context.CancelCauseFunc
	log    *slog.Logger

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// watchPeer starts checking the connection for the peer's close and
// cancels the statement with errClientGone when it sees it. The check
// consumes no input, so pipelined messages stay for the main loop. Call
// stop when the statement ends. A connection without a descriptor (not
// TCP or Unix) is not watched; for TLS the watched descriptor is the TCP
// connection under it.
func (c *conn) watchPeer(cancel context.CancelCauseFunc) (stop func()) {
	if c.rc == nil {
		return func() {}
	}
	w := &peerWatch{rc: c.rc, cancel: cancel, log: c.log}
	w.mu.Lock()
	w.t = time.AfterFunc(aliveInterval, w.check)
	w.mu.Unlock()
	return w.stop
}

func (w *peerWatch) check() {
	if peerClosed(w.rc) {
		w.log.Info("client disconnected; canceling its statement")
		w.cancel(errClientGone)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Reset(aliveInterval)
	}
}

func (w *peerWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}
