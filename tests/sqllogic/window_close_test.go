package sqllogic

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Windows that close (issue 12): once the watermark passes a window's end,
// a row that falls into it is late: dropped, counted in streamdb_jobs, and
// the window's row in the view stays as it was, across kill -9 too.

func lateRows(t *testing.T, c *pgx.Conn, job string) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT coalesce(late_rows, 0) FROM streamdb_jobs WHERE name = $1", job).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitLateRows(t *testing.T, c *pgx.Conn, job string, want int64) {
	t.Helper()
	start := time.Now()
	for {
		n := lateRows(t, c, job)
		if n == want {
			return
		}
		if n > want || time.Since(start) > 30*time.Second {
			t.Fatalf("%s: %d late rows, want %d", job, n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rowsOf returns a query's rows as sorted text lines.
func rowsOf(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			if tm, ok := v.(time.Time); ok {
				v = tm.UTC().Format(time.DateTime)
			}
			parts = append(parts, fmt.Sprint(v))
		}
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func TestWindowCloseLateRows(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE bid (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		`CREATE MATERIALIZED VIEW tvf AS SELECT window_start, window_end, count(*) AS n, sum(k)::bigint AS s
		   FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end`,
		`CREATE MATERIALIZED VIEW grp AS SELECT TUMBLE_START(ts, INTERVAL '10' SECOND) AS ws, count(*) AS n
		   FROM bid GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)`,
		`CREATE MATERIALIZED VIEW hop AS SELECT window_start, window_end, count(*) AS n
		   FROM HOP(bid, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY window_start, window_end`,
		// No window: nothing is late.
		"CREATE MATERIALIZED VIEW plain AS SELECT count(*) AS n, sum(k)::bigint AS s FROM bid",
		"INSERT INTO bid VALUES (1, '2026-01-01 00:00:01'), (2, '2026-01-01 00:00:05')",
		"INSERT INTO bid VALUES (3, '2026-01-01 00:00:13')",
	)
	for _, v := range []string{"tvf", "grp", "hop", "plain"} {
		waitWatermark(t, c, v, ts("2026-01-01 00:00:11"))
	}
	wantTvf := "2026-01-01 00:00:00 2026-01-01 00:00:10 2 3\n2026-01-01 00:00:10 2026-01-01 00:00:20 1 3"
	if got := rowsOf(t, c, "SELECT * FROM tvf"); got != wantTvf {
		t.Fatalf("tvf:\n%s\nwant\n%s", got, wantTvf)
	}
	// 00:00:04 is in [00:00:00, 00:00:10), closed at watermark 00:00:11:
	// late. 00:00:12 is not.
	execAll(t, c,
		"INSERT INTO bid VALUES (100, '2026-01-01 00:00:04')",
		"INSERT INTO bid VALUES (10, '2026-01-01 00:00:12')",
		"CHECKPOINT")
	waitLateRows(t, c, "tvf", 1)
	waitLateRows(t, c, "grp", 1)
	// The row is in two hopping windows, both closed: one late row.
	waitLateRows(t, c, "hop", 1)
	if n := lateRows(t, c, "plain"); n != 0 {
		t.Fatalf("plain: %d late rows, want 0", n)
	}
	wantTvf = "2026-01-01 00:00:00 2026-01-01 00:00:10 2 3\n2026-01-01 00:00:10 2026-01-01 00:00:20 2 13"
	if got := rowsOf(t, c, "SELECT * FROM tvf"); got != wantTvf {
		t.Fatalf("tvf after a late row:\n%s\nwant\n%s", got, wantTvf)
	}
	wantGrp := "2026-01-01 00:00:00 2\n2026-01-01 00:00:10 2"
	if got := rowsOf(t, c, "SELECT * FROM grp"); got != wantGrp {
		t.Fatalf("grp:\n%s\nwant\n%s", got, wantGrp)
	}
	wantHop := "2025-12-31 23:59:55 2026-01-01 00:00:05 1\n2026-01-01 00:00:00 2026-01-01 00:00:10 2\n" +
		"2026-01-01 00:00:05 2026-01-01 00:00:15 3\n2026-01-01 00:00:10 2026-01-01 00:00:20 2"
	if got := rowsOf(t, c, "SELECT * FROM hop"); got != wantHop {
		t.Fatalf("hop:\n%s\nwant\n%s", got, wantHop)
	}
	if got := rowsOf(t, c, "SELECT * FROM plain"); got != "5 116" {
		t.Fatalf("plain: %s, want 5 116", got)
	}

	// After kill -9 the closed window stays closed: the late count and the
	// rows survive, and another late row is dropped too.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "INSERT INTO bid VALUES (1000, '2026-01-01 00:00:09')", "CHECKPOINT")
	waitLateRows(t, c, "tvf", 2)
	if got := rowsOf(t, c, "SELECT * FROM tvf"); got != wantTvf {
		t.Fatalf("tvf after a restart and a late row:\n%s\nwant\n%s", got, wantTvf)
	}
	// A row in an open window still counts.
	execAll(t, c, "INSERT INTO bid VALUES (5, '2026-01-01 00:00:19')", "CHECKPOINT")
	wantTvf = "2026-01-01 00:00:00 2026-01-01 00:00:10 2 3\n2026-01-01 00:00:10 2026-01-01 00:00:20 3 18"
	if got := rowsOf(t, c, "SELECT * FROM tvf"); got != wantTvf {
		t.Fatalf("tvf:\n%s\nwant\n%s", got, wantTvf)
	}
}
