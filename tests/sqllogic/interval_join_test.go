package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
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

func TestIntervalJoinFreedByWatermark(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	ctx := context.Background()
	exec := func(stmts ...string) { t.Helper(); execAll(t, c, stmts...) }
	exec("SET job.late_rows = 'record'",
		"CREATE TABLE a (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE TABLE b (k BIGINT, w BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)")
	for v, q := range ijQueries {
		exec("CREATE MATERIALIZED VIEW " + v + " AS " + q)
	}
	// Rows of key 99 are late: the view never has them, the batch query
	// does (in ij_q7 the late row tops the first window in the batch
	// query, not in the view, which keeps its row).
	check := func(when string) {
		t.Helper()
		exec("CHECKPOINT")
		for v, q := range ijQueries {
			cond := " WHERE k <> 99"
			if v == "ij_q7" {
				cond = " WHERE ts >= '2026-01-01 00:00:10'"
			}
			got := rowSet(t, c, "SELECT * FROM "+v+cond)
			want := rowSet(t, c, "SELECT * FROM ("+q+") AS t"+cond)
			if got != want {
				t.Fatalf("%s: %s differs from its batch query: %s", when, v, setDiff(got, want))
			}
			if strings.Count(got, "; ")+1 < 8 {
				t.Fatalf("%s: %s has too few rows to show anything", when, v)
			}
		}
	}
	stateBytes := func(v string) int64 {
		var n int64
		if err := c.QueryRow(ctx, "SELECT state_bytes FROM streamdb_jobs WHERE name = $1", v).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := map[string]int64{}
	for s := 0; s < 30; s++ {
		ijStep(t, exec, s)
		if s%10 == 9 {
			check(fmt.Sprintf("step %d", s))
			for v := range ijQueries {
				n := stateBytes(v)
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
	// A late pair (both rows behind the watermark, in a closed window):
	// they would join, the views stay as they are.
	late := func(v, w int) {
		t.Helper()
		exec(fmt.Sprintf("INSERT INTO a VALUES (99, %d, '2026-01-01 00:00:01')", v),
			fmt.Sprintf("INSERT INTO b VALUES (99, %d, '2026-01-01 00:00:01.5')", w))
	}
	late(100001, 1) // a would top its window (ij_q7)
	exec("CHECKPOINT")
	for v := range ijQueries {
		waitLateRows(t, c, v, 2)
	}
	check("after a late pair")
	for v, q := range ijQueries {
		if rowSet(t, c, "SELECT * FROM ("+q+") AS t WHERE k = 99") == "" {
			t.Fatalf("%s: the late pair does not join in the batch query: the test shows nothing", v)
		}
	}
	if got := rowSet(t, c, "SELECT * FROM ij_q7 WHERE ts < '2026-01-01 00:00:10'"); got != "3|23|2026-01-01 00:00:09.2" {
		t.Fatalf("ij_q7's first window changed: %s", got)
	}
	var op string
	if err := c.QueryRow(ctx, "SELECT operator FROM streamdb_late_rows WHERE job = 'ij_between' LIMIT 1").Scan(&op); err != nil || !strings.HasPrefix(op, "interval join") {
		t.Fatalf("ij_between's late row's operator: %q, %v", op, err)
	}
	if err := c.QueryRow(ctx, "SELECT operator FROM streamdb_late_rows WHERE job = 'wj_tumble' LIMIT 1").Scan(&op); err != nil || !strings.HasPrefix(op, "window join") {
		t.Fatalf("wj_tumble's late row's operator: %q, %v", op, err)
	}
	// kill -9 with rows not yet committed: replayed rows meet the same
	// watermark, restored rows are freed when their time comes.
	ijStep(t, exec, 30)
	late(100002, 2)
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	late(100003, 3)
	for s := 31; s < 40; s++ {
		ijStep(t, exec, s)
	}
	for v := range ijQueries {
		waitLateRows(t, c, v, 6)
	}
	check("after kill -9")
	srv.Stop()
	// Left: the rows of the last step or two, not forty steps' 1,920.
	for v := range ijQueries {
		n := stateEntries(t, dir, v)
		t.Logf("%s: %d state entries after 40 steps of 48 rows", v, n)
		if n > 100 {
			t.Errorf("%s: %d state entries after 40 steps of 48 rows, want at most 100", v, n)
		}
	}
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
