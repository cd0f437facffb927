package sqllogic

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestNumericDScalePG checks the per-value display scale of unconstrained
// NUMERIC (docs/decisions/2026-12-07-numeric-per-value-scale.md) against
// PostgreSQL 15, as batch queries and as materialized views, over random
// values of random scales: values stored in an unconstrained column and
// read from jsonb keep the digits written; COALESCE and UNION ALL over
// NUMERIC(p,s) operands of different scales keep each value's scale; / and
// avg give select_div_scale's digits; + - * abs round trunc, sum, min and
// max over unconstrained values follow PostgreSQL's rules.
func TestNumericDScalePG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t, "CREATE TABLE nd (id INT, g INT, a NUMERIC(10,2), b NUMERIC(10,3), u NUMERIC, j JSONB)")
	views := []string{
		"SELECT id, COALESCE(a, 1.5) AS c, COALESCE(b, a, 2) AS e FROM nd",
		"SELECT id, a AS x FROM nd UNION ALL SELECT id, b FROM nd",
		"SELECT id, u, (j->'x')::numeric AS jx FROM nd",
		"SELECT id, u + a AS s, u * b AS m, u - 1 AS d, -u AS n, abs(u) AS ab FROM nd",
		// Quotients below 0.0001 need more than the 20 digits a quotient is
		// held at (docs/reference/sql.md): keep them out.
		"SELECT id, a / 3 AS q1, b / 7 AS q2, CASE WHEN abs(u) >= 0.001 THEN u / 3 END AS q3, CASE WHEN abs(a) >= abs(b) / 100 THEN a / NULLIF(b, 0) END AS q4 FROM nd",
		"SELECT g, avg(a) AS aa, avg(b) AS ab, avg(u) AS au, avg(id) AS ai FROM nd GROUP BY g",
		"SELECT g, sum(u) AS s, min(u) AS lo, max(u) AS hi, sum(p) AS sp FROM (SELECT g, u, a * (1 - b) AS p FROM nd) s GROUP BY g",
		"SELECT id, round(u, 1) AS r, trunc(u, 2) AS t, ceil(u) AS c, floor(u) AS f, round(u) AS r0 FROM nd",
	}
	batch := []string{
		"SELECT sum(a * (1 - b)) AS s, avg(a * b) AS v FROM nd",
		"SELECT g, (j->'x')::numeric / 4 AS q, CASE WHEN g = 0 THEN a ELSE b END AS c FROM nd",
		// A numeric group key shows its group's first value (views:
		// TestNumericDScaleViewsPG, with one spelling per value).
		"SELECT u, count(*) AS n, sum(a) AS s FROM nd GROUP BY u",
	}
	cases := d.viewAndBatchCases("nd", "numeric dscale", views, batch)
	rng := rand.New(rand.NewPCG(7, 33))
	num := func(scale, digits int) string { return randNumeric(rng, scale, digits, 3) }
	orNull := func(s string) string {
		if rng.IntN(8) == 0 {
			return "NULL"
		}
		return s
	}
	id := 0
	for round := 0; round < 4; round++ {
		if round == 3 {
			// kill -9: the views' rows and the aggregates' state keep
			// the display scales.
			srv.Kill9()
			srv.Restart(t)
			d.sdb = srv.Conn(t)
		}
		var rows []string
		for i := 0; i < 25; i++ {
			id++
			us := rng.IntN(7)
			js := rng.IntN(5)
			rows = append(rows, fmt.Sprintf("(%d, %d, %s, %s, %s, %s)", id, rng.IntN(3),
				orNull(num(2, 1+rng.IntN(7))), orNull(num(3, 1+rng.IntN(7))),
				orNull("'"+num(us, 1+rng.IntN(9))+"'"),
				orNull(fmt.Sprintf(`'{"x": %s}'`, num(js, 1+rng.IntN(8))))))
		}
		ins := "INSERT INTO nd VALUES " + strings.Join(rows, ", ")
		d.mustExec(d.sdb, "streamdb", ins)
		d.mustExec(d.pg, "PostgreSQL", ins)
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	// The same digits through COPY (text and binary) and the extended
	// protocol's binary format (numeric_send's dscale field).
	q := "SELECT id, u, COALESCE(a, 1.5) AS c, b / 7 AS q, (j->'x')::numeric AS jx FROM nd ORDER BY id"
	ctx := context.Background()
	for _, format := range []string{"", " (FORMAT binary)"} {
		var got, want bytes.Buffer
		if _, err := d.sdb.PgConn().CopyTo(ctx, &got, "COPY ("+q+") TO STDOUT"+format); err != nil {
			t.Fatalf("streamdb COPY%s: %v", format, err)
		}
		if _, err := d.pg.PgConn().CopyTo(ctx, &want, "COPY ("+q+") TO STDOUT"+format); err != nil {
			t.Fatalf("PostgreSQL COPY%s: %v", format, err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("COPY%s differs from PostgreSQL:\n got %q\nwant %q", format, got.Bytes(), want.Bytes())
		}
	}
	binRows := func(c *pgx.Conn) [][][]byte {
		res := c.PgConn().ExecParams(ctx, q, nil, nil, nil, []int16{1}).Read()
		if res.Err != nil {
			t.Fatalf("%s: %v", q, res.Err)
		}
		return res.Rows
	}
	if got, want := binRows(d.sdb), binRows(d.pg); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("binary results differ from PostgreSQL:\n got %v\nwant %v", got, want)
	}
}
