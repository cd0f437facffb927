package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Top-N per window (issue 12): a ROW_NUMBER/RANK top-N partitioned by a
// window frees a window's partition once the watermark passes its end,
// drops (counts, records) rows late for it, keeps the view equal to its
// batch query, and across kill -9 replayed rows meet the same watermark.

const topnRows = `SELECT * FROM (SELECT window_start, window_end, auction, price,
	ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC, auction) AS rn
	FROM TUMBLE(bid, ts, INTERVAL '10' SECOND)) AS t WHERE rn <= 2`

const topnCounts = `SELECT * FROM (SELECT window_start, window_end, auction, n,
	RANK() OVER (PARTITION BY window_start, window_end ORDER BY n DESC) AS r
	FROM (SELECT window_start, window_end, auction, count(*) AS n
	      FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end, auction) AS c) AS t WHERE r <= 1`

func TestTopNPerWindowFreed(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c,
		"SET job.late_rows = 'record'",
		"CREATE TABLE bid (auction BIGINT, price BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE MATERIALIZED VIEW top_rows AS "+topnRows,
		"CREATE MATERIALIZED VIEW top_counts AS "+topnCounts)
	check := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		for v, q := range map[string]string{"top_rows": topnRows, "top_counts": topnCounts} {
			if got, want := rowSet(t, c, "SELECT * FROM "+v), rowSet(t, c, q); got != want {
				t.Fatalf("%s: %s differs from its batch query:\n%s\nwant\n%s", when, v, got, want)
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
	// 30 windows of 200 bids each, a window per statement: the watermark
	// closes each window when the next one's rows come.
	var peak, last int64
	for w := 0; w < 30; w++ {
		var b strings.Builder
		for i := 0; i < 200; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(%d, %d, '2026-01-01 00:%02d:%02d')", i%17, (i*7919+w)%1000, w/6, (w%6)*10+i%10)
		}
		execAll(t, c, "INSERT INTO bid VALUES "+b.String())
		if w%10 == 9 {
			check(fmt.Sprintf("window %d", w))
			last = stateBytes("top_rows")
			peak = max(peak, last)
			t.Logf("after window %d: top_rows holds %d bytes", w, last)
		}
	}
	// One window open at a time: the state is about one window's rows,
	// not thirty.
	if first := peak; last > first*2 || last > 200*200 {
		t.Errorf("top_rows holds %d bytes after 30 windows (peak %d): windows are not freed", last, peak)
	}
	// A bid for a closed window is late: dropped, counted, recorded; it
	// would top its window (the batch query has it), the view stays.
	wantRows, wantCounts := rowSet(t, c, "SELECT * FROM top_rows"), rowSet(t, c, "SELECT * FROM top_counts")
	same := func(when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		if got := rowSet(t, c, "SELECT * FROM top_rows"); got != wantRows {
			t.Fatalf("%s: top_rows changed:\n%s\nwant\n%s", when, got, wantRows)
		}
		if got := rowSet(t, c, "SELECT * FROM top_counts"); got != wantCounts {
			t.Fatalf("%s: top_counts changed", when)
		}
	}
	execAll(t, c, "INSERT INTO bid VALUES (1, 5000, '2026-01-01 00:00:01')", "CHECKPOINT")
	waitLateRows(t, c, "top_rows", 1)
	same("after a late row")
	var op string
	if err := c.QueryRow(ctx, "SELECT operator FROM streamdb_late_rows WHERE job = 'top_rows'").Scan(&op); err != nil || !strings.HasPrefix(op, "top-n") {
		t.Fatalf("late row's operator: %q, %v", op, err)
	}
	// After kill -9 the replayed and new late rows meet the watermark.
	execAll(t, c, "INSERT INTO bid VALUES (2, 6000, '2026-01-01 00:00:02')")
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "INSERT INTO bid VALUES (3, 7000, '2026-01-01 00:00:03')")
	waitLateRows(t, c, "top_rows", 3)
	same("after kill -9")
	srv.Stop()
	// Left: the last, open window's rows (200 at most) and no other.
	if n := stateEntries(t, dir, "top_rows"); n > 200 {
		t.Errorf("top_rows: %d state entries after 30 windows of 200 rows, want at most 200", n)
	}
}
