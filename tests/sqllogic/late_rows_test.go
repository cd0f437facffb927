package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// job.late_rows = 'record' (issue 12): a row a window aggregate drops as
// late is counted and recorded in streamdb_late_rows, once across kill -9,
// readable by every role; each job keeps its last 1000; DROP removes them.

func lateRowCount(t *testing.T, c *pgx.Conn, job string) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM streamdb_late_rows WHERE job = $1", job).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLateRowsRecorded(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE bid (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		// Created under the default 'drop': counts, records nothing.
		`CREATE MATERIALIZED VIEW dropped AS SELECT window_end, count(*) AS n
		   FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY window_end`,
		"SET job.late_rows = 'record'",
		`CREATE MATERIALIZED VIEW tvf AS SELECT window_start, window_end, count(*) AS n, sum(k)::bigint AS s
		   FROM TUMBLE(bid, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end`,
		"INSERT INTO bid VALUES (1, '2026-01-01 00:00:01'), (2, '2026-01-01 00:00:05')",
		"INSERT INTO bid VALUES (3, '2026-01-01 00:00:13')",
	)
	if got := rowsOf(t, c, "SHOW job.late_rows"); got != "record" {
		t.Fatalf("SHOW job.late_rows: %s", got)
	}
	execErr(t, c, "SET job.late_rows = 'keep'", "22023", "")
	for _, v := range []string{"tvf", "dropped"} {
		waitWatermark(t, c, v, ts("2026-01-01 00:00:11"))
	}
	// 00:00:04's window [00:00:00, 00:00:10) closed at watermark 00:00:11.
	execAll(t, c, "INSERT INTO bid VALUES (100, '2026-01-01 00:00:04')", "CHECKPOINT")
	waitLateRows(t, c, "tvf", 1)
	waitLateRows(t, c, "dropped", 1)
	if n := lateRowCount(t, c, "dropped"); n != 0 {
		t.Fatalf("dropped: %d late rows recorded under 'drop'", n)
	}
	want := "tvf (100, 2026-01-01 00:00:04, 2026-01-01 00:00:00, 2026-01-01 00:00:10) 2026-01-01 00:00:10 2026-01-01 00:00:11 1 1"
	q := `SELECT job, row_text, event_time, watermark,
	             extract(epoch FROM lateness)::bigint, seq
	        FROM streamdb_late_rows WHERE job = 'tvf'`
	if got := rowsOf(t, c, q); got != want {
		t.Fatalf("streamdb_late_rows:\n%s\nwant\n%s", got, want)
	}
	var op string
	if err := c.QueryRow(context.Background(), "SELECT operator FROM streamdb_late_rows WHERE job = 'tvf'").Scan(&op); err != nil || op == "" {
		t.Fatalf("operator: %q, %v", op, err)
	}
	// The closed window is unchanged.
	wantTvf := "2026-01-01 00:00:00 2026-01-01 00:00:10 2 3\n2026-01-01 00:00:10 2026-01-01 00:00:20 1 3"
	if got := rowsOf(t, c, "SELECT * FROM tvf"); got != wantTvf {
		t.Fatalf("tvf:\n%s\nwant\n%s", got, wantTvf)
	}

	// Readable by a role without privileges, like the other system tables.
	execAll(t, c, "CREATE USER reader PASSWORD 'pw'")
	rc := mustConnAs(t, srv, "reader", "pw")
	if n := lateRowCount(t, rc, "tvf"); n != 1 {
		t.Fatalf("reader sees %d late rows", n)
	}
	rc.Close(context.Background())

	// kill -9: the recorded row is neither lost nor recorded twice; both
	// jobs take the setting when they start again.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "INSERT INTO bid VALUES (1000, '2026-01-01 00:00:09')", "CHECKPOINT")
	waitLateRows(t, c, "tvf", 2)
	waitLateRows(t, c, "dropped", 2)
	want = "tvf false 2\ntvf true 1"
	if got := rowsOf(t, c, "SELECT job, row_text LIKE '(100,%', seq FROM streamdb_late_rows WHERE job = 'tvf'"); got != want {
		t.Fatalf("after kill -9:\n%s\nwant\n%s", got, want)
	}
	if n := lateRowCount(t, c, "dropped"); n != 1 {
		t.Fatalf("dropped: %d late rows recorded after its restart under 'record', want 1", n)
	}

	// Bounded: a job keeps its last 1000.
	vals := make([]string, 1200)
	for i := range vals {
		vals[i] = fmt.Sprintf("(%d, '2026-01-01 00:00:03')", i+1)
	}
	execAll(t, c, "INSERT INTO bid VALUES "+strings.Join(vals, ", "), "CHECKPOINT")
	waitLateRows(t, c, "tvf", 1202)
	var n, lo, hi int64
	if err := c.QueryRow(context.Background(), "SELECT count(*), min(seq), max(seq) FROM streamdb_late_rows WHERE job = 'tvf'").Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n != 1000 || lo != 203 || hi != 1202 {
		t.Fatalf("after 1202 late rows: %d recorded, seq %d..%d; want 1000, 203..1202", n, lo, hi)
	}
	if got := rowsOf(t, c, "SELECT * FROM tvf"); got != wantTvf {
		t.Fatalf("tvf:\n%s\nwant\n%s", got, wantTvf)
	}

	// Dropping the view removes its late rows.
	execAll(t, c, "DROP MATERIALIZED VIEW tvf")
	if n := lateRowCount(t, c, "tvf"); n != 0 {
		t.Fatalf("after DROP: %d late rows", n)
	}
}
