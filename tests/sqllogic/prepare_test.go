package sqllogic

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func int64s(t *testing.T, c *pgx.Conn, query string, args ...any) []int64 {
	t.Helper()
	rows, err := c.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	return out
}

func sameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLimitParams: LIMIT $1 OFFSET $2 through pgx's extended protocol,
// with the parameters' type described as bigint, NULL as no limit, and
// negative values refused with PostgreSQL's codes.
func TestLimitParams(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (x BIGINT)", "INSERT INTO t VALUES (1), (2), (3), (4), (5), (6)")
	q := "SELECT x FROM t ORDER BY x LIMIT $1 OFFSET $2"
	if got := int64s(t, c, q, 2, 3); !sameInts(got, []int64{4, 5}) {
		t.Errorf("LIMIT 2 OFFSET 3: %v", got)
	}
	if got := int64s(t, c, q, 10, 0); len(got) != 6 {
		t.Errorf("LIMIT 10 OFFSET 0: %v", got)
	}
	if got := int64s(t, c, q, nil, 4); !sameInts(got, []int64{5, 6}) {
		t.Errorf("LIMIT NULL OFFSET 4: %v", got)
	}
	if got := int64s(t, c, "SELECT x FROM t WHERE x > $1 ORDER BY x DESC OFFSET $3 LIMIT $2", 1, 2, 1); !sameInts(got, []int64{5, 4}) {
		t.Errorf("WHERE x > 1 OFFSET 1 LIMIT 2: %v", got)
	}
	sd, err := c.Prepare(ctx, "lim", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 2 || sd.ParamOIDs[0] != 20 || sd.ParamOIDs[1] != 20 {
		t.Errorf("parameter types %v, want bigint, bigint", sd.ParamOIDs)
	}
	_, err = c.Exec(ctx, q, -1, 0)
	wantCode(t, "LIMIT -1", err, "2201W")
	_, err = c.Exec(ctx, q, 1, -1)
	wantCode(t, "OFFSET -1", err, "2201X")
	// Without a value for $1 (the simple protocol) the statement is refused.
	_, err = c.Exec(ctx, "SELECT x FROM t LIMIT $1", pgx.QueryExecModeSimpleProtocol)
	wantCode(t, "LIMIT $1 with no parameters", err, "42P02")
}

// TestPrepareExecute: SQL-level PREPARE, EXECUTE (arguments are expressions
// cast to the parameters' types) and DEALLOCATE, over both protocols.
func TestPrepareExecute(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (x BIGINT, s TEXT)",
		"PREPARE ins (bigint, text) AS INSERT INTO t VALUES ($1, $2)",
		"EXECUTE ins (40 + 2, 'a')", "EXECUTE ins ('43', 'b' || 'c')",
		"PREPARE q AS SELECT x FROM t WHERE x >= $1 ORDER BY x LIMIT $2")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		if got := int64s(t, c, "EXECUTE q (42, 1)", mode); !sameInts(got, []int64{42}) {
			t.Errorf("%v: EXECUTE q (42, 1) = %v", mode, got)
		}
		if got := int64s(t, c, "EXECUTE q (0, 10)", mode); !sameInts(got, []int64{42, 43}) {
			t.Errorf("%v: EXECUTE q (0, 10) = %v", mode, got)
		}
	}
	var s string
	if err := c.QueryRow(ctx, "SELECT s FROM t WHERE x = 43").Scan(&s); err != nil || s != "bc" {
		t.Errorf("row of EXECUTE ins ('43', 'b' || 'c'): %q %v", s, err)
	}
	_, err := c.Exec(ctx, "EXECUTE q (1)")
	wantCode(t, "EXECUTE with too few arguments", err, "42601")
	_, err = c.Exec(ctx, "PREPARE q AS SELECT 1")
	wantCode(t, "PREPARE of an existing name", err, "42P05")
	_, err = c.Exec(ctx, "EXECUTE nosuch")
	wantCode(t, "EXECUTE of an unknown name", err, "26000")
	_, err = c.Exec(ctx, "EXECUTE ins ('x', 'y')")
	wantCode(t, "an argument not of its parameter's type", err, "22P02")
	execAll(t, c, "DEALLOCATE q")
	_, err = c.Exec(ctx, "EXECUTE q (1, 1)")
	wantCode(t, "EXECUTE after DEALLOCATE", err, "26000")
	_, err = c.Exec(ctx, "DEALLOCATE q")
	wantCode(t, "DEALLOCATE of an unknown name", err, "26000")
	execAll(t, c, "DEALLOCATE PREPARE ALL")
	_, err = c.Exec(ctx, "EXECUTE ins (1, 'x')")
	wantCode(t, "EXECUTE after DEALLOCATE ALL", err, "26000")
	// EXECUTE in a block is the statement it runs: its INSERT is rolled back.
	execAll(t, c, "PREPARE ins AS INSERT INTO t VALUES (99, 'z')", "BEGIN", "EXECUTE ins", "ROLLBACK")
	if n := countOf(t, c, "SELECT count(*) FROM t WHERE x = 99"); n != 0 {
		t.Errorf("EXECUTE of an INSERT in a rolled-back block left %d rows", n)
	}
}
