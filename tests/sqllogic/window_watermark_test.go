package sqllogic

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Watermarks (issue 12): each source partition's watermark is its largest
// event time minus the WATERMARK FOR delay; every operator passes it on,
// joins take the minimum of their inputs, idle partitions stop holding it
// back, and a restarted job resumes with the watermark it committed.

// jobWatermark reads a job's watermark from streamdb_jobs (ok=false: NULL).
func jobWatermark(t *testing.T, c *pgx.Conn, job string) (time.Time, bool) {
	t.Helper()
	var wm *time.Time
	var late int64
	if err := c.QueryRow(context.Background(),
		"SELECT watermark, late_rows FROM streamdb_jobs WHERE name = $1", job).Scan(&wm, &late); err != nil {
		t.Fatal(err)
	}
	if wm == nil {
		return time.Time{}, false
	}
	return wm.UTC(), true
}

// waitWatermark polls until job's watermark is want (generously: the
// machine may be loaded), failing on a watermark past it.
func waitWatermark(t *testing.T, c *pgx.Conn, job string, want time.Time) {
	t.Helper()
	start := time.Now()
	for {
		got, ok := jobWatermark(t, c, job)
		if ok && got.Equal(want) {
			t.Logf("%s: watermark %s after %s", job, got.Format(time.DateTime), time.Since(start))
			return
		}
		if ok && got.After(want) {
			t.Fatalf("%s: watermark %s, past %s", job, got, want)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s: watermark %v (set: %v), want %s", job, got, ok, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ts(s string) time.Time {
	v, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return v
}

func TestWatermarkFlows(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE a (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)",
		"CREATE TABLE b (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE TABLE plain (k BIGINT, ts TIMESTAMP)",
		"CREATE MATERIALIZED VIEW wm_agg AS SELECT k, count(*) AS n FROM a GROUP BY k",
		"CREATE MATERIALIZED VIEW wm_rows AS SELECT k, ts FROM a WHERE k > 0",
		"CREATE MATERIALIZED VIEW wm_join AS SELECT a.k, b.ts FROM a JOIN b ON a.k = b.k",
		"CREATE MATERIALIZED VIEW wm_union AS SELECT k FROM a UNION ALL SELECT k FROM plain",
		"INSERT INTO a VALUES (1, '2026-01-01 00:00:10'), (1, '2026-01-01 00:00:03')",
		"INSERT INTO b VALUES (1, '2026-01-01 00:00:05')",
		"INSERT INTO plain VALUES (1, '2026-01-01 00:00:30')",
	)
	waitWatermark(t, c, "wm_agg", ts("2026-01-01 00:00:06"))
	waitWatermark(t, c, "wm_rows", ts("2026-01-01 00:00:06"))
	waitWatermark(t, c, "wm_join", ts("2026-01-01 00:00:04")) // the least of 06 and 04
	// A stream without WATERMARK FOR holds a union back: no watermark.
	execAll(t, c, "CHECKPOINT")
	if wm, ok := jobWatermark(t, c, "wm_union"); ok {
		t.Fatalf("wm_union has watermark %s; a stream without WATERMARK FOR must hold it back", wm)
	}
	// Rows behind the watermark do not move it back.
	execAll(t, c, "INSERT INTO a VALUES (2, '2026-01-01 00:00:01')", "CHECKPOINT")
	if wm, _ := jobWatermark(t, c, "wm_agg"); !wm.Equal(ts("2026-01-01 00:00:06")) {
		t.Fatalf("wm_agg watermark %s after an older row, want 00:00:06", wm)
	}

	// kill -9: the jobs resume with the watermark of their last checkpoint
	// before reading anything new.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	waitWatermark(t, c, "wm_agg", ts("2026-01-01 00:00:06"))
	waitWatermark(t, c, "wm_join", ts("2026-01-01 00:00:04"))
	execAll(t, c, "INSERT INTO b VALUES (1, '2026-01-01 00:00:20')")
	waitWatermark(t, c, "wm_join", ts("2026-01-01 00:00:06"))

	rows, err := c.Query(context.Background(), "SHOW JOBS")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range rows.FieldDescriptions() {
		have[f.Name] = true
	}
	rows.Close()
	if !have["watermark"] || !have["late_rows"] {
		t.Fatalf("SHOW JOBS columns %v lack watermark and late_rows", have)
	}
}

func TestWatermarkIdlePartitions(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE p (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (partitions = 2)",
		// No idle timeout (the default): the partition without rows holds
		// the watermark back for good.
		"CREATE MATERIALIZED VIEW busy AS SELECT k, count(*) AS n FROM p GROUP BY k",
		"SET stream.idle_timeout = '1s'",
		"CREATE MATERIALIZED VIEW idle AS SELECT k, count(*) AS n FROM p GROUP BY k",
		"INSERT INTO p VALUES (1, '2026-01-01 00:00:10')",
	)
	waitWatermark(t, c, "idle", ts("2026-01-01 00:00:08"))
	execAll(t, c, "CHECKPOINT")
	if wm, ok := jobWatermark(t, c, "busy"); ok {
		t.Fatalf("busy has watermark %s though one partition had no rows and idle_timeout is off", wm)
	}
	for _, bad := range []string{"SET stream.idle_timeout = 'soon'", "SET job.late_rows = 'keep'"} {
		if _, err := c.Exec(context.Background(), bad); err == nil {
			t.Fatalf("%s: no error", bad)
		}
	}
}
