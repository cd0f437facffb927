package sqllogic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/nexmark"
)

// Windows against PostgreSQL 15 (issue 12): TUMBLE, HOP and SESSION batch
// queries, in both syntaxes, and CUMULATE ones (a table function only)
// give the rows PostgreSQL gives for the same windows written with
// date_bin, generate_series and a gaps-and-islands query; their views equal their batch queries, and Nexmark q11 (SESSION)
// runs as a view across kill -9 under load. An EMIT ON WINDOW CLOSE q11
// holds each closed session exactly once.

// windowPGCase is a streamdb window query and PostgreSQL's equivalent.
type windowPGCase struct {
	name, sql, pg string
}

const pgGapsAndIslands = `SELECT bidder, count(*) AS bid_count, min(date_time) AS starttime,
    max(date_time) + INTERVAL '10' SECOND AS endtime
  FROM (SELECT bidder, date_time, sum(brk) OVER (PARTITION BY bidder ORDER BY date_time ROWS UNBOUNDED PRECEDING) AS sid
        FROM (SELECT bidder, date_time,
                CASE WHEN date_time - lag(date_time) OVER (PARTITION BY bidder ORDER BY date_time) < INTERVAL '10' SECOND
                THEN 0 ELSE 1 END AS brk
              FROM bid) a) b
  GROUP BY bidder, sid`

func windowPGCases() []windowPGCase {
	var q11 string
	for _, q := range nexmark.Queries() {
		if q.Name == "q11" {
			q11 = q.SQL
		}
	}
	hopPG := `SELECT auction, ws, ws + INTERVAL '10' SECOND, count(*), max(price)
	  FROM bid, LATERAL generate_series(date_bin('2 seconds', date_time, '1970-01-01') - INTERVAL '8' SECOND,
	                                    date_bin('2 seconds', date_time, '1970-01-01'), INTERVAL '2' SECOND) AS ws
	  GROUP BY 1, 2, 3`
	// A CUMULATE row is in the windows starting at its max-sized window's
	// start and ending at each step after the row, up to the max size:
	// the join against that list of window ends.
	const cumWindows = `FROM bid, LATERAL generate_series(date_bin('2 seconds', date_time, '1970-01-01') + INTERVAL '2' SECOND,
	                                    date_bin('10 seconds', date_time, '1970-01-01') + INTERVAL '10' SECOND, INTERVAL '2' SECOND) AS we`
	tumblePG := `SELECT auction, date_bin('1 second', date_time, '1970-01-01'),
	    date_bin('1 second', date_time, '1970-01-01') + INTERVAL '1' SECOND, count(*), sum(price)
	  FROM bid GROUP BY 1, 2, 3`
	return []windowPGCase{
		{"w_q11", q11, pgGapsAndIslands},
		{"w_session_keyless", `SELECT count(*) AS n, SESSION_START(date_time, INTERVAL '1' SECOND) AS starttime,
		    SESSION_END(date_time, INTERVAL '1' SECOND) AS endtime, min(price) AS lo, max(price) AS hi
		  FROM bid WHERE price % 5000 = 0 GROUP BY SESSION(date_time, INTERVAL '1' SECOND)`,
			`SELECT count(*), min(date_time), max(date_time) + INTERVAL '1' SECOND, min(price), max(price)
			  FROM (SELECT date_time, price, sum(brk) OVER (ORDER BY date_time ROWS UNBOUNDED PRECEDING) AS sid
			        FROM (SELECT date_time, price, CASE WHEN date_time - lag(date_time) OVER (ORDER BY date_time) < INTERVAL '1' SECOND
			                THEN 0 ELSE 1 END AS brk FROM bid WHERE price % 5000 = 0) a) b
			  GROUP BY sid`},
		{"w_hop_tvf", `SELECT auction, window_start, window_end, count(*), max(price)
		  FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end`, hopPG},
		{"w_hop_group", `SELECT auction, HOP_START(date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND),
		    HOP_END(date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND), count(*), max(price)
		  FROM bid GROUP BY auction, HOP(date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)`, hopPG},
		{"w_cumulate_tvf", `SELECT auction, window_start, window_end, count(*), max(price)
		  FROM CUMULATE(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end`,
			`SELECT auction, date_bin('10 seconds', date_time, '1970-01-01'), we, count(*), max(price) ` + cumWindows + ` GROUP BY 1, 2, 3`},
		// Grouped by the start alone: all of a row's copies in one group.
		{"w_cumulate_start", `SELECT auction, window_start, count(*), sum(price)
		  FROM CUMULATE(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start`,
			`SELECT auction, date_bin('10 seconds', date_time, '1970-01-01'), count(*), sum(price) ` + cumWindows + ` GROUP BY 1, 2`},
		{"w_tumble_tvf", `SELECT auction, window_start, window_end, count(*), sum(price)
		  FROM TUMBLE(bid, date_time, INTERVAL '1' SECOND) GROUP BY auction, window_start, window_end`, tumblePG},
		{"w_tumble_group", `SELECT auction, TUMBLE_START(date_time, INTERVAL '1' SECOND), TUMBLE_END(date_time, INTERVAL '1' SECOND),
		    count(*), sum(price) FROM bid GROUP BY auction, TUMBLE(date_time, INTERVAL '1' SECOND)`, tumblePG},
	}
}

func TestWindowsPG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: Nexmark volumes and PostgreSQL")
	}
	const (
		rounds   = 4
		perRound = 40000 // 4 s of event time a round
		seed     = 20261202
		crashAt  = 1
	)
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, ddl := range nexmarkDDL {
		mustExec(t, pgc, "PostgreSQL", ddl)
		if strings.Contains(ddl, "CREATE TABLE bid") {
			ddl = strings.Replace(ddl, "date_time TIMESTAMP,", "date_time TIMESTAMP, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND,", 1)
		}
		mustExec(t, sdb, "streamdb", ddl)
	}
	mustExec(t, sdb, "streamdb", "SET checkpoint.interval = '1s'")
	cases := windowPGCases()
	for _, c := range cases {
		mustExec(t, sdb, "streamdb", "CREATE MATERIALIZED VIEW "+c.name+" AS "+c.sql)
	}
	eowc := []windowPGCase{{name: "w_q11_eowc", sql: cases[0].sql}, {name: "w_session_keyless_eowc", sql: cases[1].sql}}
	for _, c := range eowc {
		mustExec(t, sdb, "streamdb", "CREATE MATERIALIZED VIEW "+c.name+" AS "+c.sql+" EMIT ON WINDOW CLOSE")
	}

	gen := newNexmarkGen(seed)
	start := time.Now()
	for round := 0; round < rounds; round++ {
		ev := gen.events(perRound)
		for _, c := range []*pgx.Conn{sdb, pgc} {
			if err := ev.copyTo(context.Background(), c); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if round == crashAt {
			// Under load: the jobs are still working through the COPYs.
			srv.Kill9()
			srv.Restart(t)
			sdb = srv.Conn(t)
		}
		mustExec(t, sdb, "streamdb", "CHECKPOINT")
		mustExec(t, sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			checkWindowPG(t, round, c, sdb, pgc)
		}
		for _, c := range eowc {
			checkEOWC(t, round, sdb, c)
		}
	}
	for _, c := range append(cases, eowc...) {
		if n := lateRows(t, sdb, c.name); n != 0 {
			t.Errorf("%s: %d late rows over events in time order", c.name, n)
		}
	}
	t.Logf("%d rounds of %d events (seed %d, kill -9 after round %d's COPY) checked in %v",
		rounds, perRound, seed, crashAt, time.Since(start).Round(time.Millisecond))
}

func checkWindowPG(t *testing.T, round int, c windowPGCase, sdb, pgc *pgx.Conn) {
	t.Helper()
	want, err := queryRows(pgc, c.pg)
	if err != nil {
		t.Fatalf("PostgreSQL: %s: %v", c.pg, err)
	}
	batch, err := queryRows(sdb, c.sql)
	if err != nil {
		t.Fatalf("round %d: streamdb batch %s: %v", round, c.name, err)
	}
	if d := diffRows(batch, want); d != "" {
		t.Errorf("round %d: WRONG RESULT of the batch query %s (vs PostgreSQL)\n%s", round, c.name, d)
	}
	view, err := queryRows(sdb, "SELECT * FROM "+c.name)
	if err != nil {
		t.Fatalf("round %d: SELECT * FROM %s: %v", round, c.name, err)
	}
	if d := diffRows(view, batch); d != "" {
		t.Errorf("round %d: view %s differs from its batch query (\"PostgreSQL\" below is the batch query)\n%s", round, c.name, d)
	}
	t.Logf("round %d: %s: %d rows", round, c.name, len(want))
}

// checkEOWC compares an EMIT ON WINDOW CLOSE session view with its batch
// query's sessions that ended at or before its watermark: each exactly
// once (the view is a multiset: a session emitted twice shows).
func checkEOWC(t *testing.T, round int, sdb *pgx.Conn, c windowPGCase) {
	t.Helper()
	wm, ok := jobWatermark(t, sdb, c.name)
	if !ok {
		t.Fatalf("round %d: %s has no watermark", round, c.name)
	}
	want, err := queryRows(sdb, "SELECT * FROM ("+c.sql+") AS t WHERE endtime <= '"+wm.Format("2006-01-02 15:04:05.999999")+"'")
	if err != nil {
		t.Fatal(err)
	}
	got, err := queryRows(sdb, "SELECT * FROM "+c.name)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffRows(got, want); d != "" {
		t.Errorf("round %d: %s differs from its batch query's sessions closed by watermark %s\n%s", round, c.name, wm, d)
	}
	t.Logf("round %d: %s: %d closed sessions at watermark %s", round, c.name, len(got), wm.Format(time.DateTime))
}
