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

// keyedRows renders n COPY text rows (k, a 100-byte text) from first on:
// a keyed table keeps its rows in the Go heap, several times their input.
func keyedRows(first, n int) string {
	var b strings.Builder
	pad := strings.Repeat("x", 100)
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%d\t%s%d\n", i, pad, i)
	}
	return b.String()
}

// copyText runs one COPY FROM STDIN of data with a deadline.
func copyText(c *pgx.Conn, stmt, data string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), stmt)
	return err
}

// execTimeout runs one statement with a deadline.
func execTimeout(c *pgx.Conn, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.Exec(ctx, stmt)
	return err
}

// isOutOfMemory reports whether err is a 53200 error.
func isOutOfMemory(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "53200"
}

// retryWhileOutOfMemory runs f until it returns anything but 53200 (the
// process guard refreshes a stale live-heap figure at most once a second)
// and returns that; it fails the test after limit.
func retryWhileOutOfMemory(t *testing.T, limit time.Duration, what string, f func() error) error {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if !isOutOfMemory(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still refused after %v: %v", what, limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMemoryLimitRefusesNewWork: a server started with --memory-limit
// 128MB (48MB of Go heap) refuses one large COPY into a keyed table while
// it runs (the check at its start saw an empty heap), then, once keyed
// rows hold more live heap than its share, refuses new COPY and CREATE
// MATERIALIZED VIEW with 53200 naming them while it still answers simple
// statements; once the rows are dropped the same statements are accepted
// and the new view is exact.
func TestMemoryLimitRefusesNewWork(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: memory-limit volume (a race build's shadow memory breaks it)")
	}
	srv := StartServer(t, "", "--memory-limit", "128MB")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE small (k BIGINT)", "CREATE TABLE big (k BIGINT PRIMARY KEY, v TEXT)",
		"CREATE TABLE big2 (k BIGINT PRIMARY KEY, v TEXT)")

	// One COPY of about 110MB of input (several times that as keyed rows):
	// refused part way, and it keeps nothing.
	err := copyText(c, "COPY big2 FROM STDIN", keyedRows(0, 1_000_000))
	pgErr := wantCode(t, "one large COPY into a keyed table", err, "53200")
	if !strings.Contains(pgErr.Message, "COPY big2 FROM STDIN") || !strings.Contains(pgErr.Detail, "--memory-limit 128MB") {
		t.Fatalf("the refusal does not name the COPY and the limit: %q / %q", pgErr.Message, pgErr.Detail)
	}
	t.Logf("large COPY: %s (%s)", pgErr.Message, pgErr.Detail)
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM big2").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused COPY kept %d rows (%v)", n, err)
	}
	// Its batches are garbage now: small work is accepted again.
	if err := retryWhileOutOfMemory(t, time.Minute, "a small COPY after the refused one", func() error {
		return copyText(c, "COPY small FROM STDIN", "1\n2\n")
	}); err != nil {
		t.Fatal(err)
	}

	// Keyed rows in chunks below the in-COPY check's step: each COPY is
	// admitted or refused when it starts, and the heap only grows.
	const chunk = 20_000
	loaded, refused := 0, error(nil)
	for i := 0; i < 40 && refused == nil; i++ {
		err := copyText(c, "COPY big FROM STDIN", keyedRows(loaded, chunk))
		switch {
		case err == nil:
			loaded += chunk
		case isOutOfMemory(err):
			refused = err
		default:
			t.Fatalf("COPY chunk %d: %v", i, err)
		}
	}
	if refused == nil {
		t.Fatalf("%d keyed rows loaded under --memory-limit 128MB and no COPY was refused", loaded)
	}
	t.Logf("COPY refused after %d keyed rows: %v", loaded, refused)
	if pgErr := wantCode(t, "COPY chunk", refused, "53200"); !strings.Contains(pgErr.Message, "COPY big FROM STDIN refused") {
		t.Fatalf("the refusal does not name the COPY: %v", refused)
	}

	// That refusal may have counted the COPY before it still in flight; a
	// collection now may find the rows alone a little below the bound.
	// INSERT ... VALUES is never refused: add keyed rows until an empty
	// COPY (admitted or refused at its start, keeping nothing) is refused.
	// The guard collects afresh at most once a second, so each probe waits
	// that long; once one is refused, a margin of rows more.
	insert := func(from, n int) {
		for i := 0; i < n; i += 2500 {
			var vals []string
			for k := from + i; k < from+i+2500; k++ {
				vals = append(vals, fmt.Sprintf("(%d, '%s%d')", k, strings.Repeat("x", 100), k))
			}
			execAll(t, c, "INSERT INTO big VALUES "+strings.Join(vals, ", "))
		}
	}
	for extra := 0; ; extra += 20000 {
		time.Sleep(1100 * time.Millisecond)
		err := copyText(c, "COPY small FROM STDIN", "")
		if isOutOfMemory(err) {
			t.Logf("the rows alone past the bound after %d more keyed rows", extra)
			insert(loaded+extra, 10000)
			break
		}
		if err != nil {
			t.Fatalf("an empty COPY: %v", err)
		}
		if extra >= loaded {
			t.Fatalf("%d keyed rows loaded and an empty COPY is still admitted", loaded+extra)
		}
		insert(loaded+extra, 20000)
	}

	// New work is refused, the server answers simple statements.
	err = execTimeout(c, "CREATE MATERIALIZED VIEW sv AS SELECT k, count(*) AS n FROM small GROUP BY k")
	pgErr = wantCode(t, "CREATE MATERIALIZED VIEW over the limit", err, "53200")
	if !strings.Contains(pgErr.Message, "CREATE MATERIALIZED VIEW sv refused") || pgErr.Hint == "" {
		t.Fatalf("the refusal does not name the view or give a hint: %q / %q", pgErr.Message, pgErr.Hint)
	}
	wantCode(t, "COPY over the limit", copyText(c, "COPY small FROM STDIN", "3\n"), "53200")
	var one int
	if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 over the limit: %d, %v", one, err)
	}
	execAll(t, c, "INSERT INTO small VALUES (3)")
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM small").Scan(&n); err != nil || n != 3 {
		t.Fatalf("count(*) of small over the limit: %d, %v", n, err)
	}

	// Dropping the rows frees the heap: the same work is accepted.
	execAll(t, c, "DROP TABLE big")
	if err := retryWhileOutOfMemory(t, time.Minute, "CREATE MATERIALIZED VIEW after DROP", func() error {
		return execTimeout(c, "CREATE MATERIALIZED VIEW sv AS SELECT k, count(*) AS n FROM small GROUP BY k")
	}); err != nil {
		t.Fatal(err)
	}
	if err := retryWhileOutOfMemory(t, time.Minute, "COPY after DROP", func() error {
		return copyText(c, "COPY small FROM STDIN", "3\n4\n")
	}); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "CHECKPOINT")
	poll(t, time.Minute, "the new view to count every row", func() bool {
		return pairsEqual(queryPairs(t, c, "SELECT k, n FROM sv"), queryPairs(t, c, "SELECT k, count(*) FROM small GROUP BY k"))
	})
}
