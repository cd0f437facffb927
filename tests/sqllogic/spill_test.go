package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestStateSpill runs an aggregate view whose state is far larger than the
// state cache (--state-cache-mb 1 against ~60K groups): cold groups are
// evicted once committed and read back from Pebble when their keys return,
// across a restart too, and the view stays equal to the batch query.
func TestStateSpill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	srv := StartServer(t, "", "--state-cache-mb", "1", "--parallelism", "2")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "SET checkpoint.interval = '100ms'", "CREATE TABLE t (k BIGINT, s TEXT, v BIGINT)",
		"CREATE MATERIALIZED VIEW agg AS SELECT k, s, count(*) AS n, sum(v) AS total, min(v) AS lo, max(s) AS hi FROM t GROUP BY k, s")
	load := func(round int) {
		var b strings.Builder
		for i := 0; i < 60000; i++ {
			k := (i*7919 + round*104729) % 60000
			fmt.Fprintf(&b, "%d\tkey-%d\t%d\n", k, k%97, i%1000-round)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY t FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		got := rowSet(t, c, "SELECT * FROM agg")
		want := rowSet(t, c, "SELECT k, s, count(*), sum(v), min(v), max(s) FROM t GROUP BY k, s")
		if got != want {
			t.Fatalf("%s: the view differs from the batch query (%d vs %d bytes)", when, len(got), len(want))
		}
	}
	for round := 0; round < 3; round++ {
		load(round)
		check(fmt.Sprintf("round %d", round))
	}
	var state, evicted int64
	if err := c.QueryRow(ctx, "SELECT state_bytes, evicted FROM streamdb_jobs WHERE name = 'agg'").Scan(&state, &evicted); err != nil {
		t.Fatal(err)
	}
	if evicted == 0 || state > 2<<20 {
		t.Errorf("state cache of 1 MiB: %d bytes held, %d groups evicted; want spilling", state, evicted)
	}
	srv.Restart(t)
	c = srv.Conn(t)
	load(3)
	check("after a restart")
}

// TestJoinStateSpill runs join views (inner, and full outer, whose padded
// rows depend on match counts recomputed when a group is read back) whose
// state is far larger than the state cache: committed groups are evicted
// and read back from Pebble when their keys return, across a restart too,
// and the views stay equal to their batch queries.
func TestJoinStateSpill(t *testing.T) { testJoinStateSpill(t, false) }

// TestJoinStateSpillKill9: the same, with the server killed (kill -9) right
// after a load instead of stopped: the groups evicted (those used longest
// ago first) and those in memory come back from the last committed epoch,
// and the source's rows after it are joined again, exactly once.
func TestJoinStateSpillKill9(t *testing.T) { testJoinStateSpill(t, true) }

func testJoinStateSpill(t *testing.T, kill9 bool) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	srv := StartServer(t, "", "--state-cache-mb", "1", "--parallelism", "2")
	c := srv.Conn(t)
	ctx := context.Background()
	joins := map[string]string{
		"j_inner": "SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k AND a.v <> b.w",
		"j_outer": "SELECT a.k, a.v, b.w FROM a FULL JOIN b ON a.k = b.k",
	}
	execAll(t, c, "SET checkpoint.interval = '100ms'", "CREATE TABLE a (k BIGINT, v BIGINT)", "CREATE TABLE b (k BIGINT, w BIGINT)")
	for name, q := range joins {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+name+" AS "+q)
	}
	load := func(round int) {
		for _, tbl := range []string{"a", "b"} {
			var sb strings.Builder
			for i := 0; i < 30000; i++ {
				k := (i*7919 + round*104729) % 40000
				if tbl == "b" {
					k = (k + 20000) % 45000 // some keys on one side only
				}
				fmt.Fprintf(&sb, "%d\t%d\n", k, (i+round)%13)
			}
			if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(sb.String()), "COPY "+tbl+" FROM STDIN"); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		for name, q := range joins {
			got, want := rowSet(t, c, "SELECT * FROM "+name), rowSet(t, c, q)
			if got != want {
				t.Fatalf("%s: view %s differs from its batch query (%d vs %d bytes)", when, name, len(got), len(want))
			}
		}
	}
	for round := 0; round < 3; round++ {
		load(round)
		check(fmt.Sprintf("round %d", round))
	}
	for name := range joins {
		var state, evicted int64
		if err := c.QueryRow(ctx, "SELECT state_bytes, evicted FROM streamdb_jobs WHERE name = $1", name).Scan(&state, &evicted); err != nil {
			t.Fatal(err)
		}
		if evicted == 0 || state > 2<<20 {
			t.Errorf("view %s with a state cache of 1 MiB: %d bytes held, %d groups evicted; want spilling", name, state, evicted)
		}
	}
	if kill9 {
		load(3) // killed with this load's epochs in flight
		srv.Kill9()
	}
	srv.Restart(t)
	c = srv.Conn(t)
	load(4)
	check("after a restart")
}

// TestSpillUpgradeFromSavepoint: an inner join and an aggregate whose
// state is far over their share of a 1 MiB state cache are upgraded from a
// savepoint (CREATE OR REPLACE ... FROM SAVEPOINT keeps their state and
// rebuilds the views' rows from it): every row comes back, those of the
// groups the budget leaves in the state table too, and the views go on
// equal to their queries.
func TestSpillUpgradeFromSavepoint(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	srv := StartServer(t, "", "--state-cache-mb", "1")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "CREATE TABLE a (k BIGINT, v BIGINT)", "CREATE TABLE b (k BIGINT, w BIGINT)",
		"CREATE MATERIALIZED VIEW j AS SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k",
		"CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS n, sum(v) AS s FROM a GROUP BY k")
	load := func(round int) {
		for _, tbl := range []string{"a", "b"} {
			var sb strings.Builder
			for i := 0; i < 20000; i++ {
				fmt.Fprintf(&sb, "%d\t%d\n", (i*7919+round*104729)%30000, (i+round)%7)
			}
			if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(sb.String()), "COPY "+tbl+" FROM STDIN"); err != nil {
				t.Fatal(err)
			}
		}
	}
	load(0)
	execAll(t, c, "CHECKPOINT", "CREATE SAVEPOINT sp",
		"CREATE OR REPLACE MATERIALIZED VIEW j AS SELECT a.k, a.v, b.w, a.v + b.w AS s FROM a JOIN b ON a.k = b.k FROM SAVEPOINT sp",
		"CREATE OR REPLACE MATERIALIZED VIEW g AS SELECT k, count(*) + 1 AS n, sum(v) AS s FROM a GROUP BY k FROM SAVEPOINT sp")
	views := map[string]string{
		"j": "SELECT a.k, a.v, b.w, a.v + b.w AS s FROM a JOIN b ON a.k = b.k",
		"g": "SELECT k, count(*) + 1 AS n, sum(v) AS s FROM a GROUP BY k",
	}
	check := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		for name, q := range views {
			if got, want := rowSet(t, c, "SELECT * FROM "+name), rowSet(t, c, q); got != want {
				t.Fatalf("%s: view %s differs from its batch query (%d vs %d bytes)", when, name, len(got), len(want))
			}
		}
	}
	check("upgraded from the savepoint")
	for name := range views {
		var evicted int64
		if err := c.QueryRow(ctx, "SELECT evicted FROM streamdb_jobs WHERE name = $1", name).Scan(&evicted); err != nil || evicted == 0 {
			t.Fatalf("the upgraded view %s evicted %d groups (%v): the test did not spill", name, evicted, err)
		}
	}
	load(1)
	check("after more rows")
}

// TestRankStateSpill runs a top-2-per-key view over far more keys than the
// state cache holds: committed partitions are evicted and read back when
// their key returns (with what they emitted recomputed), across a restart
// too, and the view stays equal to its batch query.
func TestRankStateSpill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	srv := StartServer(t, "", "--state-cache-mb", "1", "--parallelism", "2")
	c := srv.Conn(t)
	ctx := context.Background()
	const q = "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) x WHERE rn <= 2"
	execAll(t, c, "SET checkpoint.interval = '100ms'", "CREATE TABLE t (k BIGINT, v BIGINT)", "CREATE MATERIALIZED VIEW top2 AS "+q)
	load := func(round int) {
		var sb strings.Builder
		for i := 0; i < 40000; i++ {
			fmt.Fprintf(&sb, "%d\t%d\n", (i*7919+round*104729)%30000, i*31%100003+round)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(sb.String()), "COPY t FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		if got, want := rowSet(t, c, "SELECT * FROM top2"), rowSet(t, c, q); got != want {
			t.Fatalf("%s: the view differs from its batch query:\n%s", when, diffLines(got, want))
		}
	}
	for round := 0; round < 3; round++ {
		load(round)
		check(fmt.Sprintf("round %d", round))
	}
	var state, evicted int64
	if err := c.QueryRow(ctx, "SELECT state_bytes, evicted FROM streamdb_jobs WHERE name = 'top2'").Scan(&state, &evicted); err != nil {
		t.Fatal(err)
	}
	if evicted == 0 || state > 2<<20 {
		t.Errorf("state cache of 1 MiB: %d bytes held, %d partitions evicted; want spilling", state, evicted)
	}
	srv.Restart(t)
	c = srv.Conn(t)
	load(3)
	check("after a restart")
}

// TestTopNStateSpill runs ORDER BY ... LIMIT views, whose one partition
// holds every row, under a 1 MiB state cache: the partition keeps only its
// top rows in memory and reads the rest back from Pebble when a retraction
// needs them (the view over an aggregate retracts at every change).
func TestTopNStateSpill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	srv := StartServer(t, "", "--state-cache-mb", "1", "--parallelism", "2")
	c := srv.Conn(t)
	ctx := context.Background()
	views := map[string]string{
		"top_rows": "SELECT k, v FROM t ORDER BY v DESC, k LIMIT 5",
		"top_sums": "SELECT k, s FROM sums ORDER BY s DESC, k LIMIT 5 OFFSET 1",
	}
	execAll(t, c, "SET checkpoint.interval = '100ms'", "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW sums AS SELECT k, sum(v) AS s FROM t GROUP BY k")
	for name, q := range views {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+name+" AS "+q)
	}
	load := func(round int) {
		var sb strings.Builder
		for i := 0; i < 40000; i++ {
			fmt.Fprintf(&sb, "%d\t%d\n", (i*7919+round*104729)%20000, (i*31+round*17)%100003-50000)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(sb.String()), "COPY t FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT", "CHECKPOINT")
		batch := map[string]string{
			"top_rows": views["top_rows"],
			"top_sums": "SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY s DESC, k LIMIT 5 OFFSET 1",
		}
		for name, q := range batch {
			if got, want := rowSet(t, c, "SELECT * FROM "+name), rowSet(t, c, q); got != want {
				t.Fatalf("%s: view %s differs from its batch query:\n%s", when, name, diffLines(got, want))
			}
		}
	}
	for round := 0; round < 3; round++ {
		load(round)
		check(fmt.Sprintf("round %d", round))
	}
	var state int64
	if err := c.QueryRow(ctx, "SELECT state_bytes FROM streamdb_jobs WHERE name = 'top_rows'").Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state > 2<<20 {
		t.Errorf("top_rows holds %d bytes of state under a 1 MiB cache; want its rows in Pebble", state)
	}
	srv.Restart(t)
	c = srv.Conn(t)
	load(3)
	check("after a restart")
}
