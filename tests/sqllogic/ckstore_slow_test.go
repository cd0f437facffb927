package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestCkstoreSlowUpload: while checkpoint storage holds every upload, the
// jobs go on (a Pebble view advances at each epoch, a memory-backend view
// at each periodic checkpoint), the checkpoint being uploaded is
// IN_PROGRESS in SHOW CHECKPOINTS, and CHECKPOINT waits for its upload:
// it returns once the upload is through, and a failed upload is its error
// (58030), the checkpoint FAILED and the jobs untouched.
func TestCkstoreSlowUpload(t *testing.T) {
	s3 := newFakeS3(t, "ckpt")
	const url = "s3://ckpt/slow"
	srv := startWithEnv(t, s3.Env(), "", "--allow-storage", url) // periodic checkpoints every second
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "SET checkpoint.storage = '"+url+"'", "SET checkpoint.tolerable_failures = 5", "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW p AS SELECT k, count(*) AS n FROM t GROUP BY k",
		"CREATE MATERIALIZED VIEW m WITH (state.backend = 'memory') AS SELECT k, count(*) AS n FROM t GROUP BY k")
	want := map[int64]int64{}
	row := 0
	insert := func(n int) {
		t.Helper()
		var vals []string
		for i := 0; i < n; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", row%13, row))
			want[int64(row%13)]++
			row++
		}
		execAll(t, c, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	insert(200)
	execAll(t, c, "CHECKPOINT")

	gate := make(chan struct{})
	s3.Gate.Store(&gate)
	released := false
	release := func() {
		if !released {
			released = true
			s3.Gate.Store(nil)
			close(gate)
		}
	}
	defer release()
	c2 := srv.Conn(t)
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		_, err := c2.Exec(ctx, "CHECKPOINT")
		done <- err
	}()
	poll(t, 60*time.Second, "an upload held by checkpoint storage", func() bool { return s3.Held.Load() > 0 })
	poll(t, 60*time.Second, "an IN_PROGRESS checkpoint in streamdb_checkpoints", func() bool {
		var n int64
		err := c.QueryRow(ctx, `SELECT count(*) FROM streamdb_checkpoints WHERE status = 'IN_PROGRESS' AND "trigger" = 'manual'`).Scan(&n)
		return err == nil && n > 0
	})
	// The jobs go on while the upload lags.
	insert(300)
	poll(t, 60*time.Second, "the Pebble view to advance while the upload is held", func() bool {
		return pairsEqual(queryPairs(t, c, "SELECT k, n FROM p"), want)
	})
	poll(t, 60*time.Second, "the memory view to advance at periodic checkpoints while the upload is held", func() bool {
		return pairsEqual(queryPairs(t, c, "SELECT k, n FROM m"), want)
	})
	select {
	case err := <-done:
		t.Fatalf("CHECKPOINT returned (%v) while its upload was held", err)
	default:
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("CHECKPOINT after its upload went through: %v", err)
		}
		t.Logf("CHECKPOINT returned %v after it started, once its held upload went through", time.Since(started).Round(time.Millisecond))
	case <-time.After(2 * time.Minute):
		t.Fatal("CHECKPOINT did not return after its upload was released")
	}
	if id, st, e := lastManualCheckpoint(t, c); st != "COMPLETED" {
		t.Errorf("checkpoint %d after a slow upload: %s %s", id, st, e)
	}

	// A failed upload is CHECKPOINT's error; the jobs keep their data.
	s3.FailPuts.Store(true)
	insert(100)
	_, err := c.Exec(ctx, "CHECKPOINT")
	wantErr(t, "CHECKPOINT whose upload fails", err, "58030", "upload")
	if id, st, _ := lastManualCheckpoint(t, c); st != "FAILED" {
		t.Errorf("checkpoint %d whose upload failed: %s", id, st)
	}
	s3.FailPuts.Store(false)
	insert(100)
	execAll(t, c, "CHECKPOINT")
	samePairs(t, "pebble view after the upload fault", queryPairs(t, c, "SELECT k, n FROM p"), want)
	samePairs(t, "memory view after the upload fault", queryPairs(t, c, "SELECT k, n FROM m"), want)
	for _, v := range []string{"p", "m"} {
		if j := job(t, c, v); j.state != "RUNNING" || j.restarts != 0 {
			t.Errorf("job %s after a slow and a failed upload: %+v", v, j)
		}
	}
}

func lastManualCheckpoint(t *testing.T, c *pgx.Conn) (int64, string, string) {
	t.Helper()
	var id int64
	var status string
	var errText *string
	if err := c.QueryRow(context.Background(), `SELECT id, status, error FROM streamdb_checkpoints WHERE "trigger" = 'manual' ORDER BY id DESC LIMIT 1`).Scan(&id, &status, &errText); err != nil {
		t.Fatal(err)
	}
	e := ""
	if errText != nil {
		e = *errText
	}
	return id, status, e
}

func pairsEqual(a, b map[int64]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// poll waits up to limit for cond, checking every 100 ms.
func poll(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
