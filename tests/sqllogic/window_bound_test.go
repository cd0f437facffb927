package sqllogic

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Watermarks bound their own column (issue 27): a window, a session, a
// top-N per window or an interval join closes, frees and drops late rows
// only by a watermark that bounds its time — the WATERMARK FOR column,
// through renames in views and subqueries, plus or minus a fixed interval
// (closing that much later or earlier). Over any other time it never
// drops a row, so the view equals its batch query; EMIT ON WINDOW CLOSE
// over one is refused (0A000) naming the column and the watermark.

// shipRows inserts the five rows, one per checkpoint: ship in the
// first 10-second window, ts (the watermark column) moving forward.
func shipRows(t *testing.T, c *pgx.Conn, table string) {
	t.Helper()
	for i := 1; i <= 5; i++ {
		execAll(t, c, fmt.Sprintf("INSERT INTO %s VALUES (%d, '2026-01-01 00:00:%d0', '2026-01-01 00:00:0%d')", table, i, i, i),
			"CHECKPOINT")
	}
}

// sameAsBatch checks each view against its query, run as a batch query
// over the same input (or against oracle[view], the query over the rows
// but its late ones), after a checkpoint; late is the late rows each
// view's job must have counted.
func sameAsBatch(t *testing.T, c *pgx.Conn, views, oracle map[string]string, late map[string]int64) {
	t.Helper()
	execAll(t, c, "CHECKPOINT")
	for v, q := range views {
		if o := oracle[v]; o != "" {
			q = o
		}
		if got, want := rowSet(t, c, "SELECT * FROM "+v), rowSet(t, c, q); got != want {
			t.Errorf("%s differs from its batch query:\n%s\nwant\n%s", v, got, want)
		}
		if n := lateRows(t, c, v); n != late[v] {
			t.Errorf("%s: %d late rows, want %d", v, n, late[v])
		}
	}
}

const evShip = "CREATE TABLE ev (k BIGINT, ts TIMESTAMP, ship TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)"

// shipViewsAsBatch creates views over ev, inserts the rows and
// checks the views against their batch queries: none drops a row.
func shipViewsAsBatch(t *testing.T, views map[string]string) {
	t.Helper()
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, evShip)
	createViews(t, c, views)
	shipRows(t, c, "ev")
	sameAsBatch(t, c, views, nil, nil)
}

// createViews creates each view as its query.
func createViews(t *testing.T, c *pgx.Conn, views map[string]string) {
	t.Helper()
	for v, q := range views {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+v+" AS "+q)
	}
}

func TestTumbleOverNonWatermarkColumn(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, evShip,
		// A rename does not move the watermark: evr.ts is ev.ship.
		"CREATE VIEW evr AS SELECT k, ship AS ts FROM ev",
		// A column computed from the watermark column is not bounded by it.
		"CREATE VIEW evc AS SELECT k, ts + (ship - ts) AS t FROM ev",
		// ...but a rename of it is.
		"CREATE VIEW evt AS SELECT k, ts AS t FROM ev WHERE k > 0")
	views := map[string]string{
		"w":       "SELECT window_start, count(*) AS n FROM TUMBLE(ev, ship, INTERVAL '10' SECOND) GROUP BY window_start",
		"wg":      "SELECT TUMBLE_START(ship, INTERVAL '10' SECOND) AS s, count(*) AS n FROM ev GROUP BY TUMBLE(ship, INTERVAL '10' SECOND)",
		"wr":      "SELECT window_end, count(*) AS n FROM TUMBLE(evr, ts, INTERVAL '10' SECOND) GROUP BY window_end",
		"wsub":    "SELECT TUMBLE_START(ts, INTERVAL '10' SECOND) AS s, count(*) AS n FROM (SELECT k, ship AS ts FROM ev) AS x GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)",
		"wc":      "SELECT window_start, count(*) AS n FROM TUMBLE(evc, t, INTERVAL '10' SECOND) GROUP BY window_start",
		"control": "SELECT window_start, count(*) AS n FROM TUMBLE(evt, t, INTERVAL '10' SECOND) GROUP BY window_start",
	}
	createViews(t, c, views)
	shipRows(t, c, "ev")
	// The watermark is 00:00:49: a row at ts 00:00:05 is late for the
	// control's closed window [00:00:00, 00:00:10), and for no other view.
	execAll(t, c, "INSERT INTO ev VALUES (6, '2026-01-01 00:00:05', '2026-01-01 00:00:06')")
	sameAsBatch(t, c, views, map[string]string{
		"control": "SELECT tumble_start(t, INTERVAL '10' SECOND), count(*) FROM evt WHERE k <> 6 GROUP BY 1",
	}, map[string]int64{"control": 1})
	if got := rowsOf(t, c, "SELECT n FROM w"); got != "6" {
		t.Fatalf("w: %s, want 6", got)
	}
}

// Windows over the watermark column shifted by a fixed interval close at
// the shifted bound: ts - 2 hours two hours later than ts, ts + 1 hour
// one hour earlier; their windows here line up with ts's own, so each
// closes when the watermark of ts reaches 02:00:10.
func TestWindowShiftedBound(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE ev (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE VIEW evm AS SELECT k, ts - INTERVAL '2' HOUR AS t FROM ev")
	views := map[string]string{
		"minus":  "SELECT window_start, count(*) AS n FROM TUMBLE(evm, t, INTERVAL '10' SECOND) GROUP BY window_start",
		"minusg": "SELECT TUMBLE_START(ts - INTERVAL '2' HOUR, INTERVAL '10' SECOND) AS s, count(*) AS n FROM ev GROUP BY TUMBLE(ts - INTERVAL '2' HOUR, INTERVAL '10' SECOND)",
		"plusg":  "SELECT TUMBLE_START(ts + INTERVAL '1' HOUR, INTERVAL '10' SECOND) AS s, count(*) AS n FROM ev GROUP BY TUMBLE(ts + INTERVAL '1' HOUR, INTERVAL '10' SECOND)",
		"hopm":   "SELECT window_end, count(*) AS n FROM HOP(evm, t, INTERVAL '10' SECOND, INTERVAL '10' SECOND) GROUP BY window_end",
	}
	createViews(t, c, views)
	execAll(t, c,
		"INSERT INTO ev VALUES (1, '2026-01-01 02:00:01')", "CHECKPOINT",
		// Watermark 02:00:09.999999: the first window is still open, even
		// for a row behind the watermark.
		"INSERT INTO ev VALUES (2, '2026-01-01 02:00:10.999999')", "CHECKPOINT",
		"INSERT INTO ev VALUES (3, '2026-01-01 02:00:09')", "CHECKPOINT",
		// Watermark 02:00:10: the first window closes.
		"INSERT INTO ev VALUES (4, '2026-01-01 02:00:11')", "CHECKPOINT",
		// Behind it: late. At it: in the next window, kept.
		"INSERT INTO ev VALUES (5, '2026-01-01 02:00:09.999999'), (6, '2026-01-01 02:00:10')")
	// Each is the batch query over the rows but the late one.
	starts := "SELECT tumble_start(t, INTERVAL '10' SECOND), count(*) FROM evm WHERE k <> 5 GROUP BY 1"
	sameAsBatch(t, c, views, map[string]string{
		"minus":  starts,
		"minusg": starts,
		"plusg":  "SELECT tumble_start(ts + INTERVAL '1' HOUR, INTERVAL '10' SECOND), count(*) FROM ev WHERE k <> 5 GROUP BY 1",
		"hopm":   "SELECT tumble_end(t, INTERVAL '10' SECOND), count(*) FROM evm WHERE k <> 5 GROUP BY 1",
	}, map[string]int64{"minus": 1, "minusg": 1, "plusg": 1, "hopm": 1})
	if got := rowsOf(t, c, "SELECT n FROM minus"); got != "2\n3" {
		t.Fatalf("minus: %s, want 2 and 3", got)
	}
}

func TestHopCumulateSessionOverNonWatermarkColumn(t *testing.T) {
	shipViewsAsBatch(t, map[string]string{
		"hop":   "SELECT window_start, window_end, count(*) AS n FROM HOP(ev, ship, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY window_start, window_end",
		"hopg":  "SELECT HOP_START(ship, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS s, count(*) AS n FROM ev GROUP BY HOP(ship, INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
		"cum":   "SELECT window_start, window_end, count(*) AS n FROM CUMULATE(ev, ship, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY window_start, window_end",
		"sess":  "SELECT SESSION_START(ship, INTERVAL '10' SECOND) AS s, SESSION_END(ship, INTERVAL '10' SECOND) AS e, count(*) AS n FROM ev GROUP BY SESSION(ship, INTERVAL '10' SECOND)",
		"sesst": "SELECT k % 2 AS p, window_start, window_end, count(*) AS n FROM SESSION(ev, ship, INTERVAL '10' SECOND) GROUP BY k % 2, window_start, window_end",
	})
}

// EMIT ON WINDOW CLOSE needs windows that close: over a column without a
// watermark it is refused, naming the column and the watermark there is;
// over the watermark column shifted, its rows come at the shifted close.
func TestEmitOnWindowCloseNeedsWatermarkColumn(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, evShip,
		"CREATE VIEW evr AS SELECT k, ship AS ts FROM ev",
		"CREATE VIEW evm AS SELECT k, ts - INTERVAL '2' HOUR AS t FROM ev")
	for _, q := range []string{
		"SELECT window_start, count(*) AS n FROM TUMBLE(ev, ship, INTERVAL '10' SECOND) GROUP BY window_start",
		"SELECT TUMBLE_START(ship, INTERVAL '10' SECOND) AS s, count(*) AS n FROM ev GROUP BY TUMBLE(ship, INTERVAL '10' SECOND)",
		"SELECT window_end, count(*) AS n FROM HOP(ev, ship, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY window_end",
		"SELECT window_end, count(*) AS n FROM CUMULATE(ev, ship, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY window_end",
		"SELECT SESSION_START(ship, INTERVAL '10' SECOND) AS s, count(*) AS n FROM ev GROUP BY SESSION(ship, INTERVAL '10' SECOND)",
		"SELECT window_start, count(*) AS n FROM TUMBLE(evr, ts, INTERVAL '10' SECOND) GROUP BY window_start",
	} {
		execErr(t, c, "CREATE MATERIALIZED VIEW bad AS "+q+" EMIT ON WINDOW CLOSE", "0A000", "ev.ship has no watermark: the watermark of ev is on ts (WATERMARK FOR ts)")
	}
	execAll(t, c,
		"CREATE MATERIALIZED VIEW e AS SELECT window_start, count(*) AS n FROM TUMBLE(evm, t, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE",
		"INSERT INTO ev VALUES (1, '2026-01-01 02:00:01', NULL), (2, '2026-01-01 02:00:10.999999', NULL)",
		"CHECKPOINT")
	// Watermark 02:00:09.999999: the window [00:00:00, 00:00:10) of ts - 2 hours is open.
	if got := rowsOf(t, c, "SELECT * FROM e"); got != "" {
		t.Fatalf("e before its window closed: %s", got)
	}
	execAll(t, c, "INSERT INTO ev VALUES (3, '2026-01-01 02:00:11', NULL)", "CHECKPOINT")
	waitSorted(t, c, "SELECT * FROM e", "2026-01-01 00:00:00 1")
}

// Interval and window joins judge each side by its own time's watermark.
func TestIntervalJoinTimeWatermarks(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE a (k BIGINT, ts TIMESTAMP, ship TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE TABLE b (k BIGINT, ts TIMESTAMP, ship TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)")
	views := map[string]string{
		// Neither side's time has a watermark: a plain join.
		"neither": `SELECT a.ship AS l, b.ship AS r FROM a JOIN b
		   ON a.k = b.k AND a.ship BETWEEN b.ship - INTERVAL '5' SECOND AND b.ship + INTERVAL '5' SECOND`,
		// a's time has one, b's not: no b row is late, no a row is freed.
		"mixed": `SELECT a.ts AS l, b.ship AS r FROM a JOIN b
		   ON a.k = b.k AND a.ts BETWEEN b.ship - INTERVAL '5' SECOND AND b.ship + INTERVAL '5' SECOND`,
		// Through a view renaming ship to ts.
		"renamed": `SELECT a.ts AS l, bs.ts AS r FROM a JOIN (SELECT k, ship AS ts FROM b) AS bs
		   ON a.k = bs.k AND a.ts BETWEEN bs.ts - INTERVAL '5' SECOND AND bs.ts + INTERVAL '5' SECOND`,
		// A window join over windows of ship: a plain join.
		"wjship": `SELECT x.window_start, x.ts AS l, y.ts AS r
		   FROM TUMBLE(a, ship, INTERVAL '10' SECOND) AS x JOIN TUMBLE(b, ship, INTERVAL '10' SECOND) AS y
		   ON x.k = y.k AND x.window_start = y.window_start AND x.window_end = y.window_end`,
		// Both own theirs: an interval join freeing and dropping by them.
		"owned": `SELECT a.ts AS l, b.ts AS r FROM a JOIN b
		   ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts + INTERVAL '5' SECOND`,
	}
	createViews(t, c, views)
	execAll(t, c,
		"INSERT INTO a VALUES (1, '2026-01-01 00:00:10', '2026-01-01 00:00:01')",
		"INSERT INTO b VALUES (1, '2026-01-01 00:00:10', '2026-01-01 00:00:02')", "CHECKPOINT",
		"INSERT INTO a VALUES (1, '2026-01-01 00:01:00', '2026-01-01 00:00:03')",
		"INSERT INTO b VALUES (1, '2026-01-01 00:01:00', '2026-01-01 00:00:04')", "CHECKPOINT",
		// The watermark is 00:00:59.
		"INSERT INTO b VALUES (1, '2026-01-01 00:01:05', '2026-01-01 00:00:05')",
		"INSERT INTO a VALUES (1, '2026-01-01 00:01:05', '2026-01-01 00:00:06')", "CHECKPOINT",
		// Late for "owned" only: b.ts 00:00:12 is behind the watermark.
		"INSERT INTO b VALUES (1, '2026-01-01 00:00:12', '2026-01-01 00:00:07')")
	sameAsBatch(t, c, views, map[string]string{
		"owned": `SELECT a.ts, b.ts FROM a JOIN (SELECT * FROM b WHERE ts <> '2026-01-01 00:00:12') AS b
		   ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts + INTERVAL '5' SECOND`,
	}, map[string]int64{"owned": 1})
	if n := count(t, c, "SELECT count(*) FROM neither"); n != 11 {
		t.Fatalf("neither: %d pairs, want 11", n)
	}
}

func TestTopNPerWindowOverNonWatermarkColumn(t *testing.T) {
	shipViewsAsBatch(t, map[string]string{
		"toprows": `SELECT * FROM (SELECT window_start, k,
		    ROW_NUMBER() OVER (PARTITION BY window_start ORDER BY k DESC) AS rn
		    FROM TUMBLE(ev, ship, INTERVAL '10' SECOND)) AS t WHERE rn <= 2`,
		"topcounts": `SELECT * FROM (SELECT window_start, k, n,
		    RANK() OVER (PARTITION BY window_start ORDER BY n DESC, k) AS r
		    FROM (SELECT window_start, k % 2 AS k, count(*) AS n
		          FROM TUMBLE(ev, ship, INTERVAL '10' SECOND) GROUP BY window_start, k % 2) AS c) AS t WHERE r <= 1`,
	})
}
