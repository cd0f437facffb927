package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Interval and window joins freed by watermark (issue 12): an inner join
// bounding one side's event time by the other's (BETWEEN, or >= / <= /
// < / >), or joining two TUMBLEs on their windows, deletes its rows once
// the watermark has passed every partner they could meet, drops (counts,
// records) rows arriving behind it, stays equal to its batch query, and
// after kill -9 frees what it had not yet freed.

var ijQueries = map[string]string{
	"ij_between": `SELECT a.k, a.v, b.w, a.ts AS ats, b.ts AS bts FROM a JOIN b
		ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2' SECOND AND b.ts + INTERVAL '1' SECOND`,
	"ij_compare": `SELECT a.k, a.v, b.w, a.ts AS ats, b.ts AS bts FROM a JOIN b
		ON a.k = b.k AND b.ts <= a.ts + INTERVAL '1' SECOND AND b.ts > a.ts - INTERVAL '2' SECOND`,
	"wj_tumble": `SELECT x.k, x.window_start, x.window_end, x.v, y.w
		FROM TUMBLE(a, ts, INTERVAL '10' SECOND) AS x JOIN TUMBLE(b, ts, INTERVAL '10' SECOND) AS y
		ON x.k = y.k AND x.window_start = y.window_start AND x.window_end = y.window_end`,
	// Nexmark q7's shape: the time bounds are a WHERE over the join (the
	// planner leaves it a filter over the join's pairs).
	"ij_q7": `SELECT r.k, r.v, r.ts FROM a AS r
		JOIN (SELECT max(v) AS maxv, window_end AS ts FROM TUMBLE(a, ts, INTERVAL '10' SECOND) GROUP BY window_end) AS m
		ON r.v = m.maxv WHERE r.ts BETWEEN m.ts - INTERVAL '10' SECOND AND m.ts`,
	// Nexmark q8's shape: two window aggregates joined on their windows.
	"wj_q8": `SELECT p.k, p.ws, p.we FROM
		(SELECT k, window_start AS ws, window_end AS we FROM TUMBLE(a, ts, INTERVAL '10' SECOND) GROUP BY k, window_start, window_end) AS p
		JOIN (SELECT k, window_start AS ws, window_end AS we FROM TUMBLE(b, ts, INTERVAL '10' SECOND) GROUP BY k, window_start, window_end) AS q
		ON p.k = q.k AND p.ws = q.ws AND p.we = q.we`,
}

// ijStep inserts step s's rows: 24 rows a table, 4 keys, in event-time
// order over the step's 10 seconds.
func ijStep(t *testing.T, exec func(...string), s int) {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s) * 10 * time.Second)
	var a, b strings.Builder
	for i := 0; i < 24; i++ {
		if i > 0 {
			a.WriteString(", ")
			b.WriteString(", ")
		}
		at := base.Add(time.Duration(i) * 400 * time.Millisecond)
		fmt.Fprintf(&a, "(%d, %d, '%s')", i%4, s*100+i, at.Format("2006-01-02 15:04:05.000"))
		fmt.Fprintf(&b, "(%d, %d, '%s')", (i+1)%4, s*1000+i, at.Add(200*time.Millisecond).Format("2006-01-02 15:04:05.000"))
	}
	exec("INSERT INTO a VALUES "+a.String(), "INSERT INTO b VALUES "+b.String())
}

// ijRig is the setup the interval-join tests over tables a and b share:
// both tables with a watermark 1 s behind, a view per query, and checks
// that each view equals its batch query and that the watermark frees
// its rows.
type ijRig struct {
	t       *testing.T
	dir     string
	srv     *Server
	c       *pgx.Conn
	queries map[string]string
	// conds maps a view to the condition that leaves out its late rows in
	// both the view and its batch query; by default " WHERE k <> 99".
	conds map[string]string
}

// newIJRig starts a server, runs pre, creates a and b and a view per
// query.
func newIJRig(t *testing.T, queries map[string]string, pre ...string) *ijRig {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	r := &ijRig{t: t, dir: dir, srv: srv, c: srv.Conn(t), queries: queries}
	r.exec(pre...)
	r.exec("CREATE TABLE a (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE TABLE b (k BIGINT, w BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)")
	for v, q := range queries {
		r.exec("CREATE MATERIALIZED VIEW " + v + " AS " + q)
	}
	return r
}

func (r *ijRig) exec(stmts ...string) { r.t.Helper(); execAll(r.t, r.c, stmts...) }

// check commits a checkpoint and compares every view with its batch
// query, bar the late rows.
func (r *ijRig) check(when string) {
	t := r.t
	t.Helper()
	r.exec("CHECKPOINT")
	for v, q := range r.queries {
		cond, ok := r.conds[v]
		if !ok {
			cond = " WHERE k <> 99"
		}
		got := rowSet(t, r.c, "SELECT * FROM "+v+cond)
		want := rowSet(t, r.c, "SELECT * FROM ("+q+") AS t"+cond)
		if got != want {
			t.Fatalf("%s: %s differs from its batch query: %s", when, v, setDiff(got, want))
		}
		if strings.Count(got, "; ")+1 < 8 {
			t.Fatalf("%s: %s has too few rows to show anything", when, v)
		}
	}
}

// steps runs steps 0 to n-1, checking the views after every tenth and
// that no view's state grows past twice what it held after step 9.
func (r *ijRig) steps(n int, step func(*testing.T, func(...string), int)) {
	t := r.t
	t.Helper()
	first := map[string]int64{}
	for s := 0; s < n; s++ {
		step(t, r.exec, s)
		if s%10 != 9 {
			continue
		}
		r.check(fmt.Sprintf("step %d", s))
		for v := range r.queries {
			var n int64
			if err := r.c.QueryRow(context.Background(), "SELECT state_bytes FROM streamdb_jobs WHERE name = $1", v).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if s == 9 {
				first[v] = n
			}
			t.Logf("after step %d: %s holds %d bytes", s, v, n)
			if n > 2*first[v] {
				t.Errorf("step %d: %s holds %d bytes, %d after step 9: rows are not freed", s, v, n, first[v])
			}
		}
	}
}

// kill9 kills the server with kill -9 and restarts it.
func (r *ijRig) kill9() {
	r.srv.Kill9()
	r.srv.Restart(r.t)
	r.c = r.srv.Conn(r.t)
}

// stopAndCountState stops the server and checks that no view keeps more
// than max state entries after what steps describes.
func (r *ijRig) stopAndCountState(steps string, max int) {
	t := r.t
	t.Helper()
	r.srv.Stop()
	for v := range r.queries {
		n := stateEntries(t, r.dir, v)
		t.Logf("%s: %d state entries after %s", v, n, steps)
		if n > max {
			t.Errorf("%s: %d state entries after %s, want at most %d", v, n, steps, max)
		}
	}
}

func TestIntervalJoinFreedByWatermark(t *testing.T) {
	r := newIJRig(t, ijQueries, "SET job.late_rows = 'record'")
	// Rows of key 99 are late: the view never has them, the batch query
	// does (in ij_q7 the late row tops the first window in the batch
	// query, not in the view, which keeps its row).
	r.conds = map[string]string{"ij_q7": " WHERE ts >= '2026-01-01 00:00:10'"}
	r.steps(30, ijStep)
	// A late pair (both rows behind the watermark, in a closed window):
	// they would join, the views stay as they are.
	late := func(v, w int) {
		t.Helper()
		r.exec(fmt.Sprintf("INSERT INTO a VALUES (99, %d, '2026-01-01 00:00:01')", v),
			fmt.Sprintf("INSERT INTO b VALUES (99, %d, '2026-01-01 00:00:01.5')", w))
	}
	late(100001, 1) // a would top its window (ij_q7)
	r.exec("CHECKPOINT")
	for v := range ijQueries {
		waitLateRows(t, r.c, v, 2)
	}
	r.check("after a late pair")
	for v, q := range ijQueries {
		if rowSet(t, r.c, "SELECT * FROM ("+q+") AS t WHERE k = 99") == "" {
			t.Fatalf("%s: the late pair does not join in the batch query: the test shows nothing", v)
		}
	}
	if got := rowSet(t, r.c, "SELECT * FROM ij_q7 WHERE ts < '2026-01-01 00:00:10'"); got != "3|23|2026-01-01 00:00:09.2" {
		t.Fatalf("ij_q7's first window changed: %s", got)
	}
	ctx := context.Background()
	var op string
	if err := r.c.QueryRow(ctx, "SELECT operator FROM streamdb_late_rows WHERE job = 'ij_between' LIMIT 1").Scan(&op); err != nil || !strings.HasPrefix(op, "interval join") {
		t.Fatalf("ij_between's late row's operator: %q, %v", op, err)
	}
	if err := r.c.QueryRow(ctx, "SELECT operator FROM streamdb_late_rows WHERE job = 'wj_tumble' LIMIT 1").Scan(&op); err != nil || !strings.HasPrefix(op, "window join") {
		t.Fatalf("wj_tumble's late row's operator: %q, %v", op, err)
	}
	// kill -9 with rows not yet committed: replayed rows meet the same
	// watermark, restored rows are freed when their time comes.
	ijStep(t, r.exec, 30)
	late(100002, 2)
	r.kill9()
	late(100003, 3)
	for s := 31; s < 40; s++ {
		ijStep(t, r.exec, s)
	}
	for v := range ijQueries {
		waitLateRows(t, r.c, v, 6)
	}
	r.check("after kill -9")
	// Left: the rows of the last step or two, not forty steps' 1,920.
	r.stopAndCountState("40 steps of 48 rows", 100)
}

// setDiff shows the rows only in got and only in want (rowSet forms).
func setDiff(got, want string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, r := range strings.Split(s, "; ") {
			m[r] = true
		}
		return m
	}
	g, w := in(got), in(want)
	var extra, missing []string
	for r := range g {
		if !w[r] {
			extra = append(extra, r)
		}
	}
	for r := range w {
		if !g[r] {
			missing = append(missing, r)
		}
	}
	return fmt.Sprintf("only in the view: %v; only in the batch query: %v", extra, missing)
}

// TestIntervalJoinFreesEvictedRows: rows of an interval join's groups
// evicted to the state table (a 1 MiB state cache) are deleted there when
// the watermark passes them, without being read back; a LEFT join's
// groups are read back to be freed (their rows left pin the matches of
// the rows freed), and its view stays equal to the batch LEFT JOIN.
func TestIntervalJoinFreesEvictedRows(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 30,000 rows")
	}
	dir := t.TempDir()
	srv := StartServer(t, dir, "--state-cache-mb", "1")
	c := srv.Conn(t)
	ctx := context.Background()
	const q = `SELECT a.k, a.v, b.w FROM a JOIN b
		ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '100' SECOND AND b.ts + INTERVAL '100' SECOND`
	const ql = `SELECT a.k, a.v, b.w FROM a LEFT JOIN b
		ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '100' SECOND AND b.ts + INTERVAL '30' SECOND`
	execAll(t, c,
		"CREATE TABLE a (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE TABLE b (k BIGINT, w BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE MATERIALIZED VIEW ij_spill AS "+q,
		"CREATE MATERIALIZED VIEW ij_spill_left AS "+ql)
	// 30 steps of 10 s, 500 rows a table each, keys of their own per step:
	// the join holds ten steps' rows (about 1 MB), so old groups are
	// evicted before the watermark frees them.
	for s := 0; s < 30; s++ {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s) * 10 * time.Second)
		var a, b strings.Builder
		for i := 0; i < 500; i++ {
			if i > 0 {
				a.WriteString(", ")
				b.WriteString(", ")
			}
			at := base.Add(time.Duration(i) * 20 * time.Millisecond).Format("2006-01-02 15:04:05.000")
			fmt.Fprintf(&a, "(%d, %d, '%s')", s*1000+i%250, s*1000+i, at)
			fmt.Fprintf(&b, "(%d, %d, '%s')", s*1000+(i+7)%260, s*1000+i, at)
		}
		execAll(t, c, "INSERT INTO a VALUES "+a.String(), "INSERT INTO b VALUES "+b.String())
	}
	execAll(t, c, "CHECKPOINT")
	if got, want := rowSet(t, c, "SELECT * FROM ij_spill"), rowSet(t, c, q); got != want {
		t.Fatalf("ij_spill differs from its batch query: %s", setDiff(got, want))
	}
	if got, want := rowSet(t, c, "SELECT * FROM ij_spill_left"), rowSet(t, c, ql); got != want {
		t.Fatalf("ij_spill_left differs from its batch query: %s", setDiff(got, want))
	}
	for _, v := range []string{"ij_spill", "ij_spill_left"} {
		var state, evicted int64
		if err := c.QueryRow(ctx, "SELECT state_bytes, evicted FROM streamdb_jobs WHERE name = $1", v).Scan(&state, &evicted); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes held, %d groups evicted", v, state, evicted)
		if evicted == 0 {
			t.Fatalf("%s: no group evicted: the test shows nothing", v)
		}
	}
	srv.Stop()
	// Left: about the last 11 steps' 11,000 rows, not 30,000.
	for _, v := range []string{"ij_spill", "ij_spill_left"} {
		n := stateEntries(t, dir, v)
		t.Logf("%s: %d state entries after 30 steps of 1,000 rows", v, n)
		if n > 13000 {
			t.Errorf("%s: %d state entries after 30 steps of 1,000 rows, want at most 13,000", v, n)
		}
	}
}
