package sqllogic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// keyedBothStep runs stmt on streamdb and PostgreSQL: both must succeed, or
// fail with the same SQLSTATE, message and DETAIL.
func keyedBothStep(t *testing.T, sdb, pgc *pgx.Conn, what, stmt string) error {
	t.Helper()
	serr, perr := keyedExec(sdb, stmt), keyedExec(pgc, stmt)
	if got, want := errText(serr), errText(perr); got != want {
		t.Fatalf("%s: %s\n  streamdb:   %q\n  PostgreSQL: %q", what, stmt, got, want)
	}
	return perr
}

// keyedCompare checks kt, dim and the views kv<i> of keyedViews against
// PostgreSQL (after a CHECKPOINT).
func keyedCompare(t *testing.T, sdb, pgc *pgx.Conn, what string) {
	t.Helper()
	if err := keyedExec(sdb, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []string{"kt", "dim"} {
		if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM "+tbl); diff != "" {
			t.Fatalf("%s: table %s differs from PostgreSQL:\n%s", what, tbl, diff)
		}
	}
	for i, q := range keyedViews {
		want, err := queryRows(pgc, q)
		if err != nil {
			t.Fatalf("PostgreSQL: %s: %v", q, err)
		}
		got, err := queryRows(sdb, fmt.Sprintf("SELECT * FROM kv%d", i))
		if err != nil {
			t.Fatalf("streamdb: view kv%d: %v", i, err)
		}
		if diff := diffRows(got, want); diff != "" {
			t.Fatalf("%s: view kv%d (%s) differs from PostgreSQL:\n%s", what, i, q, diff)
		}
	}
}

// TestKeyedTxnPG: INSERT (with ON CONFLICT), UPDATE, DELETE and COPY of
// tables with a primary key inside BEGIN ... COMMIT/ROLLBACK, with
// SAVEPOINT and ROLLBACK TO, against PostgreSQL 15. Each statement ends as
// in PostgreSQL (a later statement sees the block's own writes: a key it
// inserted is 23505, one it deleted can be inserted again; after an error
// the block is 25P02 until ROLLBACK, and its COMMIT rolls back); after each
// block the tables and the views over them equal PostgreSQL's, so a view
// sees a committed block's changes once and a rolled-back one's never. A
// kill -9 with a block open loses it and keeps the committed ones. Another
// session's write of a key the block inserted waits for the block and then
// fails with 23505; two blocks that wait for each other's table get 40P01.
func TestKeyedTxnPG(t *testing.T) {
	t.Parallel()
	pg, srv, sdb, pgc := keyedSetup(t, "CREATE TABLE ks (k INT, w INT)")
	both := func(what string, stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			keyedBothStep(t, sdb, pgc, what, s)
		}
	}
	// Fixed blocks first.
	both("own writes",
		"BEGIN",
		"INSERT INTO kt VALUES (1, 0, 10, 'a'), (2, 1, 20, 'b'), (3, 1, 30, 'c')",
		"UPDATE kt SET v = v + 1 WHERE g = 1",
		"DELETE FROM kt WHERE k = 2",
		"INSERT INTO kt VALUES (2, 2, 5, 'again')",
		"INSERT INTO kt VALUES (3, 0, 0, 'dup')",
		"INSERT INTO kt VALUES (4, 0, 0, 'ignored')",
		"COMMIT")
	keyedCompare(t, sdb, pgc, "failed block")
	both("commit",
		"BEGIN",
		"INSERT INTO kt VALUES (1, 0, 10, 'a'), (2, 1, 20, 'b'), (3, 1, 30, 'c')",
		"INSERT INTO dim VALUES (0, 'zero'), (1, 'one')",
		"INSERT INTO ks VALUES (1, 1)",
		"UPDATE kt SET v = v + 1 WHERE g = 1",
		"DELETE FROM kt WHERE k = 2",
		"INSERT INTO kt VALUES (2, 2, 5, 'again') ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		"INSERT INTO kt VALUES (2, 2, 6, 'x') ON CONFLICT (k) DO UPDATE SET v = kt.v + EXCLUDED.v",
		"COMMIT")
	keyedCompare(t, sdb, pgc, "committed block")
	both("rollback", "BEGIN", "INSERT INTO kt VALUES (10, 0, 1, 'r')", "UPDATE kt SET v = 0", "DELETE FROM dim", "ROLLBACK")
	keyedCompare(t, sdb, pgc, "rolled-back block")
	both("savepoints",
		"BEGIN",
		"INSERT INTO kt VALUES (11, 1, 11, 's')",
		"SAVEPOINT a",
		"INSERT INTO kt VALUES (12, 1, 12, 's')",
		"DELETE FROM kt WHERE k = 1",
		"INSERT INTO kt VALUES (11, 1, 0, 'dup')",
		"INSERT INTO kt VALUES (13, 1, 0, 'aborted')",
		"ROLLBACK TO SAVEPOINT a",
		"INSERT INTO kt VALUES (12, 2, 13, 'after')",
		"UPDATE kt SET v = v * 2 WHERE k IN (1, 11, 12)",
		"SAVEPOINT b",
		"DELETE FROM kt WHERE k = 3",
		"RELEASE SAVEPOINT b",
		"COMMIT")
	keyedCompare(t, sdb, pgc, "block with savepoints")
	// COPY into a keyed table inside a block.
	for _, c := range []*pgx.Conn{sdb, pgc} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := c.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("20\t1\t7\tcopied\n21\t2\t8\t\\N\n"), "COPY kt FROM STDIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "UPDATE kt SET v = v + 100 WHERE k >= 20"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	keyedCompare(t, sdb, pgc, "COPY in a block")

	// Random blocks.
	rng := rand.New(rand.NewPCG(30, 77))
	failed := 0
	for blk := 0; blk < 60; blk++ {
		both("random", "BEGIN")
		sp := false
		for i, n := 0, 1+rng.IntN(6); i < n; i++ {
			switch rng.IntN(10) {
			case 0:
				both("random", "SAVEPOINT p")
				sp = true
			case 1:
				if sp {
					both("random", "ROLLBACK TO SAVEPOINT p")
				}
			}
			if keyedBothStep(t, sdb, pgc, fmt.Sprintf("block %d", blk), keyedStmt(rng)) != nil {
				failed++
			}
		}
		end := "COMMIT"
		if rng.IntN(4) == 0 {
			end = "ROLLBACK"
		}
		both("random", end)
		keyedCompare(t, sdb, pgc, fmt.Sprintf("block %d (%s)", blk, end))
	}
	if failed == 0 {
		t.Errorf("no statement failed in the random blocks: the generator should make some fail")
	}

	// Another session waits for the block's lock, then sees its key.
	for _, sys := range []struct {
		name string
		a    *pgx.Conn
		conn func() *pgx.Conn
	}{{"streamdb", sdb, func() *pgx.Conn { return srv.Conn(t) }}, {"PostgreSQL", pgc, func() *pgx.Conn { return pg.Conn(t) }}} {
		b := sys.conn()
		for _, s := range []string{"BEGIN", "INSERT INTO kt VALUES (90, 0, 0, 'held')"} {
			if err := keyedExec(sys.a, s); err != nil {
				t.Fatalf("%s: %s: %v", sys.name, s, err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- keyedExec(b, "INSERT INTO kt VALUES (90, 1, 1, 'waiter')") }()
		select {
		case err := <-done:
			t.Fatalf("%s: the other session's INSERT of the held key returned before the block ended: %v", sys.name, err)
		case <-time.After(300 * time.Millisecond):
		}
		if err := keyedExec(sys.a, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		if got := errText(<-done); !strings.HasPrefix(got, "23505") {
			t.Errorf("%s: the waiting INSERT ended with %q, want 23505", sys.name, got)
		}
		// Two blocks, each waiting for the other's table: one gets 40P01.
		for _, s := range []string{"BEGIN", "UPDATE kt SET v = v + 1 WHERE k = 90"} {
			if err := keyedExec(sys.a, s); err != nil {
				t.Fatalf("%s: %s: %v", sys.name, s, err)
			}
		}
		for _, s := range []string{"BEGIN", "UPDATE dim SET name = name || '!' WHERE g = 0"} {
			if err := keyedExec(b, s); err != nil {
				t.Fatalf("%s: %s: %v", sys.name, s, err)
			}
		}
		go func() { done <- keyedExec(sys.a, "UPDATE dim SET name = name || '?' WHERE g = 0") }()
		time.Sleep(100 * time.Millisecond)
		errB := keyedExec(b, "UPDATE kt SET v = v + 2 WHERE k = 90")
		if errB != nil {
			keyedExec(b, "ROLLBACK")
		}
		errA := <-done
		if (errA == nil) == (errB == nil) || !strings.HasPrefix(errText(errA)+errText(errB), "40P01") {
			t.Errorf("%s: two blocks waiting for each other: %q and %q, want one 40P01", sys.name, errText(errA), errText(errB))
		}
		keyedExec(sys.a, "COMMIT")
		if errB == nil {
			keyedExec(b, "COMMIT")
		}
		b.Close(context.Background())
	}
	// Which of the two blocks failed differs (PostgreSQL fails the first
	// waiter, streamdb the one that closes the cycle): same rows again.
	both("after deadlock", "UPDATE kt SET v = 0 WHERE k = 90", "UPDATE dim SET name = 'zero' WHERE g = 0")
	keyedCompare(t, sdb, pgc, "concurrent blocks")

	// kill -9 with a block open: it is lost, the committed ones stay.
	both("before kill", "BEGIN", "INSERT INTO kt VALUES (95, 3, 95, 'kept')", "UPDATE kt SET s = 'k' WHERE k < 5", "COMMIT")
	for _, s := range []string{"BEGIN", "INSERT INTO kt VALUES (96, 3, 96, 'lost')", "DELETE FROM kt WHERE k = 95"} {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	srv.Kill9()
	srv.Restart(t)
	sdb = srv.Conn(t)
	keyedCompare(t, sdb, pgc, "after kill -9 with a block open")
	both("after restart", "BEGIN", "INSERT INTO kt VALUES (96, 3, 96, 'again')", "DELETE FROM kt WHERE k = 95", "COMMIT")
	keyedCompare(t, sdb, pgc, "a block after the restart")
	t.Logf("%d statements failed alike in the random blocks", failed)
}
