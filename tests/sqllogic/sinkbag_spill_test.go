package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestViewRowsSpillKill9 keeps a view without aggregation whose rows may be
// retracted (a join over tables that change) far larger than the state
// cache: the sink's multiset of the view's rows evicts committed rows to
// the state table and reads them back when they change (exec/sinkbag.go).
// Rows are inserted, deleted and updated over several rounds, some of them
// after the rows went cold; the server is killed with -9 with a round's
// epochs in flight and restarted; the view equals its batch query
// throughout.
func TestViewRowsSpillKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	srv := StartServer(t, "", "--state-cache-mb", "1", "--parallelism", "2")
	c := srv.Conn(t)
	ctx := context.Background()
	// pad makes each view row ~100 bytes: 60K rows are ~6 MB of rows in a
	// 1 MB cache. Duplicates (the same k, v, name, pad from two ids of a
	// key) exercise counts above one.
	const q = "SELECT t.k, t.v, d.name, t.pad FROM t JOIN d ON t.k = d.k"
	execAll(t, c, "SET checkpoint.interval = '100ms'",
		"CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT, pad TEXT)",
		"CREATE TABLE d (k BIGINT PRIMARY KEY, name TEXT)",
		"CREATE MATERIALIZED VIEW big AS "+q)
	var sb strings.Builder
	for k := 0; k < 50; k++ {
		fmt.Fprintf(&sb, "%d\tname-%d\n", k, k)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(sb.String()), "COPY d FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	load := func(round int) {
		var sb strings.Builder
		for i := 0; i < 20000; i++ {
			id := round*20000 + i
			fmt.Fprintf(&sb, "%d\t%d\t%d\t%s\n", id, id%50, (id/3)%5000, strings.Repeat("x", 60+id%7))
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(sb.String()), "COPY t FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	change := func(round int) {
		// Old rows (evicted by now) go or change; so does a dimension row,
		// which retracts and re-adds a fiftieth of the view.
		execAll(t, c,
			fmt.Sprintf("DELETE FROM t WHERE id %% 11 = %d", round),
			fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id %% 13 = %d", round),
			fmt.Sprintf("UPDATE d SET name = 'renamed-%d' WHERE k = %d", round, round))
	}
	check := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		got, want := rowSet(t, c, "SELECT * FROM big"), rowSet(t, c, q)
		if got != want {
			t.Fatalf("%s: view big differs from its batch query (%d vs %d bytes)", when, len(got), len(want))
		}
	}
	for round := 0; round < 3; round++ {
		load(round)
		check(fmt.Sprintf("round %d", round))
		change(round)
		check(fmt.Sprintf("round %d changed", round))
	}
	var state, evicted int64
	if err := c.QueryRow(ctx, "SELECT state_bytes, evicted FROM streamdb_jobs WHERE name = 'big'").Scan(&state, &evicted); err != nil {
		t.Fatal(err)
	}
	if evicted == 0 || state > 2<<20 {
		t.Errorf("view over ~6 MB of rows with a state cache of 1 MiB: %d bytes held, %d entries evicted; want spilling", state, evicted)
	}
	load(3) // killed with this load's epochs in flight
	change(3)
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	check("after kill -9")
	change(4)
	load(4)
	check("after a restart and more changes")
}
