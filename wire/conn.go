package wire

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamdb/streamdb/sql/api"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// serverVersion is reported as server_version; clients parse the leading
// number, so it must start with one.
const serverVersion = "15.0 (streamdb)"

// conn is one client connection. Everything but mu is owned by the
// connection's goroutine.
type conn struct {
	srv *Server
	log *slog.Logger
	raw net.Conn // the accepted connection: deadlines and Close from any goroutine
	nc  net.Conn // raw, or the TLS connection over it
	be  *pgproto3.Backend

	pid    uint32
	secret [4]byte
	slot   bool            // holds a session slot; guarded by srv.mu
	rc     syscall.RawConn // raw's descriptor, for the client-gone check; nil if none

	sess    Session
	stmts   map[string]*api.Stmt
	portals map[string]*portal
	// ignoreTillSync is set by an error in the extended protocol: messages
	// are discarded until the next Sync.
	ignoreTillSync bool
	// dead is set once the connection is finished: the peer is gone, a
	// FATAL error was sent, or the client sent Terminate.
	dead bool

	out     []byte // DataRow / CopyData messages being assembled
	scratch []byte // one value's text, before COPY escaping

	mu struct {
		sync.Mutex
		closing bool               // Shutdown was called
		cancel  context.CancelFunc // cancels the running statement; nil when idle
	}
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:     s,
		raw:     nc,
		nc:      nc,
		stmts:   make(map[string]*api.Stmt),
		portals: make(map[string]*portal),
	}
	c.be = pgproto3.NewBackend(nc, nc)
	c.be.SetMaxBodyLen(s.cfg.MaxMessageSize)
	c.log = s.log.With("remote", nc.RemoteAddr().String())
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc = rc
		}
	}
	return c
}

// serve runs the connection to its end and closes it.
func (c *conn) serve() {
	defer c.raw.Close()
	if !c.startup() {
		return
	}
	defer c.closeSession()
	for !c.dead {
		msg, err := c.be.Receive()
		if err != nil {
			c.receiveFailed(err)
			return
		}
		c.handle(msg)
	}
}

// handle runs one message of the main loop.
func (c *conn) handle(msg pgproto3.FrontendMessage) {
	if c.ignoreTillSync {
		// As in PostgreSQL, everything but Sync is discarded after an error
		// in the extended protocol; we also honour Terminate.
		switch msg.(type) {
		case *pgproto3.Sync, *pgproto3.Terminate:
		default:
			return
		}
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		c.simpleQuery(m.String)
	case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
		if err := c.extended(msg); err != nil {
			c.sendError(err)
			c.ignoreTillSync = true
		}
	case *pgproto3.Sync:
		failed := c.ignoreTillSync
		c.ignoreTillSync = false
		c.sync(failed)
		c.readyForQuery()
	case *pgproto3.Flush:
		c.flush()
	case *pgproto3.Terminate:
		c.dead = true
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Left over from a COPY FROM STDIN that failed while the client was
		// still sending; the protocol says to ignore them.
	case *pgproto3.FunctionCall:
		c.sendError(sqlerr.New(sqlerr.FeatureNotSupported, "the function call protocol is not supported"))
		c.readyForQuery()
	default:
		c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "unexpected %s message",
			strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")))
	}
}

// startup runs the startup phase: TLS and GSS negotiation, cancel requests,
// authentication and the session's first ReadyForQuery. It reports whether
// the connection goes on to the main loop.
func (c *conn) startup() bool {
	c.setDeadline(time.Now().Add(startupTimeout))
	for {
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			if !isConnGone(err) {
				c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "invalid startup packet: %v", err))
			}
			return false
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if c.srv.cfg.TLS == nil || c.nc != c.raw {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return false
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return false
			}
			tc := tls.Server(c.raw, c.srv.cfg.TLS)
			if err := tc.Handshake(); err != nil {
				c.log.Info("TLS handshake failed", "err", err)
				return false
			}
			c.nc = tc
			c.be = pgproto3.NewBackend(tc, tc)
			c.be.SetMaxBodyLen(c.srv.cfg.MaxMessageSize)
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false
			}
		case *pgproto3.CancelRequest:
			c.srv.cancel(m.ProcessID, m.SecretKey)
			return false
		case *pgproto3.StartupMessage:
			return c.startSession(m)
		}
	}
}

// startSession authenticates the client and opens its session.
func (c *conn) startSession(m *pgproto3.StartupMessage) bool {
	var unrecognized []string
	for k := range m.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unrecognized = append(unrecognized, k)
		}
	}
	if m.ProtocolVersion != pgproto3.ProtocolVersion30 || len(unrecognized) > 0 {
		slices.Sort(unrecognized)
		c.be.Send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unrecognized})
	}
	user := m.Parameters["user"]
	if user == "" {
		c.fatal(sqlerr.New(sqlerr.InvalidAuthorization, "no PostgreSQL user name specified in startup packet"))
		return false
	}
	database := m.Parameters["database"]
	if database == "" {
		database = user
	}
	if err := c.srv.takeSlot(c); err != nil {
		c.fatal(err)
		return false
	}
	superuser, err := c.authenticate(user, database)
	if err != nil {
		c.fatal(err)
		return false
	}
	c.log = c.log.With("user", user, "pid", c.pid)

	c.be.Send(&pgproto3.AuthenticationOk{})
	sess := c.srv.eng.NewSession(user, database)
	sess.SetBackendPID(c.pid)
	sess.SetProtocolStatements(protoStmts{c})
	status, err := c.configure(sess, m.Parameters)
	if err != nil {
		sess.Close()
		c.fatal(err)
		return false
	}
	c.sess = sess
	for _, p := range [][2]string{
		{"server_version", serverVersion},
		{"server_encoding", "UTF8"},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"TimeZone", "UTC"},
		{"integer_datetimes", "on"},
		{"standard_conforming_strings", "on"},
		{"application_name", ""},
		{"is_superuser", onOff(superuser)},
		{"session_authorization", user},
	} {
		v, ok := status[p[0]]
		if !ok {
			v = p[1]
		}
		c.be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: v})
	}
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	c.readyForQuery()
	if c.dead {
		return false
	}
	// Clear the startup deadline unless Shutdown has set its own.
	c.setDeadline(time.Time{})
	c.log.Debug("session started", "database", database)
	return true
}

// configure admits a new session and applies the settings of its startup
// packet, as PostgreSQL does after authentication: first the options
// parameter's switches (-c name=value, --name=value), then the other
// parameters that are not user, database or protocol options, in name
// order. It returns the ParameterStatus values they changed. An error fails
// the connection.
func (c *conn) configure(sess Session, params map[string]string) (status map[string]string, err error) {
	defer c.recoverPanic(&err)
	if err := c.srv.checkReserved(sess); err != nil {
		return nil, err
	}
	opts, err := parseOptions(params["options"])
	if err != nil {
		return nil, err
	}
	explicit := len(opts)
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch {
		case k == "user" || k == "database" || k == "options" || k == "replication" || strings.HasPrefix(k, "_pq_."):
		default:
			opts = append(opts, [2]string{k, params[k]})
		}
	}
	status = map[string]string{}
	for i, o := range opts {
		changed, err := sess.SetParameter(o[0], o[1])
		if err != nil {
			if i >= explicit && clientEnvironment[strings.ToLower(o[0])] && statementError(err).Code == sqlerr.InvalidParameterValue {
				// A driver sends its platform's time zone or encoding
				// unasked; the session keeps the one value streamdb
				// supports, and ParameterStatus tells the driver so.
				c.srv.log.Debug("ignoring an unsupported startup parameter", "name", o[0], "value", o[1])
				continue
			}
			return nil, err
		}
		maps.Copy(status, changed)
	}
	return status, nil
}

// clientEnvironment are the startup parameters drivers set from their
// platform (JDBC's TimeZone, libpq's client_encoding from the locale),
// where streamdb supports one value.
var clientEnvironment = map[string]bool{"timezone": true, "client_encoding": true, "datestyle": true, "intervalstyle": true}

// parseOptions splits the startup packet's options parameter as PostgreSQL
// does (pg_split_opts: words separated by spaces, a backslash takes the next
// character literally) and reads its -c name=value, -cname=value and
// --name=value switches; in a --name, dashes stand for underscores.
func parseOptions(s string) ([][2]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case ch == '\\' && i+1 < len(s):
			i++
			ch = s[i]
		}
		w.WriteByte(ch)
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	var out [][2]string
	for i := 0; i < len(words); i++ {
		word := words[i]
		var arg, sw string
		switch {
		case word == "-c":
			if i+1 == len(words) {
				return nil, sqlerr.New(sqlerr.SyntaxError, "-c requires a value")
			}
			i++
			arg, sw = words[i], "-c"
		case strings.HasPrefix(word, "--") && len(word) > 2:
			arg, sw = word[2:], "--"
		case strings.HasPrefix(word, "-c"):
			arg, sw = word[2:], "-c"
		default:
			return nil, &sqlerr.Error{Code: sqlerr.SyntaxError,
				Msg:  fmt.Sprintf("invalid command-line argument for server process: %s", word),
				Hint: "The options connection parameter takes -c name=value and --name=value switches."}
		}
		name, value, ok := strings.Cut(arg, "=")
		if sw == "--" {
			name = strings.ReplaceAll(name, "-", "_")
		}
		if !ok || name == "" {
			if sw == "--" {
				return nil, sqlerr.New(sqlerr.SyntaxError, "--%s requires a value", name)
			}
			return nil, sqlerr.New(sqlerr.SyntaxError, "-c %s requires a value", name)
		}
		out = append(out, [2]string{name, value})
	}
	return out, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// closeSession releases the portals and the session.
func (c *conn) closeSession() {
	for name := range c.portals {
		c.closePortal(name)
	}
	c.sess.Close()
	c.log.Debug("session closed")
}

// simpleQuery runs a Query message: every statement in order, stopping at
// the first error, then one ReadyForQuery.
func (c *conn) simpleQuery(query string) {
	defer c.readyForQuery()
	// A Query destroys the unnamed statement and portal, as in PostgreSQL.
	delete(c.stmts, "")
	c.closePortal("")
	if !c.sync(false) {
		return
	}
	if err := types.CheckString(query); err != nil {
		c.sendError(err)
		return
	}

	stmts, err := c.prepareAll(query)
	if err != nil {
		c.noteFailed(query, err)
		c.sendError(err)
		return
	}
	if len(stmts) == 0 {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, st := range stmts {
		if err := c.runSimple(st); err != nil {
			c.noteFailed(st.SQL, err)
			c.sendError(err)
			return
		}
		if c.dead {
			return
		}
	}
}

// sync ends the extended protocol's implicit transaction (dropping its
// writes if failed), reporting a failed commit; it reports whether the
// commit succeeded.
func (c *conn) sync(failed bool) bool {
	err := func() (err error) {
		defer c.recoverPanic(&err)
		return c.sess.Sync(failed)
	}()
	if err != nil {
		c.sendError(err)
		return false
	}
	return true
}

func (c *conn) prepareAll(query string) (stmts []*api.Stmt, err error) {
	defer c.recoverPanic(&err)
	ctx, done := c.begin()
	defer done()
	defer func() { err = c.stmtError(ctx, err) }()
	return c.sess.PrepareAll(ctx, query)
}

// runSimple executes one statement of a Query message and sends its
// results in text format.
func (c *conn) runSimple(st *api.Stmt) (err error) {
	defer c.recoverPanic(&err)
	if st.Empty {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	ctx, done := c.begin()
	defer done()
	defer func() { err = c.stmtError(ctx, err) }()
	res, err := c.sess.Execute(ctx, st, nil)
	if err != nil {
		return err
	}
	if res.Rows != nil {
		defer res.Rows.Close()
	}
	switch {
	case res.CopyIn != nil:
		tag, err := c.copyIn(ctx, res.CopyIn)
		if err != nil {
			return err
		}
		c.complete(res, tag)
	case res.Rows != nil && st.CopyOut:
		n, err := c.copyOut(ctx, st, res.Rows)
		if err != nil {
			return err
		}
		c.complete(res, tagWithCount(res.Tag, "COPY", n))
	case res.Rows != nil:
		c.be.Send(rowDescription(st.Columns, nil))
		src := rowSource{rows: res.Rows, cols: st.Columns}
		defer src.release()
		n, _, err := c.sendRows(ctx, &src, 0)
		if err != nil {
			return err
		}
		c.complete(res, tagWithCount(res.Tag, "SELECT", n))
	default:
		c.complete(res, res.Tag)
	}
	return nil
}

// complete sends the end of a statement's results: notices,
// CommandComplete, then changed parameters.
func (c *conn) complete(res *api.Result, tag string) {
	for _, n := range res.Notices {
		c.be.Send(noticeResponse(n))
	}
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	c.noteCompleted(tag, res.CopyIn != nil)
	for _, k := range slices.Sorted(maps.Keys(res.ParamChanges)) {
		c.be.Send(&pgproto3.ParameterStatus{Name: k, Value: res.ParamChanges[k]})
	}
}

// tagWithCount appends the row count n to a bare tag ("SELECT", "COPY");
// an empty tag becomes def with the count.
func tagWithCount(tag, def string, n int64) string {
	switch tag {
	case "":
		tag = def
	case "SELECT", "COPY":
	default:
		return tag
	}
	return tag + " " + strconv.FormatInt(n, 10)
}

// begin starts a statement: its context is canceled by CancelRequest,
// Shutdown or the client's disconnection, and ends at the session's
// statement_timeout, until done is called (and then by done itself).
func (c *conn) begin() (ctx context.Context, done func()) {
	return c.beginIn(context.Background())
}

// beginIn is begin for a statement whose context derives from parent (a
// portal's, for an Execute).
//
// Context causes tell why a statement ended: errCanceled (CancelRequest,
// Shutdown), errStatementTimeout, errClientGone. An ended statement may be
// stuck writing to a client that does not read: writes then get
// writeGrace to finish, after which the connection is given up.
func (c *conn) beginIn(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stopTimer := context.CancelFunc(func() {})
	if d := c.sess.StatementTimeout(); d > 0 {
		ctx, stopTimer = context.WithTimeoutCause(ctx, d, errStatementTimeout)
	}
	c.setRunning(func() { cancel(errCanceled) })
	stopWatch := c.watchPeer(cancel)
	unblocked := make(chan struct{})
	stopUnblock := context.AfterFunc(ctx, func() {
		defer close(unblocked)
		c.raw.SetWriteDeadline(time.Now().Add(writeGrace))
	})
	return ctx, func() {
		stopWatch()
		if !stopUnblock() {
			<-unblocked
			c.raw.SetWriteDeadline(time.Time{})
		}
		c.setRunning(nil)
		stopTimer()
		cancel(nil)
	}
}

// writeGrace is how long writes of an ended statement may still take.
const writeGrace = 2 * time.Second

// Causes of a statement's end; errClientGone is never sent.
var (
	errCanceled         = sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
	errStatementTimeout = sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to statement timeout")
	errClientGone       = errors.New("client disconnected")
)

// stmtError returns the error to report for a statement that ended with err
// under ctx. When ctx was canceled and the engine reports a cancellation
// (57014 or a bare context error) the cause says which: the statement
// timeout or a cancel request. A statement whose client is gone ends the
// connection and reports nothing.
func (c *conn) stmtError(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if cause == errClientGone {
		c.dead = true
		return errConnDead
	}
	if statementError(err).Code != sqlerr.QueryCanceled {
		return err
	}
	if e, ok := cause.(*sqlerr.Error); ok {
		return e
	}
	return err
}

// setRunning records the cancel function of the running statement (nil:
// none). A statement started during Shutdown is canceled at once.
func (c *conn) setRunning(cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.cancel = cancel
	if cancel != nil && c.mu.closing {
		cancel()
	}
}

// cancelRunning cancels the running statement, if any (CancelRequest).
func (c *conn) cancelRunning() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.cancel != nil {
		c.mu.cancel()
	}
}

// shutdown cancels the running statement and wakes the connection's
// goroutine from any read, so it reports 57P01 and closes.
func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.closing = true
	if c.mu.cancel != nil {
		c.mu.cancel()
	}
	c.raw.SetReadDeadline(time.Now())
}

func (c *conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.closing
}

// setDeadline sets the connection's deadline unless Shutdown has set one.
func (c *conn) setDeadline(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mu.closing {
		c.raw.SetDeadline(t)
	}
}

// clearReadDeadline undoes a statement's read interruption unless Shutdown
// has set its own deadline.
func (c *conn) clearReadDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mu.closing {
		c.raw.SetReadDeadline(time.Time{})
	}
}

func (c *conn) secretMatches(secret []byte) bool {
	return subtle.ConstantTimeCompare(secret, c.secret[:]) == 1
}

// recoverPanic turns a panic in the engine into an XX000 error, so the
// session survives it. Use as: defer c.recoverPanic(&err).
func (c *conn) recoverPanic(err *error) {
	if r := recover(); r != nil {
		c.log.Error("panic while running a statement", "panic", r, "stack", string(debug.Stack()))
		*err = sqlerr.New(sqlerr.Internal, "internal error: %v", r)
	}
}

// sendError reports a statement error. A statement canceled by Shutdown
// ends the connection with 57P01 instead.
func (c *conn) sendError(err error) {
	if c.dead {
		return
	}
	if c.isClosing() && statementError(err).Code == sqlerr.QueryCanceled {
		c.fatal(errShutdown)
		return
	}
	c.be.Send(errorResponse(severityError, err))
}

// fatal sends a FATAL error and ends the connection.
func (c *conn) fatal(err error) {
	if c.dead {
		return
	}
	c.srv.releaseSlot(c)
	c.be.Send(errorResponse(severityFatal, err))
	c.be.Flush()
	c.dead = true
	c.log.Info("connection terminated", "err", err)
}

// receiveFailed handles an error from Receive: the connection is over.
func (c *conn) receiveFailed(err error) {
	switch {
	case c.isClosing():
		c.fatal(errShutdown)
	default:
		if e := receiveError(err, c.srv.cfg.MaxMessageSize); e != nil {
			c.fatal(e)
		}
	}
	c.dead = true
}

// readyForQuery ends a Query or Sync cycle. Outside a transaction block,
// portals end with the implicit transaction, as in PostgreSQL.
func (c *conn) readyForQuery() {
	if c.dead {
		return
	}
	status := c.sess.TxStatus()
	if status == 'I' {
		for name := range c.portals {
			c.closePortal(name)
		}
	}
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: status})
	c.flush()
}

// flush writes buffered messages; a write error ends the connection.
func (c *conn) flush() {
	if c.dead {
		return
	}
	if err := c.be.Flush(); err != nil {
		c.log.Debug("write failed", "err", err)
		c.dead = true
	}
}

// writeRaw writes pre-encoded messages after any buffered ones, bypassing
// the Backend's buffer (which would copy them and shrink after each flush).
func (c *conn) writeRaw(msgs []byte) error {
	if c.dead {
		return errConnDead
	}
	if err := c.be.Flush(); err != nil {
		c.dead = true
		return errConnDead
	}
	if _, err := c.nc.Write(msgs); err != nil {
		c.dead = true
		return errConnDead
	}
	return nil
}

// errConnDead stops a statement whose client is gone; it is never sent.
var errConnDead = sqlerr.New(sqlerr.IOError, "connection to client lost")
