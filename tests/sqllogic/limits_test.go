package sqllogic

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Limits (issue 17): statement_timeout on every kind of statement, settings
// in the startup packet, statements of clients that went away, cancel, and
// max_connections.

// wantPgError fails unless err is a server error with code (and, if msg is
// set, that message).
func wantPgError(t *testing.T, what string, err error, code, msg string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code || (msg != "" && pe.Message != msg) {
		t.Fatalf("%s: got %v, want %s %q", what, err, code, msg)
	}
	return pe
}

const timeoutMsg = "canceling statement due to statement timeout"

// connParams opens a connection with extra startup parameters.
func connParams(t *testing.T, srv *Server, params map[string]string) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig(srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range params {
		cfg.RuntimeParams[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	return c, err
}

func showOn(t *testing.T, c *pgx.Conn, name string) string {
	t.Helper()
	var v string
	if err := c.QueryRow(context.Background(), "SHOW "+name).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", name, err)
	}
	return v
}

// TestStatementTimeoutSetting: PostgreSQL's units; SHOW prints the value in
// the largest unit that keeps it whole; bad values are 22023.
func TestStatementTimeoutSetting(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	for set, want := range map[string]string{
		"1000": "1s", "'2s'": "2s", "'1500'": "1500ms", "'1min'": "1min", "'90s'": "90s",
		"'500ms'": "500ms", "'1.5h'": "90min", "0": "0", "'0s'": "0",
	} {
		execAll(t, c, "SET statement_timeout = "+set)
		if got := showOn(t, c, "statement_timeout"); got != want {
			t.Errorf("SET statement_timeout = %s; SHOW gives %q, want %q", set, got, want)
		}
	}
	execAll(t, c, "SET statement_timeout = 0")
	for _, bad := range []string{"'abc'", "'-1'", "'5 parsecs'", "'3000000000'"} {
		_, err := c.Exec(context.Background(), "SET statement_timeout = "+bad)
		wantPgError(t, "SET statement_timeout = "+bad, err, "22023", "")
	}
	if got := showOn(t, c, "statement_timeout"); got != "0" {
		t.Errorf("after refused SETs: %q", got)
	}
}

// TestStatementTimeoutStreams: a change stream is one long statement, so
// statement_timeout ends it when set (it is off by default): EMIT CHANGES
// over both protocols, COPY ... TO STDOUT, and FETCH from a cursor over a
// change stream. The stream's job goes with it at once.
func TestStatementTimeoutStreams(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)", "CREATE TABLE quiet (k BIGINT)", "INSERT INTO t VALUES (1, 10)")
	sub := srv.Conn(t)
	execAll(t, sub, "SET statement_timeout = '500ms'")
	ctx := context.Background()

	timedOut := func(what string, start time.Time, err error) {
		t.Helper()
		took := time.Since(start)
		wantPgError(t, what, err, "57014", timeoutMsg)
		if took > 10*time.Second {
			t.Errorf("%s: ended after %v with statement_timeout 500ms", what, took)
		}
		t.Logf("%s: ended by statement_timeout (500ms) after %v", what, took)
		deadline := time.Now().Add(10 * time.Second)
		for changeStreams(t, c) != 0 { // no rows are written meanwhile
			if time.Now().After(deadline) {
				t.Fatalf("%s: the change stream is still running", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		start := time.Now()
		rows, err := sub.Query(ctx, "SELECT k, sum(v) AS s FROM t GROUP BY k EMIT CHANGES", mode)
		n := 0
		if err == nil {
			for rows.Next() {
				n++
			}
			err = rows.Err()
		}
		if n != 1 {
			t.Errorf("mode %v: %d changes before the timeout, want 1", mode, n)
		}
		timedOut("EMIT CHANGES (mode "+mode.String()+")", start, err)
	}

	start := time.Now()
	_, err := sub.PgConn().CopyTo(ctx, io.Discard, "COPY (SELECT k, v FROM t EMIT CHANGES) TO STDOUT")
	timedOut("COPY (... EMIT CHANGES) TO STDOUT", start, err)

	execAll(t, sub, "BEGIN", "DECLARE cur CURSOR FOR SELECT k FROM quiet EMIT CHANGES")
	start = time.Now()
	_, err = sub.Exec(ctx, "FETCH 10 FROM cur", pgx.QueryExecModeSimpleProtocol)
	wantPgError(t, "FETCH from a change stream", err, "57014", timeoutMsg)
	t.Logf("FETCH from a cursor over a change stream: ended by statement_timeout after %v", time.Since(start))
	// The error failed the block (25P02 until its end, as in PostgreSQL);
	// ROLLBACK closes the cursor declared in it.
	_, err = sub.Exec(ctx, "CLOSE cur")
	wantCode(t, "CLOSE in a failed block", err, "25P02")
	execAll(t, sub, "ROLLBACK")
	if n := changeStreams(t, c); n != 0 {
		t.Errorf("%d change streams after CLOSE", n)
	}

	// The session and the server go on.
	var n int64
	if err := sub.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after the timeouts: %d, %v", n, err)
	}
	// With the timeout off again a stream runs as long as its client wants
	// (here until pgx cancels it, which also closes the connection).
	execAll(t, sub, "SET statement_timeout = 0")
	qctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	rows, err := sub.Query(qctx, "SELECT k FROM t EMIT CHANGES")
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
	}
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Message == timeoutMsg {
		t.Fatalf("statement_timeout 0 ended a stream: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stream without a timeout: %v, want pgx's own deadline", err)
	}
}

// TestStatementTimeoutPsqlCopyOut: psql with PGOPTIONS='-c
// statement_timeout=1000' watching a change stream with COPY TO STDOUT is
// stopped after a second, as PostgreSQL stops a COPY that runs too long.
func TestStatementTimeoutPsqlCopyOut(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT)", "INSERT INTO t VALUES (1)")
	host, port, _ := strings.Cut(srv.Addr(), ":")
	cmd := exec.Command(psql, "-X", "-A", "-t", "-h", host, "-p", port, "-U", "streamdb", "streamdb",
		"-c", "SHOW statement_timeout", "-c", "COPY (SELECT k FROM t EMIT CHANGES) TO STDOUT")
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c statement_timeout=1000")
	start := time.Now()
	done := make(chan struct{})
	var out []byte
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("psql still running after 20s; output:\n%s", out)
	}
	t.Logf("psql ended after %v:\n%s", time.Since(start), out)
	if err == nil || !strings.Contains(string(out), timeoutMsg) || !strings.HasPrefix(string(out), "1s\n") ||
		!strings.Contains(string(out), "1\tinsert") {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	waitNoChangeStreams(t, c, func() {})
}

// TestStatementTimeoutCopyIn: a client that stalls in the middle of COPY
// FROM STDIN is stopped by statement_timeout; nothing it sent is stored and
// the connection goes on.
func TestStatementTimeoutCopyIn(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT, s TEXT)")
	sub := srv.Conn(t)
	execAll(t, sub, "SET statement_timeout = '500ms'")
	hc, err := sub.PgConn().Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Conn.Close()
	fe := hc.Frontend
	hc.Conn.SetDeadline(time.Now().Add(20 * time.Second))
	fe.Send(&pgproto3.Query{String: "COPY t FROM STDIN"})
	fe.Flush()
	recvUntil[*pgproto3.CopyInResponse](t, fe)
	start := time.Now()
	fe.Send(&pgproto3.CopyData{Data: []byte("1\tone\n2\ttwo\n")})
	fe.Flush()
	e := recvUntil[*pgproto3.ErrorResponse](t, fe)
	t.Logf("stalled COPY FROM STDIN ended after %v", time.Since(start))
	if e.Code != "57014" || e.Message != timeoutMsg {
		t.Fatalf("got %s %q", e.Code, e.Message)
	}
	recvUntil[*pgproto3.ReadyForQuery](t, fe)
	// The client wakes up and finishes; the server drops that.
	fe.Send(&pgproto3.CopyData{Data: []byte("3\tthree\n")})
	fe.Send(&pgproto3.CopyDone{})
	fe.Send(&pgproto3.Query{String: "SELECT count(*) FROM t"})
	fe.Flush()
	row := recvUntil[*pgproto3.DataRow](t, fe)
	if got := string(row.Values[0]); got != "0" {
		t.Fatalf("%s rows stored by the aborted COPY", got)
	}
	recvUntil[*pgproto3.ReadyForQuery](t, fe)
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 0 {
		t.Fatalf("another session sees %d rows (%v)", n, err)
	}
}

// recvUntil receives messages until one is a T (skipping notices, parameter
// status and the like); an ErrorResponse on the way fails the test.
func recvUntil[T pgproto3.BackendMessage](t *testing.T, fe *pgproto3.Frontend) T {
	t.Helper()
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := msg.(T); ok {
			return m
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("unexpected error %s %s", e.Code, e.Message)
		}
	}
}

// TestStartupOptions: settings in the startup packet (options=-c ..., or
// as plain parameters) apply as SET would; a bad one is FATAL.
func TestStartupOptions(t *testing.T) {
	srv := StartServer(t, "")
	c, err := connParams(t, srv, map[string]string{
		"options":          `-c statement_timeout=1000 --search-path=my\ schema`,
		"application_name": "limits test",
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"statement_timeout": "1s", "search_path": "my schema", "application_name": "limits test"} {
		if got := showOn(t, c, name); got != want {
			t.Errorf("SHOW %s = %q, want %q", name, got, want)
		}
	}
	c2, err := connParams(t, srv, map[string]string{"statement_timeout": "1500"})
	if err != nil {
		t.Fatal(err)
	}
	if got := showOn(t, c2, "statement_timeout"); got != "1500ms" {
		t.Errorf("statement_timeout as a startup parameter: SHOW gives %q", got)
	}
	// A driver's platform time zone (JDBC sends the JVM's) does not keep it
	// from connecting: the session stays in UTC and says so.
	c3, err := connParams(t, srv, map[string]string{"TimeZone": "Europe/Berlin", "DateStyle": "German"})
	if err != nil {
		t.Fatalf("connect with TimeZone=Europe/Berlin: %v", err)
	}
	if got := c3.PgConn().ParameterStatus("TimeZone"); got != "UTC" {
		t.Errorf("TimeZone reported as %q, want UTC", got)
	}
	for _, tc := range []struct {
		params map[string]string
		code   string
	}{
		{map[string]string{"options": "-c TimeZone=Europe/Berlin"}, "22023"},
		{map[string]string{"options": "-c statement_timeout=soon"}, "22023"},
		{map[string]string{"statement_timeout": "-5"}, "22023"},
		{map[string]string{"options": "-c no_such_setting=1"}, "42704"},
		{map[string]string{"options": "-c max_connections=5"}, "55P02"},
		{map[string]string{"options": "-c checkpoint.interval=5s"}, "55P02"},
		{map[string]string{"options": "-B 100"}, "42601"},
	} {
		_, err := connParams(t, srv, tc.params)
		if pe := wantPgError(t, "connect with "+strings.Join(mapPairs(tc.params), " "), err, tc.code, ""); pe.Severity != "FATAL" {
			t.Errorf("%v: severity %s", tc.params, pe.Severity)
		}
	}
	if got := showOn(t, srv.Conn(t), "checkpoint.interval"); got != "1s" {
		t.Errorf("a refused startup option changed checkpoint.interval to %q", got)
	}

	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	host, port, _ := strings.Cut(srv.Addr(), ":")
	run := func(opts string) (string, error) {
		cmd := exec.Command(psql, "-X", "-A", "-t", "-h", host, "-p", port, "-U", "streamdb", "streamdb", "-c", "SHOW statement_timeout")
		cmd.Env = append(os.Environ(), "PGOPTIONS="+opts)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("-c statement_timeout=1000"); err != nil || strings.TrimSpace(out) != "1s" {
		t.Errorf("psql with PGOPTIONS: %v %q", err, out)
	}
	if out, err := run("-c statement_timeout=soon"); err == nil || !strings.Contains(out, "FATAL") || !strings.Contains(out, "statement_timeout") {
		t.Errorf("psql with a bad PGOPTIONS: %v %q", err, out)
	}
}

func mapPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// TestClientGoneChangeStreams: a change stream whose client vanished (no
// Terminate, no cancel request) ends within a second or so, although no
// row is written that would make the server notice by a failed write:
// EMIT CHANGES over a raw connection, FETCH from a cursor over a change
// stream, and psql's COPY ... TO STDOUT killed with SIGKILL.
func TestClientGoneChangeStreams(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT)", "CREATE TABLE quiet (k BIGINT)", "INSERT INTO t VALUES (1)")
	gone := func(what string, start time.Time) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for changeStreams(t, c) != 0 { // nothing pokes the stream
			if time.Now().After(deadline) {
				t.Fatalf("%s: the change stream is still running 10s after its client left", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%s: the change stream ended %v after its client left", what, time.Since(start))
	}
	vanish := func(queries ...string) {
		t.Helper()
		sub := srv.Conn(t)
		hc, err := sub.PgConn().Hijack()
		if err != nil {
			t.Fatal(err)
		}
		hc.Conn.SetDeadline(time.Now().Add(20 * time.Second))
		for i, q := range queries {
			hc.Frontend.Send(&pgproto3.Query{String: q})
			hc.Frontend.Flush()
			if i < len(queries)-1 {
				recvUntil[*pgproto3.ReadyForQuery](t, hc.Frontend)
			}
		}
		for changeStreams(t, c) != 1 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // let the statement block
		hc.Conn.Close()
	}

	vanish("SELECT k FROM t EMIT CHANGES")
	gone("EMIT CHANGES", time.Now())
	vanish("BEGIN", "DECLARE cur CURSOR FOR SELECT k FROM quiet EMIT CHANGES", "FETCH 10 FROM cur")
	gone("FETCH from a cursor over a change stream", time.Now())

	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	cmd, lines := psqlCopyOut(t, psql, srv, "COPY (SELECT k FROM t EMIT CHANGES) TO STDOUT")
	expectChanges(t, lines, "1\tinsert")
	cmd.Process.Kill()
	cmd.Wait()
	gone("psql COPY (... EMIT CHANGES) TO STDOUT, psql killed", time.Now())
}

// crossJoinTable makes t with 2000 rows, so SELECT count(*) FROM t a, t b,
// t c has 8e9 rows to count: minutes of work.
func crossJoinTable(t *testing.T, c *pgx.Conn) {
	t.Helper()
	var b strings.Builder
	b.WriteString("INSERT INTO t VALUES ")
	for i := range 2000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + itoa(int64(i)) + ")")
	}
	execAll(t, c, "CREATE TABLE t (k BIGINT)", b.String())
}

const longQuery = "SELECT count(*) FROM t a, t b, t c"

// TestCancelBatchQuery: a batch query that would run for minutes is stopped
// by a cancel request, by statement_timeout and when its client goes away;
// the connection and the server go on. Exec checks its context inside
// batch operators, so this takes well under a second (logged; the bound
// asserted is generous for a loaded machine).
func TestCancelBatchQuery(t *testing.T) {
	// endsWithin waits up to 10s for a query's error.
	endsWithin := func(t *testing.T, what string, start time.Time, errc <-chan error) error {
		t.Helper()
		select {
		case err := <-errc:
			t.Logf("%s: the query ended %v after the cancel", what, time.Since(start))
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the query still runs 10s after the cancel", what)
			return nil
		}
	}
	t.Run("cancel", func(t *testing.T) {
		srv := StartServer(t, "")
		c := srv.Conn(t)
		crossJoinTable(t, c)
		errc := make(chan error, 1)
		go func() {
			var n int64
			errc <- c.QueryRow(context.Background(), longQuery).Scan(&n)
		}()
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		if err := c.PgConn().CancelRequest(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := endsWithin(t, "CancelRequest", start, errc)
		wantPgError(t, "canceled query", err, "57014", "canceling statement due to user request")
		var n int64
		if err := c.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2000 {
			t.Fatalf("after the cancel: %d, %v", n, err)
		}
	})
	t.Run("statement_timeout", func(t *testing.T) {
		srv := StartServer(t, "")
		c := srv.Conn(t)
		crossJoinTable(t, c)
		execAll(t, c, "CREATE TABLE counts (n BIGINT)", "SET statement_timeout = '1s'")
		for _, stmts := range [][]string{
			{longQuery},
			{"INSERT INTO counts " + longQuery},
			{"BEGIN", "DECLARE cur CURSOR FOR " + longQuery},
		} {
			errc := make(chan error, 1)
			start := time.Now()
			go func() {
				var err error
				for _, s := range stmts {
					if _, err = c.Exec(context.Background(), s, pgx.QueryExecModeSimpleProtocol); err != nil {
						break
					}
				}
				errc <- err
			}()
			what := stmts[len(stmts)-1]
			err := endsWithin(t, what+" with statement_timeout 1s", start.Add(time.Second), errc)
			wantPgError(t, what, err, "57014", timeoutMsg)
			execAll(t, c, "COMMIT")
		}
		var n int64
		if err := c.QueryRow(context.Background(), "SELECT count(*) FROM counts").Scan(&n); err != nil || n != 0 {
			t.Fatalf("after the timeouts: %d rows in counts, %v", n, err)
		}
	})
	t.Run("client_gone", func(t *testing.T) {
		srv := StartServer(t, "")
		c := srv.Conn(t)
		crossJoinTable(t, c)
		sub := srv.Conn(t)
		hc, err := sub.PgConn().Hijack()
		if err != nil {
			t.Fatal(err)
		}
		hc.Frontend.Send(&pgproto3.Query{String: longQuery})
		hc.Frontend.Flush()
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		hc.Conn.Close()
		// The server notices at once (it logs so); whether the query stops
		// is exec's part, seen in the subtests above.
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(srv.Output(), "client disconnected; canceling its statement") {
			if time.Now().After(deadline) {
				t.Fatal("the server did not notice within 10s that the client of a running query left")
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("the server noticed the client had gone after %v", time.Since(start))
		var n int64
		if err := c.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2000 {
			t.Fatalf("another session: %d, %v", n, err)
		}
	})
}

// TestMaxConnections: beyond --max-connections a new client gets FATAL
// 53300 (every role is a superuser until roles exist, so all the slots are
// usable); closing one frees its slot. The setting is reported by SHOW,
// comes from the flag or the config file, and cannot be SET.
func TestMaxConnections(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "streamdb.toml")
	if err := os.WriteFile(conf, []byte("max_connections = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, filepath.Join(dir, "data"), "--config", conf, "--max-connections", "5")
	var conns []*pgx.Conn
	for range 5 {
		conns = append(conns, srv.Conn(t))
	}
	c := conns[0]
	if got := showOn(t, c, "max_connections"); got != "5" {
		t.Errorf("SHOW max_connections = %q, want the flag's 5 over the config file's 7", got)
	}
	if got := showOn(t, c, "superuser_reserved_connections"); got != "3" {
		t.Errorf("SHOW superuser_reserved_connections = %q", got)
	}
	for _, stmt := range []string{"SET max_connections = 10", "RESET max_connections", "SET superuser_reserved_connections = 1"} {
		_, err := c.Exec(context.Background(), stmt)
		wantPgError(t, stmt, err, "55P02", "")
	}
	_, err := pgx.Connect(context.Background(), srv.ConnString())
	if pe := wantPgError(t, "6th connection", err, "53300", "sorry, too many clients already"); pe.Severity != "FATAL" {
		t.Errorf("severity %s", pe.Severity)
	}
	conns[4].Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := pgx.Connect(context.Background(), srv.ConnString())
		if err == nil {
			execAll(t, n, "SELECT 1")
			n.Close(context.Background())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot 10s after closing a connection: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range conns[:4] {
		execAll(t, c, "SELECT 1")
	}

	// Without the flag the config file decides.
	srv.Stop()
	srv2 := StartServer(t, filepath.Join(dir, "data2"), "--config", conf)
	if got := show(t, srv2, "max_connections"); got != "7" {
		t.Errorf("SHOW max_connections = %q, want the config file's 7", got)
	}
	// As in PostgreSQL, the reserved slots must leave one for others.
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(bin, "--max-connections", "3", "--data-dir", filepath.Join(dir, "data3"), "--listen", "127.0.0.1:0")
	if err == nil || !strings.Contains(out, "superuser_reserved_connections (3) must be less than max_connections (3)") {
		t.Errorf("--max-connections 3: %v %s", err, out)
	}
}
