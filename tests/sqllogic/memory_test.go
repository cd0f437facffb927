package sqllogic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Tests of the limits of batch queries (issue 17): the per-query memory
// budget (work_mem) and the server-wide cap (--query-memory-mb) fail a
// query with 53200 without harming the server; results stream; a cancel
// stops any operator within a second. Durations and memory figures are
// logged and checked only against generous bounds.

// memRows is the size of the stream the cross joins read: 2000 rows, so
// t a, t b has 4 million rows and t a, t b, t c 8 billion.
const memRows = 2000

// memorySetup makes t (memRows rows) and a view over another stream u.
func memorySetup(t *testing.T, c *pgx.Conn) {
	t.Helper()
	var b strings.Builder
	b.WriteString("INSERT INTO t VALUES ")
	for i := 0; i < memRows; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, 'row number %d of the stream')", i, i)
	}
	execAll(t, c, "CREATE TABLE t (k BIGINT, s TEXT)", b.String(),
		"CREATE TABLE u (k BIGINT)", "CREATE MATERIALIZED VIEW uv AS SELECT count(*) AS n FROM u",
		"INSERT INTO u VALUES (1), (2)", "CHECKPOINT")
}

// rssKB reads the server process's resident set size.
func rssKB(t *testing.T, srv *Server) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", srv.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("server RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// waitRSS waits (up to 10 s) for the server's RSS to come within slackMB of
// beforeKB, and fails with the figures if it does not.
func waitRSS(t *testing.T, srv *Server, what string, beforeKB, peakKB, slackMB int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := rssKB(t, srv)
		if now <= beforeKB+slackMB<<10 {
			t.Logf("%s: server RSS %d MB before, %d MB at the largest seen, %d MB after", what, beforeKB>>10, peakKB>>10, now>>10)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: server RSS %d MB before, %d MB 10 s after the query (bound: +%d MB)", what, beforeKB>>10, now>>10, slackMB)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantCode fails unless err is a PostgreSQL error with the SQLSTATE code.
func wantCode(t *testing.T, what string, err error, code string) *pgconn.PgError {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Fatalf("%s: got %v, want SQLSTATE %s", what, err, code)
	}
	return pgErr
}

// viewKeepsUpdating inserts into u and waits for the view over it to count
// the new row.
func viewKeepsUpdating(t *testing.T, c *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	var n0 int64
	if err := c.QueryRow(ctx, "SELECT n FROM uv").Scan(&n0); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "INSERT INTO u VALUES (3)")
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		if err := c.QueryRow(ctx, "SELECT n FROM uv").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == n0+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("view uv: count %d 10 s after an insert, want %d", n, n0+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// overBudget runs queries that need far more than the budget and checks
// each fails with 53200 naming detailWord, while the server stays up, its
// view keeps updating and its memory comes back.
func overBudget(t *testing.T, srv *Server, c *pgx.Conn, detailWord string, queries ...string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range queries {
		before := rssKB(t, srv)
		peak := before
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := c.Exec(ctx, q)
			done <- err
		}()
		var err error
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-time.After(50 * time.Millisecond):
				peak = max(peak, rssKB(t, srv))
			}
		}
		pgErr := wantCode(t, q, err, "53200")
		if pgErr.Message != "out of memory" || !strings.Contains(pgErr.Detail, detailWord) {
			t.Fatalf("%s: message %q, detail %q; want out of memory naming %s", q, pgErr.Message, pgErr.Detail, detailWord)
		}
		t.Logf("%s: failed after %v: %s (%s hint: %s)", q, time.Since(start), pgErr.Message, pgErr.Detail, pgErr.Hint)
		viewKeepsUpdating(t, c)
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != memRows {
			t.Fatalf("after the failure: count(*) = %d, %v", n, err)
		}
		waitRSS(t, srv, q, before, peak, 200)
	}
}

// TestMemoryWorkMem: with a small work_mem, a sort and a GROUP BY over cross
// joins fail with 53200 naming work_mem.
func TestMemoryWorkMem(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: RSS bounds (a race build takes several times the memory)")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	memorySetup(t, c)
	ctx := context.Background()
	if _, err := c.Exec(ctx, "SET work_mem = 'lots'"); err == nil {
		t.Fatal("SET work_mem = 'lots' succeeded")
	} else {
		wantCode(t, "SET work_mem = 'lots'", err, "22023")
	}
	execAll(t, c, "SET work_mem = 262144") // kB, as in PostgreSQL
	if got := show(t, srv, "work_mem"); got != "1GB" {
		t.Fatalf("a new session's work_mem = %q, want the default 1GB", got)
	}
	var wm string
	if err := c.QueryRow(ctx, "SHOW work_mem").Scan(&wm); err != nil || wm != "256MB" {
		t.Fatalf("SHOW work_mem = %q, %v; want 256MB", wm, err)
	}
	overBudget(t, srv, c, "work_mem = 256MB",
		"SELECT * FROM t a, t b, t c ORDER BY 1, 2, 3",
		"SELECT a.k, b.k, count(*) FROM t a, t b GROUP BY a.k, b.k")
}

// TestMemoryServerCap: with the default work_mem but a small server-wide
// cap, from the flag or from the config file, the same query fails with
// 53200 naming --query-memory-mb.
func TestMemoryServerCap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: RSS bounds (a race build takes several times the memory)")
	}
	conf := filepath.Join(t.TempDir(), "streamdb.toml")
	if err := os.WriteFile(conf, []byte("[query]\nmemory_mb = 128\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--query-memory-mb", "128"}, {"--config", conf}} {
		srv := StartServer(t, "", args...)
		c := srv.Conn(t)
		memorySetup(t, c)
		overBudget(t, srv, c, "may hold 128MB (--query-memory-mb", "SELECT * FROM t a, t b, t c ORDER BY 1, 2, 3")
	}
}

// TestMemoryStreamedResult: a cross join of 8 billion rows streams: its
// first rows arrive at once and the server's memory stays bounded while a
// client reads 10k rows, through a portal and through a cursor; closing
// early stops the query and the session goes on.
func TestMemoryStreamedResult(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: RSS bounds (a race build takes several times the memory)")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	memorySetup(t, c)
	ctx := context.Background()
	const q = "SELECT a.k, b.s, c.k FROM t a, t b, t c"
	before := rssKB(t, srv)

	start := time.Now()
	rows, err := c.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < 10000 && rows.Next() {
		if n == 0 {
			t.Logf("first row after %v", time.Since(start))
		}
		n++
	}
	if n < 10000 {
		t.Fatalf("read %d rows: %v", n, rows.Err())
	}
	if since := time.Since(start); since > 10*time.Second {
		t.Fatalf("10k rows of a streamed cross join took %v", since)
	}
	during := rssKB(t, srv)
	t.Logf("10k rows after %v; server RSS %d MB before, %d MB while streaming", time.Since(start), before>>10, during>>10)
	if during > before+300<<10 {
		t.Fatalf("server RSS grew from %d MB to %d MB while streaming", before>>10, during>>10)
	}
	// pgx's Close reads to the end of the result: cancel the statement.
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	wantCode(t, "streamed query after cancel", rows.Err(), "57014")

	execAll(t, c, "BEGIN", "DECLARE cur CURSOR FOR "+q)
	start = time.Now()
	got := 0
	for got < 10000 {
		r, err := c.Query(ctx, "FETCH 1000 FROM cur")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			got++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("cursor: 10k rows after %v; server RSS %d MB", time.Since(start), rssKB(t, srv)>>10)
	execAll(t, c, "CLOSE cur", "COMMIT")
	viewKeepsUpdating(t, c)
	waitRSS(t, srv, "streamed cross join", before, during, 200)
}

// TestMemoryCancel: a cancel request stops a long count over a cross join,
// a sort and a hash join with a big build side, each within a generous
// bound (the figure is logged; the aim is under a second), and the session
// stays usable.
func TestMemoryCancel(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	memorySetup(t, c)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT count(*) FROM t a, t b, t c",
		"SELECT a.k, b.k, a.s FROM t a, t b, t c ORDER BY a.s DESC, b.k LIMIT 5", // 8e9 rows: never done before the cancel
		"SELECT count(*) FROM (SELECT a.k FROM t a, t b) l JOIN (SELECT c.k FROM t c, t d) r ON l.k = r.k",
	} {
		done := make(chan error, 1)
		go func() {
			rows, err := c.Query(ctx, q)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
			}
			done <- err
		}()
		time.Sleep(time.Second) // let the query get going; the cancel is what is measured
		select {
		case err := <-done:
			t.Fatalf("%s finished before the cancel: %v", q, err)
		default:
		}
		sent := time.Now()
		if err := c.PgConn().CancelRequest(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Logf("%s: canceled %v after the request", q, time.Since(sent))
			pgErr := wantCode(t, q, err, "57014")
			if pgErr.Message != "canceling statement due to user request" {
				t.Fatalf("%s: message %q", q, pgErr.Message)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still running 10 s after the cancel request", q)
		}
		var one int64
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("after cancel: SELECT 1 = %d, %v", one, err)
		}
	}
}

// TestMemoryPortalMaxRows: through the extended protocol, a portal over a
// cross join of 8 billion rows answers Execute with a row limit batch
// after batch (PortalSuspended), and closing it early stops the query.
func TestMemoryPortalMaxRows(t *testing.T) {
	srv := StartServer(t, "")
	memorySetup(t, srv.Conn(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pc, err := pgconn.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	hc, err := pc.Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Conn.Close()
	_ = hc.Conn.SetDeadline(time.Now().Add(60 * time.Second))
	fe := hc.Frontend
	// until reads messages up to one of type T, counting DataRows; an
	// ErrorResponse fails the test.
	until := func(what string, done func(pgproto3.BackendMessage) bool) int {
		t.Helper()
		rows := 0
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			switch m := m.(type) {
			case *pgproto3.DataRow:
				rows++
				continue
			case *pgproto3.ErrorResponse:
				t.Fatalf("%s: %s %s", what, m.Code, m.Message)
			}
			if done(m) {
				return rows
			}
		}
	}
	isSuspended := func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.PortalSuspended); return ok }
	start := time.Now()
	fe.Send(&pgproto3.Parse{Query: "SELECT a.k, b.k, c.k FROM t a, t b, t c"})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p"})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 1000})
	fe.Send(&pgproto3.Flush{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := until("first Execute", isSuspended); n != 1000 {
		t.Fatalf("first Execute: %d rows, want 1000", n)
	}
	t.Logf("first 1000 rows after %v", time.Since(start))
	for i := 0; i < 5; i++ {
		fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2000})
		fe.Send(&pgproto3.Flush{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		if n := until("next Execute", isSuspended); n != 2000 {
			t.Fatalf("Execute %d: %d rows, want 2000", i+2, n)
		}
	}
	fe.Send(&pgproto3.Close{ObjectType: 'P', Name: "p"})
	fe.Send(&pgproto3.Sync{})
	fe.Send(&pgproto3.Query{String: "SELECT count(*) FROM t"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	until("Close and Sync", func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok })
	if n := until("query after Close", func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok }); n != 1 {
		t.Fatalf("SELECT count(*) after closing the portal: %d rows", n)
	}
	t.Logf("portal closed early after 11000 rows, %v in all", time.Since(start))
}

// TestStreamedErrorAfterRows: a query that fails after rows were sent ends
// with an ErrorResponse after those rows, in both protocols, and the
// session goes on.
func TestStreamedErrorAfterRows(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	// One partition: a scan reads it in append order, so rows come before the
	// row that fails (several partitions are read in any order).
	execAll(t, c, "CREATE TABLE e (k BIGINT) WITH (partitions = 1)")
	for lo := 0; lo < 3000; lo += 1000 {
		var vals []string
		for i := lo; i < lo+1000; i++ {
			vals = append(vals, "("+itoa(int64(i))+")")
		}
		execAll(t, c, "INSERT INTO e VALUES "+strings.Join(vals, ", "))
	}
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		rows, err := c.Query(ctx, "SELECT 100 / (k - 2500) FROM e", mode)
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		wantCode(t, fmt.Sprintf("%v after %d rows", mode, n), rows.Err(), "22012")
		if n == 0 || n > 2500 {
			t.Fatalf("%v: %d rows before the error, want some and at most 2500", mode, n)
		}
		t.Logf("%v: division by zero after %d rows", mode, n)
		var one int64
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("after the error: %d, %v", one, err)
		}
	}
}
