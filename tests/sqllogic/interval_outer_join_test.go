package sqllogic

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Outer, semi and anti interval and window joins freed by watermark
// (issue 12): LEFT, RIGHT and FULL joins, EXISTS and NOT EXISTS with an
// interval condition, and a LEFT join of two TUMBLEs delete their rows
// once the watermark has passed every partner they could meet. A
// NULL-padded row (an anti join's row) is emitted when its row comes
// unmatched and retracted at its first match, as before, so each view
// equals its batch query at every checkpoint; a row that stays freed
// after a match that was freed keeps that match across kill -9.

var iojQueries = map[string]string{
	"oj_left": `SELECT a.k, a.v, b.w, a.ts AS ats, b.ts AS bts FROM a LEFT JOIN b
		ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '10' SECOND AND b.ts + INTERVAL '1' SECOND`,
	// Mirrored bounds: here b's rows outlive a's.
	"oj_right": `SELECT b.k, a.v, b.w, a.ts AS ats, b.ts AS bts FROM a RIGHT JOIN b
		ON a.k = b.k AND b.ts >= a.ts - INTERVAL '10' SECOND AND b.ts <= a.ts + INTERVAL '1' SECOND`,
	"oj_full": `SELECT coalesce(a.k, b.k) AS k, a.v, b.w, a.ts AS ats, b.ts AS bts FROM a FULL JOIN b
		ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '10' SECOND AND b.ts + INTERVAL '1' SECOND`,
	"oj_semi": `SELECT a.k, a.v, a.ts FROM a WHERE EXISTS (SELECT 1 FROM b
		WHERE b.k = a.k AND a.ts BETWEEN b.ts - INTERVAL '10' SECOND AND b.ts + INTERVAL '1' SECOND)`,
	"oj_anti": `SELECT a.k, a.v, a.ts FROM a WHERE NOT EXISTS (SELECT 1 FROM b
		WHERE b.k = a.k AND a.ts BETWEEN b.ts - INTERVAL '10' SECOND AND b.ts + INTERVAL '1' SECOND)`,
	"owj_left": `SELECT x.k, x.window_start, x.window_end, x.v, y.w
		FROM TUMBLE(a, ts, INTERVAL '10' SECOND) AS x LEFT JOIN TUMBLE(b, ts, INTERVAL '10' SECOND) AS y
		ON x.k = y.k AND x.window_start = y.window_start AND x.window_end = y.window_end`,
}

// iojStep inserts step s's rows over the step's 10 seconds, in event-time
// order: 20 rows of a (keys 0-4) and 16 of b (keys 0-3, a few seconds
// later), so that some rows of each side meet partners and some do not.
func iojStep(t *testing.T, exec func(...string), s int) {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s) * 10 * time.Second)
	var a, b strings.Builder
	for i := 0; i < 20; i++ {
		if i > 0 {
			a.WriteString(", ")
		}
		fmt.Fprintf(&a, "(%d, %d, '%s')", i%5, s*100+i, base.Add(time.Duration(i)*500*time.Millisecond).Format("2006-01-02 15:04:05.000"))
	}
	for i := 0; i < 16; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, %d, '%s')", (i+1)%4, s*1000+i, base.Add(time.Duration(i)*600*time.Millisecond+300*time.Millisecond).Format("2006-01-02 15:04:05.000"))
	}
	exec("INSERT INTO a VALUES "+a.String(), "INSERT INTO b VALUES "+b.String())
}

func TestIntervalJoinOuterFreedByWatermark(t *testing.T) {
	r := newIJRig(t, iojQueries)
	// Rows of keys 90-99 are late, or meet rows that were freed: the
	// view has what the batch query has, bar the late rows (key 99).
	r.steps(30, iojStep)
	// A late pair (both rows behind the watermark, 00:04:59): dropped and
	// counted; the batch query has its pair, the views do not.
	r.exec("INSERT INTO a VALUES (99, 1, '2026-01-01 00:00:01')", "INSERT INTO b VALUES (99, 2, '2026-01-01 00:00:01.5')")
	r.exec("CHECKPOINT")
	for v := range iojQueries {
		waitLateRows(t, r.c, v, 2)
	}
	r.check("after a late pair")

	// Pinned matches. Key 90: a's row at 00:05:01 (the watermark is at
	// 00:04:59) meets b's row at 00:05:02 (in the BETWEEN views a row of
	// a is freed 10 s after its time passes the watermark, one of b 1 s
	// after; in oj_right the other way round). The watermark then moves to
	// 00:05:05: b's row is freed, a's row stays and keeps its match (in
	// oj_right a's row is freed and b's keeps it). After kill -9 new rows
	// of both sides meet the rows left: a's (b's) NULL-padded row is not
	// there to be retracted (a view does not show a retraction of a row
	// it does not have, but a change stream would carry it), oj_anti has
	// no a row to retract, and oj_semi must not emit a's row again.
	r.exec("INSERT INTO a VALUES (90, 9000, '2026-01-01 00:05:01')",
		"INSERT INTO b VALUES (90, 9001, '2026-01-01 00:05:02')",
		"CHECKPOINT",
		"INSERT INTO a VALUES (91, 0, '2026-01-01 00:05:06')",
		"INSERT INTO b VALUES (91, 0, '2026-01-01 00:05:06')",
		"CHECKPOINT", "CHECKPOINT")
	r.check("after key 90's partner was freed")
	r.kill9()
	r.exec("INSERT INTO b VALUES (90, 9002, '2026-01-01 00:05:07')", "INSERT INTO a VALUES (90, 9003, '2026-01-01 00:05:08')")
	r.check("after kill -9: a new match of a row whose match was freed")
	for v, want := range map[string]string{
		"oj_left": "90|9000|9001|2026-01-01 00:05:01|2026-01-01 00:05:02; 90|9000|9002|2026-01-01 00:05:01|2026-01-01 00:05:07; " +
			"90|9003|9002|2026-01-01 00:05:08|2026-01-01 00:05:07",
		"oj_right": "90|9000|9001|2026-01-01 00:05:01|2026-01-01 00:05:02; 90|9003|9001|2026-01-01 00:05:08|2026-01-01 00:05:02; " +
			"90|9003|9002|2026-01-01 00:05:08|2026-01-01 00:05:07",
		"oj_semi": "90|9000|2026-01-01 00:05:01; 90|9003|2026-01-01 00:05:08",
		"oj_anti": "",
	} {
		if got := rowSet(t, r.c, "SELECT * FROM "+v+" WHERE k = 90"); got != want {
			t.Fatalf("%s: key 90 = %q, want %q", v, got, want)
		}
	}
	// kill -9 with rows not yet committed, then more steps.
	iojStep(t, r.exec, 31)
	r.kill9()
	for s := 32; s < 40; s++ {
		iojStep(t, r.exec, s)
	}
	r.check("after a second kill -9")
	// Left: the rows of the last step or two, not forty steps' 1,440.
	r.stopAndCountState("40 steps of 36 rows", 100)
}
