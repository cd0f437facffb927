package sqllogic

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSessionNumericKeyDScalePG checks that a session window view keyed by
// an unconstrained NUMERIC column prints each key with the digits written
// (1.50, 2.000), as PostgreSQL 15 does, while it runs and after kill -9 and
// a graceful restart, on the Pebble and the memory state backend: state
// keys encode values without display scales, so the scales travel in the
// session's state value. The oracle is PostgreSQL's gaps-and-islands
// sessions over the same rows.
func TestSessionNumericKeyDScalePG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	pgc := pg.Conn(t)
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	const q = `SELECT k, count(*) AS n, sum(v) AS s, SESSION_START(ts, INTERVAL '2' SECOND) AS ws,
	    SESSION_END(ts, INTERVAL '2' SECOND) AS we FROM ev GROUP BY k, SESSION(ts, INTERVAL '2' SECOND)`
	const oracle = `SELECT k, count(*) AS n, sum(v) AS s, min(ts) AS ws, max(ts) + INTERVAL '2' SECOND AS we
	  FROM (SELECT k, v, ts, sum(brk) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid
	        FROM (SELECT k, v, ts, CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) < INTERVAL '2' SECOND
	                THEN 0 ELSE 1 END AS brk FROM ev) a) b
	  GROUP BY k, sid`
	execAll(t, c,
		"CREATE TABLE ev (k NUMERIC, v NUMERIC, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
		"CREATE MATERIALIZED VIEW sdp AS "+q,
		"SET state.backend = 'memory'",
		"CREATE MATERIALIZED VIEW sdm AS "+q)
	execAll(t, pgc, "CREATE TABLE ev (k NUMERIC, v NUMERIC, ts TIMESTAMP)")
	keys := []string{"1.50", "2.000", "0.10", "3", "-4.2500"}
	vals := []string{"0.5", "1.25", "2.000", "7", "0.125"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Round b spans event seconds [3b, 3b+3): every key has rows 0.7 s
	// apart, or one row only (then a gap: its next row starts a session).
	round := func(c *pgx.Conn, b int) {
		var rows []string
		for i, k := range keys {
			for j, ms := range []int{0, 700, 1400} {
				if j > 0 && (b+i)%3 == 0 {
					break
				}
				at := base.Add(time.Duration(b*3000+ms) * time.Millisecond)
				rows = append(rows, fmt.Sprintf("(%s, %s, '%s')", k, vals[(b+i+j)%len(vals)], at.Format("2006-01-02 15:04:05.000")))
			}
		}
		stmt := "INSERT INTO ev VALUES " + strings.Join(rows, ", ")
		execAll(t, c, stmt)
		execAll(t, pgc, stmt)
	}
	check := func(c *pgx.Conn, when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		want := rowSet(t, pgc, oracle)
		if got := rowSet(t, c, q); got != want {
			t.Fatalf("%s: the batch query differs from PostgreSQL\n  streamdb:   %s\n  PostgreSQL: %s", when, got, want)
		}
		for _, v := range []string{"sdp", "sdm"} {
			for deadline := time.Now().Add(20 * time.Second); ; {
				got := rowSet(t, c, "SELECT * FROM "+v)
				if got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: view %s differs from PostgreSQL\n  view:       %s\n  PostgreSQL: %s", when, v, got, want)
				}
				execAll(t, c, "CHECKPOINT")
			}
		}
	}
	for b := 0; b < 3; b++ {
		round(c, b)
	}
	check(c, "before a restart")
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	check(c, "after kill -9")
	for b := 3; b < 6; b++ {
		round(c, b)
	}
	check(c, "rounds after kill -9")
	srv.Restart(t)
	c = srv.Conn(t)
	check(c, "after a graceful restart")
}
