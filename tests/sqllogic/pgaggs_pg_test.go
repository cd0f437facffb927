package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgaggQueries run as batch queries and as materialized views (on the
// Pebble and the memory backend) in streamdb and as the same SELECT in
// PostgreSQL 15. Float results are rounded in the query, as the
// retractable float forms differ from PostgreSQL's in the last bits.
var pgaggQueries = []string{
	// The variance family over integers and NUMERIC: exact, PostgreSQL's digits.
	"SELECT g, variance(i) AS a, var_pop(i) AS b, stddev(i) AS c, stddev_pop(i) AS d, var_samp(b) AS e, stddev_samp(b) AS h FROM pa GROUP BY g",
	"SELECT g, variance(n) AS a, var_pop(n) AS b, stddev(n) AS c, stddev_pop(n) AS d, count(n) AS k FROM pa GROUP BY g",
	// Over floats, rounded.
	"SELECT g, round(variance(f)::numeric, 6) AS a, round(var_pop(f)::numeric, 6) AS b, round(stddev(f)::numeric, 6) AS c, " +
		"round(stddev_pop(f)::numeric, 6) AS d FROM pa GROUP BY g",
	// bool_and, bool_or, every; FILTER.
	"SELECT g, bool_and(ok) AS a, bool_or(ok) AS b, every(ok) AS c, bool_and(ok) FILTER (WHERE i > 3) AS d, " +
		"bool_or(ok) FILTER (WHERE i > 3) AS e, variance(i) FILTER (WHERE ok) AS h, count(*) AS k FROM pa GROUP BY g",
	// corr, covar, regr.
	"SELECT g, regr_count(y, f) AS a, round(corr(y, f)::numeric, 6) AS b, round(covar_pop(y, f)::numeric, 6) AS c, " +
		"round(covar_samp(y, f)::numeric, 6) AS d, round(regr_slope(y, f)::numeric, 6) AS e, round(regr_intercept(y, f)::numeric, 6) AS h, " +
		"round(regr_r2(y, f)::numeric, 6) AS i, round(regr_avgx(y, f)::numeric, 6) AS j, round(regr_avgy(y, f)::numeric, 6) AS k, " +
		"round(regr_sxx(y, f)::numeric, 6) AS l, round(regr_syy(y, f)::numeric, 6) AS m, round(regr_sxy(y, f)::numeric, 6) AS o FROM pa GROUP BY g",
	// Over windows: the whole partition and a ROWS frame.
	"SELECT id, variance(i) OVER (PARTITION BY g) AS a, bool_and(ok) OVER (PARTITION BY g ORDER BY id ROWS 2 PRECEDING) AS b, " +
		"stddev_pop(n) OVER (PARTITION BY g ORDER BY id ROWS 3 PRECEDING) AS c, regr_count(y, f) OVER (PARTITION BY g) AS d FROM pa",
	// bit_and, bit_or, bit_xor over smallint, integer and bigint (negatives), FILTER.
	"SELECT g, bit_and(i) AS a, bit_or(i) AS b, bit_xor(i) AS c, bit_and(b) AS d, bit_or(b) AS e, bit_xor(b) AS h, " +
		"bit_xor(i::smallint) FILTER (WHERE ok) AS j, bit_and(DISTINCT i) AS l, bit_xor(DISTINCT i) AS m, bit_xor(DISTINCT b) FILTER (WHERE ok) AS n, count(*) AS k FROM pa GROUP BY g",
	"SELECT bit_or(i::smallint) AS a, bit_xor(b) AS b, bit_and(i) FILTER (WHERE i < 0) AS c FROM pa",
	"SELECT id, bit_xor(i) OVER (PARTITION BY g ORDER BY id ROWS 2 PRECEDING) AS a, bit_or(b) FILTER (WHERE ok) OVER (PARTITION BY g) AS b FROM pa",
	// DISTINCT in the variance family (values of both signs, repeated).
	"SELECT g, variance(DISTINCT i) AS a, stddev_pop(DISTINCT n) AS b, round(var_samp(DISTINCT f)::numeric, 6) AS c, " +
		"var_pop(DISTINCT b) FILTER (WHERE ok) AS d, stddev(DISTINCT abs(i)) AS e FROM pa GROUP BY g",
	// FILTER with OVER.
	"SELECT id, var_samp(i) FILTER (WHERE ok) OVER (PARTITION BY g) AS a, stddev(n) FILTER (WHERE i > 0) OVER (PARTITION BY g ORDER BY id ROWS 2 PRECEDING) AS b, " +
		"bool_or(ok) FILTER (WHERE i < 5) OVER (PARTITION BY g) AS c, round(CAST(corr(y, f) FILTER (WHERE i > 2) OVER (PARTITION BY g) AS numeric), 6) AS d, " +
		"regr_count(y, f) FILTER (WHERE ok) OVER (PARTITION BY g) AS e FROM pa",
	// One group, empty before the first row.
	"SELECT variance(i) AS a, stddev_pop(b) AS b, bool_and(ok) AS c, bool_or(ok) AS d, round(stddev(f)::numeric, 6) AS e, regr_count(y, i) AS h FROM pa",
}

// TestPGAggregatesPG checks PostgreSQL's statistical and boolean
// aggregates (stddev, variance and their _samp/_pop forms over integers,
// NUMERIC and floats; bool_and, bool_or, every; corr, covar_*, regr_*)
// against PostgreSQL 15: batch queries and materialized views over a
// table with a primary key changed by INSERT, UPDATE and DELETE (groups of
// 0, 1 and 2 rows, NULLs), with FILTER, across a restart and a kill -9.
func TestPGAggregatesPG(t *testing.T) {
	t.Parallel()
	srv, sdb, pgc, vs, r, null := pgDiffSetup(t, "CREATE TABLE pa (id INT PRIMARY KEY, g INT, i INT, b BIGINT, n NUMERIC(10,2), f DOUBLE PRECISION, y DOUBLE PRECISION, ok BOOLEAN)",
		pgaggQueries, []string{"pav", "pam"}, 16)
	id := 0
	round := func(c *pgx.Conn, rows int) {
		var vals []string
		for range rows {
			id++
			vals = append(vals, fmt.Sprintf("(%d, %d, %s, %s, %s, %s, %s, %s)", id, r.IntN(12), null(fmt.Sprint(r.IntN(20)-5)),
				null(fmt.Sprint(r.Int64N(2_000_000_000)-1_000_000_000)), null(fmt.Sprintf("%d.%02d", r.IntN(2000)-1000, r.IntN(100))),
				null(fmt.Sprint(float64(r.IntN(80))/4-5)), null(fmt.Sprint(float64(r.IntN(40))/8)), null([]string{"true", "false"}[r.IntN(2)])))
		}
		stmts := []string{"INSERT INTO pa VALUES " + strings.Join(vals, ", "),
			fmt.Sprintf("UPDATE pa SET i = i + %d, ok = NOT ok WHERE id %% 7 = %d", r.IntN(9)-4, r.IntN(7)),
			fmt.Sprintf("UPDATE pa SET g = %d, f = f * 2 WHERE id %% 11 = %d", r.IntN(14), r.IntN(11)),
			fmt.Sprintf("DELETE FROM pa WHERE id %% 13 = %d", r.IntN(13))}
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	vs.run(srv, sdb, round, []int{30, 80, 40}, 50)
	sdb = srv.Conn(t) // run restarted the server
	for _, e := range []struct{ sql, code string }{
		{"SELECT corr(DISTINCT y, f) FROM pa", "0A000"}, // PostgreSQL takes it; refused, never wrong
		{"SELECT bool_and(i) FROM pa", "42883"},
		{"SELECT stddev(ok) FROM pa", "42883"},
		{"SELECT corr(y) FROM pa", "42883"},
	} {
		if got := sqlState(t, sdb, e.sql); got != e.code {
			t.Errorf("%s: SQLSTATE %s, want %s", e.sql, got, e.code)
		}
	}
}

// pgarrQueries exercise the array functions over arrays built per row and
// by array_agg, in batch queries and views.
var pgarrQueries = []string{
	"SELECT id, array_append(ARRAY[a, b], c) AS x, array_prepend(c, ARRAY[a]) AS y, array_cat(ARRAY[a, b], ARRAY[c]) AS z, " +
		"ARRAY[a] || b AS w, c || ARRAY[a, b] AS v, ARRAY[a] || ARRAY[b, c] AS u FROM pr",
	"SELECT id, array_position(ARRAY[a, b, c], 3) AS p, array_position(ARRAY[a, b, c, a], a, 2) AS q, array_positions(ARRAY[a, b, c, a], a) AS r, " +
		"array_remove(ARRAY[a, b, c], 2) AS s, array_replace(ARRAY[a, b, c], 1, 9) AS t, array_position(ARRAY[a, b, c], NULL) AS n, " +
		"array_remove(ARRAY[a, b, c], NULL) AS m FROM pr",
	"SELECT id, trim_array(ARRAY[a, b, c], 1) AS t, array_dims(ARRAY[a, b]) AS d, array_fill(a, ARRAY[2]) AS f, " +
		"array_length(ARRAY[a, b, c], 1) AS l, cardinality(ARRAY[a, b]) AS k, array_upper(ARRAY[a], 1) AS up, array_lower(ARRAY[a], 1) AS lo, " +
		"array_position(ARRAY[s, 'x'], 'x') AS sp, array_remove(ARRAY[s, 'q'], s) AS sr FROM pr",
	"SELECT g, cardinality(array_remove(array_agg(a ORDER BY id), 3)) AS c, array_position(array_agg(a ORDER BY id), 4) IS NULL AS p FROM pr GROUP BY g",
}

// TestPGArrayFuncsPG checks array_append, array_prepend, array_cat,
// array_position(s), array_remove, array_replace, trim_array, array_dims,
// array_fill and || against PostgreSQL 15 in batch queries and views over
// a keyed table changed by UPDATE and DELETE, NULL elements included.
func TestPGArrayFuncsPG(t *testing.T) {
	t.Parallel()
	srv, sdb, pgc, vs, r, null := pgDiffSetup(t, "CREATE TABLE pr (id INT PRIMARY KEY, g INT, a INT, b INT, c INT, s TEXT)",
		pgarrQueries, []string{"prv"}, 17)
	id := 0
	round := func(c *pgx.Conn, rows int) {
		var vals []string
		for range rows {
			id++
			vals = append(vals, fmt.Sprintf("(%d, %d, %s, %s, %s, %s)", id, r.IntN(5), null(fmt.Sprint(r.IntN(5))), null(fmt.Sprint(r.IntN(5))),
				null(fmt.Sprint(r.IntN(5))), null(fmt.Sprintf("'s%d'", r.IntN(3)))))
		}
		stmts := []string{"INSERT INTO pr VALUES " + strings.Join(vals, ", "),
			fmt.Sprintf("UPDATE pr SET a = b, s = 'x' WHERE id %% 5 = %d", r.IntN(5)),
			fmt.Sprintf("DELETE FROM pr WHERE id %% 9 = %d", r.IntN(9))}
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	vs.run(srv, sdb, round, []int{20, 30}, 20)
	sdb = srv.Conn(t) // run restarted the server
	for _, e := range []struct{ sql, code string }{
		{"SELECT trim_array(ARRAY[1, 2], 3)", "2202E"},
		{"SELECT array_position(ARRAY[1, 2], 1, NULL)", "22004"},
		{"SELECT array_append(ARRAY[1, 2], 'x'::text)", "42883"},
		{"SELECT array_fill(1, ARRAY[2], ARRAY[1])", "0A000"},
	} {
		if got := sqlState(t, sdb, e.sql); got != e.code {
			t.Errorf("%s: SQLSTATE %s, want %s", e.sql, got, e.code)
		}
	}
}

// pgDiffSetup starts streamdb and PostgreSQL 15, creates the table ddl in
// both and the views of queries (one set per prefix) in streamdb, and
// returns a generator seeded with seed and a function that makes a
// value NULL one time in six.
func pgDiffSetup(t *testing.T, ddl string, queries, prefixes []string, seed uint64) (*Server, *pgx.Conn, *pgx.Conn, viewsPG, *rand.Rand, func(string) string) {
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	execAll(t, sdb, ddl)
	execAll(t, pgc, ddl)
	vs := viewsPG{t: t, pg: pgc, queries: queries, prefixes: prefixes, wait: 30 * time.Second}
	vs.create(sdb)
	r := rand.New(rand.NewPCG(30, seed))
	null := func(s string) string {
		if r.IntN(6) == 0 {
			return "NULL"
		}
		return s
	}
	return srv, sdb, pgc, vs, r, null
}
