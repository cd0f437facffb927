package sqllogic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestArraysPG checks array columns (int4[], text[], int8[], float8[])
// against PostgreSQL 15 over generated values: the same rows go into both
// by INSERT (text literals and ARRAY[...]), COPY text and COPY CSV, then
// batch queries (subscripts, slices, cardinality, array_length, = ANY,
// comparisons and ordering, GROUP BY and DISTINCT on arrays, unnest in the
// select list, array_agg) and materialized views over the table (arrays
// as GROUP BY keys and under count, subscripts and slices of them) must
// print the same rows; the binary result format, the RowDescription and
// the catalogs' names of the types must match, as must rows inserted with
// pgx's binary array parameters. Last, a kill -9 and restart: the views
// keep their state and go on with new rows.
func TestArraysPG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a differential volume test of types and statements, run in the plain step")
	}
	d, srv := startStrictDiff(t, "CREATE TABLE ar (id INT, g INT, a INT[], b TEXT[], c BIGINT[], f DOUBLE PRECISION[])")
	rng := rand.New(rand.NewPCG(30, 12))

	views := []string{
		"SELECT a, count(*) AS n, min(id) AS lo, count(b) AS cb FROM ar GROUP BY a",
		"SELECT g, b, count(*) AS n FROM ar GROUP BY g, b",
		"SELECT g, count(a) AS ca, count(DISTINCT g) AS dg, sum(cardinality(a)) AS s FROM ar GROUP BY g",
		"SELECT id, a[1] AS a1, a[2:3] AS s, b[2] AS b2, c[:1] AS c1, cardinality(f) AS nf, array_length(b, 1) AS lb FROM ar WHERE 3 = ANY(a) OR 'x' = ANY(b)",
		"SELECT c, count(*) AS n FROM ar WHERE cardinality(c) < 3 GROUP BY c",
	}
	batch := []string{
		"SELECT id, g, a, b, c, f FROM ar",
		"SELECT id, a[1], a[3], a[0], a[-1], b[1], c[2], f[1], a[id % 3] FROM ar",
		"SELECT id, a[2:3], a[:2], a[2:], a[0:1], a[3:2], b[1:1], f[2:] FROM ar",
		"SELECT id, cardinality(a), cardinality(b), array_length(a, 1), array_length(c, 1), array_upper(f, 1), array_lower(b, 1) FROM ar",
		"SELECT id FROM ar WHERE 2 = ANY(a)",
		"SELECT id, 'x' = ANY(b), 7 = ANY(c), 1.5 = ANY(f), NULL::int = ANY(a) FROM ar",
		// Typed comparisons over the lists' values: -0 = 0 and NaN = NaN as
		// float8eq, an untyped literal read as the element type, an int4
		// with a bigint[]; ARRAY[...] of typed columns.
		"SELECT id, 0::float8 = ANY(f), 'NaN'::float8 = ANY(f), '03' = ANY(a), id::bigint = ANY(a), a[1] = ANY(c), ARRAY[id, g], ARRAY[f[1], 2.5] FROM ar",
		"SELECT id, a = '{1,2,3}', a <> ARRAY[3], a < '{2}', a >= ARRAY[1,2], b > '{a}', c <= '{10,NULL}' FROM ar",
		"SELECT id, a FROM ar ORDER BY a, id",
		"SELECT id, b FROM ar ORDER BY b DESC NULLS LAST, id",
		"SELECT id, c, f FROM ar ORDER BY c NULLS FIRST, f, id",
		"SELECT a, count(*) FROM ar GROUP BY a",
		"SELECT b, count(*), min(id) FROM ar GROUP BY b",
		"SELECT DISTINCT c FROM ar",
		"SELECT g, a, count(*) FROM ar GROUP BY g, a HAVING count(*) > 1",
		"SELECT count(*) FROM ar x, ar y WHERE x.a < y.a",
		"SELECT count(*) FROM ar x, ar y WHERE x.f = y.f",
		"SELECT id, unnest(a) FROM ar",
		"SELECT id, unnest(b) AS e FROM ar WHERE g = 1",
		"SELECT g, cardinality(array_agg(id)), cardinality(array_agg(b[1])) FROM ar GROUP BY g",
		"SELECT array_agg(x) FROM (SELECT 1 AS x) s",
		"SELECT ARRAY[1, 2, NULL], ARRAY['a', NULL, 'b c'], ARRAY[1.5::float8, 2], ARRAY[1, 2]::bigint[], '{}'::int[], ARRAY[true, false], '{t,f,NULL}'::boolean[]",
		"SELECT '{ 1 , 2 }'::int[], '{\"a\",\"NULL\",NULL,\"\"}'::text[], '{1e3,-0,NaN,Infinity}'::float8[], '{007}'::bigint[], (ARRAY[1,2])[2], (ARRAY[1,2,3])[2:3]",
		"SELECT id, a::text, b::text, c::text[], a::bigint[] FROM ar",
		"SELECT id, a || 9, 0 || a, a || a, b || 'z'::text FROM ar",
	}
	cases := d.viewAndBatchCases("a", "arrays", views, batch)

	ints := func(lo, hi int) string {
		switch rng.IntN(10) {
		case 0:
			return ""
		case 1:
			return "{}"
		}
		n := 1 + rng.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			if rng.IntN(8) == 0 {
				parts[i] = "NULL"
			} else {
				parts[i] = fmt.Sprint(lo + rng.IntN(hi-lo))
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	words := []string{"a", "b", "x", "b c", "", "NULL", `q"t`, `s\l`, "{}", "a,b", "é"}
	texts := func() string {
		switch rng.IntN(8) {
		case 0:
			return ""
		case 1:
			return "{}"
		}
		n := 1 + rng.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			if rng.IntN(10) == 0 {
				parts[i] = "NULL"
				continue
			}
			w := words[rng.IntN(len(words))]
			if w == "" || w == "NULL" || strings.ContainsAny(w, ` "\{},`) || rng.IntN(3) == 0 {
				w = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(w) + `"`
			}
			parts[i] = w
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	floats := []string{"1.5", "-0", "0", "NaN", "1e300", "-2.25", "Infinity", "3"}
	flts := func() string {
		if rng.IntN(6) == 0 {
			return ""
		}
		n := rng.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = floats[rng.IntN(len(floats))]
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	nextID := 0
	gen := func(n int) [][]string { // g, a, b, c, f as text input ("" for NULL)
		out := make([][]string, n)
		for i := range out {
			out[i] = []string{fmt.Sprint(rng.IntN(3)), ints(0, 4), texts(), ints(-5, 12), flts()}
		}
		return out
	}
	ingest := func(round int, rows [][]string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var b strings.Builder
		switch round % 3 {
		case 0:
			var vals []string
			for _, r := range rows {
				nextID++
				lit := func(s string) string {
					if s == "" {
						return "NULL"
					}
					return "'" + strings.ReplaceAll(s, "'", "''") + "'"
				}
				a := lit(r[1])
				if r[1] != "" && r[1] != "{}" && rng.IntN(2) == 0 {
					a = "ARRAY[" + strings.Trim(r[1], "{}") + "]::int[]"
				}
				vals = append(vals, fmt.Sprintf("(%d, %s, %s, %s, %s, %s)", nextID, r[0], a, lit(r[2]), lit(r[3]), lit(r[4])))
			}
			ins := "INSERT INTO ar VALUES " + strings.Join(vals, ", ")
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
			return
		case 1:
			for _, r := range rows {
				nextID++
				f := func(s string) string {
					if s == "" {
						return `\N`
					}
					return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`).Replace(s)
				}
				fmt.Fprintf(&b, "%d\t%s\t%s\t%s\t%s\t%s\n", nextID, r[0], f(r[1]), f(r[2]), f(r[3]), f(r[4]))
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY ar FROM STDIN"); err != nil {
					t.Fatalf("COPY text: %v", err)
				}
			}
		case 2:
			for _, r := range rows {
				nextID++
				f := func(s string) string {
					if s != "" && (rng.IntN(2) == 0 || strings.ContainsAny(s, ",\"")) {
						s = `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
					}
					return s
				}
				fmt.Fprintf(&b, "%d,%s,%s,%s,%s,%s\n", nextID, r[0], f(r[1]), f(r[2]), f(r[3]), f(r[4]))
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY ar FROM STDIN (FORMAT csv)"); err != nil {
					t.Fatalf("COPY csv: %v", err)
				}
			}
		}
	}
	checkAll := func(round int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	for round := 0; round < 3; round++ {
		ingest(round, gen(20))
		checkAll(round)
	}
	binaryAndCatalogsMatchPG(t, d,
		"SELECT id, a, b, c, f, a || 4, ARRAY[true, NULL], '{2020-01-02}'::date[] FROM ar ORDER BY id",
		"SELECT attname, format_type(atttypid, atttypmod), atttypid FROM pg_attribute WHERE attrelid = 'ar'::regclass AND attnum > 0",
		"SELECT column_name, data_type, udt_name FROM information_schema.columns WHERE table_name = 'ar'",
		"SELECT oid, typname, typelem, typcategory FROM pg_type WHERE typname IN ('_int4', '_text', '_int8', '_float8', '_bool')",
		"SELECT typname, typarray FROM pg_type WHERE typname IN ('int4', 'text', 'int8', 'float8', 'bool')")
	// pgx sends Go slices as binary arrays of the parameters' types.
	for i := 0; i < 4; i++ {
		a := []any{int32(i), nil, int32(-i)}
		b := []any{"p", nil, fmt.Sprintf("q %d", i)}
		c := []int64{int64(i) << 40, -1}
		f := []float64{0.5 * float64(i), -3}
		for _, conn := range []*pgx.Conn{d.sdb, d.pg} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := conn.Exec(ctx, "INSERT INTO ar VALUES ($1, $2, $3, $4, $5, $6)", 3000+i, 1, a, b, c, f)
			cancel()
			if err != nil {
				t.Fatalf("INSERT with binary array parameters: %v", err)
			}
		}
	}
	var got, want []*int32
	if err := d.sdb.QueryRow(context.Background(), "SELECT a FROM ar WHERE id = 3003").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if err := d.pg.QueryRow(context.Background(), "SELECT a FROM ar WHERE id = 3003").Scan(&want); err != nil {
		t.Fatal(err)
	}
	show := func(v []*int32) string {
		var s []string
		for _, p := range v {
			if p == nil {
				s = append(s, "NULL")
			} else {
				s = append(s, fmt.Sprint(*p))
			}
		}
		return strings.Join(s, ",")
	}
	if show(got) != show(want) || len(got) != 3 {
		t.Errorf("pgx scan of int4[]: %v, PostgreSQL %v", got, want)
	}
	checkAll(3)

	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	checkAll(4)
	ingest(4, gen(15))
	checkAll(5)
}
