package sqllogic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// distinctViews are views whose aggregates keep a multiset of values per
// group (count/sum DISTINCT; min/max over a retracting input: a view over
// a GROUP BY view, an outer join), each with the batch query over the
// streams that computes the same rows.
var distinctViews = []struct{ name, def, batch string }{
	{"dv", "SELECT k, count(DISTINCT v) AS dv, sum(DISTINCT v) AS sv, min(v) AS mn, max(v) AS mx FROM t GROUP BY k",
		"SELECT k, count(DISTINCT v), sum(DISTINCT v), min(v), max(v) FROM t GROUP BY k"},
	{"a", "SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k",
		"SELECT k, count(*), sum(v) FROM t GROUP BY k"},
	{"byc", "SELECT c, count(DISTINCT s) AS ds, min(s) AS mn, max(s) AS mx, min(k) AS mk, max(k) AS xk, count(*) AS n FROM a GROUP BY c",
		"SELECT c, count(DISTINCT s), min(s), max(s), min(k), max(k), count(*) FROM (SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k) x GROUP BY c"},
	{"glob", "SELECT count(DISTINCT s) AS ds, min(s) AS mn, max(s) AS mx FROM a",
		"SELECT count(DISTINCT s), min(s), max(s) FROM (SELECT k, sum(v) AS s FROM t GROUP BY k) x"},
	{"jm", "SELECT t.k, min(u.w) AS mw, max(u.w) AS xw, count(DISTINCT u.w) AS dw, count(*) AS n FROM t LEFT JOIN u ON t.k = u.k GROUP BY t.k",
		"SELECT t.k, min(u.w), max(u.w), count(DISTINCT u.w), count(*) FROM t LEFT JOIN u ON t.k = u.k GROUP BY t.k"},
}

// TestDistinctMinMaxRestarts: views with count(DISTINCT) and min/max over
// retracting inputs agree with the batch queries over the same input after
// every round of inserts, across a graceful restart and a kill -9 (their
// per-value state is read back, and later changes retract from it).
func TestDistinctMinMaxRestarts(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)", "CREATE TABLE u (k BIGINT, w BIGINT)")
	for _, v := range distinctViews {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+v.name+" AS "+v.def)
	}
	r := rand.New(rand.NewPCG(18, 2))
	insert := func(c *pgx.Conn, rows int) {
		var b, bu strings.Builder
		for range rows {
			// Few values per key, so sums repeat across keys and distinct
			// counts and extremes move as keys grow.
			fmt.Fprintf(&b, "%d\t%d\n", r.IntN(60), r.IntN(12))
			if r.IntN(4) == 0 {
				fmt.Fprintf(&bu, "%d\t%d\n", r.IntN(80), r.IntN(20))
			}
		}
		ctx := context.Background()
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY t FROM STDIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(bu.String()), "COPY u FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	check := func(c *pgx.Conn, when string) {
		t.Helper()
		for _, v := range distinctViews {
			want := rowSet(t, c, v.batch)
			deadline := time.Now().Add(30 * time.Second)
			for {
				execAll(t, c, "CHECKPOINT")
				got := rowSet(t, c, "SELECT * FROM "+v.name)
				if got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: view %s differs from its batch query\nview:  %s\nbatch: %s", when, v.name, got, want)
				}
			}
		}
	}
	insert(c, 400)
	check(c, "first inserts")
	insert(c, 400)
	check(c, "second inserts")

	srv.Restart(t)
	c = srv.Conn(t)
	check(c, "after a restart")
	insert(c, 400)
	check(c, "inserts after the restart")

	insert(c, 200)
	execAll(t, c, "CHECKPOINT")
	insert(c, 200) // some of it committed, maybe some not: replayed after the crash
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	check(c, "after kill -9")
	insert(c, 400)
	check(c, "inserts after kill -9")
}

// TestDistinctCheckpointCost: a CHECKPOINT after the same 1,000 groups
// changed costs about the same over a count(DISTINCT) view of 1K groups and
// one of 100K (issue 18: it took 53 ms and 483 ms when every changed group
// re-encoded every group's values). Durations are logged, not asserted.
func TestDistinctCheckpointCost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 100K groups; run in the plain test step")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	sizes := []int{1_000, 100_000}
	copyIn := func(table string, b *strings.Builder) {
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY "+table+" FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	timed := func() time.Duration {
		start := time.Now()
		execAll(t, c, "CHECKPOINT")
		return time.Since(start)
	}
	for _, groups := range sizes {
		name := fmt.Sprintf("d%d", groups)
		execAll(t, c, "CREATE TABLE "+name+"_in (k BIGINT, v BIGINT)",
			"CREATE MATERIALIZED VIEW "+name+" AS SELECT k, count(DISTINCT v) AS dv FROM "+name+"_in GROUP BY k")
		var b strings.Builder
		for k := range groups {
			for v := range 4 {
				fmt.Fprintf(&b, "%d\t%d\n", k, v)
			}
		}
		copyIn(name+"_in", &b)
		t.Logf("count(DISTINCT) view of %d groups: first CHECKPOINT (every group new, %d rows) %v",
			groups, 4*groups, timed().Round(time.Millisecond))
	}
	execAll(t, c, "CHECKPOINT", "CHECKPOINT")
	// Rounds alternate between the views, so both see the same background
	// (compactions, other processes).
	const rounds = 6
	total := make([]time.Duration, len(sizes))
	for round := range rounds {
		for i, groups := range sizes {
			var b strings.Builder
			for j := range 1000 {
				fmt.Fprintf(&b, "%d\t%d\n", (j*groups/1000+round)%groups, 100+round)
			}
			copyIn(fmt.Sprintf("d%d_in", groups), &b)
			total[i] += timed()
		}
	}
	for i, groups := range sizes {
		name := fmt.Sprintf("d%d", groups)
		var n, dv int64
		if err := c.QueryRow(ctx, "SELECT count(*), sum(dv) FROM "+name).Scan(&n, &dv); err != nil {
			t.Fatal(err)
		}
		if n != int64(groups) || dv != int64(4*groups+rounds*1000) {
			t.Fatalf("%s: %d groups, %d distinct values; want %d and %d", name, n, dv, groups, 4*groups+rounds*1000)
		}
		t.Logf("count(DISTINCT) view of %d groups: CHECKPOINT after 1,000 changed groups %v (mean of %d)",
			groups, (total[i] / rounds).Round(time.Millisecond), rounds)
	}
}
