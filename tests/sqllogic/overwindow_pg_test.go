package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// owPart is the window most cases use: a total order (id is unique), so
// every row-position function is deterministic and comparable.
const owPart = "PARTITION BY g ORDER BY o, id"

// owQueries are batch queries with lag, lead, first_value, last_value and
// nth_value run in streamdb and PostgreSQL 15 alike. Functions over the
// ORDER BY column itself (o) are deterministic even among ties, so those
// cases order by o alone to cover peers in the default RANGE frame.
var owQueries = []string{
	// lag and lead: default offset, an offset, a default, zero offsets, an
	// offset beyond the partition.
	"SELECT id, lag(v) OVER (" + owPart + ") AS a, lead(v) OVER (" + owPart + ") AS b, lag(v, 2, -1) OVER (" + owPart + ") AS c, " +
		"lead(v, 3, 0) OVER (" + owPart + ") AS d, lag(v, 0) OVER (" + owPart + ") AS e, lead(v, 0) OVER (" + owPart + ") AS f, " +
		"lag(v, 1000) OVER (" + owPart + ") AS h, lead(v, 1000, 7) OVER (" + owPart + ") AS i FROM ow",
	// The default is evaluated at the current row; types meet (bigint and
	// int, double and numeric, text and unknown).
	"SELECT id, lag(v, 1, id) OVER (" + owPart + ") AS a, lead(f, 2, 0.5) OVER (" + owPart + ") AS b, " +
		"lag(s, 1, 'none') OVER (" + owPart + ") AS c, lead(s) OVER (" + owPart + ") AS d, lag(f) OVER (" + owPart + ") AS e FROM ow",
	// first_value, last_value, nth_value with the default frame.
	"SELECT id, first_value(v) OVER (" + owPart + ") AS a, last_value(v) OVER (" + owPart + ") AS b, nth_value(v, 2) OVER (" + owPart + ") AS c, " +
		"nth_value(s, 3) OVER (" + owPart + ") AS d, first_value(f) OVER (" + owPart + ") AS e FROM ow",
	// Ties: ordered by o alone (NULLs, DESC, NULLS FIRST). The frame
	// functions over o give each row a deterministic value (the frame ends
	// at the last peer); lag and lead do not (which peer comes first is
	// arbitrary), so they are compared without the row's id.
	"SELECT id, first_value(o) OVER (PARTITION BY g ORDER BY o) AS a, last_value(o) OVER (PARTITION BY g ORDER BY o) AS b, " +
		"nth_value(o, 3) OVER (PARTITION BY g ORDER BY o) AS c, last_value(o) OVER (PARTITION BY g ORDER BY o DESC NULLS LAST) AS h, " +
		"nth_value(o, 2) OVER (PARTITION BY g ORDER BY o NULLS FIRST) AS i FROM ow",
	"SELECT g, lag(o) OVER (PARTITION BY g ORDER BY o) AS d FROM ow",
	"SELECT g, lead(o, 2, -5) OVER (PARTITION BY g ORDER BY o DESC) AS e FROM ow",
	// ROWS frames.
	"SELECT id, first_value(v) OVER (" + owPart + " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a, " +
		"last_value(v) OVER (" + owPart + " ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS b, " +
		"nth_value(v, 2) OVER (" + owPart + " ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS c, " +
		"last_value(v) OVER (" + owPart + " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS d, " +
		"first_value(v) OVER (" + owPart + " ROWS BETWEEN 2 FOLLOWING AND 4 FOLLOWING) AS e, " +
		"last_value(v) OVER (" + owPart + " ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) AS f, " +
		"nth_value(v, 3) OVER (" + owPart + " ROWS 4 PRECEDING) AS h, " +
		"first_value(v) OVER (" + owPart + " ROWS BETWEEN 0 PRECEDING AND 0 FOLLOWING) AS i, " +
		"last_value(v) OVER (" + owPart + " ROWS BETWEEN 1000 PRECEDING AND 1000 FOLLOWING) AS j FROM ow",
	// RANGE frames without offsets (peers of the current row); aggregates
	// over the whole partition.
	"SELECT id, last_value(o) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS a, " +
		"first_value(o) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN CURRENT ROW AND CURRENT ROW) AS b, " +
		"nth_value(o, 2) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS c, " +
		"sum(v) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS d, " +
		"count(*) OVER (" + owPart + " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS e, " +
		"max(v) OVER (PARTITION BY g ORDER BY o RANGE UNBOUNDED PRECEDING) AS f FROM ow",
	// Aggregates over ROWS frames: sliding (both ends bounded) and running.
	"SELECT id, sum(v) OVER (" + owPart + " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a, " +
		"count(v) OVER (" + owPart + " ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING) AS b, " +
		"count(*) OVER (" + owPart + " ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) AS c, " +
		"min(s) OVER (" + owPart + " ROWS BETWEEN CURRENT ROW AND 3 FOLLOWING) AS d, " +
		"max(f) OVER (" + owPart + " ROWS 4 PRECEDING) AS e, " +
		"avg(f) OVER (" + owPart + " ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS h, " +
		"sum(f) OVER (" + owPart + " ROWS BETWEEN 2 FOLLOWING AND 3 FOLLOWING) AS i, " +
		"sum(v) OVER (" + owPart + " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS j, " +
		"count(*) OVER (" + owPart + " ROWS UNBOUNDED PRECEDING) AS k FROM ow",
	// Ties under ROWS frames: only the multiset of values is deterministic.
	"SELECT g, sum(o) OVER (PARTITION BY g ORDER BY o ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS a FROM ow",
	// RANGE frames with offsets: over an integer key (NULLs, ties, DESC,
	// NULLS FIRST, offsets on both sides, an empty frame) and a double key.
	"SELECT id, sum(v) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) AS a, " +
		"count(*) OVER (PARTITION BY g ORDER BY o DESC RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS b, " +
		"first_value(o) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN 3 PRECEDING AND 1 PRECEDING) AS c, " +
		"max(f) OVER (PARTITION BY g ORDER BY f RANGE BETWEEN 1.5 PRECEDING AND CURRENT ROW) AS d, " +
		"avg(f) OVER (PARTITION BY g ORDER BY o NULLS FIRST RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING) AS e, " +
		"last_value(o) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING) AS h, " +
		"min(v) OVER (PARTITION BY g ORDER BY o DESC NULLS LAST RANGE BETWEEN 2 FOLLOWING AND UNBOUNDED FOLLOWING) AS i, " +
		"count(v) OVER (ORDER BY o RANGE 0 PRECEDING) AS j FROM ow",
	// One partition; a window over an aggregate; in an expression.
	"SELECT id, lag(id, 3) OVER (ORDER BY o DESC NULLS LAST, id) AS a, last_value(id) OVER (ORDER BY o, id ROWS BETWEEN CURRENT ROW AND 5 FOLLOWING) AS b FROM ow",
	"SELECT g, sum(v) AS s, lag(sum(v)) OVER (ORDER BY g NULLS FIRST) AS p, sum(v) - lead(sum(v), 1, 0) OVER (ORDER BY g NULLS FIRST) AS d, " +
		"first_value(count(*)) OVER (ORDER BY g ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS c FROM ow GROUP BY g",
	"SELECT id FROM (SELECT id, v, lag(v) OVER (" + owPart + ") AS p FROM ow) x WHERE v > p",
	// Aggregates over frames with an unbounded end that is not the
	// partition's: ROWS to UNBOUNDED FOLLOWING, from UNBOUNDED PRECEDING to
	// an offset, RANGE and GROUPS from the current row's peers.
	"SELECT id, sum(v) OVER (" + owPart + " ROWS BETWEEN 2 PRECEDING AND UNBOUNDED FOLLOWING) AS a, " +
		"count(*) OVER (" + owPart + " ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS b, " +
		"min(s) OVER (" + owPart + " ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS c, " +
		"max(f) OVER (" + owPart + " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING) AS d, " +
		"avg(f) OVER (" + owPart + " ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING) AS e, " +
		"count(v) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS h, " +
		"sum(v) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN CURRENT ROW AND CURRENT ROW) AS i, " +
		"max(v) OVER (PARTITION BY g ORDER BY o GROUPS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS j, " +
		"count(*) OVER (PARTITION BY g RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS k, " +
		"array_agg(v) OVER (" + owPart + " ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS l, " +
		"string_agg(s, ',') OVER (" + owPart + " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS m FROM ow",
}

// TestOverWindowPG checks lag, lead, first_value, last_value and nth_value
// (with the default frame, ROWS frames and RANGE frames without offsets)
// and aggregates over ROWS frames (bounded both ends, or UNBOUNDED
// PRECEDING to CURRENT ROW) in batch queries against PostgreSQL 15 over
// generated rows with NULLs in every column and ties in the ORDER BY
// column, RANGE frames with offsets, aggregates over every frame, and that
// what is not supported yet is refused with 0A000: non-literal offsets
// (views: TestOverWindowViewPG).
func TestOverWindowPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ddl := "CREATE TABLE ow (id INT, g INT, o INT, v BIGINT, f DOUBLE PRECISION, s TEXT)"
	execAll(t, sdb, ddl)
	execAll(t, pgc, ddl)
	r := rand.New(rand.NewPCG(33, 7))
	id := 0
	insert := func(rows int) {
		null := func(s string) string {
			if r.IntN(7) == 0 {
				return "NULL"
			}
			return s
		}
		var vals []string
		for range rows {
			id++
			vals = append(vals, fmt.Sprintf("(%d, %s, %s, %s, %s, %s)", id, null(fmt.Sprint(r.IntN(6))), null(fmt.Sprint(r.IntN(9))),
				null(fmt.Sprint(r.IntN(200)-50)), null(fmt.Sprint(float64(r.IntN(40))/4)), null(fmt.Sprintf("'s%d'", r.IntN(30)))))
		}
		stmt := "INSERT INTO ow VALUES " + strings.Join(vals, ", ")
		execAll(t, sdb, stmt)
		execAll(t, pgc, stmt)
	}
	check := func(when string) {
		t.Helper()
		for _, q := range owQueries {
			want := rowSet(t, pgc, q)
			if got := rowSet(t, sdb, q); got != want {
				t.Errorf("%s: differs from PostgreSQL\n  query: %s\n  streamdb:   %s\n  PostgreSQL: %s", when, q, got, want)
			}
		}
	}
	check("empty table")
	insert(1)
	check("one row")
	insert(40)
	check("41 rows")
	insert(300)
	check("341 rows")

	// EXPLAIN shows the functions with their offsets and frames.
	plan := rowSet(t, sdb, "EXPLAIN SELECT lag(v, 2, 0) OVER (ORDER BY id), nth_value(v, 2) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ow")
	for _, w := range []string{"lag(ow.v, 2, 0)", "nth_value(ow.v, 2) ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"} {
		if !strings.Contains(plan, w) {
			t.Errorf("EXPLAIN does not show %q:\n%s", w, plan)
		}
	}

	// Errors: PostgreSQL's SQLSTATE where PostgreSQL refuses too ("" takes
	// PostgreSQL's), 0A000 for what streamdb does not support yet.
	for _, e := range []struct{ sql, code string }{
		{"SELECT nth_value(v, 0) OVER (ORDER BY id) FROM ow", ""},
		{"SELECT lag(v, 1, 'x') OVER (ORDER BY id) FROM ow", ""},
		{"SELECT lag(v, 1.0) OVER (ORDER BY id) FROM ow", ""},
		{"SELECT nth_value(v, 2.5) OVER (ORDER BY id) FROM ow", ""},
		{"SELECT lag(v, 1, s) OVER (ORDER BY id) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM ow", ""},
		{"SELECT id FROM ow WHERE lag(v) OVER (ORDER BY id) > 0", ""},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 1 PRECEDING) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY o, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY s RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY o RANGE BETWEEN 1.5 PRECEDING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY o GROUPS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY o GROUPS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM ow", ""},
		// A numeric ROWS or GROUPS offset is cast to bigint: negative after
		// rounding (22013), past bigint (22003).
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN 1.5 PRECEDING AND 0.4 FOLLOWING) FROM ow", "-"},
		{"SELECT first_value(v) OVER (ORDER BY id ROWS BETWEEN -0.6 PRECEDING AND CURRENT ROW) FROM ow", ""},
		{"SELECT first_value(v) OVER (ORDER BY o GROUPS BETWEEN 1e30 PRECEDING AND CURRENT ROW) FROM ow", ""},
		// PostgreSQL takes any integer expression as the offset; streamdb
		// only an unsigned literal.
		{"SELECT lag(v, o) OVER (ORDER BY id) FROM ow", "0A000"},
		{"SELECT lag(v, -1) OVER (ORDER BY id) FROM ow", "0A000"},
		{"SELECT lead(v, NULL) OVER (ORDER BY id) FROM ow", "0A000"},
		{"SELECT nth_value(v, 1 + 1) OVER (ORDER BY id) FROM ow", "0A000"},
		{"SELECT lag(v) IGNORE NULLS OVER (ORDER BY id) FROM ow", "0A000"},
	} {
		want := e.code
		if want == "-" { // PostgreSQL and streamdb accept it
			want = ""
			if _, err := pgc.Exec(context.Background(), e.sql); err != nil {
				t.Fatalf("PostgreSQL refuses %s: %v", e.sql, err)
			}
			if _, err := sdb.Exec(context.Background(), e.sql); err != nil {
				t.Errorf("%s: %v, PostgreSQL accepts it", e.sql, err)
			}
			continue
		}
		if want == "" {
			_, err := pgc.Exec(context.Background(), e.sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("PostgreSQL accepts %s: %v", e.sql, err)
			}
			want = pe.Code
		}
		_, err := sdb.Exec(context.Background(), e.sql)
		var se *pgconn.PgError
		if !errors.As(err, &se) || se.Code != want {
			t.Errorf("%s: %v, want SQLSTATE %s", e.sql, err, want)
		}
	}
	execAll(t, sdb, "SELECT 1") // the server is still up
}
