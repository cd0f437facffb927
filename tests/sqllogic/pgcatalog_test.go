package sqllogic

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// catalogSchema is the schema the catalog tests create: a stream with
// each kind of column type and a materialized view over it.
const catalogSchema = `CREATE TABLE words (word VARCHAR(20), n BIGINT, price NUMERIC(10,2), small INT, ts TIMESTAMP);
CREATE MATERIALIZED VIEW word_counts AS SELECT word, count(*) AS c FROM words GROUP BY word`

var psqlLastCheckpoint = regexp.MustCompile(`last_checkpoint=([0-9]+|none)`)

// TestPsqlCatalogCommands runs psql's catalog commands against a fresh
// server and compares their output with testdata/psql/<name>.out
// (-rewrite regenerates them). Outputs hold no oids or timings.
func TestPsqlCatalogCommands(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("psql is required in CI (install postgresql-client): %v", err)
		}
		t.Skip("psql is not installed")
	}
	srv := StartServer(t, "")
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p := &psqlTarget{host: host, port: port}
	setup := catalogSchema + ";\nCREATE VIEW long_words AS SELECT word, n FROM words WHERE n > 1;\nCREATE ROLE alice;\nCREATE ROLE bob LOGIN;\n" +
		// A source is a foreign table: \d and \dE list it, \dt does not.
		"CREATE SOURCE bids (auction BIGINT, price BIGINT) WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = '10');\n"
	if res := p.run(t, setup, "-v", "ON_ERROR_STOP=1", "-q"); res.code != 0 {
		t.Fatalf("schema: exit %d: %s", res.code, res.stderr)
	}
	for _, c := range []struct{ name, cmd string }{
		{"du", `\du (alice|bob|streamdb)`},
		// The column query of \d words and \d word_counts, as psql 15 sends it.
		{"d_columns_stream", psqlDescribeColumns("words")},
		{"d_columns_matview", psqlDescribeColumns("word_counts")},
		{"d", `\d`},
		{"dt", `\dt`},
		{"dm", `\dm`},
		{"dv", `\dv`},
		{"dE", `\dE`},
		// A materialized view's key is an index, as a primary key in PostgreSQL.
		{"di", `\di`},
		// \d of the key index (pg_get_indexdef(oid, column, pretty) and an
		// EXISTS in psql's select list); \d of its view shows it under
		// "Indexes:" as PostgreSQL 15 prints a primary key.
		{"d_index", `\d word_counts_pkey`},
		{"dplus_index", `\d+ word_counts_pkey`},
		{"d_view", `\d long_words`},
		// \d of a stream or a materialized view runs psql's publication
		// query (int2[], a set-returning function and an aggregate in a
		// correlated subquery); \d+ also unnest(tc.reloptions).
		{"d_stream", `\d words`},
		{"d_matview", `\d word_counts`},
		{"dplus_stream", `\d+ words`},
		{"dplus_matview", `\d+ word_counts`},
		{"dplus_view", `\d+ long_words`},
		// A source: its connector as the server, its WITH options.
		{"d_source", `\d bids`},
		{"dS_streamdb", `\dtS streamdb_*`},
		{"l", `\l`},
		{"dn", `\dn`},
		{"df", `\df`},
		{"dt_pattern", `\dt w*`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := p.run(t, "", "-c", c.cmd)
			// A checkpoint may complete at any time.
			got := psqlLastCheckpoint.ReplaceAllString(res.stdout, "last_checkpoint=N")
			if res.stderr != "" {
				got += "stderr:\n" + res.stderr
			}
			if res.code != 0 {
				t.Errorf("psql -c %q: exit %d, stderr %q", c.cmd, res.code, res.stderr)
			}
			file := filepath.Join("testdata", "psql", c.name+".out")
			if *rewrite {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if got != string(want) {
				t.Errorf("psql -c %q:\n%s\nwant (%s):\n%s", c.cmd, got, file, want)
			}
		})
	}
}

// TestPgCatalog checks pg_catalog, information_schema, schema-qualified
// names and the catalog functions over pgx.
func TestPgCatalog(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	for _, stmt := range strings.Split(catalogSchema, ";\n") {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	rows := func(q string, args ...any) [][]any {
		t.Helper()
		rs, err := c.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out [][]any
		for rs.Next() {
			v, err := rs.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	str := func(q string, args ...any) string {
		t.Helper()
		var b strings.Builder
		for i, r := range rows(q, args...) {
			if i > 0 {
				b.WriteString("; ")
			}
			for j, v := range r {
				if j > 0 {
					b.WriteString(" ")
				}
				b.WriteString(strings.TrimSpace(strings.ReplaceAll(fmtValue(v), "\n", " ")))
			}
		}
		return b.String()
	}
	check := func(q, want string) {
		t.Helper()
		if got := str(q); got != want {
			t.Errorf("%s:\n got %s\nwant %s", q, got, want)
		}
	}

	t.Run("schemas", func(t *testing.T) {
		check(`SELECT count(*) FROM public.words`, "0")
		check(`SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'words'`, "1")
		check(`SELECT nspname FROM pg_namespace ORDER BY nspname`, "information_schema; pg_catalog; public")
		queryErr(t, c, `SELECT * FROM bogus_schema.words`, "3F000", `schema "bogus_schema" does not exist`)
		queryErr(t, c, `SELECT * FROM public.nothing`, "42P01", `relation "public.nothing" does not exist`)
		queryErr(t, c, `SELECT * FROM public.pg_class`, "42P01", `relation "public.pg_class" does not exist`)
		queryErr(t, c, `SELECT bogus_schema.version()`, "3F000", `schema "bogus_schema" does not exist`)
		execErr(t, c, `INSERT INTO bogus_schema.words VALUES ('a', 1, 1, 1, NULL)`, "3F000", `schema "bogus_schema" does not exist`)
		execErr(t, c, `CREATE TABLE bogus_schema.t (a int)`, "3F000", `schema "bogus_schema" does not exist`)
		execErr(t, c, `DROP TABLE pg_catalog.pg_class`, "42501", "system schema")
		execErr(t, c, `INSERT INTO pg_catalog.pg_class (relname) VALUES ('x')`, "42809", "")
		if _, err := c.Exec(ctx, `CREATE TABLE public.qualified (a int)`); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `INSERT INTO public.qualified VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		check(`SELECT a FROM qualified`, "1")
		if _, err := c.Exec(ctx, `DROP TABLE public.qualified`); err != nil {
			t.Fatal(err)
		}
		check(`SELECT count(*) FROM pg_class WHERE relname = 'qualified'`, "0")
		check(`SELECT 1`, "1") // the server keeps serving
	})

	t.Run("relations", func(t *testing.T) {
		check(`SELECT n.nspname, c.relname, c.relkind, pg_catalog.pg_get_userbyid(c.relowner), c.relnatts
			FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'public' ORDER BY 2`,
			"public word_counts m streamdb 2; public word_counts_pkey i streamdb 1; public words r streamdb 5")
		check(`SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public'`, "words streamdb")
		check(`SELECT matviewname, definition FROM pg_matviews`,
			"word_counts SELECT word, count(*) AS c FROM words GROUP BY word;")
		check(`SELECT pg_get_viewdef(c.oid) FROM pg_class c WHERE relname = 'word_counts'`,
			"SELECT word, count(*) AS c FROM words GROUP BY word;")
		check(`SELECT relname FROM pg_class WHERE oid = 'words'::regclass`, "words")
		check(`SELECT 'word_counts'::regclass::oid = oid FROM pg_class WHERE relname = 'word_counts'`, "true")
	})

	t.Run("attributes match the wire's types", func(t *testing.T) {
		// The OIDs pgx is told for each column of SELECT * are the ones
		// pg_attribute lists.
		rs, err := c.Query(ctx, `SELECT * FROM words`)
		if err != nil {
			t.Fatal(err)
		}
		var wire []string
		for _, f := range rs.FieldDescriptions() {
			wire = append(wire, f.Name+":"+fmtValue(int64(f.DataTypeOID)))
		}
		rs.Close()
		var cat []string
		for _, r := range rows(`SELECT a.attname, a.atttypid FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			WHERE c.relname = 'words' ORDER BY a.attnum`) {
			cat = append(cat, fmtValue(r[0])+":"+fmtValue(r[1]))
		}
		if strings.Join(wire, " ") != strings.Join(cat, " ") {
			t.Errorf("wire %v, pg_attribute %v", wire, cat)
		}
		check(`SELECT a.attname, a.atttypmod, format_type(a.atttypid, a.atttypmod), t.typname
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type t ON t.oid = a.atttypid
			WHERE c.relname = 'words' ORDER BY a.attnum`,
			"word 24 character varying(20) varchar; n -1 bigint int8; price 655366 numeric(10,2) numeric; small -1 integer int4; ts -1 timestamp without time zone timestamp")
	})

	t.Run("information_schema", func(t *testing.T) {
		check(`SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
			"word_counts VIEW; words BASE TABLE")
		check(`SELECT column_name, data_type, character_maximum_length, numeric_precision, numeric_scale
			FROM information_schema.columns WHERE table_name = 'words' ORDER BY ordinal_position`,
			"word character varying 20 <nil> <nil>; n bigint <nil> 64 0; price numeric <nil> 10 2; small integer <nil> 32 0; ts timestamp without time zone <nil> <nil> <nil>")
		check(`SELECT schema_name FROM information_schema.schemata ORDER BY 1`, "information_schema; pg_catalog; public")
		check(`SELECT table_name FROM information_schema.views`, "word_counts")
		queryErr(t, c, `SELECT * FROM information_schema.nothing`, "42P01", `relation "information_schema.nothing" does not exist`)
	})

	t.Run("operators", func(t *testing.T) {
		check(`SELECT 'abc' ~ '^a', 'abc' !~ 'b', 'ABC' ~* '^abc$', 'ABC' !~* 'x', 'abc' ~ 'B'`, "true false true true false")
		check(`SELECT relname FROM pg_class WHERE relname OPERATOR(pg_catalog.~) '^(words)$' COLLATE pg_catalog.default`, "words")
		check(`SELECT count(*) FROM pg_class WHERE relname !~ '^pg_' AND relname !~ '^streamdb_' AND relnamespace <> 13000`, "3")
		check(`SELECT word FROM (VALUES ('Hello'), ('world'), (NULL)) v(word) WHERE word ~* 'WOR'`, "world")
		queryErr(t, c, `SELECT 'a' ~ '(?<=a)b'`, "2201B", "invalid regular expression")
		queryErr(t, c, `SELECT 'a' COLLATE "de_DE"`, "0A000", "collation")
	})

	t.Run("functions", func(t *testing.T) {
		var v string
		if err := c.QueryRow(ctx, `SELECT version()`).Scan(&v); err != nil || !strings.HasPrefix(v, "PostgreSQL 15") {
			t.Errorf("version() = %q, %v", v, err)
		}
		check(`SELECT current_database(), current_schema(), pg_catalog.pg_encoding_to_char(6)`, "streamdb public UTF8")
		check(`SELECT current_user, session_user, current_user()`, "streamdb streamdb streamdb")
		check(`SELECT rolname, rolsuper, rolcanlogin FROM pg_roles WHERE rolname = 'streamdb'`, "streamdb true true")
		check(`SELECT count(*) FROM pg_user WHERE usename = 'streamdb'`, "1")
		check(`SELECT datname, pg_get_userbyid(datdba) FROM pg_database`, "streamdb streamdb")
		check(`SELECT count(*) FROM pg_settings WHERE name = 'checkpoint.interval'`, "1")
		check(`SELECT format_type(1043, NULL), format_type(1043, -1), format_type(1700, 655366), format_type(1043, 99), format_type(99, -1) IS NULL`,
			"character varying character varying numeric(10,2) character varying true")
		check(`SELECT obj_description(oid, 'pg_class') IS NULL FROM pg_class WHERE relname = 'words'`, "true")
		check(`SELECT count(*) FROM pg_class WHERE pg_table_is_visible(oid) AND relname IN ('words', 'pg_class', 'tables')`, "2")
	})
}

// fmtValue prints a pgx value for comparisons.
func fmtValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "<nil>"
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// TestPgCatalogShapeDifferential checks each catalog table's columns
// against PostgreSQL 15's: every column streamdb has exists there under
// the same name, in the same order, with a type streamdb maps it to (oid,
// regproc and xid read as bigint; name, "char", pg_node_tree and
// information_schema's domains as text; int2vector as int2[], other arrays
// as text[]).
func TestPgCatalogShapeDifferential(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	ours, theirs := srv.Conn(t), pg.Conn(t)
	ctx := context.Background()
	mapped := map[uint32]uint32{
		26: 20, 24: 20, 28: 20, // oid, regproc, xid → int8
		19: 25, 18: 25, 194: 25, 1043: 25, // name, "char", pg_node_tree, varchar → text
		1034: 1009, 1028: 1009, 30: 1009, 1003: 1009, // aclitem[], oid[], oidvector, name[] → text[]
		22:   1005, // int2vector → int2[]
		1184: 1114, // timestamptz → timestamp
	}
	cols := func(c interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}, table string) map[string]uint32 {
		t.Helper()
		rs, err := c.Query(ctx, "SELECT * FROM "+table+" LIMIT 0")
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		defer rs.Close()
		out := map[string]uint32{}
		for _, f := range rs.FieldDescriptions() {
			out[f.Name] = f.DataTypeOID
		}
		return out
	}
	for _, table := range []string{"pg_namespace", "pg_class", "pg_attribute", "pg_type", "pg_database", "pg_roles",
		"pg_user", "pg_auth_members", "pg_am", "pg_proc", "pg_description", "pg_index", "pg_constraint",
		"pg_attrdef", "pg_settings", "pg_tables", "pg_views", "pg_matviews", "information_schema.tables",
		"information_schema.columns", "information_schema.schemata", "information_schema.views"} {
		q := "pg_catalog." + table
		if strings.HasPrefix(table, "information_schema.") {
			q = table
		}
		got, want := cols(ours, q), cols(theirs, q)
		for name, oid := range got {
			pgOID, ok := want[name]
			if !ok {
				t.Errorf("%s.%s: PostgreSQL has no such column", table, name)
				continue
			}
			if m, ok := mapped[pgOID]; ok {
				pgOID = m
			}
			if strings.HasPrefix(table, "information_schema.") && pgOID != 23 {
				pgOID = 25 // its domains: sql_identifier, character_data, yes_or_no
			}
			if oid != pgOID {
				t.Errorf("%s.%s: type oid %d, PostgreSQL's maps to %d", table, name, oid, pgOID)
			}
		}
	}
}

// TestPsqlTabCompletion types into psql through a pseudo-terminal (a
// Python helper: Go's standard library has no pty) and checks that tab
// completes a stream's name and lists its columns.
func TestPsqlTabCompletion(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("psql is required in CI (install postgresql-client): %v", err)
		}
		t.Skip("psql is not installed")
	}
	py := python3WithModules(t, "pty")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	for _, stmt := range strings.Split(catalogSchema, ";\n") {
		if _, err := c.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ input, want string }{
		{"SELECT * FROM word_c", "SELECT * FROM word_counts "}, // the view's name completed
		{"SELECT * FROM words WHERE ", "price"},                // the stream's columns listed
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, py, filepath.Join("testdata", "psql", "tabcomplete.py"), host, port, tc.input, tc.want).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("tab after %q: want %q in psql's terminal (%v):\n%s", tc.input, tc.want, err, out)
		}
	}
}

// psqlDescribeColumns is psql 15's column query of \d name, the relation's
// oid given by name.
func psqlDescribeColumns(name string) string {
	return `SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '` + name + `'::regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;`
}
