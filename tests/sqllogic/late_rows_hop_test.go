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

// lateBid is the setup TestLateRowsHop and TestLateRowsCumulate share: a
// stream bid whose watermark is 2 s behind its rows, late rows recorded,
// and views over one window table function of it.
type lateBid struct {
	t     *testing.T
	srv   *Server
	c     *pgx.Conn
	views []string
}

// newLateBid starts a server, creates bid, runs stmts (the views and the
// first rows), checks that tvf reads bid once through one op stage (no
// UNION ALL of a branch per window), and waits until every view's
// watermark is at wm.
func newLateBid(t *testing.T, tvf, op string, views []string, wm string, stmts ...string) *lateBid {
	t.Helper()
	srv := StartServer(t, t.TempDir())
	l := &lateBid{t: t, srv: srv, c: srv.Conn(t), views: views}
	execAll(t, l.c, append([]string{
		"CREATE TABLE bid (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		"SET job.late_rows = 'record'",
	}, stmts...)...)
	plan := rowsOf(t, l.c, "EXPLAIN SELECT * FROM "+tvf)
	if !strings.Contains(plan, op) || strings.Contains(plan, "Union") || strings.Count(plan, "StreamScan") != 1 {
		t.Fatalf("EXPLAIN:\n%s", plan)
	}
	for _, v := range views {
		waitWatermark(t, l.c, v, ts(wm))
	}
	return l
}

// late runs stmts and a checkpoint and waits until every view has
// counted n late rows.
func (l *lateBid) late(n int64, stmts ...string) {
	l.t.Helper()
	execAll(l.t, l.c, append(stmts, "CHECKPOINT")...)
	for _, v := range l.views {
		waitLateRows(l.t, l.c, v, n)
	}
}

// recordedOnce runs another checkpoint and checks that each of views
// still counts one late row in SHOW JOBS and recorded it once, as
// recorded (row_text, event_time, watermark).
func (l *lateBid) recordedOnce(recorded string, views ...string) {
	t := l.t
	t.Helper()
	execAll(t, l.c, "CHECKPOINT")
	for _, v := range views {
		if n := showJobsLate(t, l.c, v); n != 1 {
			t.Fatalf("%s: SHOW JOBS late_rows %d, want 1", v, n)
		}
		if got := rowsOf(t, l.c, "SELECT row_text, event_time, watermark FROM streamdb_late_rows WHERE job = '"+v+"'"); got != recorded {
			t.Fatalf("%s: streamdb_late_rows:\n%s\nwant\n%s", v, got, recorded)
		}
	}
}

// kill9 kills the server with kill -9 and restarts it.
func (l *lateBid) kill9() {
	l.srv.Kill9()
	l.srv.Restart(l.t)
	l.c = l.srv.Conn(l.t)
}

// lateRowCounts checks that every view has n rows in streamdb_late_rows.
func (l *lateBid) lateRowCounts(n int64) {
	l.t.Helper()
	for _, v := range l.views {
		if got := lateRowCount(l.t, l.c, v); got != n {
			l.t.Fatalf("%s: %d rows in streamdb_late_rows, want %d", v, got, n)
		}
	}
}

func TestLateRowsHop(t *testing.T) {
	const hop = "HOP(bid, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)"
	l := newLateBid(t, hop, "Hop", []string{"tvf", "grp", "top"}, "2026-01-01 00:00:19",
		// Three windows per row.
		`CREATE MATERIALIZED VIEW tvf AS SELECT window_start, window_end, count(*) AS n, sum(k)::bigint AS s
		   FROM `+hop+` GROUP BY window_start, window_end`,
		`CREATE MATERIALIZED VIEW grp AS SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS ws,
		   HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS we, count(*) AS n, sum(k)::bigint AS s
		   FROM bid GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)`,
		`CREATE MATERIALIZED VIEW top AS SELECT window_start, window_end, k FROM (
		   SELECT window_start, window_end, k, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY k DESC) AS rn
		   FROM `+hop+`) x WHERE rn <= 1`,
		"INSERT INTO bid VALUES (1, '2026-01-01 00:00:01'), (2, '2026-01-01 00:00:06')",
		"INSERT INTO bid VALUES (3, '2026-01-01 00:00:21')",
	)
	// Windows ending at 00:00:05, 00:00:10, 00:00:15 are closed.
	// 00:00:03 is in [-10, 5), [-5, 10), [0, 15): all closed, late once.
	// 00:00:08 is in [-5, 10), [0, 15) (closed) and [5, 20) (open): it
	// updates [5, 20) and is not late.
	l.late(1,
		"INSERT INTO bid VALUES (100, '2026-01-01 00:00:03')",
		"INSERT INTO bid VALUES (200, '2026-01-01 00:00:08')")
	c := l.c
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
	l.recordedOnce("(100, 2026-01-01 00:00:03, 2026-01-01 00:00:00, 2026-01-01 00:00:15) 2026-01-01 00:00:15 2026-01-01 00:00:19",
		"tvf", "grp")
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
	l.kill9()
	l.late(2,
		"INSERT INTO bid VALUES (1000, '2026-01-01 00:00:09')",
		"INSERT INTO bid VALUES (7, '2026-01-01 00:00:02')")
	c = l.c
	wantTvf = strings.Replace(wantTvf, "00:00:20 2 202", "00:00:20 3 1202", 1)
	waitSorted(t, c, "SELECT * FROM tvf", wantTvf)
	waitSorted(t, c, "SELECT * FROM grp", wantTvf)
	waitSorted(t, c, "SELECT * FROM top", strings.Replace(wantTop, "00:00:20 200", "00:00:20 1000", 1))
	l.lateRowCounts(2)
}
