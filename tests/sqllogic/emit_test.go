package sqllogic

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Live change streams (issue #3): EMIT CHANGES through psql's COPY, pgx
// with cancellation, and cursors; a stream's job is gone once its client is.

func changeStreams(t *testing.T, c *pgx.Conn) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(),
		"SELECT count(*) FROM streamdb_jobs WHERE name LIKE 'change_stream_%'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitNoChangeStreams(t *testing.T, c *pgx.Conn, poke func()) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for changeStreams(t, c) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the change stream's job is still running after its client left")
		}
		poke()
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEmitChangesPsqlCopy(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)", "INSERT INTO t VALUES (1, 10)")
	cmd, lines := psqlCopyOut(t, psql, srv, "COPY (SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k EMIT CHANGES) TO STDOUT")
	defer cmd.Process.Kill()
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case got := <-lines:
				if got != w {
					t.Fatalf("psql printed %q, want %q", got, w)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("psql printed nothing; want %q", w)
			}
		}
	}
	// The history so far, then live changes as another client inserts.
	expect("1\t1\t10\tinsert")
	execAll(t, c, "INSERT INTO t VALUES (1, 5)")
	expect("1\t1\t10\tupdate_before", "1\t2\t15\tupdate_after")
	execAll(t, c, "INSERT INTO t VALUES (2, 7)")
	expect("2\t1\t7\tinsert")
	if n := changeStreams(t, c); n != 1 {
		t.Fatalf("%d change streams running, want 1", n)
	}
	// psql goes away: the job behind the stream stops and its state is freed.
	cmd.Process.Kill()
	cmd.Wait()
	waitNoChangeStreams(t, c, func() { execAll(t, c, "INSERT INTO t VALUES (3, 1)") })
}

func TestEmitChangesCancel(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)", "INSERT INTO t VALUES (1, 10), (2, 20)",
		"CREATE MATERIALIZED VIEW totals AS SELECT k, sum(v) AS s FROM t GROUP BY k", "CHECKPOINT")
	sub := srv.Conn(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A change stream over a view: its changelog from the start, then live.
	rows, err := sub.Query(ctx, "SELECT * FROM totals EMIT CHANGES")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 2 && rows.Next() {
		var k, s int64
		var op string
		if err := rows.Scan(&k, &s, &op); err != nil {
			t.Fatal(err)
		}
		seen[op+" "+itoa(k)+" "+itoa(s)] = true
	}
	if !seen["insert 1 10"] || !seen["insert 2 20"] {
		t.Fatalf("first changes: %v", seen)
	}
	cancel() // pgx sends CancelRequest
	for rows.Next() {
	}
	var pgErr *pgconn.PgError
	if err := rows.Err(); !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v, want 57014", err)
		}
	}
	waitNoChangeStreams(t, c, func() { execAll(t, c, "INSERT INTO t VALUES (9, 9)") })
}

func TestEmitChangesCursor(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT)", "INSERT INTO t VALUES (1), (1), (2)")
	ctx := context.Background()
	execAll(t, c, "BEGIN", "DECLARE cur CURSOR FOR SELECT k, count(*) AS n FROM t GROUP BY k EMIT CHANGES")
	got := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		rows, err := c.Query(ctx, "FETCH 10 FROM cur", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, n int64
			var op string
			if err := rows.Scan(&k, &n, &op); err != nil {
				t.Fatal(err)
			}
			got[itoa(k)+":"+itoa(n)+":"+op] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !got["1:2:insert"] || !got["2:1:insert"] {
		t.Fatalf("FETCH returned %v", got)
	}
	execAll(t, c, "CLOSE cur", "COMMIT")
	waitNoChangeStreams(t, c, func() {})
}

// TestEmitChangesJoinPsql watches a LEFT JOIN of two streams with psql, as
// a user would: a left row shows NULL-padded, and when its match arrives the
// padded row is retracted and the joined row inserted.
func TestEmitChangesJoinPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE orders (id BIGINT, cust BIGINT)", "CREATE TABLE custs (cust BIGINT, name TEXT)")
	cmd, lines := psqlCopyOut(t, psql, srv, "COPY (SELECT o.id, c.name FROM orders o LEFT JOIN custs c ON o.cust = c.cust EMIT CHANGES) TO STDOUT")
	defer cmd.Process.Kill()
	expect := func(want ...string) { t.Helper(); expectChanges(t, lines, want...) }
	execAll(t, c, "INSERT INTO orders VALUES (1, 7)")
	expect("1\t\\N\tinsert")
	execAll(t, c, "INSERT INTO custs VALUES (7, 'ann')")
	expect("1\t\\N\tdelete", "1\tann\tinsert")
	execAll(t, c, "INSERT INTO orders VALUES (2, 7), (3, 8)")
	expect("2\tann\tinsert", "3\t\\N\tinsert")
	cmd.Process.Kill()
	cmd.Wait()
	waitNoChangeStreams(t, c, func() { execAll(t, c, "INSERT INTO orders VALUES (4, 1)") })
}

// psqlCopyOut runs psql with one COPY ... TO STDOUT and returns it with a
// channel of the lines it prints.
func psqlCopyOut(t *testing.T, psql string, srv *Server, copyStmt string) (*exec.Cmd, <-chan string) {
	t.Helper()
	host, port, _ := strings.Cut(srv.Addr(), ":")
	args := []string{psql, "-X", "-h", host, "-p", port, "-U", "streamdb", "streamdb", "-c", copyStmt}
	// On a terminal psql's output is line-buffered; through a pipe stdio
	// would hold the rows back, so unbuffer it as a terminal would.
	if stdbuf, err := exec.LookPath("stdbuf"); err == nil {
		args = append([]string{stdbuf, "-oL"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, lines
}

// TestEmitChangesTopNAndNestedPsql watches a top-N view and a nested
// aggregate with psql: when a row enters the top 2 the one it pushes out is
// deleted, and a group moving between counts shows as update_before/after.
func TestEmitChangesTopNAndNestedPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE bids (id BIGINT, price BIGINT)",
		"CREATE MATERIALIZED VIEW top2 AS SELECT id, price FROM bids ORDER BY price DESC, id LIMIT 2",
		"CREATE MATERIALIZED VIEW per_id AS SELECT n, count(*) AS ids FROM (SELECT id, count(*) AS n FROM bids GROUP BY id) t GROUP BY n",
		"INSERT INTO bids VALUES (1, 10), (2, 20)")
	top, topLines := psqlCopyOut(t, psql, srv, "COPY (SELECT * FROM top2 EMIT CHANGES) TO STDOUT")
	defer top.Process.Kill()
	nested, nestedLines := psqlCopyOut(t, psql, srv, "COPY (SELECT * FROM per_id EMIT CHANGES) TO STDOUT")
	defer nested.Process.Kill()
	expect := func(lines <-chan string, want ...string) { t.Helper(); expectChanges(t, lines, want...) }
	// First each view as it stands, then its changes.
	expect(topLines, "1\t10\tinsert", "2\t20\tinsert")
	expect(nestedLines, "1\t2\tinsert")
	execAll(t, c, "INSERT INTO bids VALUES (3, 15), (1, 5), (4, 1)")
	expect(topLines, "1\t10\tdelete", "3\t15\tinsert")
	expect(nestedLines, "1\t2\tupdate_before", "1\t3\tupdate_after", "2\t1\tinsert")
}

// expectChanges reads len(want) lines from lines and compares them with
// want in any order (the changes of one epoch come in no set order).
func expectChanges(t *testing.T, lines <-chan string, want ...string) {
	t.Helper()
	var got []string
	for range want {
		select {
		case l := <-lines:
			got = append(got, l)
		case <-time.After(10 * time.Second):
			t.Fatalf("psql printed %q; want %q", got, want)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("psql printed %q, want %q", got, want)
	}
}
