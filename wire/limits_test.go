package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamdb/streamdb/sqlerr"
)

// Limits (issue 17): statement_timeout, startup options, the client-gone
// check and max_connections, against the fake engine.

// pgErr returns err's *pgconn.PgError or fails the test.
func pgErr(t *testing.T, err error, wantCode string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != wantCode {
		t.Fatalf("got %v, want SQLSTATE %s", err, wantCode)
	}
	return pe
}

func TestStatementTimeout(t *testing.T) {
	eng := newFakeEngine()
	_, addr := startServer(t, Config{}, eng)
	conn := connect(t, addr, "statement_timeout=200")

	for _, q := range []string{"SELECT sleep", "SELECT stream"} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			start := time.Now()
			rows, err := conn.Query(context.Background(), q, mode)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
			}
			took := time.Since(start)
			pe := pgErr(t, err, sqlerr.QueryCanceled)
			if pe.Message != "canceling statement due to statement timeout" {
				t.Errorf("%s (mode %v): message %q", q, mode, pe.Message)
			}
			if took > 10*time.Second {
				t.Errorf("%s (mode %v): took %v", q, mode, took)
			}
			t.Logf("%s (mode %v): timed out after %v (statement_timeout 200ms)", q, mode, took)
			if cause := <-eng.ended; cause != errStatementTimeout {
				t.Errorf("cause %v", cause)
			}
			<-eng.started
		}
	}
	// The session goes on.
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after timeouts: %v %v", n, err)
	}
}

// TestStatementTimeoutCopyIn: a client that stalls in the middle of COPY
// FROM STDIN is interrupted; nothing it sent is stored, and the connection
// goes on (later COPY messages are ignored).
func TestStatementTimeoutCopyIn(t *testing.T) {
	eng := newFakeEngine()
	_, addr := startServer(t, Config{}, eng)
	conn := connect(t, addr, "statement_timeout=200")
	hc, err := conn.PgConn().Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Conn.Close()
	fe := hc.Frontend
	hc.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	fe.Send(&pgproto3.Query{String: "COPY t FROM STDIN"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	expectMsg[*pgproto3.CopyInResponse](t, fe)
	start := time.Now()
	fe.Send(&pgproto3.CopyData{Data: []byte("4\tdave\n")})
	fe.Flush()
	// ... and nothing more.
	e := expectMsg[*pgproto3.ErrorResponse](t, fe)
	t.Logf("stalled COPY interrupted after %v", time.Since(start))
	if e.Code != sqlerr.QueryCanceled || e.Message != "canceling statement due to statement timeout" {
		t.Fatalf("got %s %q", e.Code, e.Message)
	}
	expectMsg[*pgproto3.ReadyForQuery](t, fe)
	fe.Send(&pgproto3.CopyData{Data: []byte("5\teve\n")})
	fe.Send(&pgproto3.CopyDone{})
	fe.Send(&pgproto3.Query{String: "SELECT id, name FROM t"})
	fe.Flush()
	expectMsg[*pgproto3.RowDescription](t, fe)
	for range 3 {
		expectMsg[*pgproto3.DataRow](t, fe)
	}
	if tag := expectMsg[*pgproto3.CommandComplete](t, fe); string(tag.CommandTag) != "SELECT 3" {
		t.Fatalf("after the aborted COPY: %s", tag.CommandTag)
	}
	expectMsg[*pgproto3.ReadyForQuery](t, fe)
}

// expectMsg receives the next message and fails unless it is a T.
func expectMsg[T pgproto3.BackendMessage](t *testing.T, fe *pgproto3.Frontend) T {
	t.Helper()
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := msg.(T)
	if !ok {
		var want T
		t.Fatalf("got %T %+v, want %T", msg, msg, want)
	}
	return m
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][2]string
		err  string
	}{
		{"", nil, ""},
		{"-c statement_timeout=1000", [][2]string{{"statement_timeout", "1000"}}, ""},
		{"  -cstatement_timeout=5s   --application-name=a\\ b\\\\c  ",
			[][2]string{{"statement_timeout", "5s"}, {"application_name", `a b\c`}}, ""},
		{"-c search_path=x,y -c x.y=", [][2]string{{"search_path", "x,y"}, {"x.y", ""}}, ""},
		{"-c", nil, "-c requires a value"},
		{"-c statement_timeout", nil, "-c statement_timeout requires a value"},
		{"--geqo", nil, "--geqo requires a value"},
		{"-B 10", nil, "invalid command-line argument for server process: -B"},
	} {
		got, err := parseOptions(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err || pgCodeOf(err) != sqlerr.SyntaxError {
				t.Errorf("%q: error %v, want 42601 %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func pgCodeOf(err error) string {
	var e *sqlerr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestStartupOptions(t *testing.T) {
	eng := newFakeEngine()
	_, addr := startServer(t, Config{}, eng)
	conn, err := connectParams(t, addr, map[string]string{"options": `-c statement_timeout=150 --application-name=my\ app`})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if got := conn.PgConn().ParameterStatus("application_name"); got != "my app" {
		t.Errorf("application_name reported as %q", got)
	}
	_, err = conn.Exec(testCtx(t), "SELECT sleep")
	pgErr(t, err, sqlerr.QueryCanceled)
	<-eng.started
	if cause := <-eng.ended; cause != errStatementTimeout {
		t.Errorf("cause %v", cause)
	}

	for _, tc := range []struct {
		params map[string]string
		code   string
	}{
		{map[string]string{"options": "-c nope=1"}, sqlerr.UndefinedObject},
		{map[string]string{"options": "-c nope"}, sqlerr.SyntaxError},
		{map[string]string{"statement_timeout": "soon"}, sqlerr.InvalidParameterValue},
		{map[string]string{"options": "-c application_name=x", "nope": "2"}, sqlerr.UndefinedObject},
	} {
		c, err := connectParams(t, addr, tc.params)
		if err == nil {
			c.Close(testCtx(t))
			t.Errorf("%v: connected", tc.params)
			continue
		}
		if pe := pgErr(t, err, tc.code); pe.Severity != "FATAL" {
			t.Errorf("%v: severity %s", tc.params, pe.Severity)
		}
	}
	// The server goes on.
	if got := rowsString(queryRows(t, connect(t, addr), "SELECT id, name FROM t")); got != tableRows {
		t.Errorf("got %q", got)
	}
}

// connectParams connects with extra startup parameters.
func connectParams(t *testing.T, addr string, params map[string]string) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig(connString(addr))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range params {
		cfg.RuntimeParams[k] = v
	}
	return pgx.ConnectConfig(testCtx(t), cfg)
}

// TestClientGone: a statement whose client disconnects is canceled although
// it reads nothing from the client, over TCP and over TLS.
func TestClientGone(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		cfg := Config{}
		if useTLS {
			cfg.TLS = selfSignedTLS(t)
		}
		eng := newFakeEngine()
		_, addr := startServer(t, cfg, eng)
		for _, q := range []string{"SELECT sleep", "SELECT stream"} {
			for _, extended := range []bool{false, true} {
				cs := connString(addr)
				if useTLS {
					cs = strings.Replace(cs, "sslmode=disable", "sslmode=require", 1)
				}
				conn, err := pgx.Connect(testCtx(t), cs)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := conn.PgConn().Conn().(*tls.Conn); ok != useTLS {
					t.Fatalf("TLS %v, want %v", ok, useTLS)
				}
				// The client vanishes without a word: no Terminate, no
				// CancelRequest (pgx would send one when its socket fails).
				hc, err := conn.PgConn().Hijack()
				if err != nil {
					t.Fatal(err)
				}
				if extended {
					hc.Frontend.SendParse(&pgproto3.Parse{Query: q})
					hc.Frontend.SendBind(&pgproto3.Bind{})
					hc.Frontend.SendExecute(&pgproto3.Execute{})
					hc.Frontend.SendSync(&pgproto3.Sync{})
				} else {
					hc.Frontend.SendQuery(&pgproto3.Query{String: q})
				}
				if err := hc.Frontend.Flush(); err != nil {
					t.Fatal(err)
				}
				<-eng.started
				start := time.Now()
				hc.Conn.Close()
				select {
				case cause := <-eng.ended:
					if cause != errClientGone {
						t.Errorf("cause %v", cause)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s (extended %v, TLS %v): still running 10s after its client left", q, extended, useTLS)
				}
				t.Logf("%s (extended %v, TLS %v): canceled %v after the client closed", q, extended, useTLS, time.Since(start))
				deadline := time.Now().Add(10 * time.Second)
				for eng.openSessions() != 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if n := eng.openSessions(); n != 0 {
					t.Fatalf("%d sessions open after the client left", n)
				}
			}
		}
	}
}

func TestMaxConnections(t *testing.T) {
	eng := newFakeEngine()
	_, addr := startServer(t, Config{MaxConnections: 3, ReservedConnections: 1}, eng)
	as := func(user string) string { return strings.Replace(connString(addr), "streamdb@", user+"@", 1) }
	open := func(user string) (*pgx.Conn, error) {
		c, err := pgx.Connect(testCtx(t), as(user))
		if err == nil {
			t.Cleanup(func() { c.Close(context.Background()) })
		}
		return c, err
	}
	for range 2 {
		if _, err := open("plain"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := open("plain")
	if pe := pgErr(t, err, sqlerr.TooManyConnections); pe.Severity != "FATAL" ||
		pe.Message != "remaining connection slots are reserved for roles with the SUPERUSER attribute" {
		t.Fatalf("third plain user: %s %q", pe.Severity, pe.Message)
	}
	su, err := open("streamdb")
	if err != nil {
		t.Fatalf("superuser in the reserved slot: %v", err)
	}
	_, err = open("streamdb")
	if pe := pgErr(t, err, sqlerr.TooManyConnections); pe.Message != "sorry, too many clients already" {
		t.Fatalf("fourth connection: %q", pe.Message)
	}
	// A cancel request needs no slot.
	errc := make(chan error, 1)
	go func() {
		_, err := su.Exec(context.Background(), "SELECT sleep")
		errc <- err
	}()
	<-eng.started
	if err := su.PgConn().CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	pgErr(t, <-errc, sqlerr.QueryCanceled)
	<-eng.ended
	// Closing a connection frees its slot (once the server has seen it go).
	su.Close(testCtx(t))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := open("streamdb")
		if err == nil {
			var n int64
			if err := c.QueryRow(testCtx(t), "SELECT 1").Scan(&n); err != nil {
				t.Fatal(err)
			}
			break
		}
		if pgCode(err) != sqlerr.TooManyConnections || time.Now().After(deadline) {
			t.Fatalf("after closing one: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
