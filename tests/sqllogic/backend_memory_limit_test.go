package sqllogic

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMemoryLimitWithinEpoch: state.memory_limit is checked after every
// input batch, not only at barriers, so one large COPY (one statement, a
// few epochs' worth of new groups) fails the job with 53200 close to the
// limit rather than at whatever size the epoch reached.
func TestMemoryLimitWithinEpoch(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	const limit = 4 << 20
	execAll(t, c, "SET restart.strategy = 'none'", "SET checkpoint.interval = 'off'", "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW big WITH (state.backend = 'memory', state.memory_limit = '4MB') AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k")
	const rows = 1_000_000 // distinct keys: about 100 MB of state unbounded
	var b strings.Builder
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&b, "%d\t%d\n", i, i)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY t FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	r := waitState(t, c, "big", "FAILED", 2*time.Minute)
	m := regexp.MustCompile(`state of (\d+)(B|kB|MB|GB)`).FindStringSubmatch(r.lastErr)
	if m == nil || !strings.Contains(r.lastErr, "53200") {
		t.Fatalf("last_error %q does not give 53200 and the state's size", r.lastErr)
	}
	used, _ := strconv.ParseInt(m[1], 10, 64)
	used <<= map[string]int{"B": 0, "kB": 10, "MB": 20, "GB": 30}[m[2]]
	t.Logf("the job failed with %.1f MB of state against a 4 MB limit", float64(used)/(1<<20))
	if used > 8*limit {
		t.Errorf("the job failed only at %d bytes of state, limit %d: not checked within the epoch", used, limit)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != rows {
		t.Errorf("the server after the refusal: count %d (%v)", n, err)
	}
}

// TestMemoryBackendAsyncSnapshots: with periodic checkpoints only (no
// CHECKPOINT statement), a memory-backend view catches up with its input:
// its snapshots are written in the background and its epochs handed over
// once they are durable. After kill -9 while rows keep coming (snapshots
// in flight) it resumes from its last committed snapshot and is exact.
func TestMemoryBackendAsyncSnapshots(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW m WITH (state.backend = 'memory') AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k")
	row := 0
	insert := func(n int) {
		t.Helper()
		var vals []string
		for i := 0; i < n; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", row%97, row))
			row++
		}
		execAll(t, c, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	caughtUp := func(what string) {
		t.Helper()
		poll(t, 2*time.Minute, what, func() bool {
			return pairsEqual(queryPairs(t, c, "SELECT k, s FROM m"), queryPairs(t, c, "SELECT k, sum(v) FROM t GROUP BY k"))
		})
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < 5; i++ {
			insert(400)
			time.Sleep(300 * time.Millisecond) // spread over periodic checkpoints
		}
		caughtUp(fmt.Sprintf("the memory view to catch up through periodic checkpoints (round %d)", round))
		insert(500)
		srv.Kill9()
		srv.Restart(t)
		c = srv.Conn(t)
		caughtUp(fmt.Sprintf("the memory view to be exact after kill -9 #%d", round+1))
	}
	var periodic int64
	if err := c.QueryRow(ctx, `SELECT count(*) FROM streamdb_checkpoints WHERE "trigger" = 'periodic' AND status = 'COMPLETED'`).Scan(&periodic); err != nil || periodic == 0 {
		t.Errorf("completed periodic checkpoints: %d (%v)", periodic, err)
	}
	// Under GOFLAGS=-race the server is a race build: the background
	// writer reads the clone while the job writes the map.
	if strings.Contains(srv.Output(), "DATA RACE") {
		t.Error("the server reported a data race")
	}
}
