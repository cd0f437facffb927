package crash

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/tests/sqllogic"
)

// defaultSeed keeps runs reproducible; -crash.seed picks another. Kill
// moments also depend on scheduling, so a seed fixes the plan (where to cut,
// how long to wait), not the exact interleaving.
const defaultSeed = 20260101

var seedFlag = flag.Uint64("crash.seed", defaultSeed, "random seed of the crash tests (logged by every test)")

// catchUpTimeout bounds how long a restarted job may take to read its
// stream to the end; more is a hang, reported as a failure.
const catchUpTimeout = 60 * time.Second

// stmtTimeout bounds every statement the tests run; a statement that does
// not answer in time is a hang, reported as a failure.
const stmtTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	sqllogic.Cleanup()
	os.Exit(code)
}

// newRand returns the test's random source: the seed mixed with the test's
// name, so tests do not share a sequence. Both are logged.
func newRand(t *testing.T) (*rand.Rand, uint64) {
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	t.Logf("random seed %d (rerun with -crash.seed=%d)", *seedFlag, *seedFlag)
	seed := *seedFlag ^ h.Sum64()
	return rand.New(rand.NewPCG(seed, seed>>32|1)), seed
}

// mix is splitmix64's finaliser: rows derive their key and value from their
// position, so a test records ranges of rows instead of the rows themselves.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// agg is one group of `SELECT k, count(*), sum(v) ... GROUP BY k`.
type agg struct{ c, s int64 }

// aggs maps a group key to its count and sum.
type aggs map[int64]agg

func (a aggs) add(k, v int64) {
	g := a[k]
	g.c++
	g.s += v
	a[k] = g
}

func (a aggs) total() agg {
	var t agg
	for _, g := range a {
		t.c += g.c
		t.s += g.s
	}
	return t
}

// diff describes how got differs from want (empty when equal), listing at
// most a few groups.
func diff(want, got aggs) string {
	var keys []int64
	for k, w := range want {
		if got[k] != w {
			keys = append(keys, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	var b strings.Builder
	wt, gt := want.total(), got.total()
	fmt.Fprintf(&b, "%d of %d groups differ (want total count %d sum %d, got count %d sum %d)",
		len(keys), len(want), wt.c, wt.s, gt.c, gt.s)
	for i, k := range keys {
		if i == 8 {
			fmt.Fprintf(&b, "\n  ...")
			break
		}
		w, wok := want[k]
		g, gok := got[k]
		fmt.Fprintf(&b, "\n  k=%d: want %s, got %s", k, groupString(w, wok), groupString(g, gok))
	}
	return b.String()
}

func groupString(g agg, ok bool) string {
	if !ok {
		return "no row"
	}
	return fmt.Sprintf("count %d sum %d", g.c, g.s)
}

// queryAggs runs a query returning (k, count, sum) rows, or (count, sum)
// rows for a keyless aggregate (grouped under key 0).
func queryAggs(t *testing.T, conn *pgx.Conn, query string) aggs {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out := aggs{}
	for rows.Next() {
		var k, c int64
		var s *int64 // sum over no rows is NULL
		if len(rows.FieldDescriptions()) == 2 {
			err = rows.Scan(&c, &s)
		} else {
			err = rows.Scan(&k, &c, &s)
		}
		if err != nil {
			t.Fatalf("%s: scan: %v", query, err)
		}
		g := agg{c: c}
		if s != nil {
			g.s = *s
		}
		if _, dup := out[k]; dup {
			t.Fatalf("%s: group %d appears twice", query, k)
		}
		out[k] = g
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// exec runs a statement that returns no rows.
func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// job is a row of SHOW JOBS.
type job struct {
	name, state     string
	restarts, rowIn int64
	lag             int64
	lastErr         string
}

func showJobs(t *testing.T, conn *pgx.Conn) []job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SHOW JOBS")
	if err != nil {
		t.Fatalf("SHOW JOBS: %v", err)
	}
	var out []job
	for rows.Next() {
		// By name: SHOW JOBS may grow columns.
		vals, err := rows.Values()
		if err != nil {
			t.Fatalf("SHOW JOBS: %v", err)
		}
		var j job
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "name":
				j.name, _ = vals[i].(string)
			case "state":
				j.state, _ = vals[i].(string)
			case "restarts":
				j.restarts, _ = vals[i].(int64)
			case "rows_in":
				j.rowIn, _ = vals[i].(int64)
			case "lag":
				j.lag, _ = vals[i].(int64)
			case "last_error":
				j.lastErr, _ = vals[i].(string)
			}
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("SHOW JOBS: %v", err)
	}
	return out
}

// checkpointRow is a row of SHOW CHECKPOINTS.
type checkpointRow struct {
	id      int64
	status  string
	trigger string
	jobs    string
}

func showCheckpoints(t *testing.T, conn *pgx.Conn) []checkpointRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SHOW CHECKPOINTS")
	if err != nil {
		t.Fatalf("SHOW CHECKPOINTS: %v", err)
	}
	var out []checkpointRow
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatalf("SHOW CHECKPOINTS: %v", err)
		}
		var r checkpointRow
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "id":
				r.id, _ = vals[i].(int64)
			case "status":
				r.status, _ = vals[i].(string)
			case "trigger":
				r.trigger, _ = vals[i].(string)
			case "jobs":
				r.jobs, _ = vals[i].(string)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("SHOW CHECKPOINTS: %v", err)
	}
	return out
}

// covers reports whether a checkpoint's job list names job.
func (r checkpointRow) covers(job string) bool {
	return slices.Contains(strings.Split(r.jobs, ","), job)
}

// waitCaughtUp polls SHOW JOBS until every job is RUNNING and has read its
// whole stream, then takes a CHECKPOINT so views include every row
// acknowledged before it. It fails the test if that takes longer than
// catchUpTimeout (a hang) or a job is FAILED.
func waitCaughtUp(t *testing.T, conn *pgx.Conn, jobs ...string) {
	t.Helper()
	deadline := time.Now().Add(catchUpTimeout)
	reported := map[string]bool{}
	for {
		js := showJobs(t, conn)
		ready := len(js) == len(jobs)
		for _, j := range js {
			if !slices.Contains(jobs, j.name) {
				t.Fatalf("SHOW JOBS lists unexpected job %q", j.name)
			}
			if j.state == "FAILED" {
				t.Fatalf("job %s FAILED after restart: %s", j.name, j.lastErr)
			}
			if j.restarts > 0 && !reported[j.name] {
				// Crashes restart the process, not the job: a job restart
				// means it failed inside a running server.
				t.Errorf("job %s restarted %d times: %s", j.name, j.restarts, j.lastErr)
				reported[j.name] = true
			}
			if j.state != "RUNNING" || j.lag != 0 {
				ready = false
			}
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs did not catch up within %v: %+v", catchUpTimeout, js)
		}
		time.Sleep(50 * time.Millisecond)
	}
	exec(t, conn, "CHECKPOINT")
}

// jobLags describes each job's lag, for the log.
func jobLags(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var parts []string
	for _, j := range showJobs(t, conn) {
		parts = append(parts, fmt.Sprintf("%s=%d", j.name, j.lag))
	}
	return strings.Join(parts, " ")
}

// checkOutput fails the test if the server ever panicked or logged an
// error, across all its restarts.
func checkOutput(t *testing.T, srv *sqllogic.Server) {
	t.Helper()
	for _, line := range strings.Split(srv.Output(), "\n") {
		if strings.Contains(line, "panic") || strings.Contains(line, "fatal error") || strings.Contains(line, "level=ERROR") {
			t.Errorf("server output: %s", line)
		}
	}
}
