package sqllogic

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ndvKeys are the values of the numeric key columns: each value has one
// spelling in a column, so a group, DISTINCT row or join key prints the
// same digits whichever of its rows PostgreSQL sees first. ndvJoinKeys
// spell some of the same values with other scales (1.5 = 1.50 joins).
var (
	ndvKeys     = []string{"1.50", "2.000", "0.10", "3", "4.2500", "-1.0", "7.125"}
	ndvJoinKeys = []string{"1.5", "2", "0.100", "3.00", "4.25", "-1", "9.9"}
)

// ndvQueries run as materialized views (on the Pebble and on the memory
// backend), as batch queries and in PostgreSQL 15; every one computes
// unconstrained NUMERIC results whose display scale depends on the
// values. Each view must print exactly PostgreSQL's digits.
var ndvQueries = []string{
	// Projection and filter.
	"SELECT id, u, k, u * 1.0 AS m, u / 3 AS q, round(u, 3) AS r, a * u AS p, u + a AS s, k - u AS d FROM ndk WHERE g <> 1",
	// GROUP BY without HAVING: sum, avg, a quotient of sum and count, min, max.
	"SELECT g, sum(u) AS s, avg(u) AS av, avg(a) AS aa, sum(u) / count(*) AS q, min(u) AS lo, max(u) AS hi, sum(a * u) AS sp, count(*) AS n FROM ndk GROUP BY g",
	// GROUP BY with HAVING over an aggregate.
	"SELECT g, sum(u) AS s, avg(u) AS av, max(k) AS mk FROM ndk GROUP BY g HAVING count(*) > 2",
	"SELECT g, sum(u * 1.0) AS s, avg(a) AS av FROM ndk GROUP BY g HAVING sum(u) > -100",
	// DISTINCT and FILTER aggregates, COALESCE and CASE over numerics of
	// different scales.
	"SELECT g, sum(DISTINCT u) AS s, avg(DISTINCT k) AS ak, sum(u) FILTER (WHERE k > 1) AS f, max(COALESCE(u, k)) AS c FROM ndk GROUP BY g",
	"SELECT id, CASE WHEN g = 0 THEN u WHEN g = 1 THEN k ELSE a END AS c, COALESCE(u, a, k) AS co FROM ndk",
	// Ordered-set aggregates return one of the group's values.
	"SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY u) AS pd, mode() WITHIN GROUP (ORDER BY k) AS mk FROM ndk GROUP BY g",
	// A numeric GROUP BY key: the group prints its values' spelling.
	"SELECT k, count(*) AS n, sum(u) AS s, avg(a) AS av FROM ndk GROUP BY k",
	"SELECT k, g, min(u) AS lo FROM ndk GROUP BY k, g HAVING count(*) >= 1",
	// DISTINCT.
	"SELECT DISTINCT k FROM ndk",
	"SELECT DISTINCT k, g, a FROM ndk",
	// Inner and left joins on a numeric key (1.50 = 1.5), numeric on both
	// the key and the non-key side.
	"SELECT a.id, b.id AS bid, a.k, b.k AS bk, b.w, a.u * b.w AS p, a.u / NULLIF(b.w, 0) AS q FROM ndk a JOIN ndj b ON a.k = b.k",
	"SELECT a.id, a.k, b.k AS bk, b.w, a.u + b.w AS s FROM ndk a LEFT JOIN ndj b ON a.k = b.k",
	"SELECT b.id, b.k, b.w, a.id AS aid, a.u FROM ndj b LEFT JOIN ndk a ON b.k = a.k AND a.g = 0",
	// A sum over a join: products of many display scales in one group.
	"SELECT b.k, count(*) AS n, sum(a.u * b.w) AS sp FROM ndk a JOIN ndj b ON a.k = b.k GROUP BY b.k",
	// Top-N: ORDER BY ... LIMIT and row_number() <= N.
	"SELECT id, u, k, a FROM ndk ORDER BY u DESC, id LIMIT 5",
	"SELECT id, g, u, k, rn FROM (SELECT id, g, u, k, row_number() OVER (PARTITION BY g ORDER BY u DESC, id) AS rn FROM ndk) t WHERE rn <= 3",
	// OVER windows.
	"SELECT id, g, sum(u) OVER (PARTITION BY g) AS s, avg(u) OVER (PARTITION BY g) AS av, lag(u) OVER (PARTITION BY g ORDER BY id) AS l, lead(k, 1, 0.5) OVER (PARTITION BY g ORDER BY id) AS ld FROM ndk",
	"SELECT id, sum(u) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s, max(k) OVER (PARTITION BY g ORDER BY id ROWS 1 PRECEDING) AS mk FROM ndk",
	// UNION ALL of two tables' numerics.
	"SELECT id, u AS x FROM ndk UNION ALL SELECT id, w FROM ndj UNION ALL SELECT id, k FROM ndj",
	// Views over a view (ndbase: a materialized view in streamdb, a view
	// in PostgreSQL).
	"SELECT id, g, x, y FROM ndbase WHERE id % 2 = 0",
	"SELECT g, sum(x) AS s, avg(y) AS av, max(x) AS hi FROM ndbase GROUP BY g",
	"SELECT k, count(*) AS n, sum(x) AS s FROM ndbase GROUP BY k",
}

// ndvBase is the view the views over a view read.
const ndvBase = "SELECT id, g, k, u * 2 AS x, u / 4 AS y FROM ndk"

// TestNumericDScaleViewsPG checks that unconstrained NUMERIC results keep
// PostgreSQL 15's display scale through every view shape (projection and
// filter, GROUP BY with and without HAVING, a numeric group key, DISTINCT,
// inner and left joins on numeric keys, top-N by LIMIT and by
// row_number(), OVER windows, UNION ALL, views over a view) as
// materialized views on both state backends and as batch queries, over
// keyed tables changed by INSERT, UPDATE and DELETE, across a graceful
// restart and a kill -9.
func TestNumericDScaleViewsPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ddl := []string{
		"CREATE TABLE ndk (id INT PRIMARY KEY, g INT, k NUMERIC, u NUMERIC, a NUMERIC(10,2))",
		"CREATE TABLE ndj (id INT PRIMARY KEY, k NUMERIC, w NUMERIC)",
	}
	execAll(t, sdb, ddl...)
	execAll(t, pgc, ddl...)
	execAll(t, sdb, "CREATE MATERIALIZED VIEW ndbase AS "+ndvBase)
	execAll(t, pgc, "CREATE VIEW ndbase AS "+ndvBase)
	vs := viewsPG{t: t, pg: pgc, queries: ndvQueries, prefixes: []string{"ndvp", "ndvm"}, wait: 8 * time.Second}
	vs.create(sdb)

	r := rand.New(rand.NewPCG(14, 33))
	// u: a value with two decimals written with 2 to 4 of them, the scale
	// a function of the value (equal values print alike).
	u := func() string {
		v := r.IntN(1200) - 400
		return fmt.Sprintf("%s%s", randScaled(int64(v), 2), strings.Repeat("0", ((v%3)+3)%3))
	}
	null := func(s string) string {
		if r.IntN(9) == 0 {
			return "NULL"
		}
		return s
	}
	id, jid := 0, 0
	round := func(c *pgx.Conn, rows int) {
		var vals, jvals []string
		for range rows {
			id++
			vals = append(vals, fmt.Sprintf("(%d, %d, %s, %s, %s)", id, r.IntN(4), null(ndvKeys[r.IntN(len(ndvKeys))]),
				null(u()), null(randNumeric(r, 2, 1+r.IntN(5), 3))))
			if r.IntN(3) == 0 {
				jid++
				jvals = append(jvals, fmt.Sprintf("(%d, %s, %s)", jid, null(ndvJoinKeys[r.IntN(len(ndvJoinKeys))]), null(u())))
			}
		}
		stmts := []string{"INSERT INTO ndk VALUES " + strings.Join(vals, ", ")}
		if len(jvals) > 0 {
			stmts = append(stmts, "INSERT INTO ndj VALUES "+strings.Join(jvals, ", "))
		}
		// Changes that retract: values, the group, the key, rows gone.
		stmts = append(stmts,
			fmt.Sprintf("UPDATE ndk SET u = %s WHERE id %% 7 = %d", u(), r.IntN(7)),
			fmt.Sprintf("UPDATE ndk SET a = a + 0.5 WHERE id %% 9 = %d", r.IntN(9)),
			fmt.Sprintf("UPDATE ndk SET g = %d WHERE id %% 11 = %d", r.IntN(4), r.IntN(11)),
			fmt.Sprintf("UPDATE ndk SET k = %s WHERE id %% 13 = %d", ndvKeys[r.IntN(len(ndvKeys))], r.IntN(13)),
			fmt.Sprintf("UPDATE ndj SET w = %s WHERE id %% 5 = %d", u(), r.IntN(5)),
			fmt.Sprintf("DELETE FROM ndk WHERE id %% 17 = %d", r.IntN(17)),
			fmt.Sprintf("DELETE FROM ndj WHERE id %% 8 = %d", r.IntN(8)))
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	vs.run(srv, sdb, round, []int{30, 60, 20}, 30)
}

// viewsPG compares materialized views (prefix + the query's index, for
// each of prefixes: the first on the session's state backend, the second
// on the memory backend) and their queries run as batch queries with
// PostgreSQL's results of the queries.
type viewsPG struct {
	t        *testing.T
	pg       *pgx.Conn
	queries  []string
	prefixes []string
	wait     time.Duration // how long a view may lag (CHECKPOINT between reads)
}

// create creates the views on c.
func (v viewsPG) create(c *pgx.Conn) {
	for n, prefix := range v.prefixes {
		if n == 1 {
			execAll(v.t, c, "SET state.backend = 'memory'")
		}
		for i, q := range v.queries {
			execAll(v.t, c, fmt.Sprintf("CREATE MATERIALIZED VIEW %s%d AS %s", prefix, i, q))
		}
	}
}

// check compares after a CHECKPOINT on c, and stops the test at the end
// if anything differs.
func (v viewsPG) check(c *pgx.Conn, when string) {
	t := v.t
	t.Helper()
	execAll(t, c, "CHECKPOINT")
	for i, q := range v.queries {
		want := rowSet(t, v.pg, q)
		if got := rowSet(t, c, q); got != want {
			t.Errorf("%s: batch query differs from PostgreSQL\n  query: %s\n  streamdb:   %s\n  PostgreSQL: %s", when, q, got, want)
		}
		for _, prefix := range v.prefixes {
			for deadline := time.Now().Add(v.wait); ; {
				got := rowSet(t, c, fmt.Sprintf("SELECT * FROM %s%d", prefix, i))
				if got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: view %s%d differs from PostgreSQL\n  query: %s\n  view:       %s\n  PostgreSQL: %s", when, prefix, i, q, got, want)
					break
				}
				execAll(t, c, "CHECKPOINT")
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// run checks before any row and after one, after a round of sizes[0]
// rows and after the rest of sizes, then restarts srv gracefully and
// checks, runs two rounds of n rows (the second committed after a
// checkpoint, so replayed), kills the server with kill -9, restarts and
// checks, and checks once more after a round.
func (v viewsPG) run(srv *Server, sdb *pgx.Conn, round func(*pgx.Conn, int), sizes []int, n int) {
	t := v.t
	v.check(sdb, "before any row")
	round(sdb, 1)
	v.check(sdb, "one row")
	round(sdb, sizes[0])
	v.check(sdb, "first rounds")
	for _, k := range sizes[1:] {
		round(sdb, k)
	}
	v.check(sdb, "more rounds")
	srv.Restart(t)
	sdb = srv.Conn(t)
	v.check(sdb, "after a restart")
	round(sdb, n)
	execAll(t, sdb, "CHECKPOINT")
	round(sdb, n) // committed after the checkpoint: replayed after the crash
	srv.Kill9()
	srv.Restart(t)
	sdb = srv.Conn(t)
	v.check(sdb, "after kill -9")
	round(sdb, n)
	v.check(sdb, "rounds after kill -9")
}

// TestNumericDScaleParamsPG checks that a NUMERIC parameter of the
// extended protocol keeps the digits written, in text and in binary
// format ('1.50' prints 1.50, as PostgreSQL's numeric_in and numeric_recv
// keep the display scale), alone and in expressions.
func TestNumericDScaleParamsPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	// 1.50 and -0.0100 in numeric_send's form: ndigits, weight, sign,
	// dscale, base-10000 digits.
	bin := func(weight, sign, dscale int16, digits ...int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(len(digits)))
		b = binary.BigEndian.AppendUint16(b, uint16(weight))
		b = binary.BigEndian.AppendUint16(b, uint16(sign))
		b = binary.BigEndian.AppendUint16(b, uint16(dscale))
		for _, d := range digits {
			b = binary.BigEndian.AppendUint16(b, uint16(d))
		}
		return b
	}
	cases := []struct {
		vals    [][]byte
		formats []int16
	}{
		{[][]byte{[]byte("1.50"), []byte("2.000")}, []int16{0, 0}},
		{[][]byte{[]byte("-0.0100"), []byte("3")}, []int16{0, 0}},
		{[][]byte{bin(0, 0, 2, 1, 5000), bin(0, 0x4000, 4, 0, 100)}, []int16{1, 1}},
		{[][]byte{[]byte("12.3400"), bin(0, 0, 3, 2)}, []int16{0, 1}},
	}
	queries := []string{
		"SELECT $1::numeric AS a, $2::numeric AS b",
		"SELECT $1 AS a, $2 AS b",
		"SELECT $1 + 1 AS a, $2 * 2 AS b, $1 * $2 AS c, $1 - $2 AS d",
		"SELECT round($1, 1) AS a, $2 / 3 AS b, COALESCE($1, 0) AS c",
	}
	ctx := context.Background()
	for _, q := range queries {
		for _, c := range cases {
			for _, resFmt := range []int16{0, 1} {
				run := func(conn *pgx.Conn) string {
					res := conn.PgConn().ExecParams(ctx, q, c.vals, []uint32{1700, 1700}, c.formats, []int16{resFmt}).Read()
					if res.Err != nil {
						t.Fatalf("%s: %v", q, res.Err)
					}
					return fmt.Sprint(res.Rows)
				}
				if got, want := run(sdb), run(pgc); got != want {
					t.Errorf("%s with %q (formats %v, results in format %d):\n  streamdb:   %s\n  PostgreSQL: %s", q, c.vals, c.formats, resFmt, got, want)
				}
			}
		}
	}
}
