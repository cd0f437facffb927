package sqllogic

import (
	"context"
	"fmt"
	osexec "os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// SESSION windows (issue 12): GROUP BY keys, SESSION(ts, gap) with
// SESSION_START/SESSION_END, in batch queries and views; sessions merge
// when a row bridges them (the view retracts both rows and inserts the
// merged one), close by the watermark (their state goes, later rows that
// would fall into them are late), EMIT ON WINDOW CLOSE emits each once.

const sessionQuery = `SELECT bidder, count(*) AS n, sum(price)::bigint AS p,
    SESSION_START(ts, INTERVAL '10' SECOND) AS s, SESSION_END(ts, INTERVAL '10' SECOND) AS e
  FROM bid GROUP BY bidder, SESSION(ts, INTERVAL '10' SECOND)`

func TestSessionWindows(t *testing.T) { sessionWindows(t, "pebble") }

// TestSessionWindowsMemoryBackend: the same on the memory state backend,
// whose state is the snapshot of each checkpoint.
func TestSessionWindowsMemoryBackend(t *testing.T) { sessionWindows(t, "memory") }

func sessionWindows(t *testing.T, backend string) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	execAll(t, c,
		"SET state.backend = '"+backend+"'",
		"CREATE TABLE bid (bidder BIGINT, price BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '20' SECOND)",
		"CREATE MATERIALIZED VIEW s AS "+sessionQuery,
		"CREATE MATERIALIZED VIEW se AS "+sessionQuery+" EMIT ON WINDOW CLOSE",
		// Every change of s's changelog, applied: must equal s.
		"CREATE MATERIALIZED VIEW slog AS SELECT bidder, n, s, e FROM s",
		"INSERT INTO bid VALUES (1, 10, '2026-01-01 00:00:00'), (1, 20, '2026-01-01 00:00:05'), (2, 1, '2026-01-01 00:00:02')",
		"INSERT INTO bid VALUES (1, 30, '2026-01-01 00:00:22')",
		"CHECKPOINT")
	want := "1 1 30 2026-01-01 00:00:22 2026-01-01 00:00:32\n" +
		"1 2 30 2026-01-01 00:00:00 2026-01-01 00:00:15\n" +
		"2 1 1 2026-01-01 00:00:02 2026-01-01 00:00:12"
	if got := rowsOf(t, c, sessionQuery); got != want {
		t.Fatalf("batch query:\n%s\nwant\n%s", got, want)
	}
	waitSorted(t, c, "SELECT * FROM s", want)
	// 00:00:13 bridges [00:00:00, 00:00:15) and [00:00:22, 00:00:32).
	execAll(t, c, "INSERT INTO bid VALUES (1, 40, '2026-01-01 00:00:13')", "CHECKPOINT")
	want = "1 4 100 2026-01-01 00:00:00 2026-01-01 00:00:32\n" +
		"2 1 1 2026-01-01 00:00:02 2026-01-01 00:00:12"
	if got := rowsOf(t, c, sessionQuery); got != want {
		t.Fatalf("batch query after a bridging row:\n%s\nwant\n%s", got, want)
	}
	waitSorted(t, c, "SELECT * FROM s", want)
	execAll(t, c, "CHECKPOINT")
	waitSorted(t, c, "SELECT * FROM slog", rowsOf(t, c, "SELECT bidder, n, s, e FROM s"))
	if got := rowsOf(t, c, "SELECT * FROM se"); got != "" {
		t.Fatalf("se has rows before any session closed:\n%s", got)
	}

	// Watermark 00:00:40 closes every session so far.
	execAll(t, c, "INSERT INTO bid VALUES (3, 5, '2026-01-01 00:01:00')", "CHECKPOINT")
	waitWatermark(t, c, "se", ts("2026-01-01 00:00:40"))
	waitSorted(t, c, "SELECT * FROM se", want)
	// 00:00:10 would start a session of bidder 1 ending at 00:00:20,
	// before the watermark: late. 00:00:39 is behind the watermark too,
	// but its session ends at 00:00:49: it counts.
	execAll(t, c, "INSERT INTO bid VALUES (1, 1000, '2026-01-01 00:00:10')",
		"INSERT INTO bid VALUES (3, 7, '2026-01-01 00:00:39')", "CHECKPOINT")
	waitLateRows(t, c, "s", 1)
	waitLateRows(t, c, "se", 1)
	want3 := "3 1 5 2026-01-01 00:01:00 2026-01-01 00:01:10\n3 1 7 2026-01-01 00:00:39 2026-01-01 00:00:49"
	waitSorted(t, c, "SELECT * FROM s", want+"\n"+want3)

	// kill -9: closed sessions stay closed, open ones go on.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "INSERT INTO bid VALUES (1, 2000, '2026-01-01 00:00:11')",
		"INSERT INTO bid VALUES (3, 1, '2026-01-01 00:01:05')", "CHECKPOINT")
	waitLateRows(t, c, "s", 2)
	want3 = "3 1 7 2026-01-01 00:00:39 2026-01-01 00:00:49\n3 2 6 2026-01-01 00:01:00 2026-01-01 00:01:15"
	waitSorted(t, c, "SELECT * FROM s", want+"\n"+want3)
	// The late rows are in the stream, so the batch query has them.
	execAll(t, c, "INSERT INTO bid VALUES (3, 1, '2026-01-01 00:02:00')", "CHECKPOINT")
	waitWatermark(t, c, "se", ts("2026-01-01 00:01:40"))
	waitSorted(t, c, "SELECT * FROM se", want+"\n"+want3)
	execAll(t, c, "CHECKPOINT")
	waitSorted(t, c, "SELECT * FROM slog", rowsOf(t, c, "SELECT bidder, n, s, e FROM s"))
}

func TestSessionWindowErrors(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE bid (bidder BIGINT, price BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE MATERIALIZED VIEW agg AS SELECT bidder, max(ts) AS ts FROM bid GROUP BY bidder")
	for q, code := range map[string]string{
		"SELECT count(*) FROM bid GROUP BY SESSION(ts, INTERVAL '0' SECOND)":                                                          "22023",
		"SELECT count(*) FROM bid GROUP BY SESSION(ts, INTERVAL '-1' SECOND)":                                                         "22023",
		"SELECT count(*) FROM bid GROUP BY SESSION(ts, INTERVAL '1' MONTH)":                                                           "22023",
		"SELECT count(*) FROM bid GROUP BY SESSION(ts, ts - ts)":                                                                      "22023",
		"SELECT count(*) FROM bid GROUP BY SESSION(ts, 10)":                                                                           "42804",
		"SELECT count(*) FROM bid GROUP BY SESSION(price, INTERVAL '1' SECOND)":                                                       "42804",
		"SELECT SESSION_START(ts, INTERVAL '2' SECOND), count(*) FROM bid GROUP BY SESSION(ts, INTERVAL '1' SECOND)":                  "42803",
		"SELECT SESSION_END(ts, INTERVAL '1' SECOND) FROM bid":                                                                        "42803",
		"SELECT SESSION_START(ts, INTERVAL '1' SECOND), count(*) FROM bid GROUP BY HOP(ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND)": "42803",
		"SELECT count(*) FROM bid WHERE SESSION(ts, INTERVAL '1' SECOND) IS NULL":                                                     "42803",
		"SELECT count(DISTINCT price) FROM bid GROUP BY SESSION(ts, INTERVAL '1' SECOND)":                                             "0A000",
		"CREATE MATERIALIZED VIEW v1 AS SELECT count(*) FROM bid GROUP BY SESSION(ts, INTERVAL '0' SECOND)":                           "22023",
		"CREATE MATERIALIZED VIEW v2 AS SELECT bidder, count(*) FROM agg GROUP BY bidder, SESSION(ts, INTERVAL '1' SECOND)":           "0A000",
		"CREATE MATERIALIZED VIEW v3 AS SELECT count(DISTINCT price) FROM bid GROUP BY SESSION(ts, INTERVAL '1' SECOND)":              "0A000",
	} {
		_, err := c.Exec(context.Background(), q)
		if err == nil || !strings.Contains(err.Error(), code) {
			t.Errorf("%s: %v, want %s", q, err, code)
		}
	}
	if got := rowsOf(t, c, "SELECT count(*) FROM streamdb_jobs"); got != "1" {
		t.Fatalf("%s jobs after refused statements, want 1 (agg)", got)
	}
	// The server still answers.
	execAll(t, c, "INSERT INTO bid VALUES (1, 1, '2026-01-01 00:00:00')")
	if got := rowsOf(t, c, "SELECT count(*) FROM bid GROUP BY SESSION(ts, INTERVAL '1' SECOND)"); got != "1" {
		t.Fatalf("count: %s", got)
	}
}

// waitSorted polls q until its rows (rowsOf) are want.
func waitSorted(t *testing.T, c *pgx.Conn, q, want string) {
	t.Helper()
	start := time.Now()
	for {
		got := rowsOf(t, c, q)
		if got == want {
			return
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s:\n%s\nwant\n%s", q, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSessionTableFunction: SESSION(table, ts, gap) in FROM, partitioned
// by the GROUP BY keys beside window_start and window_end, is the group
// window's session.
func TestSessionTableFunction(t *testing.T) {
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	tvf := `SELECT bidder, window_start, window_end, count(*) AS n, sum(price)::bigint AS p
	  FROM SESSION(bid, ts, INTERVAL '10' SECOND) WHERE price > 0 GROUP BY bidder, window_start, window_end`
	group := `SELECT bidder, SESSION_START(ts, INTERVAL '10' SECOND), SESSION_END(ts, INTERVAL '10' SECOND), count(*), sum(price)::bigint
	  FROM bid WHERE price > 0 GROUP BY bidder, SESSION(ts, INTERVAL '10' SECOND)`
	execAll(t, c,
		"CREATE TABLE bid (bidder BIGINT, price BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
		"CREATE MATERIALIZED VIEW st AS "+tvf,
		"CREATE MATERIALIZED VIEW ste AS "+tvf+" EMIT ON WINDOW CLOSE",
		"INSERT INTO bid VALUES (1, 1, '2026-01-01 00:00:00'), (1, 2, '2026-01-01 00:00:08'), (2, 3, '2026-01-01 00:00:01'), (1, 0, '2026-01-01 00:00:30')",
		"INSERT INTO bid VALUES (1, 4, '2026-01-01 00:00:25'), (2, 5, '2026-01-01 00:00:40')",
		"CHECKPOINT")
	want := "1 2026-01-01 00:00:00 2026-01-01 00:00:18 2 3\n1 2026-01-01 00:00:25 2026-01-01 00:00:35 1 4\n" +
		"2 2026-01-01 00:00:01 2026-01-01 00:00:11 1 3\n2 2026-01-01 00:00:40 2026-01-01 00:00:50 1 5"
	if got := rowsOf(t, c, tvf); got != want {
		t.Fatalf("SESSION table function:\n%s\nwant\n%s", got, want)
	}
	if got := rowsOf(t, c, group); got != want {
		t.Fatalf("GROUP BY SESSION:\n%s\nwant\n%s", got, want)
	}
	waitSorted(t, c, "SELECT * FROM st", want)
	// Watermark 00:00:35: the first three sessions closed.
	waitWatermark(t, c, "ste", ts("2026-01-01 00:00:35"))
	waitSorted(t, c, "SELECT * FROM ste", "1 2026-01-01 00:00:00 2026-01-01 00:00:18 2 3\n1 2026-01-01 00:00:25 2026-01-01 00:00:35 1 4\n"+
		"2 2026-01-01 00:00:01 2026-01-01 00:00:11 1 3")
	for q, code := range map[string]string{
		"SELECT * FROM SESSION(bid, ts, INTERVAL '10' SECOND)":                                                                   "0A000",
		"SELECT count(*) FROM SESSION(bid, ts, INTERVAL '10' SECOND) WHERE window_end > now() GROUP BY window_start, window_end": "0A000",
		"SELECT count(*) FROM SESSION(bid, ts, INTERVAL '0' SECOND) GROUP BY window_start, window_end":                           "22023",
		"SELECT count(*) FROM SESSION(bid, price, INTERVAL '1' SECOND) GROUP BY window_start, window_end":                        "42804",
	} {
		_, err := c.Exec(context.Background(), q)
		if err == nil || !strings.Contains(err.Error(), code) {
			t.Errorf("%s: %v, want %s", q, err, code)
		}
	}
}

// sessionPG is the sessions of TestSessionWindowsCrash's query computed by
// PostgreSQL 15 without session windows: a row more than the gap (2 s)
// after its key's previous row starts a new session (gaps and islands),
// which ends the gap after its last row.
const sessionPG = `SELECT k, count(*) AS n, sum(v)::bigint AS s, min(ts) AS ws, max(ts) + INTERVAL '2' SECOND AS we
  FROM (SELECT k, v, ts, sum(brk) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid
        FROM (SELECT k, v, ts, CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) < INTERVAL '2' SECOND
                THEN 0 ELSE 1 END AS brk FROM ev) a) b
  GROUP BY k, sid`

// TestSessionWindowsCrash: session views under load across kill -9.
// Afterwards the rows the stream holds are copied to PostgreSQL 15, the
// oracle: the default view and the batch query equal its gaps-and-islands
// sessions (sessionPG); the EMIT ON WINDOW CLOSE view holds exactly those
// its watermark closed, each once, and its changelog (read by a view over
// it) took inserts only.
func TestSessionWindowsCrash(t *testing.T) {
	pg := StartPG(t)
	pgc := pg.Conn(t)
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	ctx := context.Background()
	q := `SELECT k, count(*) AS n, sum(v)::bigint AS s, SESSION_START(ts, INTERVAL '2' SECOND) AS ws,
	    SESSION_END(ts, INTERVAL '2' SECOND) AS we FROM ev GROUP BY k, SESSION(ts, INTERVAL '2' SECOND)`
	execAll(t, c,
		"SET checkpoint.interval = '200ms'",
		"CREATE TABLE ev (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE MATERIALIZED VIEW sv AS "+q,
		"CREATE MATERIALIZED VIEW se AS "+q+" EMIT ON WINDOW CLOSE",
		"CREATE MATERIALIZED VIEW selog AS SELECT k, ws, n FROM se",
	)
	base := ts("2026-01-01 00:00:00")
	// Batch b covers event seconds [5b, 5b+5): each of 4 keys has a row
	// every 300 ms except in a pause of 2.4 s (a gap: a new session)
	// placed by key and batch, so sessions span batches and end inside
	// them.
	insert := func(c *pgx.Conn, b int) error {
		var vals []string
		for k := 0; k < 4; k++ {
			pause := (b*7 + k*3) % 10 // in 500 ms steps
			for ms := 0; ms < 5000; ms += 300 {
				if ms >= pause*500 && ms < pause*500+2400 {
					continue
				}
				at := base.Add(time.Duration(b*5000+ms) * time.Millisecond)
				vals = append(vals, fmt.Sprintf("(%d, %d, '%s')", k, b*10+k, at.Format("2006-01-02 15:04:05.000")))
			}
		}
		_, err := c.Exec(ctx, "INSERT INTO ev VALUES "+strings.Join(vals, ", "))
		return err
	}
	var inserted atomic.Int64
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for b := 0; b < 40; b++ {
			if insert(c, b) != nil {
				return
			}
			inserted.Add(1)
		}
	}()
	for start := time.Now(); inserted.Load() < 8 && time.Since(start) < time.Minute; {
		time.Sleep(20 * time.Millisecond)
	}
	srv.Kill9()
	<-loadDone
	srv.Restart(t)
	c = srv.Conn(t)
	var maxTS time.Time
	if err := c.QueryRow(ctx, "SELECT max(ts) FROM ev").Scan(&maxTS); err != nil {
		t.Fatal(err)
	}
	batch := int(maxTS.Sub(base)/time.Second)/5 + 1
	t.Logf("killed after %d acknowledged batches; %d committed", inserted.Load(), batch)
	for ; batch < 40; batch++ {
		if err := insert(c, batch); err != nil {
			t.Fatal(err)
		}
	}
	execAll(t, c, "CHECKPOINT", "CHECKPOINT")
	mustExec(t, pgc, "PostgreSQL", "CREATE TABLE ev (k BIGINT, v BIGINT, ts TIMESTAMP)")
	rows, err := c.Query(ctx, "SELECT k, v, ts FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	evRows, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgc.CopyFrom(ctx, pgx.Identifier{"ev"}, []string{"k", "v", "ts"}, pgx.CopyFromRows(evRows)); err != nil {
		t.Fatal(err)
	}
	want, err := queryRows(pgc, sessionPG)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := queryRows(c, q); err != nil || diffRows(got, want) != "" {
		t.Fatalf("the batch query differs from PostgreSQL's sessions (%v)\n%s", err, diffRows(got, want))
	}
	waitPGRows(t, c, "SELECT * FROM sv", want)
	wm, ok := jobWatermark(t, c, "se")
	if !ok {
		t.Fatal("se has no watermark")
	}
	closed, err := queryRows(pgc, "SELECT * FROM ("+sessionPG+") AS t WHERE we <= '"+wm.Format("2006-01-02 15:04:05.999999")+"'")
	if err != nil {
		t.Fatal(err)
	}
	waitPGRows(t, c, "SELECT * FROM se", closed)
	execAll(t, c, "CHECKPOINT")
	waitSorted(t, c, "SELECT k, ws, n FROM selog", rowsOf(t, c, "SELECT k, ws, n FROM se"))
	if dup := rowsOf(t, c, "SELECT k, ws, count(*) FROM selog GROUP BY k, ws HAVING count(*) > 1"); dup != "" {
		t.Fatalf("sessions emitted more than once:\n%s", dup)
	}
	for _, v := range []string{"sv", "se"} {
		if n := lateRows(t, c, v); n != 0 {
			t.Fatalf("%s: %d late rows over rows in time order", v, n)
		}
	}
	t.Logf("%d rows, %d sessions, %d closed at watermark %s", len(evRows), len(want), len(closed), wm.Format(time.DateTime))
}

// waitPGRows polls q until its rows (queryRows) are want, PostgreSQL's.
func waitPGRows(t *testing.T, c *pgx.Conn, q string, want []string) {
	t.Helper()
	start := time.Now()
	for {
		got, err := queryRows(c, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		d := diffRows(got, want)
		if d == "" {
			return
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s differs from PostgreSQL's sessions\n%s", q, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSessionPsql: a psql user watches a session view with EMIT CHANGES:
// a bridging row shows as the update of the first session it joins and
// the delete of the second, and the EMIT ON WINDOW CLOSE view appends each closed session
// once; SHOW JOBS counts the late row.
func TestSessionPsql(t *testing.T) {
	psql, err := osexec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	q := `SELECT k, count(*) AS n, SESSION_START(ts, INTERVAL '10' SECOND) AS ws, SESSION_END(ts, INTERVAL '10' SECOND) AS we
	  FROM ev GROUP BY k, SESSION(ts, INTERVAL '10' SECOND)`
	execAll(t, c,
		"CREATE TABLE ev (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '15' SECOND)",
		"CREATE MATERIALIZED VIEW sv AS "+q,
		"CREATE MATERIALIZED VIEW se AS "+q+" EMIT ON WINDOW CLOSE")
	cmd, lines := psqlCopyOut(t, psql, srv, "COPY (SELECT k, n, ws, we FROM sv EMIT CHANGES) TO STDOUT")
	defer cmd.Process.Kill()
	cmdE, linesE := psqlCopyOut(t, psql, srv, "COPY (SELECT k, n, ws, we FROM se EMIT CHANGES) TO STDOUT")
	defer cmdE.Process.Kill()
	for start := time.Now(); changeStreams(t, c) != 2; {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the change streams did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	expect := func(lines <-chan string, want ...string) {
		t.Helper()
		var got []string
		for range want {
			select {
			case l := <-lines:
				got = append(got, l)
			case <-time.After(30 * time.Second):
				t.Fatalf("psql printed %q; want %q", got, want)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("psql printed %q, want %q", got, want)
		}
	}
	execAll(t, c, "INSERT INTO ev VALUES (1, '2026-01-01 00:00:00'), (1, '2026-01-01 00:00:15')")
	expect(lines, "1\t1\t2026-01-01 00:00:00\t2026-01-01 00:00:10\tinsert", "1\t1\t2026-01-01 00:00:15\t2026-01-01 00:00:25\tinsert")
	execAll(t, c, "INSERT INTO ev VALUES (1, '2026-01-01 00:00:07')")
	// The first session takes the second: updated, the second deleted.
	expect(lines, "1\t1\t2026-01-01 00:00:00\t2026-01-01 00:00:10\tupdate_before", "1\t1\t2026-01-01 00:00:15\t2026-01-01 00:00:25\tdelete",
		"1\t3\t2026-01-01 00:00:00\t2026-01-01 00:00:25\tupdate_after")
	// Watermark 00:00:25 closes it; 00:00:01 of key 2 is late.
	execAll(t, c, "INSERT INTO ev VALUES (2, '2026-01-01 00:00:40')")
	expect(linesE, "1\t3\t2026-01-01 00:00:00\t2026-01-01 00:00:25\tinsert")
	execAll(t, c, "INSERT INTO ev VALUES (2, '2026-01-01 00:00:01')")
	waitLateRows(t, c, "sv", 1)
	host, port, _ := strings.Cut(srv.Addr(), ":")
	out, err := osexec.Command(psql, "-X", "-A", "-t", "-h", host, "-p", port, "-U", "streamdb", "streamdb", "-c", "SHOW JOBS").CombinedOutput()
	if err != nil {
		t.Fatalf("psql SHOW JOBS: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// ... watermark | late_rows | ...
		if strings.HasPrefix(l, "sv|") && !strings.Contains(l, "|2026-01-01 00:00:25|1|") {
			t.Fatalf("SHOW JOBS: %s: want watermark 2026-01-01 00:00:25 and 1 late row", l)
		}
	}
	t.Logf("SHOW JOBS:\n%s", out)
}
