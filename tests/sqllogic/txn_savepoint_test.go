package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestTxnSavepoints: SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE inside a
// block roll the buffered INSERT and COPY rows back to the savepoint, a
// syntax error fails the block (25P02 until ROLLBACK or ROLLBACK TO), and
// session settings return to the savepoint's, as in PostgreSQL.
func TestTxnSavepoints(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	simple := pgx.QueryExecModeSimpleProtocol
	xs := func(where string) string {
		return fmt.Sprint(int64s(t, c, "SELECT x FROM t WHERE "+where+" ORDER BY x", simple))
	}
	execAll(t, c, "CREATE TABLE t (x BIGINT)")

	execAll(t, c, "BEGIN", "INSERT INTO t VALUES (1)", "SAVEPOINT a", "INSERT INTO t VALUES (2)",
		"SAVEPOINT b", "INSERT INTO t VALUES (3)", "ROLLBACK TO b", "INSERT INTO t VALUES (4)",
		"ROLLBACK TO SAVEPOINT a", "INSERT INTO t VALUES (5)", "SAVEPOINT c", "INSERT INTO t VALUES (6)",
		"RELEASE SAVEPOINT c", "RELEASE a", "COMMIT")
	if got := xs("x < 10"); got != "[1 5 6]" {
		t.Errorf("after savepoints: %s, want [1 5 6]", got)
	}

	// Outside a block: 25P01, in a simple Query message as in the extended protocol.
	for _, q := range []string{"SAVEPOINT a", "RELEASE SAVEPOINT a", "ROLLBACK TO SAVEPOINT a"} {
		_, err := c.Exec(ctx, q)
		wantCode(t, q+" outside a block", err, "25P01")
	}
	// A savepoint that does not exist fails the block.
	execAll(t, c, "BEGIN", "SAVEPOINT a")
	_, err := c.Exec(ctx, "ROLLBACK TO nosuch")
	wantCode(t, "ROLLBACK TO an unknown savepoint", err, "3B001")
	_, err = c.Exec(ctx, "SELECT 1")
	wantCode(t, "a statement after the error", err, "25P02")
	execAll(t, c, "ROLLBACK TO a", "RELEASE a")
	_, err = c.Exec(ctx, "RELEASE a")
	wantCode(t, "RELEASE of a released savepoint", err, "3B001")
	execAll(t, c, "ROLLBACK")

	// A syntax error fails the block: its writes are gone at COMMIT.
	execAll(t, c, "BEGIN", "INSERT INTO t VALUES (20)")
	_, err = c.Exec(ctx, "SELEC 1")
	wantCode(t, "syntax error in a block", err, "42601")
	_, err = c.Exec(ctx, "INSERT INTO t VALUES (21)")
	wantCode(t, "INSERT after a syntax error", err, "25P02")
	tag, err := c.Exec(ctx, "COMMIT")
	if err != nil || tag.String() != "ROLLBACK" {
		t.Errorf("COMMIT of a failed block: %q %v, want ROLLBACK", tag, err)
	}
	// ... also over the extended protocol (a Parse that fails).
	execAll(t, c, "BEGIN", "INSERT INTO t VALUES (22)")
	_, err = c.Exec(ctx, "SELECT nosuch FROM t WHERE x = $1", 1)
	wantCode(t, "Parse of an unknown column in a block", err, "42703")
	_, err = c.Exec(ctx, "SELECT x FROM t WHERE x = $1", 1)
	wantCode(t, "Parse after the error", err, "25P02")
	execAll(t, c, "ROLLBACK")
	if got := xs("x >= 20 AND x < 30"); got != "[]" {
		t.Errorf("rows of failed blocks: %s, want none", got)
	}

	// ROLLBACK TO a savepoint before the error keeps the writes before it.
	execAll(t, c, "BEGIN", "INSERT INTO t VALUES (30)", "SAVEPOINT s", "INSERT INTO t VALUES (31)")
	_, err = c.Exec(ctx, "INSERT INTO t VALUES ('x')")
	wantCode(t, "a bad INSERT", err, "22P02")
	_, err = c.Exec(ctx, "INSERT INTO t VALUES (32)")
	wantCode(t, "INSERT in the failed block", err, "25P02")
	execAll(t, c, "ROLLBACK TO SAVEPOINT s", "INSERT INTO t VALUES (33)", "COMMIT")
	if got := xs("x >= 30 AND x < 40"); got != "[30 33]" {
		t.Errorf("after ROLLBACK TO in a failed block: %s, want [30 33]", got)
	}

	// COPY into a block with savepoints.
	copyIn := func(rows string) {
		t.Helper()
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(rows), "COPY t FROM STDIN"); err != nil {
			t.Fatalf("COPY: %v", err)
		}
	}
	execAll(t, c, "BEGIN")
	copyIn("40\n41\n")
	execAll(t, c, "SAVEPOINT a")
	copyIn("42\n")
	execAll(t, c, "ROLLBACK TO a", "INSERT INTO t VALUES (43)", "COMMIT")
	if got := xs("x >= 40 AND x < 50"); got != "[40 41 43]" {
		t.Errorf("COPY with savepoints: %s, want [40 41 43]", got)
	}

	// Session settings return to the savepoint's.
	execAll(t, c, "SET application_name = 'before'", "BEGIN", "SAVEPOINT a", "SET application_name = 'inside'", "ROLLBACK TO a")
	var name string
	if err := c.QueryRow(ctx, "SHOW application_name", simple).Scan(&name); err != nil || name != "before" {
		t.Errorf("application_name after ROLLBACK TO: %q %v, want before", name, err)
	}
	execAll(t, c, "COMMIT")

	// A block past the in-memory buffer (8 MB) stages its rows; the
	// staging keeps the savepoints' boundaries.
	var big strings.Builder
	const n = 400000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&big, "%d\n", 1000+i%1000)
	}
	for _, end := range []string{"ROLLBACK TO a", "RELEASE a"} {
		execAll(t, c, "BEGIN")
		copyIn(big.String())
		execAll(t, c, "SAVEPOINT a")
		copyIn(big.String())
		copyIn(big.String())
		execAll(t, c, end, "INSERT INTO t VALUES (2000)", "COMMIT")
	}
	if got := countOf(t, c, "SELECT count(*) FROM t WHERE x >= 1000 AND x < 2000"); got != 4*n {
		t.Errorf("staged rows: %d, want %d (one COPY of the first block, three of the second)", got, 4*n)
	}
	if got := countOf(t, c, "SELECT count(*) FROM t WHERE x = 2000"); got != 2 {
		t.Errorf("rows after the staged ones: %d, want 2", got)
	}
}

// TestDeallocateProtocolStatements: PostgreSQL has one namespace of
// prepared statements, so SQL DEALLOCATE drops a statement a driver
// prepared with the protocol's Parse (pgx's DeallocateAll sends
// "deallocate all"), and PREPARE of a name the protocol uses is 42P05.
func TestDeallocateProtocolStatements(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	pc := c.PgConn()
	for _, name := range []string{"ps1", "ps2"} {
		if _, err := pc.Prepare(ctx, name, "SELECT 1", nil); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string) error {
		_, err := pc.ExecPrepared(ctx, name, nil, nil, nil).Close()
		return err
	}
	if err := run("ps1"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Exec(ctx, "PREPARE ps1 AS SELECT 2")
	wantCode(t, "PREPARE of a protocol statement's name", err, "42P05")
	execAll(t, c, "DEALLOCATE ps1")
	wantCode(t, "a deallocated protocol statement", run("ps1"), "26000")
	if err := run("ps2"); err != nil {
		t.Errorf("ps2 after DEALLOCATE ps1: %v", err)
	}
	// The name is free for PREPARE, and a Parse of a PREPARE'd name is 42P05.
	execAll(t, c, "PREPARE ps1 AS SELECT 2")
	_, err = pc.Prepare(ctx, "ps1", "SELECT 3", nil)
	wantCode(t, "Parse of a PREPARE'd name", err, "42P05")
	if err := c.DeallocateAll(ctx); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "ps2 after DEALLOCATE ALL", run("ps2"), "26000")
	_, err = c.Exec(ctx, "EXECUTE ps1")
	wantCode(t, "EXECUTE after DEALLOCATE ALL", err, "26000")
	// pgx's statement cache works on after DeallocateAll.
	if got := int64s(t, c, "SELECT $1::bigint + 1", 41); len(got) != 1 || got[0] != 42 {
		t.Errorf("query after DeallocateAll: %v", got)
	}
}
