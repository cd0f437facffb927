package sqllogic

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// HOP windows and late rows (issue 12): HOP is one expand stage, so a row
// late for all its windows is counted and recorded once, and a row late
// for some of its windows only updates the open ones and is not late; the
// same for GROUP BY HOP and a top-N per HOP window, across kill -9.

// showJobsLate reads job's late_rows column of SHOW JOBS.
func showJobsLate(t *testing.T, c *pgx.Conn, job string) int64 {
	t.Helper()
	rows, err := c.Query(context.Background(), "SHOW JOBS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var name string
		var late int64 = -1
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "name":
				name, _ = vals[i].(string)
			case "late_rows":
				late, _ = vals[i].(int64)
			}
		}
		if name == job {
			return late
		}
	}
	t.Fatalf("SHOW JOBS: no job %s (%v)", job, rows.Err())
	return 0
}

func TestLateRowsHop(t *testing.T) {
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE bid (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		"SET job.late_rows = 'record'",
		// Three windows per row.
		`CREATE MATERIALIZED VIEW tvf AS SELECT window_start, window_end, count(*) AS n, sum(k)::bigint AS s
		   FROM HOP(bid, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) GROUP BY window_start, window_end`,
		`CREATE MATERIALIZED VIEW grp AS SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS ws,
		   HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS we, count(*) AS n, sum(k)::bigint AS s
		   FROM bid GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)`,
		`CREATE MATERIALIZED VIEW top AS SELECT window_start, window_end, k FROM (
		   SELECT window_start, window_end, k, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY k DESC) AS rn
		   FROM HOP(bid, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)) x WHERE rn <= 1`,
		"INSERT INTO bid VALUES (1, '2026-01-01 00:00:01'), (2, '2026-01-01 00:00:06')",
		"INSERT INTO bid VALUES (3, '2026-01-01 00:00:21')",
	)
	// One read of the stream: no UNION ALL of a branch per window.
	plan := rowsOf(t, c, "EXPLAIN SELECT * FROM HOP(bid, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)")
	if !strings.Contains(plan, "Hop") || strings.Contains(plan, "Union") || strings.Count(plan, "StreamScan") != 1 {
		t.Fatalf("EXPLAIN:\n%s", plan)
	}
	views := []string{"tvf", "grp", "top"}
	for _, v := range views {
		waitWatermark(t, c, v, ts("2026-01-01 00:00:19"))
	}
	// Windows ending at 00:00:05, 00:00:10, 00:00:15 are closed.
	// 00:00:03 is in [-10, 5), [-5, 10), [0, 15): all closed, late once.
	// 00:00:08 is in [-5, 10), [0, 15) (closed) and [5, 20) (open): it
	// updates [5, 20) and is not late.
	execAll(t, c,
		"INSERT INTO bid VALUES (100, '2026-01-01 00:00:03')",
		"INSERT INTO bid VALUES (200, '2026-01-01 00:00:08')",
		"CHECKPOINT")
	for _, v := range views {
		waitLateRows(t, c, v, 1)
	}
	wantTvf := strings.Join([]string{
		"2025-12-31 23:59:50 2026-01-01 00:00:05 1 1",
		"2025-12-31 23:59:55 2026-01-01 00:00:10 2 3",
		"2026-01-01 00:00:00 2026-01-01 00:00:15 2 3",
		"2026-01-01 00:00:05 2026-01-01 00:00:20 2 202",
		"2026-01-01 00:00:10 2026-01-01 00:00:25 1 3",
		"2026-01-01 00:00:15 2026-01-01 00:00:30 1 3",
		"2026-01-01 00:00:20 2026-01-01 00:00:35 1 3",
	}, "\n")
	waitSorted(t, c, "SELECT * FROM tvf", wantTvf)
	waitSorted(t, c, "SELECT * FROM grp", wantTvf)
	wantTop := strings.Join([]string{
		"2025-12-31 23:59:50 2026-01-01 00:00:05 1",
		"2025-12-31 23:59:55 2026-01-01 00:00:10 2",
		"2026-01-01 00:00:00 2026-01-01 00:00:15 2",
		"2026-01-01 00:00:05 2026-01-01 00:00:20 200",
		"2026-01-01 00:00:10 2026-01-01 00:00:25 3",
		"2026-01-01 00:00:15 2026-01-01 00:00:30 3",
		"2026-01-01 00:00:20 2026-01-01 00:00:35 3",
	}, "\n")
	waitSorted(t, c, "SELECT * FROM top", wantTop)
	// Another epoch changes nothing: counted once, recorded once.
	execAll(t, c, "CHECKPOINT")
	recorded := "(100, 2026-01-01 00:00:03, 2026-01-01 00:00:00, 2026-01-01 00:00:15) 2026-01-01 00:00:15 2026-01-01 00:00:19"
	for _, v := range []string{"tvf", "grp"} {
		if n := showJobsLate(t, c, v); n != 1 {
			t.Fatalf("%s: SHOW JOBS late_rows %d, want 1", v, n)
		}
		if got := rowsOf(t, c, "SELECT row_text, event_time, watermark FROM streamdb_late_rows WHERE job = '"+v+"'"); got != recorded {
			t.Fatalf("%s: streamdb_late_rows:\n%s\nwant\n%s", v, got, recorded)
		}
	}
	if n := showJobsLate(t, c, "top"); n != 1 {
		t.Fatalf("top: SHOW JOBS late_rows %d, want 1", n)
	}
	if n := lateRowCount(t, c, "top"); n != 1 {
		t.Fatalf("top: %d rows in streamdb_late_rows, want 1", n)
	}
	// A batch query has no lateness: every row is in all its windows.
	batch := rowsOf(t, c, `SELECT window_end, count(*) FROM HOP(bid, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)
	    WHERE window_end <= '2026-01-01 00:00:15' GROUP BY window_end`)
	if want := "2026-01-01 00:00:05 2\n2026-01-01 00:00:10 4\n2026-01-01 00:00:15 4"; batch != want {
		t.Fatalf("batch:\n%s\nwant\n%s", batch, want)
	}

	// kill -9: the closed windows stay closed and the count is kept; a
	// row partly late is still not counted, a wholly late one once.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c,
		"INSERT INTO bid VALUES (1000, '2026-01-01 00:00:09')",
		"INSERT INTO bid VALUES (7, '2026-01-01 00:00:02')",
		"CHECKPOINT")
	for _, v := range views {
		waitLateRows(t, c, v, 2)
	}
	wantTvf = strings.Replace(wantTvf, "00:00:20 2 202", "00:00:20 3 1202", 1)
	waitSorted(t, c, "SELECT * FROM tvf", wantTvf)
	waitSorted(t, c, "SELECT * FROM grp", wantTvf)
	waitSorted(t, c, "SELECT * FROM top", strings.Replace(wantTop, "00:00:20 200", "00:00:20 1000", 1))
	for _, v := range views {
		if n := lateRowCount(t, c, v); n != 2 {
			t.Fatalf("%s: %d rows in streamdb_late_rows, want 2", v, n)
		}
	}
}
