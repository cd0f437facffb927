package sqllogic

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/streamdb/streamdb/nexmark"
)

// heapAfterGC collects garbage in the server (pprof's gc=1) and returns the
// Go heap it then has in use (HeapInuse of the heap profile's header).
func heapAfterGC(t *testing.T, httpAddr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.WriteString(string(buf[:n]))
		if err != nil {
			break
		}
	}
	m := regexp.MustCompile(`# HeapInuse = (\d+)`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("no HeapInuse in the heap profile (HTTP %d): %.300s", resp.StatusCode, b.String())
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// nexmarkQ9Growth runs Nexmark q9 (a join of every auction with its bids
// under a top-1 per auction) over events events on a fresh server with a
// state cache of cacheMB and returns how much its heap in use after a GC
// grew from before the view to after the view had read every event.
func nexmarkQ9Growth(t *testing.T, events int64, cacheMB string) int64 {
	t.Helper()
	httpAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, "", "--http", httpAddr, "--pprof", "--state-cache-mb", cacheMB, "--parallelism", "1")
	c := srv.Conn(t)
	execAll(t, c, nexmark.SourceDDL(events, 1, 1)...)
	base := heapAfterGC(t, httpAddr)
	var q9 string
	for _, q := range nexmark.Queries() {
		if q.Name == "q9" {
			q9 = q.SQL
		}
	}
	execAll(t, c, "CREATE MATERIALIZED VIEW q9 AS "+q9, "CHECKPOINT")
	var rows int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM q9").Scan(&rows); err != nil || rows == 0 {
		t.Fatalf("q9 over %d events: %d rows (%v)", events, rows, err)
	}
	after := heapAfterGC(t, httpAddr)
	t.Logf("q9 over %d events, --state-cache-mb %s: %d rows, heap in use after GC %dMB -> %dMB", events, cacheMB, rows, base>>20, after>>20)
	return after - base
}

// A view's memory does not grow with its input once its state passes the
// state cache (issue 31): q9 over 4x the events, whose join holds every
// auction and bid in its state, grows the server's heap (in use after a
// collection) by about as much as over 1x, the rest of its state being in
// Pebble. Measured on 2026-12-06: with --state-cache-mb 4, 45MB and 51MB;
// with an unbounded cache (0), 52MB and 182MB, which this test fails. The
// factor and slack are generous.
func TestBoundedMemoryNexmarkQ9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: heap bounds (a race build's shadow memory breaks them)")
	}
	const cache = "4"
	small := nexmarkQ9Growth(t, 100_000, cache)
	large := nexmarkQ9Growth(t, 400_000, cache)
	if large > 2*max(small, 0)+(16<<20) {
		t.Errorf("q9's heap grew by %dMB over 400K events against %dMB over 100K with --state-cache-mb %s: memory follows the input",
			large>>20, small>>20, cache)
	}
}
