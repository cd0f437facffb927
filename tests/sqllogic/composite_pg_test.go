package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestCompositePG checks composite types (CREATE TYPE addr AS (...)) as
// columns against PostgreSQL 15 over generated values: the same rows go
// into both by INSERT (ROW(...), (a, b), casts and record literals) and
// COPY text and CSV (quoting, NULL fields, NULL records); batch queries
// (field access, casts, record_out, comparisons, ordering, IS NULL,
// GROUP BY, DISTINCT and joins on a record) and materialized views over the
// table (records as GROUP BY and DISTINCT keys and join keys, field
// access in WHERE and GROUP BY, records selected through) must print the
// same rows, before and after a kill -9 and restart; the binary format of
// anonymous records, the catalogs and the errors must match.
func TestCompositePG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t,
		"CREATE TYPE addr AS (street TEXT, zip INT)",
		"CREATE TYPE pt AS (x DOUBLE PRECISION, y NUMERIC(6,2), tag VARCHAR(8))",
		"CREATE TABLE cp (id INT, g INT, a addr, p pt)")
	rng := rand.New(rand.NewPCG(33, 7))

	views := []string{
		"SELECT a, count(*) AS n, min(id) AS lo FROM cp GROUP BY a",
		"SELECT DISTINCT a FROM cp",
		"SELECT (a).zip AS z, count(*) AS n FROM cp WHERE (a).street IS NOT NULL GROUP BY (a).zip",
		"SELECT x.id, y.id AS yid, x.a FROM cp x JOIN cp y ON x.a = y.a WHERE x.g = 1",
		"SELECT id, a, p, (p).tag AS tag FROM cp WHERE a IS NOT NULL AND (p).x > 0",
		"SELECT g, p, count(*) AS n FROM cp GROUP BY g, p",
	}
	batch := []string{
		"SELECT id, g, a, p FROM cp",
		"SELECT id, (a).street, (cp.a).zip, (p).x, (p).y, (p).tag FROM cp",
		"SELECT id, a::text, p::text, a IS NULL, a IS NOT NULL, NOT a IS NULL, p IS NULL FROM cp",
		"SELECT id, a FROM cp ORDER BY a, id",
		"SELECT id, p FROM cp ORDER BY p DESC, id",
		"SELECT a, count(*) FROM cp GROUP BY a",
		"SELECT DISTINCT p FROM cp",
		"SELECT count(*) FROM cp x JOIN cp y ON x.a = y.a",
		"SELECT count(*) FROM cp x, cp y WHERE x.a < y.a",
		"SELECT id, a = ROW('b', 2)::addr, a <> '(a,1)'::addr, a < ROW('b', NULL)::addr, a >= '(,)'::addr FROM cp",
		"SELECT id FROM cp WHERE a = ROW('b c'::text, 2)",
		"SELECT ROW(1, 'a b'), (2, NULL), ROW('x', 1)::addr, ('y', '3')::addr, '( q ,7)'::addr, '(\"a\\\\b\",)'::addr",
		"SELECT ROW(1, 2) = ROW(1, 2), ROW(1, NULL) = ROW(1, 2), ROW(1, 2) < ROW(1, 3), ROW(1, NULL) < ROW(2, 0), ROW('1', 2) = ROW(1, 2), ROW(NULL, NULL) IS NULL, ROW(1, NULL) IS NULL, ROW(1, NULL) IS NOT NULL",
		"SELECT (ROW('x', 5)::addr).zip, ((1, 2.5, 'x')::pt).y",
	}
	cases := d.viewAndBatchCases("c", "composite", views, batch)

	streets := []string{"a", "b", "b c", "", `q"t`, `s\l`, "(x)", "a,b", "é", "main st"}
	// gen returns rows of g, street (nil: NULL), zip ("": NULL), whole
	// record NULL flag, and pt fields.
	type row struct {
		g               int
		street          *string
		zip             string
		aNull, pNull    bool
		x, y, tag       string
		tagNull, xyNull bool
	}
	gen := func(n int) []row {
		out := make([]row, n)
		for i := range out {
			r := row{g: rng.IntN(3), aNull: rng.IntN(8) == 0, pNull: rng.IntN(8) == 0}
			if rng.IntN(6) != 0 {
				s := streets[rng.IntN(len(streets))]
				r.street = &s
			}
			if rng.IntN(6) != 0 {
				r.zip = fmt.Sprint(rng.IntN(4))
			}
			r.x = []string{"1.5", "0", "2", "-3.25"}[rng.IntN(4)] // not -0: a record key prints it 0 (the decision record)
			r.y = []string{"1.50", "2", "0.01", "-7.5"}[rng.IntN(4)]
			r.tag = []string{"t", "u v", "w"}[rng.IntN(3)]
			r.tagNull, r.xyNull = rng.IntN(5) == 0, rng.IntN(7) == 0
			out[i] = r
		}
		return out
	}
	// recText is the record's text form, as record_out writes it.
	field := func(s string) string {
		if s == "" || strings.ContainsAny(s, "\"\\(), ") {
			return `"` + strings.NewReplacer(`"`, `""`, `\`, `\\`).Replace(s) + `"`
		}
		return s
	}
	aText := func(r row) string {
		s := ""
		if r.street != nil {
			s = field(*r.street)
		}
		return "(" + s + "," + r.zip + ")"
	}
	pText := func(r row) string {
		x, y, tag := r.x, r.y, field(r.tag)
		if r.xyNull {
			x, y = "", ""
		}
		if r.tagNull {
			tag = ""
		}
		return "(" + x + "," + y + "," + tag + ")"
	}
	nextID := 0
	ingest := func(round int, rows []row) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var b strings.Builder
		switch round % 3 {
		case 0:
			var vals []string
			for _, r := range rows {
				nextID++
				a := "NULL"
				if !r.aNull {
					st := "NULL"
					if r.street != nil {
						st = "'" + strings.ReplaceAll(*r.street, "'", "''") + "'"
					}
					zip := r.zip
					if zip == "" {
						zip = "NULL"
					}
					switch rng.IntN(3) {
					case 0:
						a = fmt.Sprintf("ROW(%s, %s)", st, zip)
					case 1:
						a = fmt.Sprintf("(%s, %s)::addr", st, zip)
					default:
						a = "'" + strings.ReplaceAll(aText(r), "'", "''") + "'"
					}
				}
				p := "NULL"
				if !r.pNull {
					p = "'" + strings.ReplaceAll(pText(r), "'", "''") + "'::pt"
				}
				vals = append(vals, fmt.Sprintf("(%d, %d, %s, %s)", nextID, r.g, a, p))
			}
			ins := "INSERT INTO cp VALUES " + strings.Join(vals, ", ")
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
			return
		case 1:
			esc := strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`)
			for _, r := range rows {
				nextID++
				a, p := `\N`, `\N`
				if !r.aNull {
					a = esc.Replace(aText(r))
				}
				if !r.pNull {
					p = esc.Replace(pText(r))
				}
				fmt.Fprintf(&b, "%d\t%d\t%s\t%s\n", nextID, r.g, a, p)
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY cp FROM STDIN"); err != nil {
					t.Fatalf("COPY text: %v", err)
				}
			}
		case 2:
			q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
			for _, r := range rows {
				nextID++
				a, p := "", ""
				if !r.aNull {
					a = q(aText(r))
				}
				if !r.pNull {
					p = q(pText(r))
				}
				fmt.Fprintf(&b, "%d,%d,%s,%s\n", nextID, r.g, a, p)
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY cp FROM STDIN (FORMAT csv)"); err != nil {
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
		ingest(round, gen(25))
		checkAll(round)
	}
	// COPY TO in the text format prints record_out's text.
	copyOut := func(c *pgconn.PgConn) string {
		var buf strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.CopyTo(ctx, &buf, "COPY (SELECT id, a, p FROM cp ORDER BY id) TO STDOUT"); err != nil {
			t.Fatalf("COPY TO: %v", err)
		}
		return buf.String()
	}
	if got, want := copyOut(d.sdb.PgConn()), copyOut(d.pg.PgConn()); got != want {
		t.Errorf("COPY TO:\n%s\nPostgreSQL:\n%s", got, want)
	}
	binaryAndCatalogsMatchPG(t, d,
		"SELECT id, ROW(id, (a).street), ROW((p).x, (p).y, (p).tag, NULL::int) FROM cp ORDER BY id",
		"SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'cp'::regclass AND attnum > 0",
		"SELECT column_name, data_type, udt_schema, udt_name FROM information_schema.columns WHERE table_name = 'cp'",
		"SELECT typname, typtype, typcategory, typlen FROM pg_type WHERE typname IN ('addr', 'pt')",
		"SELECT format_type(oid, NULL) FROM pg_type WHERE typname IN ('addr', 'pt', 'record')")
	compositeErrors(t, d)

	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	ingest(0, gen(10))
	checkAll(4)
}

// compositeErrors checks that streamdb refuses what PostgreSQL refuses,
// with its SQLSTATE.
func compositeErrors(t *testing.T, d *diffRun) {
	t.Helper()
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return fmt.Sprint(err)
	}
	for _, q := range []string{
		"SELECT (a).nope FROM cp",
		"SELECT (id).x FROM cp",
		"SELECT 'x'::nosuchtype",
		"CREATE TABLE bad (x nosuchtype)",
		"SELECT ROW('x', 1, 2)::addr",
		"SELECT ROW('x', 1, 2, 3)::addr",
		"SELECT '(x,1,2)'::addr",
		"SELECT '(x)'::addr",
		"SELECT 'x,1'::addr",
		"SELECT '(x,1) y'::addr",
		"SELECT '(x,abc)'::addr",
		"SELECT ROW(1, 2) = ROW(1, 2, 3)",
		"DROP TYPE addr",
		"DROP TYPE nosuchtype",
		"CREATE TYPE addr AS (z INT)",
		"CREATE TYPE cp AS (z INT)",
		"CREATE TYPE dup AS (z INT, z TEXT)",
		"INSERT INTO cp (id, a) VALUES (1, 5)",
	} {
		_, perr := d.pg.Exec(context.Background(), q)
		_, serr := d.sdb.Exec(context.Background(), q)
		if perr == nil {
			t.Errorf("PostgreSQL accepts %s", q)
			continue
		}
		if code(serr) != code(perr) {
			t.Errorf("%s: streamdb %v (%s), PostgreSQL %v (%s)", q, serr, code(serr), perr, code(perr))
		}
	}
}

// TestStructColumns checks STRUCT<...> columns (RisingWave's and Flink's
// form, which PostgreSQL lacks): ROW(...) values, field access, COPY in
// and out, a view grouping by a struct, psql's \d name, DROP TYPE of a
// composite used by another, and DOUBLE as double precision.
func TestStructColumns(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	exec := func(q string) { t.Helper(); mustExec(t, c, "streamdb", q) }
	expect := func(q string, want ...string) {
		t.Helper()
		got, err := queryRows(c, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n%s\nwant:\n%s", q, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	exec("CREATE TABLE st (id INT, s STRUCT<name VARCHAR, n INT, inner STRUCT<d DOUBLE, ok BOOLEAN>>, f DOUBLE)")
	exec("INSERT INTO st VALUES (1, ROW('a b', 1, ROW(1.5, true)), 2.5), (2, NULL, NULL), (3, ROW(NULL, 2, NULL), CAST(3 AS DOUBLE))")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("4\t(x,4,\"(2,f)\")\t1\n"), "COPY st FROM STDIN"); err != nil {
		t.Fatalf("COPY: %v", err)
	}
	exec("CREATE MATERIALIZED VIEW sv AS SELECT (s).inner AS i, count(*) AS c FROM st GROUP BY (s).inner")
	exec("CHECKPOINT")
	expect("SELECT id, s, (s).name, ((s).inner).d, f FROM st ORDER BY id",
		`'1' | '("a b",1,"(1.5,t)")' | 'a b' | '1.5' | '2.5'`,
		"'2' | NULL | NULL | NULL | NULL",
		"'3' | '(,2,)' | NULL | NULL | '3'",
		`'4' | '(x,4,"(2,f)")' | 'x' | '2' | '1'`)
	expect("SELECT i, c FROM sv ORDER BY i", "'(1.5,t)' | '1'", "'(2,f)' | '1'", "NULL | '2'")
	expect("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'st'::regclass AND attnum > 1 ORDER BY attnum",
		"'struct<name text, n integer, inner struct<d double precision, ok boolean>>'", "'double precision'")
	wantFailCode(t, c, "SELECT (s).nope FROM st", "42703")
	wantFailCode(t, c, "CREATE TABLE bad (s STRUCT<a INT, a INT>)", "42701")
	exec("CREATE TYPE inner_t AS (v INT)")
	exec("CREATE TYPE outer_t AS (i inner_t, w TEXT)")
	wantFailCode(t, c, "DROP TYPE inner_t", "2BP01")
	exec("DROP TYPE outer_t, inner_t")
	wantFailCode(t, c, "CREATE TYPE e AS ENUM ('a')", "0A000")
	exec("CREATE TYPE addr AS (street TEXT, zip INT)")
	wantFailCode(t, c, "DROP TYPE addr CASCADE", "0A000")
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	expect("SELECT ROW('x', 1)::addr, (s).n FROM st WHERE id = 1", "'(x,1)' | '1'")
	expect("SELECT i, c FROM sv ORDER BY i", "'(1.5,t)' | '1'", "'(2,f)' | '1'", "NULL | '2'")
}
