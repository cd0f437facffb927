package sqllogic

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Temporal filters (issue 12): WHERE ts > now() - INTERVAL ... in a
// materialized view retracts rows as processing time passes them, across a
// crash too; other uses of now() in a view are refused; a batch query just
// evaluates now().

// waitRows polls q until it returns want rows or the limit passes, and
// returns how long it took.
func waitRows(t *testing.T, c *pgx.Conn, q string, want int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := fetchCount(t, c, q)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: %d rows after %v, want %d", q, got, limit, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTemporalFilterRetracts(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE ev (id BIGINT, ts TIMESTAMP)",
		// Row 1 is in for about 15 s (its time is 14 s ahead, the window
		// 1 s); row 2 for about an hour; row 3 was never in; row 4 has no
		// time (NULL is not > anything).
		"INSERT INTO ev VALUES (1, now() + INTERVAL '14' SECOND), (2, now()), (3, now() - INTERVAL '2' HOUR), (4, NULL)",
		"CREATE MATERIALIZED VIEW recent AS SELECT id, ts FROM ev WHERE ts > now() - INTERVAL '1' SECOND AND id < 100",
		"CREATE MATERIALIZED VIEW recent_n AS SELECT count(*) AS n FROM ev WHERE now() - INTERVAL '1' HOUR <= ts",
		"INSERT INTO ev VALUES (100, now() + INTERVAL '1' HOUR)", // filtered by the other conjunct
	)
	took := waitRows(t, c, "SELECT id FROM recent WHERE id IN (1, 2)", 1, 30*time.Second)
	t.Logf("row 1 alone in the view after %v", took)
	if got := rowSet(t, c, "SELECT id FROM recent"); got != "1" {
		t.Fatalf("recent = %q, want only row 1 (row 2 left after a second)", got)
	}
	// The aggregate over a temporal filter counts the rows of the last
	// hour: 1, 2 and 100.
	waitRows(t, c, "SELECT n FROM recent_n WHERE n = 3", 1, 30*time.Second)

	// A crash keeps the kept rows and their deadlines: row 1 still leaves.
	execAll(t, c, "CHECKPOINT")
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	took = waitRows(t, c, "SELECT id FROM recent", 0, 60*time.Second)
	t.Logf("row 1 retracted %v after the restart", took)
	if got := rowSet(t, c, "SELECT n FROM recent_n"); got != "3" {
		t.Fatalf("recent_n = %q, want 3", got)
	}

	// The retraction is a change: a view over the view sees it.
	execAll(t, c,
		"CREATE MATERIALIZED VIEW recent_ids AS SELECT count(*) AS n FROM recent",
		"INSERT INTO ev VALUES (5, now() + INTERVAL '3' SECOND)")
	waitRows(t, c, "SELECT n FROM recent_ids WHERE n = 1", 1, 30*time.Second)
	took = waitRows(t, c, "SELECT n FROM recent_ids WHERE n = 0", 1, 60*time.Second)
	t.Logf("row 5 left the view over the view %v after it entered", took)

	// Batch queries evaluate now().
	if got := rowSet(t, c, "SELECT id FROM ev WHERE ts > now() - INTERVAL '1' HOUR AND ts < now() + INTERVAL '10' MINUTE ORDER BY id"); got != "1; 2; 5" {
		t.Fatalf("batch temporal query = %q, want 1, 2, 5", got)
	}
}

func TestTemporalFilterRefusals(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE ev (id BIGINT, ts TIMESTAMP)")
	for _, q := range []string{
		"SELECT id, now() FROM ev",
		"SELECT id FROM ev WHERE ts < now()",
		"SELECT id FROM ev WHERE ts <= now() - INTERVAL '1' HOUR",
		"SELECT id FROM ev WHERE ts > now() - INTERVAL '1' HOUR OR id = 1",
		"SELECT id FROM ev WHERE ts > now() - INTERVAL '1' HOUR AND ts > now() - INTERVAL '2' HOUR",
		"SELECT date_trunc('hour', now()) AS h, count(*) FROM ev GROUP BY 1",
		"SELECT id FROM ev WHERE id > extract(epoch from now())",
	} {
		_, err := c.Exec(context.Background(), "CREATE MATERIALIZED VIEW bad AS "+q)
		pe := wantCode(t, q, err, "0A000")
		t.Logf("%s: %s", q, pe.Message)
	}
	// Nothing was created, and the server still serves.
	if n := fetchCount(t, c, "SELECT name FROM streamdb_jobs WHERE name = 'bad'"); n != 0 {
		t.Fatalf("a refused view left %d jobs", n)
	}
	execAll(t, c, "CREATE MATERIALIZED VIEW ok AS SELECT id FROM ev WHERE ts >= now() - INTERVAL '1' DAY")
}
