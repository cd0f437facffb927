package sqllogic

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkJSONBView is the end-to-end jsonb figure of
// docs/benchmarks/2026-12-07-jsonb-binary.md: N event payloads (default
// 1M, STREAMDB_JSONB_BENCH_ROWS) are COPYed into a JSONB column, then a
// materialized view sums (payload->>'price')::numeric grouped by
// payload->>'user'. It reports the COPY, the first view on a fresh server
// (CREATE until the view holds every row) and the median of three more
// (warm: the stream's rows are in the page cache and memory). Run it with
// STREAMDB_BIN set to another build to compare builds:
//
//	nice go test ./tests/sqllogic -run XXX -bench JSONBView -benchtime 1x -timeout 30m
func BenchmarkJSONBView(b *testing.B) {
	n := 1000000
	if v, err := strconv.Atoi(os.Getenv("STREAMDB_JSONB_BENCH_ROWS")); err == nil && v > 0 {
		n = v
	}
	var data bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&data, `{"id": %d, "user": "u%d", "price": %d.%02d, "qty": %d, "tags": ["a", "b"], "ctx": {"ip": "10.0.%d.%d", "ok": true}}`+"\n",
			i, i%1000, (i*7919)%10000, i%100, i%10, i%256, (i/256)%256)
	}
	for b.Loop() {
		srv := StartServer(b, "")
		c := srv.Conn(b)
		benchExec(b, c, "CREATE TABLE ev (payload JSONB)")
		start := time.Now()
		benchCopy(b, c, "ev", data.Bytes())
		copyDur := time.Since(start)
		view := func(k int) time.Duration {
			start := time.Now()
			benchExec(b, c, fmt.Sprintf("CREATE MATERIALIZED VIEW v%d AS SELECT payload->>'user' AS u, sum((payload->>'price')::numeric) AS s, count(*) AS c FROM ev GROUP BY payload->>'user'", k))
			for {
				var got int64
				if err := c.QueryRow(context.Background(), fmt.Sprintf("SELECT coalesce(sum(c), 0) FROM v%d", k)).Scan(&got); err != nil {
					b.Fatal(err)
				}
				if got == int64(n) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			d := time.Since(start)
			benchExec(b, c, fmt.Sprintf("DROP MATERIALIZED VIEW v%d", k))
			return d
		}
		first := view(0)
		var warm []time.Duration
		for k := 1; k <= 3; k++ {
			warm = append(warm, view(k))
		}
		slices.Sort(warm)
		b.ReportMetric(copyDur.Seconds(), "copy-s")
		b.ReportMetric(first.Seconds(), "first-view-s")
		b.ReportMetric(warm[1].Seconds(), "warm-view-median-s")
		b.ReportMetric(float64(n)/warm[1].Seconds(), "warm-rows/s")
		b.Logf("%d rows: COPY %v, first view %v, warm views %v", n, copyDur, first, warm)
	}
}
