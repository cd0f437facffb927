package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// state.ttl for unwindowed aggregates (issue 12): a group no row changed
// for the TTL is dropped from memory and state, with its DISTINCT and
// min/max values, and nothing is emitted: the view keeps its row, and a
// later row of its key starts a new group. Idle clocks are stored with the
// groups' state, so a restart does not restart them.

func TestStateTTLExpiresAggregateGroups(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE t (k BIGINT, v BIGINT)",
		`CREATE MATERIALIZED VIEW a AS SELECT k, count(*) AS n, count(DISTINCT v) AS d, max(v) AS hi
		   FROM t GROUP BY k WITH (state.ttl = '2s')`,
		"CREATE MATERIALIZED VIEW a_all AS SELECT k, count(*) AS n, count(DISTINCT v) AS d, max(v) AS hi FROM t GROUP BY k",
		"INSERT INTO t VALUES (1, 10), (1, 11), (2, 20), (2, 20)",
		"CHECKPOINT")
	want := "1|2|2|11; 2|2|1|20"
	for _, v := range []string{"a", "a_all"} {
		if got := rowSet(t, c, "SELECT * FROM "+v); got != want {
			t.Fatalf("%s = %q, want %q", v, got, want)
		}
	}
	// Both groups idle past a's TTL: a barrier after that (CHECKPOINT
	// runs one) expires them in a only, emitting nothing. Waiting is the
	// point: expiry is by processing time.
	time.Sleep(3 * time.Second)
	execAll(t, c, "CHECKPOINT", "INSERT INTO t VALUES (2, 5)", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM a_all"); got != "1|2|2|11; 2|3|2|20" {
		t.Fatalf("a_all = %q (no TTL)", got)
	}
	// Key 1's row stays as it was; key 2 starts anew from its new row.
	if got := rowSet(t, c, "SELECT * FROM a"); got != "1|2|2|11; 2|1|1|5" {
		t.Fatalf("a = %q, want key 1 unchanged and key 2 restarted", got)
	}

	// Across a restart the clocks go on. Key 3 is last changed at t0
	// (its clock is at most t0), the server restarts at least 3 s later,
	// and at t0 + 9 s (TTL 8 s) key 3 has expired; had the restart started
	// its clock anew, it would expire at the earliest at t0 + 11 s.
	execAll(t, c, "ALTER MATERIALIZED VIEW a SET (state.ttl = '8s')",
		"INSERT INTO t VALUES (3, 30), (3, 31)", "CHECKPOINT")
	t0 := time.Now()
	time.Sleep(3 * time.Second)
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	if d := time.Until(t0.Add(9 * time.Second)); d > 0 {
		time.Sleep(d)
	} else {
		t.Logf("the restart ended %s after t0 + 9 s: the test cannot tell a restarted clock", -d)
	}
	execAll(t, c, "CHECKPOINT", "INSERT INTO t VALUES (3, 32)", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM a WHERE k = 3"); got != "3|1|1|32" {
		t.Fatalf("a = %q, want key 3 expired %s after its last change, across a restart", got, time.Since(t0))
	}
	if got := rowSet(t, c, "SELECT * FROM a_all WHERE k = 3"); got != "3|3|3|32" {
		t.Fatalf("a_all = %q", got)
	}
	// The expired groups' DISTINCT values left the state table with them
	// (key 2 idled past the 8 s too): what is left is key 3's new group
	// and its one distinct value (max over rows never retracted keeps no
	// values).
	execAll(t, c, "ALTER MATERIALIZED VIEW a SET (state.ttl = 'off')")
	srv.Stop()
	if n := stateEntries(t, dir, "a"); n != 2 {
		t.Errorf("%d state entries, want 2", n)
	}
}

// TestStateTTLExpiresEvictedGroups: groups evicted to the state table (a
// 1 MiB state cache against 20,000 groups) expire too: they are read back
// when due and deleted with their DISTINCT values.
func TestStateTTLExpiresEvictedGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	dir := t.TempDir()
	srv := StartServer(t, dir, "--state-cache-mb", "1")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW a AS SELECT k, count(*) AS n, count(DISTINCT v) AS d FROM t GROUP BY k WITH (state.ttl = '3s')")
	var b strings.Builder
	for i := 0; i < 40000; i++ {
		fmt.Fprintf(&b, "%d\t%d\n", i%20000, i%3)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY t FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		execAll(t, c, "CHECKPOINT")
		var evicted int64
		if err := c.QueryRow(ctx, "SELECT evicted FROM streamdb_jobs WHERE name = 'a'").Scan(&evicted); err != nil {
			t.Fatal(err)
		}
		if evicted > 0 {
			t.Logf("%d groups evicted after %s", evicted, time.Since(start))
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("no group evicted with a 1 MiB state cache")
		}
	}
	want := rowSet(t, c, "SELECT * FROM a")
	// Past the TTL every group expires, in memory or evicted; the view
	// keeps its rows.
	time.Sleep(4 * time.Second)
	execAll(t, c, "CHECKPOINT", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM a"); got != want {
		t.Fatalf("the view changed when its groups expired (%d vs %d bytes)", len(got), len(want))
	}
	srv.Stop()
	if n := stateEntries(t, dir, "a"); n != 0 {
		t.Errorf("%d state entries left after every group idled past the TTL, want 0", n)
	}
}

// TestStateTTLExpiresTopNPartitions: a top-N partition no row changed for
// the TTL leaves the state, nothing is emitted (the view keeps its top
// rows); a later row of its key starts a new partition, whose top row
// joins them. Across kill -9 the partitions' clocks go on.
func TestStateTTLExpiresTopNPartitions(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	q := `SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) AS x WHERE rn <= 1`
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW top AS "+q+" WITH (state.ttl = '8s')",
		"INSERT INTO t VALUES (1, 10), (1, 11), (2, 20)", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM top"); got != "1|11; 2|20" {
		t.Fatalf("top = %q", got)
	}
	t0 := time.Now()
	time.Sleep(3 * time.Second)
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	if d := time.Until(t0.Add(9 * time.Second)); d > 0 {
		time.Sleep(d)
	} else {
		t.Logf("the restart ended %s after t0 + 9 s: the test cannot tell a restarted clock", -d)
	}
	// Key 1 expired 8 s after its last change (not 8 s after the
	// restart): its new row 5 is the top of a new partition and joins the
	// old row 11, which stays; in the batch query 11 is still the top.
	execAll(t, c, "CHECKPOINT", "INSERT INTO t VALUES (1, 5)", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM top"); got != "1|11; 1|5; 2|20" {
		t.Fatalf("top = %q, want key 1's partition expired %s after its last change", got, time.Since(t0))
	}
	if got := rowSet(t, c, q); got != "1|11; 2|20" {
		t.Fatalf("batch = %q", got)
	}
	execAll(t, c, "ALTER MATERIALIZED VIEW top SET (state.ttl = 'off')")
	srv.Stop()
	// Left: key 1's new row only (key 2 expired too).
	if n := stateEntries(t, dir, "top"); n != 1 {
		t.Errorf("%d state entries, want 1", n)
	}
}

// TestStateTTLExpiresEvictedTopNPartitions: top-N partitions evicted to
// the state table (a 1 MiB state cache against 20,000 partitions) expire
// without their keys coming back: they are read back when due and
// deleted; the view keeps its rows.
func TestStateTTLExpiresEvictedTopNPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	dir := t.TempDir()
	srv := StartServer(t, dir, "--state-cache-mb", "1")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)",
		`CREATE MATERIALIZED VIEW top AS SELECT k, v FROM
		   (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) AS x
		   WHERE rn <= 1 WITH (state.ttl = '3s')`)
	var b strings.Builder
	for i := 0; i < 40000; i++ {
		fmt.Fprintf(&b, "%d\t%d\n", i%20000, i)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY t FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		execAll(t, c, "CHECKPOINT")
		var evicted int64
		if err := c.QueryRow(ctx, "SELECT evicted FROM streamdb_jobs WHERE name = 'top'").Scan(&evicted); err != nil {
			t.Fatal(err)
		}
		if evicted > 0 {
			t.Logf("%d partitions evicted after %s", evicted, time.Since(start))
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("no partition evicted with a 1 MiB state cache")
		}
	}
	want := rowSet(t, c, "SELECT * FROM top")
	if batch := rowSet(t, c, `SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) AS x WHERE rn <= 1`); want != batch {
		t.Fatalf("the view differs from its batch query before expiry")
	}
	// Past the TTL every partition expires, in memory or evicted; the
	// view keeps its rows.
	time.Sleep(4 * time.Second)
	execAll(t, c, "CHECKPOINT", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM top"); got != want {
		t.Fatalf("the view changed when its partitions expired (%d vs %d bytes)", len(got), len(want))
	}
	srv.Stop()
	if n := stateEntries(t, dir, "top"); n != 0 {
		t.Errorf("%d state entries left after every partition idled past the TTL, want 0", n)
	}
}
