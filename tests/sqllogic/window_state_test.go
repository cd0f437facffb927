package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/storage"
)

// stateEntries opens a stopped server's database read-only and counts the
// operator state entries of view's job (its own bookkeeping under operator
// ffffffff aside).
func stateEntries(t *testing.T, dir, view string) int {
	t.Helper()
	db, err := storage.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defs, err := db.Catalog().Load()
	if err != nil {
		t.Fatal(err)
	}
	var id uint64
	for _, d := range defs {
		if d.Name == view {
			id = d.ID
		}
	}
	if id == 0 {
		t.Fatalf("no view %s", view)
	}
	n := 0
	if err := db.State().ScanJob(id, func(op uint32, _, _ []byte) error {
		if op != 0xFFFFFFFF {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWindowStateFreedWhenEvicted (issue 12): a window aggregate's groups
// evicted to the state table (a state cache far smaller than the window's
// groups) close when the watermark passes their window, and a closed
// group's count(DISTINCT) values leave the state table with it.
func TestWindowStateFreedWhenEvicted(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spill volumes; run in the plain test step")
	}
	dir := t.TempDir()
	srv := StartServer(t, dir, "--state-cache-mb", "1")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c,
		"CREATE TABLE bid (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		`CREATE MATERIALIZED VIEW w AS SELECT window_end, k, count(*) AS n, count(DISTINCT v) AS d
		   FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY window_end, k`)
	const groups = 20000
	var b strings.Builder
	for i := 0; i < 2*groups; i++ {
		fmt.Fprintf(&b, "%d\t%d\t2026-01-01 00:00:%02d\n", i%groups, i%7, i%10)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY bid FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	// Eviction follows commits: checkpoint until some groups are out.
	start := time.Now()
	for {
		execAll(t, c, "CHECKPOINT")
		var evicted int64
		if err := c.QueryRow(ctx, "SELECT evicted FROM streamdb_jobs WHERE name = 'w'").Scan(&evicted); err != nil {
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
	// Close the window [00:00:00, 00:00:10): the watermark goes to 00:00:29.
	execAll(t, c, "INSERT INTO bid VALUES (1, 1, '2026-01-01 00:00:30')", "CHECKPOINT")
	waitWatermark(t, c, "w", ts("2026-01-01 00:00:29"))
	execAll(t, c, "CHECKPOINT", "CHECKPOINT")
	want := rowSet(t, c, "SELECT tumble_end(ts, INTERVAL '10' SECOND), k, count(*), count(DISTINCT v) FROM bid GROUP BY 1, 2")
	if got := rowSet(t, c, "SELECT * FROM w"); got != want {
		t.Fatalf("the view differs from the batch query (%d vs %d bytes)", len(got), len(want))
	}
	srv.Stop()
	// Left: the open window's group and its one distinct value.
	if n := stateEntries(t, dir, "w"); n != 2 {
		t.Fatalf("%d state entries after the window of %d groups closed, want 2", n, groups)
	}
}
