package sqllogic

import (
	"strings"
	"testing"
)

// CUMULATE windows and window joins on HOP and CUMULATE windows, and late
// rows (issue 12): CUMULATE is one expand stage like HOP, so a row late
// for all its windows is counted and recorded once (by its last, max-sized
// window), and a row late for some of its windows only updates the open
// ones and is not late; a window join on HOP or CUMULATE windows counts a
// row once the same way. Across kill -9.

func TestLateRowsCumulate(t *testing.T) {
	const cum = "CUMULATE(bid, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)"
	l := newLateBid(t, cum, "Cumulate", []string{"cum", "cumstart", "cumtop", "cumclose"}, "2026-01-01 00:00:22",
		// Up to three windows per row, all starting at the row's 15 s
		// window's start, ending 5, 10 and 15 s after it.
		`CREATE MATERIALIZED VIEW cum AS SELECT window_start, window_end, count(*) AS n, sum(k)::bigint AS s
		   FROM `+cum+` GROUP BY window_start, window_end`,
		// Grouped by the start alone: every copy of a row is in one group,
		// which closes 15 s after its start.
		`CREATE MATERIALIZED VIEW cumstart AS SELECT window_start, count(*) AS n, sum(k)::bigint AS s
		   FROM `+cum+` GROUP BY window_start`,
		`CREATE MATERIALIZED VIEW cumtop AS SELECT window_start, window_end, k FROM (
		   SELECT window_start, window_end, k, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY k DESC) AS rn
		   FROM `+cum+`) x WHERE rn <= 1`,
		// Each window once, when it closes.
		`CREATE MATERIALIZED VIEW cumclose AS SELECT window_start, window_end, count(*) AS n, sum(k)::bigint AS s
		   FROM `+cum+` GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`,
		"INSERT INTO bid VALUES (1, '2026-01-01 00:00:01'), (2, '2026-01-01 00:00:06')",
		"INSERT INTO bid VALUES (3, '2026-01-01 00:00:24')",
	)
	// Windows ending at or before 00:00:22 are closed: [0, 5), [0, 10),
	// [0, 15), [15, 20). 00:00:03 is in [0, 5), [0, 10), [0, 15): all
	// closed, late once. 00:00:17 is in [15, 20) (closed), [15, 25) and
	// [15, 30) (open): it updates the open ones and is not late.
	l.late(1,
		"INSERT INTO bid VALUES (100, '2026-01-01 00:00:03')",
		"INSERT INTO bid VALUES (200, '2026-01-01 00:00:17')")
	c := l.c
	wantCum := strings.Join([]string{
		"2026-01-01 00:00:00 2026-01-01 00:00:05 1 1",
		"2026-01-01 00:00:00 2026-01-01 00:00:10 2 3",
		"2026-01-01 00:00:00 2026-01-01 00:00:15 2 3",
		"2026-01-01 00:00:15 2026-01-01 00:00:25 2 203",
		"2026-01-01 00:00:15 2026-01-01 00:00:30 2 203",
	}, "\n")
	waitSorted(t, c, "SELECT * FROM cum", wantCum)
	closed := strings.Join(strings.Split(wantCum, "\n")[:3], "\n")
	waitSorted(t, c, "SELECT * FROM cumclose", closed)
	// The group of start 00:00:15 is open until 00:00:30: all three of
	// 00:00:17's copies are in it.
	waitSorted(t, c, "SELECT * FROM cumstart", "2026-01-01 00:00:00 5 7\n2026-01-01 00:00:15 5 606")
	wantTop := strings.Join([]string{
		"2026-01-01 00:00:00 2026-01-01 00:00:05 1",
		"2026-01-01 00:00:00 2026-01-01 00:00:10 2",
		"2026-01-01 00:00:00 2026-01-01 00:00:15 2",
		"2026-01-01 00:00:15 2026-01-01 00:00:25 200",
		"2026-01-01 00:00:15 2026-01-01 00:00:30 200",
	}, "\n")
	waitSorted(t, c, "SELECT * FROM cumtop", wantTop)
	// Another epoch changes nothing: counted once, recorded once, by the
	// row's max-sized window.
	l.recordedOnce("(100, 2026-01-01 00:00:03, 2026-01-01 00:00:00, 2026-01-01 00:00:15) 2026-01-01 00:00:15 2026-01-01 00:00:22",
		l.views...)
	// A batch query has no lateness: every row is in all its windows.
	batch := rowsOf(t, c, "SELECT window_start, window_end, count(*), sum(k)::bigint FROM "+cum+" GROUP BY 1, 2")
	wantBatch := strings.Join([]string{
		"2026-01-01 00:00:00 2026-01-01 00:00:05 2 101",
		"2026-01-01 00:00:00 2026-01-01 00:00:10 3 103",
		"2026-01-01 00:00:00 2026-01-01 00:00:15 3 103",
		"2026-01-01 00:00:15 2026-01-01 00:00:20 1 200",
		"2026-01-01 00:00:15 2026-01-01 00:00:25 2 203",
		"2026-01-01 00:00:15 2026-01-01 00:00:30 2 203",
	}, "\n")
	if batch != wantBatch {
		t.Fatalf("batch:\n%s\nwant\n%s", batch, wantBatch)
	}

	// kill -9: the closed windows stay closed and the count is kept; a
	// row partly late is still not counted, a wholly late one once.
	l.kill9()
	l.late(2,
		"INSERT INTO bid VALUES (1000, '2026-01-01 00:00:18')",
		"INSERT INTO bid VALUES (7, '2026-01-01 00:00:12')")
	c = l.c
	wantCum = strings.ReplaceAll(wantCum, "2 203", "3 1203")
	waitSorted(t, c, "SELECT * FROM cum", wantCum)
	waitSorted(t, c, "SELECT * FROM cumstart", "2026-01-01 00:00:00 5 7\n2026-01-01 00:00:15 8 3606")
	waitSorted(t, c, "SELECT * FROM cumtop", strings.NewReplacer(":25 200", ":25 1000", ":30 200", ":30 1000").Replace(wantTop))
	l.lateRowCounts(2)
	// The watermark passes 00:00:30: the open windows close, each emitted
	// once with the partly late rows in it.
	waitSorted(t, c, "SELECT * FROM cumclose", closed)
	execAll(t, c, "INSERT INTO bid VALUES (5, '2026-01-01 00:00:42')", "CHECKPOINT")
	waitSorted(t, c, "SELECT * FROM cumclose", wantCum)
}

// Window joins of two HOP or two CUMULATE table functions on their
// windows: a row late for all its windows counts once, a row late for
// some joins in the open ones.
func TestLateRowsWindowJoinHop(t *testing.T) {
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	queries := map[string]string{
		"wj_hop": `SELECT x.k, x.window_start, x.window_end, x.v, y.w
			FROM HOP(a, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS x
			JOIN HOP(b, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS y
			ON x.k = y.k AND x.window_start = y.window_start AND x.window_end = y.window_end`,
		"wj_cum": `SELECT x.k, x.window_start, x.window_end, x.v, y.w
			FROM CUMULATE(a, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS x
			JOIN CUMULATE(b, ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND) AS y
			ON x.k = y.k AND x.window_start = y.window_start AND x.window_end = y.window_end`,
	}
	execAll(t, c,
		"SET job.late_rows = 'record'",
		"CREATE TABLE a (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		"CREATE TABLE b (k BIGINT, w BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)")
	for v, q := range queries {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+v+" AS "+q)
	}
	execAll(t, c,
		"INSERT INTO a VALUES (1, 1, '2026-01-01 00:00:01')",
		"INSERT INTO b VALUES (1, 10, '2026-01-01 00:00:02'), (1, 30, '2026-01-01 00:00:23')",
		"INSERT INTO a VALUES (2, 2, '2026-01-01 00:00:24')",
		"INSERT INTO b VALUES (2, 20, '2026-01-01 00:00:24')")
	for v := range queries {
		waitWatermark(t, c, v, ts("2026-01-01 00:00:22"))
	}
	// Closed at 00:00:22: HOP windows ending by then ([-5, 5), [0, 10),
	// [5, 15), [10, 20)), CUMULATE's [0, 5), [0, 10), [0, 15), [15, 20).
	// a's 00:00:03 is in closed windows only: late once. a's 00:00:17 is
	// in HOP [10, 20) (closed) and [15, 25) (open), CUMULATE [15, 20)
	// (closed), [15, 25) and [15, 30) (open): it meets b's 00:00:23 in the
	// open ones and is not late.
	execAll(t, c,
		"INSERT INTO a VALUES (1, 100, '2026-01-01 00:00:03')",
		"INSERT INTO a VALUES (1, 200, '2026-01-01 00:00:17')",
		"CHECKPOINT")
	for v := range queries {
		waitLateRows(t, c, v, 1)
	}
	check := func(when, exclude string) {
		t.Helper()
		for v, q := range queries {
			want := rowsOf(t, c, "SELECT * FROM ("+q+") AS t WHERE "+exclude)
			waitSorted(t, c, "SELECT * FROM "+v, want)
			if !strings.Contains(want, " 200 30") {
				t.Fatalf("%s: %s: the partly late row joins nothing: the test shows nothing\n%s", when, v, want)
			}
		}
	}
	check("first", "v <> 100")
	if got, want := rowsOf(t, c, "SELECT * FROM wj_hop WHERE v = 200"), "1 2026-01-01 00:00:15 2026-01-01 00:00:25 200 30"; got != want {
		t.Fatalf("wj_hop: the partly late row:\n%s\nwant\n%s", got, want)
	}
	execAll(t, c, "CHECKPOINT")
	recorded := map[string]string{
		"wj_hop": "(1, 100, 2026-01-01 00:00:03, 2026-01-01 00:00:00, 2026-01-01 00:00:10) 2026-01-01 00:00:10 2026-01-01 00:00:22",
		"wj_cum": "(1, 100, 2026-01-01 00:00:03, 2026-01-01 00:00:00, 2026-01-01 00:00:15) 2026-01-01 00:00:15 2026-01-01 00:00:22",
	}
	for v := range queries {
		if n := showJobsLate(t, c, v); n != 1 {
			t.Fatalf("%s: SHOW JOBS late_rows %d, want 1", v, n)
		}
		if got := rowsOf(t, c, "SELECT row_text, event_time, watermark FROM streamdb_late_rows WHERE job = '"+v+"'"); got != recorded[v] {
			t.Fatalf("%s: streamdb_late_rows:\n%s\nwant\n%s", v, got, recorded[v])
		}
	}

	// kill -9: a wholly late row of either side counts once, a partly
	// late one joins.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c,
		"INSERT INTO a VALUES (1, 300, '2026-01-01 00:00:04')",
		"INSERT INTO b VALUES (1, 99, '2026-01-01 00:00:03')",
		"INSERT INTO a VALUES (1, 400, '2026-01-01 00:00:18')",
		"CHECKPOINT")
	for v := range queries {
		waitLateRows(t, c, v, 3)
	}
	check("after kill -9", "v NOT IN (100, 300) AND w <> 99")
	for v := range queries {
		if n := lateRowCount(t, c, v); n != 3 {
			t.Fatalf("%s: %d rows in streamdb_late_rows, want 3", v, n)
		}
	}
}
