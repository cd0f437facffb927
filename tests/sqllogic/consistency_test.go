package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestReadsSeeOneEpoch: two views fed by one stream hold the same per-key
// counts at every committed epoch (each round's barrier sits at the same
// offset of the stream for every job), and one statement reads both, and
// the stream, at one epoch (one Pebble snapshot per statement; the stream
// up to the committed cut). Under concurrent COPYs, with a barrier every
// 10 ms, a join of the two views never finds a key whose counts differ,
// and their sums never differ from each other or from the stream's count.
func TestReadsSeeOneEpoch(t *testing.T) {
	t.Parallel()
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
	// Thousands of reads where the machine allows (a minute at most; 10 s
	// with -short, as against the race build).
	limit := 60 * time.Second
	if testing.Short() {
		limit = 10 * time.Second
	}
	deadline := time.Now().Add(limit)
	for reads < 2000 && time.Now().Before(deadline) {
		var diff, sums, rows, stream int64
		err := c.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM a JOIN b USING (k) WHERE a.c <> b.c),
			coalesce((SELECT sum(c) FROM a), 0) - coalesce((SELECT sum(c) FROM b), 0),
			coalesce((SELECT sum(c) FROM a), 0) - (SELECT count(*) FROM r),
			coalesce((SELECT sum(c) FROM a), 0) - (SELECT count(*) FROM s)`).Scan(&diff, &sums, &rows, &stream)
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		reads++
		if diff != 0 || sums != 0 || rows != 0 || stream != 0 {
			bad++
			if bad <= 5 {
				t.Errorf("read %d: %d keys differ, sums differ by %d, rows differ by %d, the stream by %d", reads, diff, sums, rows, stream)
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

// TestCursorReadsItsEpoch: a cursor reads the epoch it was declared at,
// however long it is fetched from: rows committed after DECLARE, to the
// stream and to views over it, are not in it.
func TestCursorReadsItsEpoch(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	copyRows := func(from, n int) {
		var b strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&b, "%d\t%d\n", i%10, i)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY s FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	execAll(t, c, "CREATE TABLE s (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW r AS SELECT k, v FROM s")
	copyRows(0, 100000)
	execAll(t, c, "CHECKPOINT", "BEGIN",
		"DECLARE on_view CURSOR FOR SELECT v FROM r",
		"DECLARE on_stream CURSOR FOR SELECT v FROM s")
	// Both cursors have started reading (a first batch is queued) when
	// more rows arrive and are committed to the view.
	for _, cur := range []string{"on_view", "on_stream"} {
		if n := fetchCount(t, c, "FETCH 10 FROM "+cur); n != 10 {
			t.Fatalf("FETCH 10 FROM %s: %d rows", cur, n)
		}
	}
	cc := srv.Conn(t)
	var b strings.Builder
	for i := 100000; i < 150000; i++ {
		fmt.Fprintf(&b, "%d\t%d\n", i%10, i)
	}
	if _, err := cc.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY s FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	execAll(t, cc, "CHECKPOINT")
	var live int64
	if err := cc.QueryRow(ctx, "SELECT count(*) FROM r").Scan(&live); err != nil || live != 150000 {
		t.Fatalf("the view after the second COPY: %d rows, %v", live, err)
	}
	for _, cur := range []string{"on_view", "on_stream"} {
		if n := 10 + fetchCount(t, c, "FETCH ALL FROM "+cur); n != 100000 {
			t.Errorf("cursor %s read %d rows, want the 100000 committed at DECLARE", cur, n)
		}
	}
	execAll(t, c, "COMMIT")
}

func fetchCount(t *testing.T, c *pgx.Conn, q string) int {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestReadYourWrites: a stream that views read is read at the committed
// cut, and a statement first waits for the round covering the writes
// acknowledged before it: an INSERT or COPY is visible to the next SELECT
// of the stream at once, in the same session and in another one.
func TestReadYourWrites(t *testing.T) {
	srv := StartServer(t, "")
	c, other := srv.Conn(t), srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "SET barrier.interval = '1s'", "CREATE TABLE s (k BIGINT)",
		"CREATE MATERIALIZED VIEW n AS SELECT count(*) AS c FROM s")
	for i := 1; i <= 30; i++ {
		execAll(t, c, fmt.Sprintf("INSERT INTO s VALUES (%d)", i))
		for _, conn := range []*pgx.Conn{c, other} {
			var got int64
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM s").Scan(&got); err != nil || got != int64(i) {
				t.Fatalf("after INSERT %d: count(*) = %d, %v", i, got, err)
			}
		}
	}
}
