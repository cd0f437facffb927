package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// bfRows is how many rows the stream holds before each CREATE: enough that
// a backfill takes many barrier rounds.
const bfRows = 400_000

// bfLoad COPYs n rows (a, c) into s, starting at a = from.
func bfLoad(t *testing.T, c *pgx.Conn, from, n int) {
	t.Helper()
	var csv strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&csv, "%d,%d\n", i, i%97-40)
	}
	if _, err := c.PgConn().CopyFrom(context.Background(), strings.NewReader(csv.String()), "COPY s FROM STDIN (FORMAT csv)"); err != nil {
		t.Fatalf("COPY: %v", err)
	}
}

// bfSame checks that a view read equals the batch query over the stream.
func bfSame(t *testing.T, c *pgx.Conn, what, view, batch string) {
	t.Helper()
	got, want := bfRowsOf(t, c, view), bfRowsOf(t, c, batch)
	if got != want {
		t.Fatalf("%s: view %q gives\n%s\nbatch %q gives\n%s", what, view, got, batch, want)
	}
}

func bfRowsOf(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return b.String()
}

func bfState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestCreateViewWaitsForBackfill: CREATE MATERIALIZED VIEW over a stream
// that already holds many rows returns when the view holds all of them,
// so the read right after it equals the batch query; statement_timeout
// and a cancel request end the wait with 57014 and leave the job running
// (the first read then waits); background_ddl returns at once while SHOW
// JOBS, from another connection, shows the backfill's progress.
func TestCreateViewWaitsForBackfill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a volume test (the -race step's budget); run in the plain test step")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "CREATE TABLE s (a BIGINT, c BIGINT)")
	bfLoad(t, c, 0, bfRows)

	// Foreground: the read right after CREATE sees every row.
	execAll(t, c, "CREATE MATERIALIZED VIEW m1 AS SELECT sum(c) AS sc, count(*) AS n FROM s")
	bfSame(t, c, "right after CREATE", "SELECT sc, n FROM m1", "SELECT sum(c), count(*) FROM s")

	// A grouped view: many groups, the same wait.
	execAll(t, c, "CREATE MATERIALIZED VIEW m1b AS SELECT a % 10000 AS k, count(*) AS n FROM s GROUP BY a % 10000")
	bfSame(t, c, "grouped view", "SELECT k, n FROM m1b ORDER BY k", "SELECT a % 10000, count(*) FROM s GROUP BY a % 10000 ORDER BY 1")

	// A view over a view: its CREATE waits for the changelog it reads.
	execAll(t, c, "CREATE MATERIALIZED VIEW m1c AS SELECT sum(n) AS total, count(*) AS groups FROM m1b")
	bfSame(t, c, "view over a view", "SELECT total::bigint, groups FROM m1c", "SELECT count(*), count(DISTINCT a % 10000) FROM s")

	// A view on the memory backend: its rows are what its last checkpoint
	// committed, and CREATE waits for that too.
	execAll(t, c, "CREATE MATERIALIZED VIEW m1m WITH (state.backend = 'memory') AS SELECT a % 100 AS k, sum(c) AS sc FROM s GROUP BY a % 100")
	bfSame(t, c, "memory backend", "SELECT k, sc FROM m1m ORDER BY k", "SELECT a % 100, sum(c) FROM s GROUP BY a % 100 ORDER BY 1")

	// statement_timeout: 57014, the view exists and its job goes on; the
	// first read waits for the backfill.
	bfLoad(t, c, bfRows, bfRows)
	execAll(t, c, "SET statement_timeout = '2ms'")
	_, err := c.Exec(ctx, "CREATE MATERIALIZED VIEW m2 AS SELECT a % 1000 AS k, sum(c) AS sc FROM s GROUP BY a % 1000")
	if bfState(err) != "57014" {
		t.Fatalf("CREATE with statement_timeout = 2ms: %v, want 57014", err)
	}
	execAll(t, c, "RESET statement_timeout")
	bfSame(t, c, "first read after a timed-out CREATE", "SELECT k, sc FROM m2 ORDER BY k",
		"SELECT a % 1000, sum(c) FROM s GROUP BY a % 1000 ORDER BY 1")

	// A cancel request ends the wait the same way.
	c2 := srv.Conn(t)
	// Cancel requests go until the CREATE returns (one sent before the
	// statement starts is ignored, as in PostgreSQL).
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			_ = c.PgConn().CancelRequest(context.Background())
		}
	}()
	_, err = c.Exec(ctx, "CREATE MATERIALIZED VIEW m4 AS SELECT a % 777 AS k, count(*) AS n, min(c) AS lo FROM s GROUP BY a % 777")
	close(stop)
	<-stopped
	time.Sleep(100 * time.Millisecond) // let a last cancel request land while c is idle
	if bfState(err) != "57014" {
		t.Fatalf("CREATE then a cancel request: %v, want 57014", err)
	}
	bfSame(t, c, "first read after a cancelled CREATE", "SELECT k, n, lo FROM m4 ORDER BY k",
		"SELECT a % 777, count(*), min(c) FROM s GROUP BY a % 777 ORDER BY 1")

	// background_ddl: CREATE returns before the backfill; SHOW JOBS on
	// another connection shows rows done of rows to backfill.
	execAll(t, c, "SET background_ddl = true")
	var total int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM s").Scan(&total); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "CREATE MATERIALIZED VIEW m3 AS SELECT a % 50000 AS k, count(*) AS n, sum(c) AS sc FROM s GROUP BY a % 50000")
	sawTotal, sawDone := false, false
	for deadline := time.Now().Add(2 * time.Minute); ; {
		rows, err := c2.Query(ctx, "SELECT backfill_done, backfill_total FROM streamdb_jobs WHERE name = 'm3'")
		if err != nil {
			t.Fatalf("SHOW JOBS: %v", err)
		}
		var done, tot *int64
		n := 0
		for rows.Next() {
			n++
			if err := rows.Scan(&done, &tot); err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Err(); err != nil || n != 1 {
			t.Fatalf("SHOW JOBS m3: %d rows, %v", n, err)
		}
		if tot == nil {
			sawDone = true
			break
		}
		if *tot != total || *done < 0 || *done > *tot {
			t.Fatalf("SHOW JOBS m3 backfill %d of %d, want of %d", *done, *tot, total)
		}
		sawTotal = true
		if time.Now().After(deadline) {
			t.Fatalf("backfill of m3 not done after 2 minutes (%d of %d)", *done, *tot)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !sawTotal || !sawDone {
		t.Fatalf("SHOW JOBS never showed the backfill of m3 in progress (total seen %v)", sawTotal)
	}
	bfSame(t, c, "background_ddl view once done", "SELECT k, n, sc FROM m3 ORDER BY k",
		"SELECT a % 50000, count(*), sum(c) FROM s GROUP BY a % 50000 ORDER BY 1")

	// With background_ddl the first read waits instead of CREATE.
	execAll(t, c, "CREATE MATERIALIZED VIEW m5 AS SELECT a % 3 AS k, sum(c) AS sc FROM s GROUP BY a % 3")
	bfSame(t, c, "first read of a background view", "SELECT k, sc FROM m5 ORDER BY k",
		"SELECT a % 3, sum(c) FROM s GROUP BY a % 3 ORDER BY 1")
	var bg string
	if err := c.QueryRow(ctx, "SHOW background_ddl").Scan(&bg); err != nil || bg != "on" {
		t.Fatalf("SHOW background_ddl = %q, %v", bg, err)
	}
	if _, err := c.Exec(ctx, "SET background_ddl = 'maybe'"); bfState(err) != "22023" {
		t.Fatalf("SET background_ddl = 'maybe': %v, want 22023", err)
	}
}
