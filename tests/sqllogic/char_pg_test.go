package sqllogic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestCharPG checks CHARACTER(n) columns against PostgreSQL 15: the same
// rows (short values, trailing spaces, an over-long value whose excess is
// spaces) go into both by INSERT, INSERT ... SELECT, COPY text and COPY
// CSV; batch queries (=, <, GROUP BY, DISTINCT, a join, length, ||, casts
// to text and varchar, ORDER BY) and a materialized view grouping by a
// char column must print the same rows, blank-padded; the binary result
// format must match; an over-long value must fail with 22001 on both; and
// information_schema, format_type, pg_type and psql's \d must name the
// type alike, before and after a kill -9 and restart.
func TestCharPG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a differential volume test of types and statements, run in the plain step")
	}
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	both := []*pgx.Conn{pgc, sdb}
	ddl := []string{
		"CREATE TABLE ch (id INT, a CHAR(3), b CHARACTER(10), c CHAR, d BPCHAR(4), v VARCHAR(5))",
		"CREATE TABLE ch2 (k CHAR(5), w TEXT)",
	}
	for _, s := range ddl {
		for _, c := range both {
			mustExec(t, c, "", s)
		}
	}
	mustExec(t, sdb, "streamdb", "CREATE MATERIALIZED VIEW chv AS SELECT a, count(*) AS n, max(b) AS mb FROM ch GROUP BY a")
	stmts := []string{
		"INSERT INTO ch VALUES (1, 'ab', 'hello', 'x', 'p', 'ab')",
		"INSERT INTO ch VALUES (2, 'ab ', 'hello   ', 'x ', 'p  ', 'ab ')",
		"INSERT INTO ch VALUES (3, 'ab  ', 'hello worl  ', ' ', '', '')",
		"INSERT INTO ch VALUES (4, 'abc', ' lead', NULL, 'qrst', 'z')",
		"INSERT INTO ch VALUES (5, '', '', 'y', 'é', NULL), (6, NULL, 'é ü', 'z', 'p ', 'ab  ')",
		"INSERT INTO ch SELECT 7, w, w || '  ', 'w', w, w FROM (VALUES ('a b'), ('abc   ')) s(w)",
		"INSERT INTO ch2 VALUES ('ab', 'ab'), ('ab  ', 'ab '), ('abc', 'abc'), ('x', 'x  ')",
	}
	for _, s := range stmts {
		for _, c := range both {
			mustExec(t, c, "", s)
		}
	}
	for _, c := range both {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("8\tq  \tcopy \t\\N\tz\n"), "COPY ch (id, a, b, c, d) FROM STDIN"); err != nil {
			t.Fatalf("COPY: %v", err)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("9,\" r \",\"csv  \",,ab  \n"), "COPY ch (id, a, b, c, d) FROM STDIN (FORMAT csv)"); err != nil {
			t.Fatalf("COPY csv: %v", err)
		}
		cancel()
	}
	mustExec(t, sdb, "streamdb", "CHECKPOINT")

	queries := []string{
		"SELECT id, a, b, c, d, v FROM ch",
		"SELECT id FROM ch WHERE a = 'ab'",
		"SELECT id FROM ch WHERE a = 'ab   '",
		"SELECT id FROM ch WHERE b = 'hello'",
		"SELECT id, a < 'abc', a > 'ab', a = d, a <> 'ab ' FROM ch",
		"SELECT a, count(*) FROM ch GROUP BY a",
		"SELECT DISTINCT b FROM ch",
		"SELECT DISTINCT a, d FROM ch",
		"SELECT id, length(a), length(b), length(c), char_length(d) FROM ch",
		"SELECT id, a || '|', b || d, 'x' || a FROM ch",
		"SELECT id, a::text, b::text, CAST(d AS TEXT), a::varchar, b::varchar(3), v::char(2) FROM ch",
		"SELECT id, a FROM ch ORDER BY a, id",
		"SELECT id, b FROM ch ORDER BY b DESC, id",
		"SELECT ch.id, ch2.w FROM ch JOIN ch2 ON ch.a = ch2.k",
		"SELECT a, count(*) AS n, max(b) AS mb FROM ch GROUP BY a",
		"SELECT 'ab '::char(3), 'abcdef'::char(2), 'x'::character, ' '::char(2), 'a  '::char(3)::text, 'é'::char(3)",
		"SELECT id, upper(a), coalesce(a, a) FROM ch",
	}
	for _, q := range queries {
		sameRowsAsPG(t, sdb, pgc, q)
	}
	want, err := queryRows(pgc, "SELECT a, count(*) AS n, max(b) AS mb FROM ch GROUP BY a")
	if err != nil {
		t.Fatal(err)
	}
	got, err := queryRows(sdb, "SELECT * FROM chv")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffRows(got, want); d != "" {
		t.Errorf("view chv:\n%s", d)
	}

	// The binary result format: bpcharsend is the padded text.
	for _, q := range []string{"SELECT a, b, d FROM ch WHERE id = 2"} {
		var res [2][]string
		for i, c := range both {
			r := c.PgConn().ExecParams(context.Background(), q, nil, nil, nil, []int16{1}).Read()
			if r.Err != nil {
				t.Fatalf("%s: %v", q, r.Err)
			}
			for _, row := range r.Rows {
				for _, v := range row {
					res[i] = append(res[i], string(v))
				}
			}
			if i == 1 && (r.FieldDescriptions[0].DataTypeOID != 1042 || r.FieldDescriptions[0].TypeModifier != 7) {
				t.Errorf("RowDescription of a: oid %d typmod %d, want 1042 7", r.FieldDescriptions[0].DataTypeOID, r.FieldDescriptions[0].TypeModifier)
			}
		}
		if strings.Join(res[0], "|") != strings.Join(res[1], "|") {
			t.Errorf("binary %s: streamdb %q, PostgreSQL %q", q, res[1], res[0])
		}
	}

	// Over-long values fail alike.
	for _, s := range []string{
		"INSERT INTO ch (id, a) VALUES (10, 'abcd')",
		"INSERT INTO ch (id, b) SELECT 11, 'hello world!'",
		"INSERT INTO ch (id, c) VALUES (12, 'xy')",
		"CREATE TABLE bad (a CHAR(0))",
	} {
		var codes [2]string
		for i, c := range both {
			_, err := c.Exec(context.Background(), s)
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				codes[i] = pe.Code
			} else if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if codes[0] == "" || codes[0] != codes[1] {
			t.Errorf("%s: streamdb %q, PostgreSQL %q", s, codes[1], codes[0])
		}
	}
	var code string
	_, err = sdb.Exec(context.Background(), "CREATE TABLE bad (a BPCHAR)")
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code = pe.Code
	}
	if code != "0A000" {
		t.Errorf("bare bpchar: %v, want 0A000", err)
	}

	// Catalogs.
	sameRowsAsPG(t, sdb, pgc, "SELECT column_name, data_type, character_maximum_length, udt_name FROM information_schema.columns WHERE table_name = 'ch'")
	sameRowsAsPG(t, sdb, pgc, "SELECT format_type(1042, 7), format_type(1042, 14), format_type(1042, NULL)")
	sameRowsAsPG(t, sdb, pgc, "SELECT oid, typname, typlen, typcategory FROM pg_type WHERE typname = 'bpchar'")
	sameRowsAsPG(t, sdb, pgc, psqlDescribeColumns("ch"))
	sameRowsAsPG(t, sdb, pgc, "SELECT pg_typeof(a)::text, pg_typeof(a::text)::text FROM ch WHERE id = 1")

	// kill -9 and restart: the table keeps its type and rows, the view its
	// groups, and both go on with a new row.
	srv.Kill9()
	srv.Restart(t)
	sdb = srv.Conn(t)
	for _, c := range []*pgx.Conn{pgc, sdb} {
		mustExec(t, c, "", "INSERT INTO ch VALUES (13, 'ab   ', 'new', 'n', 'n', 'n')")
	}
	mustExec(t, sdb, "streamdb", "CHECKPOINT")
	sameRowsAsPG(t, sdb, pgc, "SELECT id, a, b, c, d, v FROM ch")
	sameRowsAsPG(t, sdb, pgc, psqlDescribeColumns("ch"))
	want, err = queryRows(pgc, "SELECT a, count(*) AS n, max(b) AS mb FROM ch GROUP BY a")
	if err != nil {
		t.Fatal(err)
	}
	if got, err = queryRows(sdb, "SELECT * FROM chv"); err != nil {
		t.Fatal(err)
	}
	if d := diffRows(got, want); d != "" {
		t.Errorf("view chv after restart:\n%s", d)
	}
}
