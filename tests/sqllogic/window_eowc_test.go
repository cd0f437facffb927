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

// EMIT ON WINDOW CLOSE (issue 12): each window's row is emitted once, when
// the watermark passes the window's end; the view and its changelog only
// ever take inserts, in window order, across kill -9.

func TestEmitOnWindowCloseRefusals(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE ev (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE TABLE nowm (k BIGINT, ts TIMESTAMP)")
	for q, code := range map[string]string{
		"SELECT window_start, count(*) FROM TUMBLE(ev, ts, INTERVAL '1' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE":                                 "0A000",
		"CREATE MATERIALIZED VIEW a AS SELECT k, count(*) FROM ev GROUP BY k EMIT ON WINDOW CLOSE":                                                          "0A000",
		"CREATE MATERIALIZED VIEW b AS SELECT window_start, count(*) FROM TUMBLE(nowm, ts, INTERVAL '1' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE": "0A000",
		"CREATE VIEW c AS SELECT window_start, count(*) FROM TUMBLE(ev, ts, INTERVAL '1' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE":                "0A000",
	} {
		_, err := c.Exec(context.Background(), q)
		if err == nil || !strings.Contains(err.Error(), code) {
			t.Errorf("%s: %v, want %s", q, err, code)
		}
	}
	if got := rowsOf(t, c, "SELECT count(*) FROM streamdb_jobs"); got != "0" {
		t.Fatalf("%s jobs after refused statements", got)
	}
}

func TestEmitOnWindowCloseCrash(t *testing.T) {
	dir := t.TempDir()
	// One aggregate instance: with several, each emits the windows a
	// watermark closes in window order, and the sink interleaves them.
	srv := StartServer(t, dir, "--parallelism=1")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c,
		"SET checkpoint.interval = '200ms'",
		"CREATE TABLE ev (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		`CREATE MATERIALIZED VIEW w AS SELECT window_start, window_end, count(*) AS n, sum(k)::bigint AS s
		   FROM TUMBLE(ev, ts, INTERVAL '1' SECOND) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`,
		// A view over w takes every change of w's changelog: a window
		// emitted twice, or retracted, would show there.
		"CREATE MATERIALIZED VIEW log AS SELECT window_start, n FROM w",
	)
	// A change stream of w while the server is up: inserts only, in
	// window order.
	sub := srv.Conn(t)
	var mu sync.Mutex
	var changes []string
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		rows, err := sub.Query(ctx, "SELECT window_start FROM w EMIT CHANGES")
		if err != nil {
			t.Errorf("change stream: %v", err)
			return
		}
		for rows.Next() {
			var ws time.Time
			var op string
			if rows.Scan(&ws, &op) != nil {
				return
			}
			mu.Lock()
			changes = append(changes, op+" "+ws.UTC().Format(time.DateTime))
			mu.Unlock()
		}
	}()

	// The stream's job is running (its snapshot of w is empty) before any row.
	start := time.Now()
	for changeStreams(t, c) != 1 {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the change stream of w did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Load: 20 rows per second of event time, each INSERT the next 5
	// seconds, in order; kill -9 in the middle.
	base := ts("2026-01-01 00:00:00")
	insert := func(c *pgx.Conn, batch int) error {
		var vals []string
		for s := 0; s < 5; s++ {
			for r := 0; r < 20; r++ {
				at := base.Add(time.Duration(batch*5+s)*time.Second + time.Duration(r)*50*time.Millisecond)
				vals = append(vals, fmt.Sprintf("(%d, '%s')", batch*100+s*20+r, at.Format("2006-01-02 15:04:05.000")))
			}
		}
		_, err := c.Exec(ctx, "INSERT INTO ev VALUES "+strings.Join(vals, ", "))
		return err
	}
	// The load runs while the server is killed: an INSERT then fails, and
	// the one in flight may or may not have committed.
	var inserted atomic.Int64
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for b := 0; b < 60; b++ {
			if insert(c, b) != nil {
				return
			}
			inserted.Add(1)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(changes)
		mu.Unlock()
		if n >= 20 && inserted.Load() >= 10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	before := append([]string(nil), changes...)
	mu.Unlock()
	srv.Kill9()
	<-streamDone
	<-loadDone
	srv.Restart(t)
	c = srv.Conn(t)
	// Go on after the last batch that committed.
	var maxTS time.Time
	if err := c.QueryRow(ctx, "SELECT max(ts) FROM ev").Scan(&maxTS); err != nil {
		t.Fatal(err)
	}
	batch := int(maxTS.Sub(base)/time.Second)/5 + 1
	t.Logf("killed after %d acknowledged batches; %d committed", inserted.Load(), batch)
	if int64(batch) < inserted.Load() {
		t.Fatalf("%d batches acknowledged, only %d committed", inserted.Load(), batch)
	}
	for ; batch < 80; batch++ {
		if err := insert(c, batch); err != nil {
			t.Fatal(err)
		}
	}
	// Everything up to 00:06:40 is in; the watermark (last row - 1 s)
	// closes every window before 00:06:38.
	closed := "ts < '2026-01-01 00:06:38'"
	execAll(t, c, "CHECKPOINT")
	waitWatermark(t, c, "w", ts("2026-01-01 00:06:38.95"))
	execAll(t, c, "CHECKPOINT")
	want := rowsOf(t, c, "SELECT window_start, window_end, count(*), sum(k)::bigint FROM TUMBLE(ev, ts, INTERVAL '1' SECOND) WHERE "+closed+" GROUP BY window_start, window_end")
	got := rowsOf(t, c, "SELECT * FROM w")
	if got != want {
		t.Fatalf("w differs from the batch query over its closed windows:\n%s\nwant\n%s", head(got), head(want))
	}
	if len(before) == 0 {
		t.Fatal("the change stream of w saw nothing before kill -9")
	}
	if n := strings.Count(got, "\n") + 1; n != 398 {
		t.Fatalf("w has %d windows, want 398", n)
	}
	if dup := rowsOf(t, c, "SELECT window_start, count(*) FROM log GROUP BY window_start HAVING count(*) > 1"); dup != "" {
		t.Fatalf("windows emitted more than once into w's changelog:\n%s", head(dup))
	}
	if got, want := rowsOf(t, c, "SELECT window_start, n FROM log"), rowsOf(t, c, "SELECT window_start, n FROM w"); got != want {
		t.Fatalf("log differs from w:\n%s\nwant\n%s", head(got), head(want))
	}
	for i, ch := range before {
		if !strings.HasPrefix(ch, "insert ") {
			t.Fatalf("change %d of w is %q: EMIT ON WINDOW CLOSE only inserts", i, ch)
		}
		if i > 0 && ch < before[i-1] {
			t.Fatalf("change %d (%s) came after %s: not in window order", i, ch, before[i-1])
		}
	}
	t.Logf("%d changes streamed before kill -9; %d windows after", len(before), strings.Count(got, "\n")+1)
}

func head(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("... (%d lines)", len(lines)))
	}
	return strings.Join(lines, "\n")
}
