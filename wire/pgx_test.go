package wire

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamdb/streamdb/sqlerr"
)

func connect(t *testing.T, addr string, opts ...string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString(addr, opts...))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func connString(addr string, opts ...string) string {
	return "postgres://streamdb@" + addr + "/streamdb?sslmode=disable&" + strings.Join(opts, "&")
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pgCode is the SQLSTATE of a *pgconn.PgError, or "" for other errors.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

type row struct {
	ID   int64
	Name *string
}

func queryRows(t *testing.T, conn *pgx.Conn, sql string, args ...any) []row {
	t.Helper()
	rows, err := conn.Query(testCtx(t), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return got
}

func rowsString(rows []row) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strconv.FormatInt(r.ID, 10))
		b.WriteByte('|')
		if r.Name == nil {
			b.WriteString("NULL")
		} else {
			b.WriteString(*r.Name)
		}
		b.WriteByte(';')
	}
	return b.String()
}

const tableRows = "1|alice;2|NULL;3|tab\there \\ new\nline;"

func TestPgxQueries(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	conn := connect(t, addr)

	tests := []struct {
		name string
		sql  string
		args []any
		want string
	}{
		{"extended", "SELECT id, name FROM t", nil, tableRows},
		{"simple protocol", "SELECT id, name FROM t", []any{pgx.QueryExecModeSimpleProtocol}, tableRows},
		{"exec mode exec", "SELECT id, name FROM t", []any{pgx.QueryExecModeExec}, tableRows},
		{"describe exec", "SELECT id, name FROM t", []any{pgx.QueryExecModeDescribeExec}, tableRows},
		{"binary int8 and text params", "SELECT $1::int8, $2::text", []any{int64(42), "hi"}, "42|hi;"},
		{"prepared statement reused", "SELECT $1::int8, $2::text", []any{int64(-7), "again"}, "-7|again;"},
		{"NULL param", "SELECT $1::int8, $2::text", []any{int64(1), nil}, "1|NULL;"},
		{"text params (exec mode)", "SELECT $1::int8, $2::text", []any{pgx.QueryExecModeExec, int64(5), "x"}, "5|x;"},
		{"batches", "SELECT series", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sql == "SELECT series" {
				rows, _ := conn.Query(testCtx(t), tc.sql)
				got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				if err != nil || len(got) != 10 || got[0] != 1 || got[9] != 10 {
					t.Fatalf("series = %v, %v", got, err)
				}
				if tag := rows.CommandTag().String(); tag != "SELECT 10" {
					t.Errorf("tag = %q, want SELECT 10", tag)
				}
				return
			}
			if got := rowsString(queryRows(t, conn, tc.sql, tc.args...)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPgxMultiStatement(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	conn := connect(t, addr)
	results, err := conn.PgConn().Exec(testCtx(t), "SELECT 1; SELECT id, name FROM t; BEGIN").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, r := range results {
		tags = append(tags, r.CommandTag.String())
	}
	if got := strings.Join(tags, ","); got != "SELECT 1,SELECT 3,BEGIN" {
		t.Errorf("tags = %s", got)
	}
	if got := string(results[1].Rows[2][1]); got != "tab\there \\ new\nline" {
		t.Errorf("text value = %q", got)
	}
	if s := conn.PgConn().TxStatus(); s != 'T' {
		t.Errorf("TxStatus = %c, want T", s)
	}

	// An error stops the rest of the Query.
	results, err = conn.PgConn().Exec(testCtx(t), "COMMIT; SELECT error; SELECT 1").ReadAll()
	if pgCode(err) != sqlerr.DivisionByZero || len(results) != 1 {
		t.Fatalf("got %d results, err %v; want COMMIT's result and 22012", len(results), err)
	}
	// A syntax error runs nothing.
	results, err = conn.PgConn().Exec(testCtx(t), "SELECT 1; SELECT nonsense").ReadAll()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != sqlerr.SyntaxError || pe.Position != 1 || pe.Severity != "ERROR" || len(results) != 0 {
		t.Fatalf("got %d results, err %#v; want 42601 at position 1", len(results), err)
	}

	// Empty queries.
	for _, q := range []string{"", " ; "} {
		if _, err := conn.PgConn().Exec(testCtx(t), q).ReadAll(); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
}

func TestPgxErrors(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	conn := connect(t, addr)
	ctx := testCtx(t)

	_, err := conn.Exec(ctx, "SELECT error")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != sqlerr.DivisionByZero || pe.Detail != "d" || pe.Hint != "h" || pe.Position != 8 {
		t.Fatalf("error = %#v", err)
	}
	_, err = conn.Exec(ctx, "SELECT panic")
	if pgCode(err) != sqlerr.Internal {
		t.Fatalf("panic gave %v, want XX000", err)
	}
	_, err = conn.Exec(ctx, "SELECT panic", pgx.QueryExecModeSimpleProtocol)
	if pgCode(err) != sqlerr.Internal {
		t.Fatalf("panic (simple) gave %v, want XX000", err)
	}

	// An error in the middle of a pipeline skips the rest until Sync; the
	// connection then works.
	batch := &pgx.Batch{}
	batch.Queue("SELECT 1")
	batch.Queue("SELECT error")
	batch.Queue("SELECT 1")
	br := conn.SendBatch(ctx, batch)
	var n int64
	if err := br.QueryRow().Scan(&n); err != nil || n != 1 {
		t.Fatalf("first: %v %v", n, err)
	}
	if _, err := br.Exec(); pgCode(err) != sqlerr.DivisionByZero {
		t.Fatalf("second: %v", err)
	}
	if _, err := br.Exec(); err == nil {
		t.Fatal("third query after the error ran")
	}
	br.Close()
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after pipeline error: %v %v", n, err)
	}

	// Bad parameter text is a data error.
	_, err = conn.Exec(ctx, "SELECT $1::int8, $2::text", pgx.QueryExecModeExec, "x", "y")
	if c := pgCode(err); c == "" || c[:2] != "22" {
		t.Fatalf("bad int8 param gave %v, want 22xxx", err)
	}
	// Notices and parameter changes.
	if _, err := conn.PgConn().Exec(ctx, "SET x = 1").ReadAll(); err != nil {
		t.Fatal(err)
	}
	if v := conn.PgConn().ParameterStatus("x"); v != "1" {
		t.Errorf("ParameterStatus x = %q", v)
	}
}

func TestPgxNotice(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	cfg, err := pgconn.ParseConfig(connString(addr))
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Severity+" "+n.Message) }
	pc, err := pgconn.ConnectConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(context.Background())
	if _, err := pc.Exec(testCtx(t), "SET x = 1").ReadAll(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(notices, ",") != "NOTICE x is now 1" {
		t.Errorf("notices = %q", notices)
	}
	for k, want := range map[string]string{
		"server_version": "15.0 (streamdb)", "client_encoding": "UTF8", "DateStyle": "ISO, MDY",
		"integer_datetimes": "on", "session_authorization": "streamdb", "x": "1",
	} {
		if got := pc.ParameterStatus(k); got != want {
			t.Errorf("ParameterStatus(%s) = %q, want %q", k, got, want)
		}
	}
}

func TestPgxCopy(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	conn := connect(t, addr)
	ctx := testCtx(t)

	var buf bytes.Buffer
	tag, err := conn.PgConn().CopyTo(ctx, &buf, "COPY t TO STDOUT")
	if err != nil {
		t.Fatal(err)
	}
	want := "1\talice\n2\t\\N\n3\ttab\\there \\\\ new\\nline\n"
	if tag.String() != "COPY 3" || buf.String() != want {
		t.Errorf("CopyTo = %q %q, want COPY 3 %q", tag, buf.String(), want)
	}

	tag, err = conn.PgConn().CopyFrom(ctx, strings.NewReader("4\tdave\n5\t\\N\n"), "COPY t FROM STDIN")
	if err != nil || tag.String() != "COPY 2" {
		t.Fatalf("CopyFrom = %q, %v", tag, err)
	}
	got := rowsString(queryRows(t, conn, "SELECT id, name FROM t"))
	if want := tableRows + "4|dave;5|NULL;"; got != want {
		t.Errorf("after copy: %q, want %q", got, want)
	}

	// A bad row fails the COPY with the engine's SQLSTATE; the session goes on.
	_, err = conn.PgConn().CopyFrom(ctx, strings.NewReader("x\ty\n"), "COPY t FROM STDIN")
	if pgCode(err) != sqlerr.BadCopyFileFormat {
		t.Fatalf("bad copy: %v", err)
	}
	// A failing reader makes pgx send CopyFail.
	_, err = conn.PgConn().CopyFrom(ctx, failingReader{}, "COPY t FROM STDIN")
	if pgCode(err) != sqlerr.QueryCanceled || !strings.Contains(err.Error(), "COPY from stdin failed") {
		t.Fatalf("CopyFail: %v", err)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestPgxCancel(t *testing.T) {
	eng := newFakeEngine()
	_, addr := startServer(t, Config{}, eng)
	conn := connect(t, addr)

	for _, q := range []string{"SELECT sleep", "SELECT stream"} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			errc := make(chan error, 1)
			go func() {
				rows, err := conn.Query(context.Background(), q, mode)
				if err == nil {
					for rows.Next() {
					}
					err = rows.Err()
				}
				errc <- err
			}()
			<-eng.started
			if err := conn.PgConn().CancelRequest(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; pgCode(err) != sqlerr.QueryCanceled {
				t.Fatalf("%s (mode %v): %v, want 57014", q, mode, err)
			}
		}
	}
	// A cancel with the wrong key is ignored; the session is fine.
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after cancel: %v %v", n, err)
	}
}

func TestPgxMaxMessageSize(t *testing.T) {
	_, addr := startServer(t, Config{MaxMessageSize: 1024}, newFakeEngine())
	conn := connect(t, addr)
	_, err := conn.Exec(testCtx(t), "SELECT '"+strings.Repeat("x", 2000)+"'", pgx.QueryExecModeSimpleProtocol)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != sqlerr.ProtocolViolation || pe.Severity != "FATAL" {
		t.Fatalf("oversize message gave %v, want FATAL 08P01", err)
	}
	// The server goes on.
	conn2 := connect(t, addr)
	var n int64
	if err := conn2.QueryRow(testCtx(t), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("new connection: %v %v", n, err)
	}
}

func TestPgxProtocol32Negotiation(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	conn := connect(t, addr, "max_protocol_version=3.2")
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%v %v", n, err)
	}
}

func TestShutdown(t *testing.T) {
	eng := newFakeEngine()
	srv := New(Config{}, eng)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	addr := l.Addr().String()

	idle := connect(t, addr)
	raw := dialRaw(t, addr)
	busy := connect(t, addr)
	errc := make(chan error, 1)
	go func() {
		_, err := busy.Exec(context.Background(), "SELECT sleep")
		errc <- err
	}()
	<-eng.started

	if err := srv.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != ErrServerClosed {
		t.Errorf("Serve: %v", err)
	}
	if err := <-errc; pgCode(err) != sqlerr.AdminShutdown {
		t.Errorf("running statement got %v, want 57P01", err)
	}
	if got := strings.Join(raw.readUntilReady(1), " "); got != "ErrorResponse(FATAL 57P01) EOF" {
		t.Errorf("idle client got %s", got)
	}
	if err := idle.Ping(testCtx(t)); err == nil {
		t.Error("idle connection still works after Shutdown")
	}
	if n := eng.openSessions(); n != 0 {
		t.Errorf("%d sessions open after Shutdown", n)
	}
	if _, err := pgx.Connect(testCtx(t), connString(addr)); err == nil {
		t.Error("connected after Shutdown")
	}
	eng.mem.AssertSize(t, 0)
}
