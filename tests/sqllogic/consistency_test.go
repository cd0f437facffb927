package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadsSeeOneEpoch: two views fed by one stream hold the same per-key
// counts at every committed epoch (each round's barrier sits at the same
// offset of the stream for every job), and one statement reads both at one
// epoch (one Pebble snapshot per statement). Under concurrent COPYs, with a
// barrier every 10 ms, a join of the two views never finds a key whose
// counts differ, and their sums never differ.
func TestReadsSeeOneEpoch(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"SET barrier.interval = '10ms'",
		"CREATE TABLE s (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW a AS SELECT k, count(*) AS c FROM s GROUP BY k",
		"CREATE MATERIALIZED VIEW b AS SELECT k, count(*) AS c FROM s GROUP BY k",
		// A third shape: rows without aggregation, counted at read time.
		"CREATE MATERIALIZED VIEW r AS SELECT k, v FROM s")
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var copyErr error
	var copies atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		cc := srv.Conn(t)
		defer cc.Close(ctx)
		next := 0
		for !stop.Load() {
			var b strings.Builder
			n := 50 + next%400
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, "%d\t%d\n", (next*7+i)%97, next)
			}
			next++
			if _, err := cc.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY s FROM STDIN"); err != nil {
				copyErr = err
				return
			}
			copies.Add(1)
		}
	}()
	reads, bad := 0, 0
	deadline := time.Now().Add(20 * time.Second)
	for reads < 3000 && time.Now().Before(deadline) {
		var diff, sums, rows int64
		err := c.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM a JOIN b USING (k) WHERE a.c <> b.c),
			coalesce((SELECT sum(c) FROM a), 0) - coalesce((SELECT sum(c) FROM b), 0),
			coalesce((SELECT sum(c) FROM a), 0) - (SELECT count(*) FROM r)`).Scan(&diff, &sums, &rows)
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		reads++
		if diff != 0 || sums != 0 || rows != 0 {
			bad++
			if bad <= 5 {
				t.Errorf("read %d: %d keys differ, sums differ by %d, rows differ by %d", reads, diff, sums, rows)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if copyErr != nil {
		t.Fatalf("COPY: %v", copyErr)
	}
	t.Logf("%d reads during %d COPYs: %d inconsistent", reads, copies.Load(), bad)
	if copies.Load() < 20 {
		t.Fatalf("only %d COPYs ran during the reads", copies.Load())
	}
}
