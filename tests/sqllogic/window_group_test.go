package sqllogic

import (
	"context"
	"strings"
	"testing"
)

// Flink's group windows (issue 12): GROUP BY [keys,] HOP(ts, slide, size)
// with HOP_START/HOP_END, and TUMBLE(ts, size) with TUMBLE_START/TUMBLE_END,
// close by the watermark as the table functions do, with EMIT ON WINDOW
// CLOSE too; a HOP/CUMULATE view grouped by window_start alone closes.

const hopGroupQuery = `SELECT k, HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS ws,
    HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS we, count(*) AS n
  FROM ev GROUP BY k, HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)`

func TestGroupWindowHop(t *testing.T) {
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE ev (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		"CREATE MATERIALIZED VIEW hg AS "+hopGroupQuery,
		"CREATE MATERIALIZED VIEW hge AS "+hopGroupQuery+" EMIT ON WINDOW CLOSE",
		`CREATE MATERIALIZED VIEW tg AS SELECT TUMBLE_START(ts, INTERVAL '10' SECOND) AS ws,
		   TUMBLE_END(ts, INTERVAL '10' SECOND) AS we, count(*) AS n FROM ev GROUP BY TUMBLE(ts, INTERVAL '10' SECOND) EMIT ON WINDOW CLOSE`,
		// Grouped by window_start alone: closes at window_start + size.
		`CREATE MATERIALIZED VIEW hs AS SELECT window_start, count(*) AS n
		   FROM HOP(ev, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) GROUP BY window_start EMIT ON WINDOW CLOSE`,
		"INSERT INTO ev VALUES (1, '2026-01-01 00:00:01'), (1, '2026-01-01 00:00:06'), (2, '2026-01-01 00:00:07')",
		"INSERT INTO ev VALUES (1, '2026-01-01 00:00:13')",
		"CHECKPOINT")
	// The same windows as the HOP table function's.
	tvf := rowsOf(t, c, `SELECT k, window_start, window_end, count(*) FROM HOP(ev, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)
	    GROUP BY k, window_start, window_end`)
	if got := rowsOf(t, c, hopGroupQuery); got != tvf {
		t.Fatalf("GROUP BY HOP:\n%s\nwant (HOP table function)\n%s", got, tvf)
	}
	waitSorted(t, c, "SELECT * FROM hg", tvf)
	// Watermark 00:00:11: windows ending at 00:00:05 and 00:00:10 closed.
	waitWatermark(t, c, "hge", ts("2026-01-01 00:00:11"))
	closed := "1 2025-12-31 23:59:55 2026-01-01 00:00:05 1\n1 2026-01-01 00:00:00 2026-01-01 00:00:10 2\n" +
		"2 2026-01-01 00:00:00 2026-01-01 00:00:10 1"
	waitSorted(t, c, "SELECT * FROM hge", closed)
	waitSorted(t, c, "SELECT * FROM tg", "2026-01-01 00:00:00 2026-01-01 00:00:10 3")
	waitSorted(t, c, "SELECT * FROM hs", "2025-12-31 23:59:55 1\n2026-01-01 00:00:00 3")
	// 00:00:04 falls in two closed windows: late once for hg and hs (a
	// HOP row is late when its last window is closed, and counted once,
	// as for the table function) and for tg.
	execAll(t, c, "INSERT INTO ev VALUES (1, '2026-01-01 00:00:04')", "CHECKPOINT")
	waitLateRows(t, c, "tg", 1)
	waitLateRows(t, c, "hg", 1)
	waitLateRows(t, c, "hs", 1)
	waitSorted(t, c, "SELECT * FROM hge", closed)
	execAll(t, c, "INSERT INTO ev VALUES (1, '2026-01-01 00:00:30')", "CHECKPOINT")
	waitWatermark(t, c, "hge", ts("2026-01-01 00:00:28"))
	waitSorted(t, c, "SELECT * FROM hge", "1 2025-12-31 23:59:55 2026-01-01 00:00:05 1\n1 2026-01-01 00:00:00 2026-01-01 00:00:10 2\n"+
		"1 2026-01-01 00:00:05 2026-01-01 00:00:15 2\n1 2026-01-01 00:00:10 2026-01-01 00:00:20 1\n"+
		"2 2026-01-01 00:00:00 2026-01-01 00:00:10 1\n2 2026-01-01 00:00:05 2026-01-01 00:00:15 1")
	waitSorted(t, c, "SELECT * FROM hs", "2025-12-31 23:59:55 1\n2026-01-01 00:00:00 3\n2026-01-01 00:00:05 3\n2026-01-01 00:00:10 1")

	for q, code := range map[string]string{
		"SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '20' SECOND) FROM ev GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)": "42803",
		"SELECT HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) FROM ev GROUP BY k":                                                    "42803",
		"SELECT count(*) FROM ev GROUP BY HOP(ts, INTERVAL '3' SECOND, INTERVAL '10' SECOND)":                                                 "22023",
		"SELECT count(*) FROM ev GROUP BY HOP(ts, INTERVAL '0' SECOND, INTERVAL '10' SECOND)":                                                 "22023",
		"SELECT count(*) FROM ev GROUP BY HOP(k, INTERVAL '5' SECOND, INTERVAL '10' SECOND)":                                                  "42804",
		"SELECT count(*) FROM ev GROUP BY HOP(ts, INTERVAL '1' SECOND, INTERVAL '10' MINUTE)":                                                 "0A000",
		"SELECT count(*) FROM ev GROUP BY HOP(ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND), SESSION(ts, INTERVAL '1' SECOND)":                "0A000",
	} {
		_, err := c.Exec(context.Background(), q)
		if err == nil || !strings.Contains(err.Error(), code) {
			t.Errorf("%s: %v, want %s", q, err, code)
		}
	}
}
