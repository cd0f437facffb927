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
