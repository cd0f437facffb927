package sqllogic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A row whose expression fails (10 / x with x = 0) must not block its view
// (issue 33, bug 5): under the default job.error_policy ('skip') the view
// goes on with the other rows, CHECKPOINT succeeds, and the failure is in
// streamdb_job_errors with its cause and counted in SHOW JOBS (error_rows),
// exactly once across kill -9. A group of an aggregate whose value fails
// has no row in the view, and a record, until its value computes again; a join's output
// row that fails is skipped and recorded the same way.
func TestErrorRowsDefault(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT, x BIGINT)", "CREATE TABLE u (k BIGINT, y BIGINT)",
		"CREATE MATERIALIZED VIEW ratio AS SELECT k, 10 / x AS r FROM t",
		"CREATE MATERIALIZED VIEW agg_ratio AS SELECT k, 10 / sum(x) AS r FROM t GROUP BY k",
		"CREATE MATERIALIZED VIEW join_ratio AS SELECT t.k, 10 / (t.x - u.y) AS r FROM t JOIN u ON t.k = u.k",
		"INSERT INTO u VALUES (1, 0), (2, 5), (3, 1), (4, 1), (5, 10), (6, 0), (7, 2)")
	// The views must equal the batch queries over the rows that compute.
	check := func(step string, ratioErrs, aggErrs, joinErrs int64) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		for _, q := range [][2]string{
			{"SELECT * FROM ratio", "SELECT k, 10 / x FROM t WHERE x <> 0"},
			{"SELECT * FROM agg_ratio", "SELECT k, 10 / sum(x) FROM t GROUP BY k HAVING sum(x) <> 0"},
			{"SELECT * FROM join_ratio", "SELECT t.k, 10 / (t.x - u.y) FROM t JOIN u ON t.k = u.k WHERE t.x <> u.y"},
		} {
			got, err := queryRows(c, q[0])
			if err != nil {
				t.Fatalf("%s: %s: %v", step, q[0], err)
			}
			want, err := queryRows(c, q[1])
			if err != nil {
				t.Fatalf("%s: %s: %v", step, q[1], err)
			}
			if d := diffRows(got, want); d != "" {
				t.Errorf("%s: %s:\n%s", step, q[0], d)
			}
		}
		// A group is counted while it is left out: as many as the batch
		// query's groups whose value fails.
		var failing int64
		if err := c.QueryRow(context.Background(), "SELECT count(*) FROM (SELECT k FROM t GROUP BY k HAVING sum(x) = 0) g").Scan(&failing); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if failing != aggErrs {
			t.Fatalf("%s: the test expects %d failing groups, the batch query has %d", step, aggErrs, failing)
		}
		for name, want := range map[string]int64{"ratio": ratioErrs, "agg_ratio": aggErrs, "join_ratio": joinErrs} {
			var state string
			var restarts, n int64
			if err := c.QueryRow(context.Background(), "SELECT state, restarts, error_rows FROM streamdb_jobs WHERE name = $1", name).
				Scan(&state, &restarts, &n); err != nil {
				t.Fatalf("%s: SHOW JOBS: %v", step, err)
			}
			if state != "RUNNING" || restarts != 0 || n != want {
				t.Errorf("%s: job %s %s, %d restarts, error_rows %d; want RUNNING, 0, %d", step, name, state, restarts, n, want)
			}
		}
	}

	execAll(t, c, "INSERT INTO t VALUES (1, 0)")
	execAll(t, c, "INSERT INTO t VALUES (2, 5), (3, 2)")
	check("bad row then good rows", 1, 1, 2)
	errs := jobErrors(t, c)
	want := []string{
		"agg_ratio NULL NULL 22012 division by zero (1, 0)",
		"join_ratio NULL NULL 22012 division by zero (1, 0, 1, 0)",
		"join_ratio NULL NULL 22012 division by zero (2, 5, 2, 5)",
		"ratio t 0 22012 division by zero (1, 0)",
	}
	if strings.Join(errs, "\n") != strings.Join(want, "\n") {
		t.Errorf("streamdb_job_errors:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
	// A read of the view says so.
	notes := noticesOf(t, srv, "SELECT * FROM join_ratio")
	if len(notes) != 1 || !strings.Contains(notes[0], `materialized view "join_ratio" left out 2 rows`) {
		t.Errorf("notices of a read of join_ratio: %q", notes)
	}

	// Group 1 computes again (its record goes: it is no longer left
	// out); group 2's value now fails: its row goes.
	execAll(t, c, "INSERT INTO t VALUES (1, 4), (2, -5)")
	check("group 1 fixed, group 2 broken", 1, 1, 2)

	// A bad row not yet checkpointed when the server is killed is replayed
	// and recorded once; the counts survive the restart.
	execAll(t, c, "INSERT INTO t VALUES (4, 0), (5, 10)")
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	check("after kill -9", 2, 2, 3)
	// Group 2 computes again after the restart: its record, read back
	// from storage, goes too.
	execAll(t, c, "INSERT INTO t VALUES (6, 0), (7, 1), (2, 1)")
	check("after the restart", 3, 2, 4)
	if n := len(jobErrors(t, c)); n != 9 {
		t.Errorf("streamdb_job_errors has %d rows, want 9:\n%s", n, strings.Join(jobErrors(t, c), "\n"))
	}
}

// jobErrors lists streamdb_job_errors as "job stream partition code message row".
func jobErrors(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	rows, err := plainRows(c, `SELECT job, stream, partition_id, error_code, message, row_text
		FROM streamdb_job_errors ORDER BY job, row_text`)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// Under job.error_policy = 'fail' a row failing after an aggregate or a
// join fails the job naming the row (the default restart strategy would
// meet it again; 'none' leaves the job FAILED).
func TestErrorRowsFailPolicy(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET job.error_policy = 'fail'", "SET restart.strategy = 'none'",
		"CREATE TABLE t (k BIGINT, x BIGINT)", "CREATE TABLE u (k BIGINT, y BIGINT)",
		"CREATE MATERIALIZED VIEW agg_ratio AS SELECT k, 10 / sum(x) AS r FROM t GROUP BY k",
		"CREATE MATERIALIZED VIEW join_ratio AS SELECT t.k, 10 / (t.x - u.y) AS r FROM t JOIN u ON t.k = u.k",
		"INSERT INTO u VALUES (1, 0)", "INSERT INTO t VALUES (1, 0)")
	for view, row := range map[string]string{"agg_ratio": "group row (1, 0)", "join_ratio": "row (1, 0, 1, 0)"} {
		r := waitState(t, c, view, "FAILED", time.Minute)
		if !strings.HasPrefix(r.lastErr, "22012: division by zero") || !strings.Contains(r.lastErr, "view "+view+", "+row) {
			t.Errorf("%s: last_error %q, want 22012 naming the view and %s", view, r.lastErr, row)
		}
	}
	if n := len(jobErrors(t, c)); n != 0 {
		t.Errorf("streamdb_job_errors has %d rows under 'fail'", n)
	}
}

// noticesOf runs q on a connection of its own and returns the notices it got.
func noticesOf(t *testing.T, srv *Server, q string) []string {
	t.Helper()
	cfg, err := pgx.ParseConfig(srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notes = append(notes, n.Message) }
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return notes
}
