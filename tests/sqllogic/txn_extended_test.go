package sqllogic

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestTxnExtendedBatch: outside a block, the extended protocol's
// statements up to Sync are one implicit transaction, as in PostgreSQL. A
// pgx Batch (its Bind/Execute messages, then one Sync) appends all of its
// rows at Sync, or none of them when one statement fails.
func TestTxnExtendedBatch(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "CREATE TABLE t (x BIGINT, s TEXT)", "CREATE TABLE u (x BIGINT)")

	send := func(b *pgx.Batch) error {
		t.Helper()
		return c.SendBatch(ctx, b).Close()
	}

	t.Run("error drops the batch", func(t *testing.T) {
		b := &pgx.Batch{}
		b.Queue("INSERT INTO t VALUES ($1, $2)", 1, "a")
		b.Queue("INSERT INTO u VALUES ($1)", 2)
		b.Queue("INSERT INTO t VALUES (10 / $1::bigint, 'z')", 0) // fails when executed
		b.Queue("INSERT INTO t VALUES ($1, $2)", 3, "c")          // skipped to Sync
		err := send(b)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22012" {
			t.Fatalf("batch with a division by zero: %v, want 22012", err)
		}
		if n := countOf(t, c, "SELECT count(*) FROM t") + countOf(t, c, "SELECT count(*) FROM u"); n != 0 {
			t.Errorf("%d rows visible after the failed batch, want 0", n)
		}
	})

	t.Run("bind error drops the batch", func(t *testing.T) {
		// The second Bind's parameter is not a bigint: the error comes
		// before any Execute of that statement, at Bind.
		b := &pgconn.Batch{}
		b.ExecParams("INSERT INTO u VALUES ($1)", [][]byte{[]byte("7")}, []uint32{20}, nil, nil)
		b.ExecParams("INSERT INTO u VALUES ($1)", [][]byte{[]byte("abc")}, []uint32{20}, nil, nil)
		_, err := c.PgConn().ExecBatch(ctx, b).ReadAll()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22P02" {
			t.Fatalf("batch with a bad parameter: %v, want 22P02", err)
		}
		if n := countOf(t, c, "SELECT count(*) FROM u WHERE x = 7"); n != 0 {
			t.Errorf("the first insert of a batch that failed at Bind is visible (%d rows)", n)
		}
	})

	t.Run("all good", func(t *testing.T) {
		b := &pgx.Batch{}
		b.Queue("INSERT INTO t VALUES ($1, $2), ($3, $4)", 1, "a", 2, "b")
		b.Queue("INSERT INTO u VALUES ($1)", 3)
		b.Queue("INSERT INTO t VALUES ($1, $2)", 4, "d")
		if err := send(b); err != nil {
			t.Fatal(err)
		}
		if got := countOf(t, c, "SELECT count(*) FROM t"); got != 3 {
			t.Errorf("t has %d rows, want 3", got)
		}
		if got := countOf(t, c, "SELECT count(*) FROM u"); got != 1 {
			t.Errorf("u has %d rows, want 1", got)
		}
	})

	t.Run("one statement per Sync", func(t *testing.T) {
		// pgx's Exec with arguments: Parse, Bind, Execute, Sync.
		if _, err := c.Exec(ctx, "INSERT INTO u VALUES ($1)", 4); err != nil {
			t.Fatal(err)
		}
		if got := countOf(t, c, "SELECT count(*) FROM u"); got != 2 {
			t.Errorf("u has %d rows, want 2", got)
		}
		if _, err := c.Exec(ctx, "INSERT INTO u VALUES (10 / $1::bigint)", 0); err == nil {
			t.Fatal("division by zero succeeded")
		}
		if got := countOf(t, c, "SELECT count(*) FROM u"); got != 2 {
			t.Errorf("u has %d rows after a failed insert, want 2", got)
		}
	})

	t.Run("block in a batch", func(t *testing.T) {
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue("INSERT INTO u VALUES ($1)", 5)
		b.Queue("ROLLBACK")
		b.Queue("INSERT INTO u VALUES ($1)", 6)
		if err := send(b); err != nil {
			t.Fatal(err)
		}
		var xs []int64
		rows, err := c.Query(ctx, "SELECT x FROM u WHERE x >= 5 ORDER BY x")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var x int64
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			xs = append(xs, x)
		}
		if err := rows.Err(); err != nil || len(xs) != 1 || xs[0] != 6 {
			t.Errorf("rows after BEGIN; INSERT 5; ROLLBACK; INSERT 6: %v (%v), want [6]", xs, err)
		}
		// The connection is idle again: a new block starts cleanly.
		if _, err := c.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestTxnCommitClosesCursors: COMMIT closes the cursors its block declared
// without WITH HOLD, as PostgreSQL does; WITH HOLD ones stay open.
func TestTxnCommitClosesCursors(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (x BIGINT)", "INSERT INTO t VALUES (1), (2), (3)")
	execAll(t, c, "BEGIN",
		"DECLARE plain CURSOR FOR SELECT x FROM t ORDER BY x",
		"DECLARE held CURSOR WITH HOLD FOR SELECT x FROM t ORDER BY x",
		"DECLARE without CURSOR WITHOUT HOLD FOR SELECT x FROM t ORDER BY x",
		"FETCH 1 FROM plain", "COMMIT")
	execErr(t, c, "FETCH 1 FROM plain", "34000", `cursor "plain" does not exist`)
	execErr(t, c, "FETCH 1 FROM without", "34000", `cursor "without" does not exist`)
	var x int64
	if err := c.QueryRow(context.Background(), "FETCH 1 FROM held").Scan(&x); err != nil || x != 1 {
		t.Errorf("FETCH from the WITH HOLD cursor after COMMIT: %d, %v; want 1", x, err)
	}
	execAll(t, c, "CLOSE held")
	// ROLLBACK closes every cursor of the block, WITH HOLD too.
	execAll(t, c, "BEGIN", "DECLARE held CURSOR WITH HOLD FOR SELECT x FROM t", "ROLLBACK")
	execErr(t, c, "FETCH 1 FROM held", "34000", `cursor "held" does not exist`)
}
