package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// nwideQueries average and sum NUMERIC values of 10^18 and more. Group 0
// holds values near 9 * 10^21, whose sum passes the 128 bits of a
// Decimal128 at the argument's scale (so only a wider sum averages them);
// the averages are of numeric(37,15) (22 integer digits, held at 16
// places); sums and averages of the smaller groups are of the
// unconstrained column, averages of bigint near 10^18.
var nwideQueries = []string{
	"SELECT g, avg(x::numeric(37,15)) AS a, count(*) AS n FROM nw GROUP BY g",
	"SELECT g, sum(x) AS s, avg(x) AS a, avg(b) AS ab FROM nw WHERE g > 0 AND x < 1e17 GROUP BY g",
	"SELECT id, avg(x::numeric(37,15)) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a FROM nw",
}

// TestNumericWideAvgPG checks sums and averages of NUMERIC values around
// 10^18 and more against PostgreSQL 15, in batch queries and views (both
// state backends, across a restart and kill -9): where streamdb failed
// with "value overflows numeric format" (avg of an unconstrained value
// cast to the quotient's 20 places) or wrapped a sum past 128 bits. An
// average or sum that streamdb cannot hold is 22003 with a hint.
func TestNumericWideAvgPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ddl := "CREATE TABLE nw (id INT PRIMARY KEY, g INT, x NUMERIC, b BIGINT)"
	execAll(t, sdb, ddl)
	execAll(t, pgc, ddl)
	vs := viewsPG{t: t, pg: pgc, queries: nwideQueries, prefixes: []string{"nwdp", "nwdm"}, wait: 20 * time.Second}
	vs.create(sdb)

	r := rand.New(rand.NewPCG(33, 18))
	id := 0
	round := func(c *pgx.Conn, rows int) {
		var vals []string
		for range rows {
			id++
			g := r.IntN(3)
			x := fmt.Sprintf("%d.%d", 1+r.IntN(9), r.IntN(1000))
			switch g {
			case 0: // near 9 * 10^21: twenty of them pass 2^127 at 16 places
				x = fmt.Sprintf("9%021d.%d", r.Int64N(1e15), r.IntN(100))
			case 1: // near 10^16..10^18, some past 10^17
				x = fmt.Sprintf("%d%016d.%02d", 1+r.IntN(40), r.Int64N(1e16), r.IntN(100))
			}
			vals = append(vals, fmt.Sprintf("(%d, %d, %s, %d)", id, g, x, 9e17+r.Int64N(1e17)))
		}
		stmts := []string{"INSERT INTO nw VALUES " + strings.Join(vals, ", "),
			fmt.Sprintf("DELETE FROM nw WHERE id %% 11 = %d", r.IntN(11)),
			fmt.Sprintf("UPDATE nw SET g = 2, x = 1.5 WHERE id %% 13 = %d AND g = 1", r.IntN(13))}
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	vs.run(srv, sdb, round, []int{40, 30}, 20)
	sdb = srv.Conn(t) // run restarted the server

	// What a Decimal128 cannot hold: 22003 and a hint, never a wrapped or
	// truncated value; the average's hint gives PostgreSQL's digits.
	for _, q := range []string{"SELECT avg(x) FROM nw WHERE g = 0", "SELECT sum(x) FROM nw WHERE g = 0"} {
		rowSet(t, pgc, q) // PostgreSQL has it
		_, err := sdb.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22003" || pe.Hint == "" {
			t.Errorf("%s: %v (hint %q), want 22003 with a hint", q, err, hintOf(err))
		}
	}
	execAll(t, sdb, "SELECT 1") // the server is still up
}
