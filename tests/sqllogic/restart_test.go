package sqllogic

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tests of job failures and restart strategies (issue #6), through the wire
// against the real binary. Delays are checked only as lower bounds: a
// restart must never come before its strategy allows it.

type jobRow struct {
	state    string
	restarts int64
	lastErr  string
}

func job(t *testing.T, c *pgx.Conn, name string) jobRow {
	t.Helper()
	var r jobRow
	var lastErr *string
	err := c.QueryRow(context.Background(),
		"SELECT state, restarts, last_error FROM streamdb_jobs WHERE name = $1", name).Scan(&r.state, &r.restarts, &lastErr)
	if err != nil {
		t.Fatalf("job %s: %v", name, err)
	}
	if lastErr != nil {
		r.lastErr = *lastErr
	}
	return r
}

// waitState polls until the job is in state, or fails after timeout.
func waitState(t *testing.T, c *pgx.Conn, name, state string, timeout time.Duration) jobRow {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := job(t, c, name)
		if r.state == state {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: still %+v after %v, want %s", name, r, timeout, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func queryPairs(t *testing.T, c *pgx.Conn, q string) map[int64]int64 {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out := map[int64]int64{}
	for rows.Next() {
		var k, v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func samePairs(t *testing.T, what string, got, want map[int64]int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

// poisonSetup makes a view that fails on a row with v = 0 under
// job.error_policy = 'fail' (poisonTables: under the default 'skip').
const poisonSetup = "SET job.error_policy = 'fail';" + poisonTables

const poisonTables = `CREATE TABLE t (k BIGINT, v BIGINT);
CREATE MATERIALIZED VIEW healthy AS SELECT k, count(*) AS c FROM t GROUP BY k;
CREATE MATERIALIZED VIEW poisoned AS SELECT k, sum(100 / v) AS s FROM t GROUP BY k`

func setup(t *testing.T, c *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		for _, part := range strings.Split(s, ";") {
			if strings.TrimSpace(part) != "" {
				execAll(t, c, part)
			}
		}
	}
}

func TestRestartFixedDelay(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	setup(t, c, "SET restart.strategy = 'fixed-delay'", "SET restart.attempts = 3", "SET restart.delay = '300ms'", poisonSetup)
	start := time.Now()
	execAll(t, c, "INSERT INTO t VALUES (1, 10), (2, 0), (1, 5)")
	r := waitState(t, c, "poisoned", "FAILED", 30*time.Second)
	if elapsed := time.Since(start); elapsed < 900*time.Millisecond {
		t.Errorf("3 restarts 300ms apart took only %v", elapsed)
	}
	if r.restarts != 3 {
		t.Errorf("restarts = %d, want 3", r.restarts)
	}
	for _, want := range []string{"22012", "division by zero", "offset 1", "(2, 0)", "exhausted after 3 attempts"} {
		if !strings.Contains(r.lastErr, want) {
			t.Errorf("last_error %q does not mention %q", r.lastErr, want)
		}
	}
	// The failing job leaves the other one running and exact.
	execAll(t, c, "CHECKPOINT")
	if h := job(t, c, "healthy"); h.state != "RUNNING" || h.restarts != 0 {
		t.Errorf("healthy job: %+v", h)
	}
	samePairs(t, "healthy view", queryPairs(t, c, "SELECT k, c FROM healthy"),
		queryPairs(t, c, "SELECT k, count(*) FROM t GROUP BY k"))
	// A FAILED view still serves its last committed rows; START JOB retries.
	if _, err := c.Exec(context.Background(), "SELECT * FROM poisoned"); err != nil {
		t.Errorf("reading a FAILED view: %v", err)
	}
	execAll(t, c, "START JOB poisoned")
	if r := job(t, c, "poisoned"); r.state != "RUNNING" && r.state != "RESTARTING" && r.state != "FAILED" {
		t.Errorf("after START JOB: %+v", r)
	}
}

func TestRestartNone(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	setup(t, c, "SET restart.strategy = 'none'", poisonSetup)
	execAll(t, c, "INSERT INTO t VALUES (2, 0)")
	r := waitState(t, c, "poisoned", "FAILED", 10*time.Second)
	if r.restarts != 0 || !strings.Contains(r.lastErr, "22012") {
		t.Errorf("none: %+v", r)
	}
}

func TestRestartFailureRate(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	setup(t, c, "SET restart.strategy = 'failure-rate'", "SET restart.max_failures = 2",
		"SET restart.failure_interval = '1min'", "SET restart.delay = '100ms'", poisonSetup)
	execAll(t, c, "INSERT INTO t VALUES (2, 0)")
	r := waitState(t, c, "poisoned", "FAILED", 20*time.Second)
	if r.restarts != 2 {
		t.Errorf("failure-rate with max_failures 2: restarts = %d, want 2 (%s)", r.restarts, r.lastErr)
	}
}

func TestRestartExponentialDelay(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	setup(t, c, "SET restart.strategy = 'exponential-delay'", "SET restart.initial_delay = '100ms'",
		"SET restart.max_delay = '400ms'", "SET restart.multiplier = 2", "SET restart.jitter = 0",
		"SET restart.attempts = 4", poisonSetup)
	start := time.Now()
	execAll(t, c, "INSERT INTO t VALUES (2, 0)")
	r := waitState(t, c, "poisoned", "FAILED", 30*time.Second)
	// Delays 100, 200, 400 (capped), 400 ms.
	if elapsed := time.Since(start); elapsed < 1100*time.Millisecond {
		t.Errorf("exponential delays 100+200+400+400ms took only %v", elapsed)
	}
	if r.restarts != 4 {
		t.Errorf("restarts = %d, want 4 (%s)", r.restarts, r.lastErr)
	}
}

func TestRestartPerViewStrategy(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	setup(t, c, "SET restart.strategy = 'fixed-delay'", "SET restart.attempts = 1000", "SET restart.delay = '50ms'", poisonSetup)
	execAll(t, c, "ALTER MATERIALIZED VIEW poisoned SET (restart.strategy = 'none')")
	if _, err := c.Exec(context.Background(), "ALTER MATERIALIZED VIEW poisoned SET (restart.attempts = 'many')"); err == nil || !strings.Contains(err.Error(), "22023") {
		t.Errorf("bad option value: %v", err)
	}
	execAll(t, c, "INSERT INTO t VALUES (2, 0)")
	r := waitState(t, c, "poisoned", "FAILED", 10*time.Second)
	if r.restarts != 0 {
		t.Errorf("per-view none: %+v", r)
	}
}

func TestTransientFailureRecovers(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, bin, []string{"STREAMDB_FAILPOINTS=counts:agg:2"}, "", "--parallelism", "1")
	c := srv.Conn(t)
	setup(t, c, "SET restart.delay = '100ms'", "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW counts AS SELECT k, count(*) AS c FROM t GROUP BY k")
	for i := 0; i < 5; i++ {
		execAll(t, c, "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3), (1, 4)")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := job(t, c, "counts")
		if r.state == "RUNNING" && r.restarts == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job did not recover after 2 injected failures: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	execAll(t, c, "CHECKPOINT")
	samePairs(t, "view after transient failures", queryPairs(t, c, "SELECT k, c FROM counts"),
		map[int64]int64{1: 10, 2: 5, 3: 5})
}

func TestSkipPolicy(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	setup(t, c, poisonTables) // job.error_policy = 'skip' is the default
	execAll(t, c, "INSERT INTO t VALUES (1, 10), (2, 0), (1, 5), (3, 50)", "INSERT INTO t VALUES (3, 0)", "CHECKPOINT")
	if r := job(t, c, "poisoned"); r.state != "RUNNING" || r.restarts != 0 {
		t.Fatalf("skip policy: %+v", r)
	}
	samePairs(t, "view over the good rows", queryPairs(t, c, "SELECT k, s FROM poisoned"),
		queryPairs(t, c, "SELECT k, sum(100 / v) FROM t WHERE v <> 0 GROUP BY k"))
	rows, err := c.Query(context.Background(), "SELECT job, row_offset, error_code, row_text FROM streamdb_job_errors ORDER BY row_offset")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var job, code, row string
		var off int64
		if err := rows.Scan(&job, &off, &code, &row); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{job, code, row}, " ")+" @"+itoa(off))
	}
	want := []string{"poisoned 22012 (2, 0) @1", "poisoned 22012 (3, 0) @4"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("streamdb_job_errors = %q, want %q", got, want)
	}
	// Recorded once: a restart replays nothing twice.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM streamdb_job_errors").Scan(&n); err != nil || n != 2 {
		t.Errorf("after a crash: %d error rows (%v), want 2", n, err)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
