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

// nqQueries divide NUMERIC values whose quotients PostgreSQL's
// select_div_scale gives more decimal places than streamdb holds a quotient
// at (20): 0.00001 / 400000 prints 28 decimals, 0.00002 / 8 and avg of
// tiny values 24. The data keeps every such quotient exact at 20 places
// (divisors of 2s and 5s, groups of 1, 2 or 4 rows), so streamdb can hold
// PostgreSQL's value and must print all its digits.
var nqQueries = []string{
	"SELECT id, x / y AS q, x / 4 AS q4, x / y + x AS s, x - x / y AS d, x / y * 2 AS m, x / 4 * y AS m2, x * 1.000000000000 AS p FROM nq",
	"SELECT g, avg(x) AS av, sum(x) / count(*) AS q, avg(b) AS ab, count(*) AS n, sum(x / y) AS sq FROM nq GROUP BY g",
}

// TestNumericDScaleQuotientsPG checks quotients and averages below 0.0001
// against PostgreSQL 15: in batch queries and materialized views (both
// state backends, across kill -9 and a graceful restart) when their
// digits fit the 20 places a quotient is held at, and 22003 with a hint
// (cast an operand to a wider numeric) when they do not, where streamdb
// used to print a value rounded short of PostgreSQL's digits.
func TestNumericDScaleQuotientsPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ddl := "CREATE TABLE nq (id INT PRIMARY KEY, g INT, x NUMERIC, y NUMERIC, b BIGINT)"
	execAll(t, sdb, ddl)
	execAll(t, pgc, ddl)
	vs := viewsPG{t: t, pg: pgc, queries: nqQueries, prefixes: []string{"nqp", "nqm"}, wait: 8 * time.Second}
	vs.create(sdb)
	both := func(stmts ...string) {
		execAll(t, sdb, stmts...)
		execAll(t, pgc, stmts...)
	}
	both("INSERT INTO nq VALUES (1, 0, 0.00001, 400000, 1), (2, 0, 0.00002, 8, 1), (3, 1, 1, 2.5, 2), (4, 1, 3, 4, 3), " +
		"(5, 2, 0.000025, 1000000, 7), (6, 3, 0.5, 0.5, 1), (7, 3, 0.0005, 25, 2), (8, 3, 12.5, 400000, 3), (9, 3, 0.00005, 4, 4)")
	vs.check(sdb, "first rows")
	both("UPDATE nq SET x = 0.00004 WHERE id = 2", "INSERT INTO nq VALUES (10, 2, 0.000015, 5, 2)",
		"DELETE FROM nq WHERE id = 9", "INSERT INTO nq VALUES (11, 3, 0.00008, 16, 5)")
	vs.check(sdb, "changes")
	both("UPDATE nq SET g = 1 WHERE id = 5") // after the checkpoint: replayed
	srv.Kill9()
	srv.Restart(t)
	sdb = srv.Conn(t)
	vs.check(sdb, "after kill -9")
	both("INSERT INTO nq VALUES (12, 0, 0.000001, 0.5, 1), (13, 0, 0.00003, 2, 2)")
	vs.check(sdb, "rows after kill -9")
	srv.Restart(t)
	sdb = srv.Conn(t)
	vs.check(sdb, "after a restart")

	// Binary results send numeric_send's dscale past the digits held.
	bq := "SELECT id, x / y AS q, x / y * 2 AS m, avg(x) OVER (PARTITION BY g) AS av FROM nq ORDER BY id"
	run := func(c *pgx.Conn) string {
		res := c.PgConn().ExecParams(context.Background(), bq, nil, nil, nil, []int16{1}).Read()
		if res.Err != nil {
			t.Fatalf("%s: %v", bq, res.Err)
		}
		return fmt.Sprint(res.Rows)
	}
	if got, want := run(sdb), run(pgc); got != want {
		t.Errorf("%s in binary:\n  streamdb:   %s\n  PostgreSQL: %s", bq, got, want)
	}

	// Quotients with digits past 20 places: 22003 and a hint, never a
	// value short of PostgreSQL's digits; the hint's cast gives them.
	for _, q := range []string{"SELECT x / 3 FROM nq WHERE id = 1", "SELECT id, 1 / (y - 1) FROM nq WHERE id = 1"} {
		rowSet(t, pgc, q) // PostgreSQL has it
		_, err := sdb.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22003" || !strings.Contains(pe.Hint, "numeric(38,") {
			t.Errorf("%s: %v (hint %q), want 22003 with a hint", q, err, hintOf(err))
		}
	}
	// Products likewise (PostgreSQL's product scale is the sum of the
	// operands'), where streamdb printed the digits held, rounded.
	for _, q := range []string{"SELECT x * 0.000000000003 FROM nq WHERE id = 1", "SELECT x * x * x * x FROM nq WHERE id = 1"} {
		rowSet(t, pgc, q)
		_, err := sdb.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22003" || !strings.Contains(pe.Hint, "numeric(38,") {
			t.Errorf("%s: %v (hint %q), want 22003 with a hint", q, err, hintOf(err))
		}
	}
	for _, q := range []string{"SELECT x::numeric(38,30) / 3 AS q FROM nq WHERE id = 1", "SELECT 1::numeric(38,28) / (y - 1) AS q FROM nq WHERE id = 1",
		"SELECT x::numeric(38,5) * 0.000000000003::numeric(38,12) AS p FROM nq WHERE id = 1",
		"SELECT x::numeric(38,20) * x::numeric(38,20) AS p, x::numeric(38,20) * 3 AS p3 FROM nq"} {
		if got, want := rowSet(t, sdb, q), rowSet(t, pgc, q); got != want {
			t.Errorf("%s:\n  streamdb:   %s\n  PostgreSQL: %s", q, got, want)
		}
	}
	execAll(t, sdb, "SELECT 1") // the server is still up
}

// hintOf is the HINT of a server error ("" if none).
func hintOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Hint
	}
	return ""
}
