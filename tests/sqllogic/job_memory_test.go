package sqllogic

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A view whose job outgrows job.memory_limit fails with 53200 naming the
// view (SHOW JOBS), in bounded memory, instead of growing without end
// (issue 33, bug 2: a cross join view over 6,000 rows grew past 21 GB). A
// join with keys under the same limit runs.
func TestJobMemoryLimitCrossJoin(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	var def string
	if err := c.QueryRow(ctx, "SHOW job.memory_limit").Scan(&def); err != nil || def != "auto" {
		t.Fatalf("job.memory_limit defaults to %q (%v), want auto", def, err)
	}
	const limitMB = 32
	execAll(t, c, "CREATE TABLE ca (k BIGINT, x BIGINT)", "CREATE TABLE cb (k BIGINT, y BIGINT)",
		"INSERT INTO ca SELECT g, g % 7 FROM generate_series(1, 2500) AS g",
		"INSERT INTO cb SELECT g, g % 5 FROM generate_series(1, 2500) AS g",
		"SET job.memory_limit = '32MB'",
		"CREATE MATERIALIZED VIEW keyed AS SELECT ca.k, ca.x, cb.y FROM ca, cb WHERE ca.k = cb.k",
		"CHECKPOINT")
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM keyed").Scan(&n); err != nil || n != 2500 {
		t.Fatalf("keyed join under the limit: %d rows (%v), want 2500", n, err)
	}
	base, err := vmRSS(srv.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}

	// 6.25M pairs, about 200MB of view rows in the epoch of one COPY.
	// (restart.strategy 'none': it stays FAILED; the default restarts it,
	// to fail again in the same bounded memory.)
	// CREATE waits for the backfill, so it is CREATE that reports the
	// job's failure, with the job's own SQLSTATE; the view stays, FAILED.
	execAll(t, c, "SET restart.strategy = 'none'")
	if _, err := c.Exec(ctx, "CREATE MATERIALIZED VIEW crossed AS SELECT ca.k AS a, cb.k AS b FROM ca, cb"); sqlstate(err) != "53200" ||
		!strings.Contains(err.Error(), `materialized view "crossed" did not finish its backfill`) {
		t.Fatalf("CREATE of the cross join view: %v, want 53200 saying the backfill did not finish", err)
	}
	var r jobRow
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		r = job(t, c, "crossed")
		if strings.HasPrefix(r.lastErr, "53200:") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cross join view did not fail with 53200: %+v", r)
		}
	}
	for _, want := range []string{"view crossed", "job.memory_limit (32MB)"} {
		if !strings.Contains(r.lastErr, want) {
			t.Errorf("last_error %q does not say %q", r.lastErr, want)
		}
	}
	peak, err := vmHWM(srv.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// The view's rows alone would be several times the limit; the job
	// stops within a few batches of it (a generous bound: the Go heap
	// doubles before a collection).
	if grown := peak - base; grown > 8*limitMB<<20 {
		t.Errorf("the server grew by %dMB over %dMB before failing the job (limit %dMB)", grown>>20, base>>20, limitMB)
	}
	t.Logf("failed with %s; peak RSS %dMB (%dMB before the view)", r.lastErr, peak>>20, base>>20)
	// A read of the view says it is behind, and why.
	r = waitState(t, c, "crossed", "FAILED", time.Minute)
	notes := noticesOf(t, srv, "SELECT count(*) FROM crossed")
	if len(notes) != 1 || !strings.Contains(notes[0], `materialized view "crossed" is not up to date: its job is FAILED after 53200: view crossed`) {
		t.Errorf("notices of a read of crossed: %q", notes)
	}
	// The other view is untouched and the failing one can be dropped.
	execAll(t, c, "DROP MATERIALIZED VIEW crossed", "INSERT INTO ca VALUES (2501, 1)", "INSERT INTO cb VALUES (2501, 2)", "CHECKPOINT")
	if err := c.QueryRow(ctx, "SELECT count(*) FROM keyed").Scan(&n); err != nil || n != 2501 {
		t.Fatalf("keyed join after the cross join failed: %d rows (%v), want 2501", n, err)
	}
}
