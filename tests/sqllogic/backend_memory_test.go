package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tests of the state backends (issue 15): state.backend = 'memory' and
// 'pebble', switching between them through a savepoint, the memory limit,
// and rescaling from a savepoint. Memory-backend views advance at
// checkpoints, so every read follows a CHECKPOINT.

// backendViews are an aggregate, a join and a top-N view over t and u.
var backendViews = []string{
	"CREATE TABLE t (k BIGINT, v BIGINT)",
	"CREATE TABLE u (k BIGINT, w BIGINT)",
	"CREATE MATERIALIZED VIEW agg %s AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k",
	"CREATE MATERIALIZED VIEW jn %s AS SELECT t.k AS k, t.v AS v, u.w AS w FROM t JOIN u ON t.k = u.k",
	"CREATE MATERIALIZED VIEW top2 %s AS SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) x WHERE rn <= 2",
}

func createBackendViews(t *testing.T, c *pgx.Conn, with string) {
	t.Helper()
	for _, s := range backendViews {
		if strings.Contains(s, "%s") {
			s = fmt.Sprintf(s, with)
		}
		execAll(t, c, s)
	}
}

// insertRows inserts n rows into t (keys 0..keys-1) and n/4 into u,
// starting at row number from.
func insertRows(t *testing.T, c *pgx.Conn, from, n, keys int) {
	t.Helper()
	var tv, uv []string
	for i := from; i < from+n; i++ {
		tv = append(tv, fmt.Sprintf("(%d, %d)", i%keys, i*7%1000))
		if i%4 == 0 {
			uv = append(uv, fmt.Sprintf("(%d, %d)", i%keys, i))
		}
	}
	execAll(t, c, "INSERT INTO t VALUES "+strings.Join(tv, ", "))
	if len(uv) > 0 {
		execAll(t, c, "INSERT INTO u VALUES "+strings.Join(uv, ", "))
	}
}

// checkBackendViews compares each view with its query over all input.
func checkBackendViews(t *testing.T, c *pgx.Conn, what string) {
	t.Helper()
	execAll(t, c, "CHECKPOINT")
	samePairs(t, what+": agg count", queryPairs(t, c, "SELECT k, n FROM agg"),
		queryPairs(t, c, "SELECT k, count(*) FROM t GROUP BY k"))
	samePairs(t, what+": agg sum", queryPairs(t, c, "SELECT k, s FROM agg"),
		queryPairs(t, c, "SELECT k, sum(v) FROM t GROUP BY k"))
	samePairs(t, what+": join", queryPairs(t, c, "SELECT k, sum(v * 1000 + w) FROM jn GROUP BY k"),
		queryPairs(t, c, "SELECT t.k, sum(t.v * 1000 + u.w) FROM t JOIN u ON t.k = u.k GROUP BY t.k"))
	samePairs(t, what+": join rows", queryPairs(t, c, "SELECT k, count(*) FROM jn GROUP BY k"),
		queryPairs(t, c, "SELECT t.k, count(*) FROM t JOIN u ON t.k = u.k GROUP BY t.k"))
	samePairs(t, what+": top-2", queryPairs(t, c, "SELECT k, sum(v) FROM top2 GROUP BY k"),
		queryPairs(t, c, "SELECT k, sum(v) FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) x WHERE rn <= 2 GROUP BY k"))
}

// jobColumn reads a text column of a job's SHOW JOBS row.
func jobColumn(t *testing.T, c *pgx.Conn, name, col string) string {
	t.Helper()
	var v string
	if err := c.QueryRow(context.Background(), "SELECT "+col+"::text FROM streamdb_jobs WHERE name = $1", name).Scan(&v); err != nil {
		t.Fatalf("streamdb_jobs.%s of %s: %v", col, name, err)
	}
	return v
}

// wantFailCode runs sql and checks it fails with SQLSTATE code.
func wantFailCode(t *testing.T, c *pgx.Conn, sql, code string) {
	t.Helper()
	_, err := c.Exec(context.Background(), sql)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("%s: got %v, want SQLSTATE %s", sql, err, code)
	}
}

// snapshotFiles counts the memory backend's snapshot files in the data directory.
func snapshotFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(filepath.Join(dir, "memstate"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".arrow") {
			n++
		}
		return nil
	})
	return n
}

// TestMemoryBackendKill9: views on the memory backend (database-wide
// setting) are exact after kill -9 at any point, with rows inserted since
// the last checkpoint: the job resumes from its last snapshot and replays.
func TestMemoryBackendKill9(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET state.backend = 'memory'")
	createBackendViews(t, c, "")
	for _, v := range []string{"agg", "jn", "top2"} {
		if b := jobColumn(t, c, v, "state_backend"); b != "memory" {
			t.Fatalf("%s: state_backend %q, want memory", v, b)
		}
	}
	insertRows(t, c, 0, 400, 37)
	checkBackendViews(t, c, "before any crash")
	if n := snapshotFiles(t, srv.DataDir()); n == 0 {
		t.Fatal("no memory state snapshot files after a checkpoint")
	}
	row := 400
	for round := 0; round < 3; round++ {
		execAll(t, c, "CHECKPOINT")
		insertRows(t, c, row, 300, 37) // after the last checkpoint: replayed
		row += 300
		srv.Kill9()
		srv.Restart(t)
		c = srv.Conn(t)
		checkBackendViews(t, c, fmt.Sprintf("after kill -9 #%d", round+1))
		insertRows(t, c, row, 200, 41)
		row += 200
		checkBackendViews(t, c, fmt.Sprintf("after kill -9 #%d and more rows", round+1))
	}
}

// TestBackendSwitchThroughSavepoint: pebble -> memory -> pebble through
// STOP JOB ... WITH SAVEPOINT, ALTER ... SET (state.backend) and START JOB
// ... FROM SAVEPOINT, with rows in between; then ALTER on running jobs.
func TestBackendSwitchThroughSavepoint(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	createBackendViews(t, c, "")
	insertRows(t, c, 0, 300, 23)
	checkBackendViews(t, c, "on pebble")
	views := []string{"agg", "jn", "top2"}
	row := 300
	for i, backend := range []string{"memory", "pebble", "memory"} {
		for _, v := range views {
			sp := fmt.Sprintf("sw_%s_%d", v, i)
			execAll(t, c, "STOP JOB "+v+" WITH SAVEPOINT "+sp)
		}
		insertRows(t, c, row, 100, 23) // while stopped
		row += 100
		for _, v := range views {
			sp := fmt.Sprintf("sw_%s_%d", v, i)
			execAll(t, c, "ALTER MATERIALIZED VIEW "+v+" SET (state.backend = '"+backend+"')",
				"START JOB "+v+" FROM SAVEPOINT "+sp)
			if b := jobColumn(t, c, v, "state_backend"); b != backend {
				t.Fatalf("%s: state_backend %q, want %s", v, b, backend)
			}
		}
		insertRows(t, c, row, 100, 29)
		row += 100
		checkBackendViews(t, c, "switched to "+backend)
	}
	// ALTER on a running job: a checkpoint, then a restart on the other backend.
	for _, backend := range []string{"pebble", "memory", "pebble"} {
		for _, v := range views {
			execAll(t, c, "ALTER MATERIALIZED VIEW "+v+" SET (state.backend = '"+backend+"')")
		}
		insertRows(t, c, row, 100, 31)
		row += 100
		checkBackendViews(t, c, "running job altered to "+backend)
	}
	wantFailCode(t, c, "ALTER MATERIALIZED VIEW agg SET (state.backend = 'rocksdb')", "22023")
	wantFailCode(t, c, "SET state.backend = 'heap'", "22023")
}

// TestMemoryLimitRefusal: a memory job whose state outgrows
// state.memory_limit fails with 53200 (its restart strategy applies, here
// none), the cause is in SHOW JOBS, and the server and other jobs go on.
func TestMemoryLimitRefusal(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET restart.strategy = 'none'", "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW small WITH (state.backend = 'memory', state.memory_limit = '1MB') AS SELECT k, count(*) AS n FROM t GROUP BY k",
		"CREATE MATERIALIZED VIEW other AS SELECT count(*) AS n, sum(v) AS s FROM t")
	wantFailCode(t, c, "ALTER MATERIALIZED VIEW small SET (state.memory_limit = 'lots')", "22023")
	for b := 0; b < 20; b++ {
		var vals []string
		for i := 0; i < 2000; i++ {
			vals = append(vals, fmt.Sprintf("(%d, 1)", b*2000+i))
		}
		execAll(t, c, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	r := waitState(t, c, "small", "FAILED", 60*time.Second)
	if !strings.Contains(r.lastErr, "53200") || !strings.Contains(r.lastErr, "state.memory_limit") {
		t.Errorf("last_error %q does not give 53200 and state.memory_limit", r.lastErr)
	}
	execAll(t, c, "CHECKPOINT")
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT n FROM other").Scan(&n); err != nil || n != 40000 {
		t.Errorf("the other view: n = %d (%v), want 40000", n, err)
	}
}
