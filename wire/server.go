// Package wire is streamdb's PostgreSQL wire-protocol (v3) server, built on
// pgproto3.Backend. It knows the protocol and nothing about SQL: statements
// are prepared and executed by an Engine through the small interfaces below,
// whose results are the types of package sql.
//
// The contract:
//
//  1. Startup: SSLRequest is answered 'N' (or upgraded to TLS when Config.TLS
//     is set), GSSEncRequest 'N'. A CancelRequest cancels the running
//     statement of the session with that process id and secret key. A
//     StartupMessage is authenticated by the first matching rule of
//     Config.HBA (trust, SCRAM-SHA-256 against the role's verifier, or
//     reject; hba.go), then answered with ParameterStatus values,
//     BackendKeyData and ReadyForQuery.
//  2. Each connection is served by one goroutine that reads a message, runs
//     it and writes the answer. Every statement runs under its own context,
//     canceled by CancelRequest or Shutdown; a canceled statement fails
//     with 57014. The simple protocol runs each statement of a Query in order and
//     stops at the first error; the extended protocol discards messages
//     after an error until Sync. Exactly one ReadyForQuery answers each Query
//     and each Sync.
//  3. Errors are *sqlerr.Error values, flattened into ErrorResponse only here.
//     Statement errors (and engine panics, as XX000) leave the session
//     usable. Protocol violations (unknown or malformed messages, messages
//     over Config.MaxMessageSize) are FATAL 08P01: the connection is closed,
//     the server goes on.
//  4. Results are sent in text format unless Bind asks for binary; COPY uses
//     PostgreSQL's text COPY format. Row batches are flushed as they arrive,
//     so live change streams show up at once.
//  5. Shutdown stops accepting, cancels running statements, sends FATAL 57P01
//     to every client and closes every session.
//  6. Limits: a statement runs at most the session's statement_timeout
//     (57014); a statement whose client has disconnected is canceled within
//     aliveInterval (alive.go); beyond Config.MaxConnections sessions a new
//     connection gets FATAL 53300.
package wire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/streamdb/streamdb/sql/api"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Engine opens sessions; it is what the server needs from the SQL layer.
type Engine interface {
	NewSession(user, database string) Session
	// Role describes a role for authentication: its SCRAM-SHA-256
	// verifier in PostgreSQL's format ("" if it has no password), whether
	// it may log in and whether it is a superuser; ok is false if there is
	// no such role.
	Role(name string) (verifier string, login, superuser, ok bool)
}

// Session is one client's SQL session. The server calls it from one
// goroutine at a time.
type Session interface {
	// PrepareAll parses all statements of a simple-protocol Query message.
	PrepareAll(ctx context.Context, query string) ([]*api.Stmt, error)
	// Prepare parses exactly one statement for the extended protocol's Parse
	// (an empty string gives Stmt{Empty: true}). paramOIDs may be shorter than
	// the statement's parameter list; 0 means "infer".
	Prepare(ctx context.Context, query string, paramOIDs []uint32) (*api.Stmt, error)
	// Execute runs st with params (one per st.ParamTypes). Rows returned in
	// the result are read with ctxs derived from the same cancellation.
	Execute(ctx context.Context, st *api.Stmt, params []types.Datum) (*api.Result, error)
	// StatementTimeout is the session's statement_timeout (0: none). Each
	// statement's context gets a deadline that far from its start.
	StatementTimeout() time.Duration
	// SetParameter applies a setting from the startup packet as SET would,
	// returning the ParameterStatus values it changed.
	SetParameter(name, value string) (map[string]string, error)
	// Sync ends the extended protocol's implicit transaction at a Sync
	// message (or before a Query message if the client sent none): its
	// writes are committed, or dropped if failed (an error since the last
	// Sync). Inside a transaction block it does nothing.
	Sync(failed bool) error
	// SetBackendPID gives the session the process id the client gets in
	// BackendKeyData (pg_backend_pid()).
	SetBackendPID(pid uint32)
	// SetProtocolStatements gives the session the connection's named
	// statements of the extended protocol, which share PostgreSQL's one
	// namespace with SQL-level PREPARE (DEALLOCATE reaches them).
	SetProtocolStatements(p api.ProtocolStatements)
	// HasPrepared reports whether SQL-level PREPARE made a statement of
	// that name (a Parse of the same name is 42P05).
	HasPrepared(name string) bool
	// TxStatus is the ReadyForQuery status: 'I' idle, 'T' in a transaction
	// block, 'E' in a failed transaction block.
	TxStatus() byte
	// Close releases the session.
	Close()
}

// Config configures a Server.
type Config struct {
	// Addr is the address ListenAndServe listens on, e.g. "127.0.0.1:5433".
	Addr string
	// MaxMessageSize bounds a frontend message body (default 64 MiB); a
	// larger one is a FATAL protocol violation.
	MaxMessageSize int
	// TLS, if set, is used to answer SSLRequest; nil answers 'N'.
	TLS *tls.Config
	// HBA are the authentication rules (hba.go); nil means DefaultHBA.
	HBA []HBARule
	// MockSecret derives the fake SCRAM salt shown for roles that do not
	// exist (keep it stable across restarts); nil uses a random one.
	MockSecret []byte
	// MaxConnections bounds the client sessions (0: no limit); the last
	// ReservedConnections of them are for superusers. Cancel requests never
	// count.
	MaxConnections      int
	ReservedConnections int
	// Logger receives connection-level events; nil discards them.
	Logger *slog.Logger
	// Metrics, if set, sees every statement's outcome (metrics.go).
	Metrics Metrics
}

// DefaultMaxMessageSize is Config.MaxMessageSize's default.
const DefaultMaxMessageSize = 64 << 20

// startupTimeout bounds the startup and authentication phase, so a silent
// peer cannot hold a connection slot forever.
const startupTimeout = time.Minute

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown.
var ErrServerClosed = errors.New("wire: server closed")

// Server serves the PostgreSQL protocol for an Engine.
type Server struct {
	cfg Config
	eng Engine
	log *slog.Logger

	wg sync.WaitGroup // one per connection goroutine

	mu struct {
		sync.Mutex
		closed    bool
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		byPID     map[uint32]*conn
		slots     int // connections holding a session slot (Config.MaxConnections)
	}
}

// New returns a Server for eng.
func New(cfg Config, eng Engine) *Server {
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MockSecret == nil {
		cfg.MockSecret = make([]byte, 32)
		rand.Read(cfg.MockSecret)
	}
	s := &Server{cfg: cfg, eng: eng, log: cfg.Logger}
	s.mu.listeners = make(map[net.Listener]struct{})
	s.mu.conns = make(map[*conn]struct{})
	s.mu.byPID = make(map[uint32]*conn)
	return s
}

// ListenAndServe listens on Config.Addr and serves until Shutdown.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Addr returns the address of a listener being served, or nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.mu.listeners {
		return l.Addr()
	}
	return nil
}

// Serve accepts connections on l until Shutdown, which makes it return
// ErrServerClosed. It closes l.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.mu.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.mu.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: wait and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			tc.SetKeepAlive(true)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(nc)
		}()
	}
}

// ServeConn serves one connection and returns when it is closed.
func (s *Server) ServeConn(nc net.Conn) {
	s.wg.Add(1)
	defer s.wg.Done()
	s.serveConn(nc)
}

func (s *Server) serveConn(nc net.Conn) {
	c := newConn(s, nc)
	if !s.register(c) {
		c.fatal(errShutdown)
		nc.Close()
		return
	}
	defer s.unregister(c)
	c.serve()
}

// Shutdown stops accepting connections, cancels running statements, sends
// FATAL 57P01 to every client and waits for all sessions to close. If ctx
// ends first, the remaining connections are closed abruptly and ctx's error
// is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.mu.closed = true
	for l := range s.mu.listeners {
		l.Close()
	}
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.shutdown()
	}

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.mu.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// register adds c to the live connections and gives it a unique process id.
// It reports false once the server is shut down.
func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	for {
		var b [8]byte
		rand.Read(b[:])
		pid := binary.BigEndian.Uint32(b[:4]) & 0x7fffffff // psql prints it signed
		if pid == 0 || s.mu.byPID[pid] != nil {
			continue
		}
		c.pid = pid
		copy(c.secret[:], b[4:])
		break
	}
	s.mu.conns[c] = struct{}{}
	s.mu.byPID[c.pid] = c
	return true
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	delete(s.mu.byPID, c.pid)
	s.mu.Unlock()
	s.releaseSlot(c)
}

// releaseSlot gives c's session slot back (once). A connection ending with
// FATAL gives it back before the client reads the error, so a client that
// retries at once finds it free.
func (s *Server) releaseSlot(c *conn) {
	s.mu.Lock()
	if c.slot {
		s.mu.slots--
		c.slot = false
	}
	s.mu.Unlock()
}

// takeSlot gives c one of the Config.MaxConnections session slots, which it
// holds until unregister. As in PostgreSQL this happens before
// authentication, so clients stuck in it count too.
func (s *Server) takeSlot(c *conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max := s.cfg.MaxConnections; max > 0 && s.mu.slots >= max {
		return sqlerr.New(sqlerr.TooManyConnections, "sorry, too many clients already")
	}
	s.mu.slots++
	c.slot = true
	return nil
}

// checkReserved refuses a session that is not a superuser's when only the
// reserved slots are left (c's own slot counted as taken).
func (s *Server) checkReserved(sess Session) error {
	max, reserved := s.cfg.MaxConnections, s.cfg.ReservedConnections
	if max <= 0 || reserved <= 0 || isSuperuser(sess) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.slots > max-reserved {
		return sqlerr.New(sqlerr.TooManyConnections,
			"remaining connection slots are reserved for roles with the SUPERUSER attribute")
	}
	return nil
}

// isSuperuser reports whether sess belongs to a superuser. Sessions that
// do not say (no Superuser method: the engine has no roles yet) count as
// superusers, as every user is one then.
func isSuperuser(sess Session) bool {
	if su, ok := sess.(interface{ Superuser() bool }); ok {
		return su.Superuser()
	}
	return true
}

// cancel handles a CancelRequest: it cancels the running statement of the
// session with that pid, if the secret matches. Like PostgreSQL it answers
// nothing either way.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.mu.byPID[pid]
	s.mu.Unlock()
	if c == nil || !c.secretMatches(secret) {
		s.log.Info("cancel request for unknown session", "pid", pid)
		return
	}
	c.cancelRunning()
}
