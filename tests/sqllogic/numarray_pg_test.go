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

// numVal is a random NUMERIC literal: negatives, 0 to 4 fractional digits
// (trailing zeros kept: the display scale is the point), magnitudes up to
// 9999.
func numVal(rng *rand.Rand) string {
	sc := rng.IntN(5)
	v := fmt.Sprintf("%d", rng.IntN(20000)-10000)
	if sc > 0 {
		frac := fmt.Sprintf("%0*d", sc, rng.IntN(pow10(sc)))
		if rng.IntN(3) == 0 {
			frac = frac[:sc-1] + "0" // a trailing zero
		}
		v += "." + frac
	}
	if strings.HasPrefix(v, "-0.") || v == "-0" {
		v = v[1:]
	}
	return v
}

// numArrayVal is a random numeric[] literal ('{...}' with NULL elements,
// sometimes empty), NULL one time in eight.
func numArrayVal(rng *rand.Rand) string {
	if rng.IntN(8) == 0 {
		return "NULL"
	}
	n := rng.IntN(5)
	var e []string
	for range n {
		if rng.IntN(7) == 0 {
			e = append(e, "NULL")
		} else {
			e = append(e, numVal(rng))
		}
	}
	return "'{" + strings.Join(e, ",") + "}'"
}

// TestNumericArrayPG: numeric[] and numeric(p,s)[] columns of a keyed table
// under INSERT, UPDATE, DELETE and COPY (text and CSV), compared with
// PostgreSQL 15 over random values of many scales (the display scale of
// each element is PostgreSQL's): batch queries (indexing, slicing, unnest,
// = ANY, ||, ARRAY[...], ARRAY(SELECT), array_agg, the array functions,
// grouping and ordering by an array, IN (SELECT numeric) in a FILTER) and
// materialized views (array_agg under retractions, unnest, ANY, indexing),
// the binary result format and the catalogs, across CHECKPOINT and a
// kill -9 and restart.
func TestNumericArrayPG(t *testing.T) {
	d, srv := startStrictDiff(t,
		"CREATE TABLE na (id int PRIMARY KEY, g int, n numeric, m numeric(10,2), a numeric[], b numeric(8,3)[])")
	views := []string{
		"SELECT g, array_agg(n) AS n, array_agg(m) AS m, count(*) FROM na GROUP BY g",
		"SELECT id, x FROM na, unnest(na.a) AS x",
		"SELECT id, a, b, a[2] AS a2, b[1] AS b1, a[2:3] AS s FROM na WHERE n = ANY(a) OR m = ANY(b) OR g = 1",
		"SELECT array_agg(n) AS n FROM na WHERE g IS NOT NULL",
		"SELECT g, array_agg(a[1]) AS f, array_agg(n + m) AS s FROM na GROUP BY g",
	}
	batch := []string{
		"SELECT id, a, b FROM na",
		"SELECT id, a[1], a[2:3], a[:2], a[3:], b[2], cardinality(a), array_length(b, 1), array_upper(a, 1) FROM na",
		"SELECT id, x FROM na, unnest(na.b) AS x",
		"SELECT id, unnest(a) FROM na",
		"SELECT id FROM na WHERE 1.5 = ANY(a) OR '-2' = ANY(b) OR 7 = ANY(a)",
		"SELECT id, n = ANY(a), m = ANY(b), g = ANY(a), n = ANY('{1.50,2}') FROM na",
		"SELECT id, ARRAY[n, m], ARRAY[m, 2.5, NULL], a || b, a || n, '{1.5,2.250}'::numeric[] || a FROM na",
		"SELECT id, array_to_string(a, ';'), b::text, a::text[], a::float8[], b::numeric[] FROM na",
		"SELECT ARRAY(SELECT n FROM na WHERE n IS NOT NULL ORDER BY id)",
		"SELECT ARRAY(SELECT m FROM na WHERE g = 1 ORDER BY id)",
		"SELECT g, array_agg(n ORDER BY id), array_agg(m ORDER BY n, id) FROM na GROUP BY g",
		"SELECT count(*) FILTER (WHERE n IN (SELECT m FROM na)), count(*) FILTER (WHERE m NOT IN (SELECT n FROM na WHERE n IS NOT NULL)) FROM na",
		"SELECT id, a FROM na ORDER BY a, id",
		"SELECT id, a < b, a = b, a = a, greatest(a, b) FROM na",
		"SELECT id FROM na WHERE a = '{1.50,2}'::numeric[] OR b = ARRAY[1.5]",
	}
	cases := d.viewAndBatchCases("nav", "numeric[]", views, batch)
	// Grouping by a numeric[] groups by its key form (1.50 = 1.5) and
	// prints it without trailing fractional zeros, where PostgreSQL prints
	// the group's first array (documented): compared with zeros trimmed.
	grouped := d.viewAndBatchCases("nag", "numeric[] key", nil, []string{
		"SELECT a, count(*), sum(n) FROM na GROUP BY a",
		"SELECT DISTINCT b FROM na",
	})
	rng := rand.New(rand.NewPCG(30, 17))
	nextID := 0
	row := func() [5]string {
		r := [5]string{"NULL", "NULL", "NULL", numArrayVal(rng), numArrayVal(rng)}
		if rng.IntN(6) > 0 {
			r[0] = fmt.Sprint(rng.IntN(4))
		}
		if rng.IntN(6) > 0 {
			r[1] = numVal(rng)
		}
		if rng.IntN(6) > 0 {
			r[2] = numVal(rng)
		}
		return r
	}
	both := func(q string) {
		d.mustExec(d.sdb, "streamdb", q)
		d.mustExec(d.pg, "PostgreSQL", q)
	}
	var live []int
	ingest := func(round int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var b strings.Builder
		unq := func(s string) string { return strings.Trim(s, "'") }
		switch round % 3 {
		case 0:
			var vals []string
			for range 20 {
				nextID++
				r := row()
				if rng.IntN(3) == 0 && r[3] != "NULL" {
					r[3] = "ARRAY[" + strings.Trim(unq(r[3]), "{}") + "]::numeric[]"
				}
				vals = append(vals, fmt.Sprintf("(%d, %s)", nextID, strings.Join(r[:], ", ")))
				live = append(live, nextID)
			}
			both("INSERT INTO na VALUES " + strings.Join(vals, ", "))
		case 1:
			for range 20 {
				nextID++
				r := row()
				for i := range r {
					if r[i] == "NULL" {
						r[i] = `\N`
					} else {
						r[i] = unq(r[i])
					}
				}
				fmt.Fprintf(&b, "%d\t%s\n", nextID, strings.Join(r[:], "\t"))
				live = append(live, nextID)
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY na FROM STDIN"); err != nil {
					t.Fatalf("COPY text: %v", err)
				}
			}
		case 2:
			for range 20 {
				nextID++
				r := row()
				for i := range r {
					switch {
					case r[i] == "NULL":
						r[i] = ""
					case i >= 3:
						r[i] = `"` + unq(r[i]) + `"`
					}
				}
				fmt.Fprintf(&b, "%d,%s\n", nextID, strings.Join(r[:], ","))
				live = append(live, nextID)
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY na FROM STDIN (FORMAT csv)"); err != nil {
					t.Fatalf("COPY csv: %v", err)
				}
			}
		}
		cols := []string{"g", "n", "m", "a", "b"}
		for range 6 {
			r := row()
			k := rng.IntN(len(cols))
			both(fmt.Sprintf("UPDATE na SET %s = %s WHERE id = %d", cols[k], r[k], live[rng.IntN(len(live))]))
		}
		both(fmt.Sprintf("UPDATE na SET a = a || n, b = b[2:] WHERE id = %d", live[rng.IntN(len(live))]))
		for range 4 {
			k := rng.IntN(len(live))
			both(fmt.Sprintf("DELETE FROM na WHERE id = %d", live[k]))
			live = append(live[:k], live[k+1:]...)
		}
	}
	checkAll := func(round int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, sortArrayElems)
		}
		for _, c := range grouped {
			d.checkNorm(c, round, trimArrayZeros)
		}
	}
	for round := 0; round < 3; round++ {
		ingest(round)
		checkAll(round)
	}
	binaryAndCatalogsMatchPG(t, d,
		"SELECT id, n, a, b, ARRAY[n, 1.50], a[1], '{}'::numeric[], '{NULL,-0.00,12345.678}'::numeric[] FROM na ORDER BY id",
		"SELECT attname, format_type(atttypid, atttypmod), atttypid, atttypmod FROM pg_attribute WHERE attrelid = 'na'::regclass AND attnum > 0",
		"SELECT column_name, data_type, udt_name FROM information_schema.columns WHERE table_name = 'na'",
		"SELECT oid, typname, typelem, typcategory FROM pg_type WHERE typname = '_numeric'",
		"SELECT typname, typarray FROM pg_type WHERE typname = 'numeric'")
	// Binary input: pgx sends parameters of numeric[] and COPY FROM rows
	// in the binary format (numeric_send's digits and dscale per element).
	for _, conn := range []*pgx.Conn{d.sdb, d.pg} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := conn.Exec(ctx, "INSERT INTO na (id, g, a, b) VALUES ($1, 1, $2, $3)", 5000,
			[]any{"1.50", nil, "-2.250", "7"}, []string{"3.1", "-0.001"})
		if err != nil {
			cancel()
			t.Fatalf("INSERT with binary numeric[] parameters: %v", err)
		}
		_, err = conn.CopyFrom(ctx, pgx.Identifier{"na"}, []string{"id", "g", "a", "b"}, pgx.CopyFromRows([][]any{
			{int32(5001), int32(2), []string{"0.10", "12345.6789"}, nil},
			{int32(5002), nil, []any{}, []any{"-1.5", nil}},
		}))
		cancel()
		if err != nil {
			t.Fatalf("COPY binary of numeric[]: %v", err)
		}
	}
	live = append(live, 5000, 5001, 5002)
	// Errors as PostgreSQL's: a malformed element, one too wide for numeric(8,3).
	for _, q := range []string{
		"INSERT INTO na VALUES (9000, 1, 1, 1, '{1.5,x}', NULL)",
		"INSERT INTO na VALUES (9001, 1, 1, 1, NULL, '{123456.5}')",
		"SELECT '{1,2'::numeric[]",
	} {
		if got, want := sqlState(t, d.sdb, q), sqlState(t, d.pg, q); got != want || want == "" {
			t.Errorf("%s: streamdb SQLSTATE %q, PostgreSQL %q", q, got, want)
		}
	}
	checkAll(3)
	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	checkAll(4)
	ingest(4)
	checkAll(5)
}

// trimArrayZeros drops trailing fractional zeros of the numbers in the
// arrays of a row ({1.50,2.0} → {1.5,2}).
func trimArrayZeros(row string) string {
	return arrayLiteral.ReplaceAllStringFunc(row, func(a string) string {
		e := strings.Split(a[1:len(a)-1], ",")
		for i, x := range e {
			if strings.Contains(x, ".") {
				e[i] = strings.TrimSuffix(strings.TrimRight(x, "0"), ".")
			}
		}
		return "{" + strings.Join(e, ",") + "}"
	})
}
