package sqllogic

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// psqlSize is a pg_size_pretty value in psql's unaligned output: sizes
// vary from run to run, the goldens hold SIZE.
var psqlSize = regexp.MustCompile(`\|-?[0-9]+ (bytes|kB|MB|GB|TB|PB)\|`)

// TestPsqlCatalogSizes runs psql 15's \dt+ and \dm+ (which call
// pg_size_pretty(pg_table_size(c.oid))) and compares them, unaligned and
// with the sizes normalized, with testdata/psql/<name>.out.
func TestPsqlCatalogSizes(t *testing.T) {
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
	setup := catalogSchema + ";\nINSERT INTO words VALUES ('a', 1, 1.5, 1, '2026-01-01 00:00:00'), ('b', 2, 2.5, 2, '2026-01-01 00:00:01');\n" +
		"CREATE VIEW long_words AS SELECT word, n FROM words WHERE n > 1;\n"
	if res := p.run(t, setup, "-v", "ON_ERROR_STOP=1", "-q"); res.code != 0 {
		t.Fatalf("schema: exit %d: %s", res.code, res.stderr)
	}
	for _, c := range []struct{ name, cmd string }{
		{"dtplus", `\dt+`},
		{"dmplus", `\dm+`},
		{"dvplus", `\dv+`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := p.run(t, "", "-A", "-c", c.cmd)
			if !psqlSize.MatchString(res.stdout) {
				t.Errorf("psql -c %q: no size in\n%s", c.cmd, res.stdout)
			}
			got := psqlSize.ReplaceAllString(res.stdout, "|SIZE|")
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

// TestPgSizeFunctions checks the size functions over pgx: a stream's log
// and a view's rows and state are counted (once Pebble has them on disk:
// a restart flushes what the WAL replays), unknown relations and forks are
// refused, and pg_size_pretty formats as PostgreSQL.
func TestPgSizeFunctions(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	exec := func(q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE words (word VARCHAR(20), n BIGINT)`)
	exec(`CREATE MATERIALIZED VIEW word_counts AS SELECT word, count(*) AS c FROM words GROUP BY word`)
	exec(`CREATE VIEW plain AS SELECT word FROM words`)
	exec(`INSERT INTO words SELECT 'w' || (g % 5000)::text, g FROM generate_series(1, 50000) g`)
	poll(t, time.Minute, "the view to count every row", func() bool {
		var n *int64
		if err := c.QueryRow(ctx, `SELECT sum(c) FROM word_counts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n != nil && *n == 50000
	})
	exec(`CHECKPOINT`)
	srv.Restart(t)
	c = srv.Conn(t)

	size := func(q string) *int64 {
		t.Helper()
		var v *int64
		if err := c.QueryRow(ctx, q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}
	for _, rel := range []string{"words", "word_counts"} {
		// Background compactions move the estimate: poll until the
		// readings of one moment agree.
		var table, byOID, byReg, main, total *int64
		poll(t, time.Minute, rel+"'s sizes to agree", func() bool {
			table = size(`SELECT pg_table_size('` + rel + `')`)
			byOID = size(`SELECT pg_catalog.pg_table_size(c.oid) FROM pg_class c WHERE relname = '` + rel + `'`)
			byReg = size(`SELECT pg_table_size('` + rel + `'::regclass)`)
			main = size(`SELECT pg_relation_size('` + rel + `', 'main')`)
			total = size(`SELECT pg_total_relation_size('` + rel + `')`)
			return *byOID == *table && *byReg == *table && *total == *table && *main <= *table
		})
		t.Logf("%s: table %d, relation %d, total %d bytes", rel, *table, *main, *total)
		if *table <= 0 || *main <= 0 {
			t.Errorf("%s: pg_table_size %d, pg_relation_size %d: want the bytes of its rows", rel, *table, *main)
		}
		if fsm := size(`SELECT pg_relation_size('` + rel + `', 'fsm')`); *fsm != 0 {
			t.Errorf("%s: fsm fork %d bytes, want 0", rel, *fsm)
		}
	}
	if v := size(`SELECT pg_table_size('plain')`); *v != 0 {
		t.Errorf("plain view: %d bytes, want 0", *v)
	}
	if v := size(`SELECT pg_table_size(0)`); v != nil {
		t.Errorf("pg_table_size(0) = %d, want NULL", *v)
	}
	var pretty []string
	rows, err := c.Query(ctx, `SELECT pg_size_pretty(v) FROM (VALUES (0::bigint), (10239), (10240), (20971520), (-1073741824), (NULL)) t(v)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s *string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s == nil {
			pretty = append(pretty, "NULL")
		} else {
			pretty = append(pretty, *s)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := pretty, []string{"0 bytes", "10239 bytes", "10 kB", "20 MB", "-1024 MB", "NULL"}; !slices.Equal(got, want) {
		t.Errorf("pg_size_pretty: %q, want %q", got, want)
	}
	// pg_size_pretty(numeric), PostgreSQL 15's answers: bytes keep their
	// fraction (and a NUMERIC(10,2)'s zeros), larger units are whole.
	var n1, n2, n3, n4, n5 string
	var n6 *string
	if err := c.QueryRow(ctx, `SELECT pg_size_pretty(12345.67::numeric), pg_size_pretty(123.45), pg_size_pretty(1.50::numeric(10,2)),
		pg_size_pretty(-20971519.9), pg_size_pretty(1000000000000000000000::numeric), pg_size_pretty(NULL::numeric)`).Scan(&n1, &n2, &n3, &n4, &n5, &n6); err != nil {
		t.Fatal(err)
	}
	if got, want := []string{n1, n2, n3, n4, n5}, []string{"12 kB", "123.45 bytes", "1.50 bytes", "-20 MB", "888178 PB"}; !slices.Equal(got, want) || n6 != nil {
		t.Errorf("pg_size_pretty(numeric): %q %v, want %q and NULL", got, n6, want)
	}
	var s string
	if err := c.QueryRow(ctx, `SELECT pg_size_pretty(pg_table_size('word_counts'))`).Scan(&s); err != nil || !regexp.MustCompile(`^[0-9]+ (bytes|kB|MB)$`).MatchString(s) {
		t.Errorf("pg_size_pretty(pg_table_size('word_counts')) = %q, %v", s, err)
	}
	for q, want := range map[string]string{
		`SELECT pg_table_size('nope')`:                                                "42P01",
		`SELECT pg_table_size('bogus_schema.words')`:                                  "3F000",
		`SELECT pg_relation_size('words', 'bogus')`:                                   "22023",
		`SELECT pg_size_pretty('abc'::text)`:                                          "42883",
		`SELECT pg_size_pretty(1.5::float8)`:                                          "42883",
		`SELECT pg_table_size(word) FROM words`:                                       "42883",
		`CREATE MATERIALIZED VIEW s AS SELECT pg_table_size('words') AS b FROM words`: "0A000",
	} {
		if got := sqlState(t, c, q); got != want {
			t.Errorf("%s: SQLSTATE %q, want %q", q, got, want)
		}
	}
	// The server still answers.
	if v := size(`SELECT pg_indexes_size('words')`); *v != 0 {
		t.Errorf("pg_indexes_size = %d, want 0", *v)
	}
}

// TestPgViewPrimaryKey: a grouping view's group keys are its primary key
// in pg_index (indisprimary, indkey) and pg_constraint (contype 'p'), as
// the primary-key queries of drivers join them; a view without a key has
// none.
func TestPgViewPrimaryKey(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	for _, q := range []string{
		`CREATE TABLE words (word VARCHAR(20), n BIGINT)`,
		`CREATE MATERIALIZED VIEW word_counts AS SELECT word, count(*) AS c FROM words GROUP BY word`,
		`CREATE MATERIALIZED VIEW by_two AS SELECT count(*) AS c, word, n FROM words GROUP BY n, word`,
		`CREATE MATERIALIZED VIEW big AS SELECT word, n FROM words WHERE n > 1`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	text := func(q string) string {
		t.Helper()
		rows, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for rows.Next() {
			var a, b, d string
			if err := rows.Scan(&a, &b, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, a+" "+b+" "+d)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return fmt.Sprint(out)
	}
	// pgjdbc's getPrimaryKeys joins, without its _pg_expandarray.
	got := text(`SELECT ct.relname, a.attname, ci.relname FROM pg_catalog.pg_class ct
		JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)
		JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)
		JOIN pg_catalog.pg_index i ON (a.attrelid = i.indrelid)
		JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid)
		WHERE i.indisprimary AND a.attnum = ANY(i.indkey) AND n.nspname = 'public'
		ORDER BY ct.relname, a.attname`)
	if want := "[by_two n by_two_pkey by_two word by_two_pkey word_counts word word_counts_pkey]"; got != want {
		t.Errorf("primary key columns: %s, want %s", got, want)
	}
	got = text(`SELECT c.conname, c.contype::text, c.conkey::text FROM pg_catalog.pg_constraint c
		JOIN pg_catalog.pg_class r ON r.oid = c.conrelid ORDER BY c.conname`)
	if want := "[by_two_pkey p {3,2} word_counts_pkey p {1}]"; got != want {
		t.Errorf("pg_constraint: %s, want %s", got, want)
	}
	got = text(`SELECT relname, relkind::text, relhasindex::text FROM pg_class WHERE relname LIKE '%_pkey' OR relname = 'big' ORDER BY relname`)
	if want := "[big m false by_two_pkey i false word_counts_pkey i false]"; got != want {
		t.Errorf("pg_class: %s, want %s", got, want)
	}
	// SQLAlchemy's get_pk_constraint: unnest and generate_subscripts in
	// a select list, in lockstep; the key columns in key order.
	got = text(`SELECT a.attname, k.ord::text, k.attnum::text FROM pg_attribute a JOIN (
			SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord
			FROM pg_index ix WHERE ix.indrelid = 'by_two'::regclass AND ix.indisprimary) k ON a.attnum = k.attnum
		WHERE a.attrelid = 'by_two'::regclass ORDER BY k.ord`)
	if want := "[n 1 3 word 2 2]"; got != want {
		t.Errorf("by_two's key through unnest/generate_subscripts: %s, want %s", got, want)
	}
	// Other columns repeat; the shorter function is padded with NULL.
	got = text(`SELECT a, b, coalesce(s::text, 'null') FROM
		(SELECT 'x' AS a, unnest(ARRAY['a', 'b', 'c']) AS b, generate_subscripts(ARRAY['p', 'q'], 1) AS s) t`)
	if want := "[x a 1 x b 2 x c null]"; got != want {
		t.Errorf("lockstep: %s, want %s", got, want)
	}
	for q, want := range map[string]string{
		`SELECT unnest(1)`:                       "42883",
		`SELECT count(*), unnest(ARRAY['a'])`:    "0A000",
		`SELECT generate_subscripts(ARRAY['a'])`: "42883",
	} {
		if got := sqlState(t, c, q); got != want {
			t.Errorf("%s: SQLSTATE %q, want %q", q, got, want)
		}
	}
	// A view's select list may hold one unnest (the 2026-12-07 lateral
	// unnest decision): it holds what the batch query gives.
	if got := sqlState(t, c, `INSERT INTO words VALUES ('x', 1), ('y', 2)`); got != "" {
		t.Fatalf("INSERT: SQLSTATE %q", got)
	}
	if got := sqlState(t, c, `CREATE MATERIALIZED VIEW u AS SELECT unnest(ARRAY[word]) FROM words`); got != "" {
		t.Fatalf("CREATE MATERIALIZED VIEW with unnest in its select list: SQLSTATE %q", got)
	}
	var nv, nb int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM u`).Scan(&nv); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT count(*) FROM (SELECT unnest(ARRAY[word]) FROM words) s`).Scan(&nb); err != nil {
		t.Fatal(err)
	}
	if nv != nb || nv == 0 {
		t.Errorf("view of unnest: %d rows, batch query %d", nv, nb)
	}
}

// TestPgViewPrimaryKeyRecords: pgjdbc's getPrimaryKeys query over pgx, and
// records: information_schema._pg_expandarray's (x, n) in a select list,
// through a subquery, field selection (expr).field, and a record value
// sent in binary (pgx asks for record_send) and in text.
func TestPgViewPrimaryKeyRecords(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	for _, q := range []string{
		`CREATE TABLE words (word VARCHAR(20), n BIGINT)`,
		`CREATE MATERIALIZED VIEW by_two AS SELECT count(*) AS c, word, n FROM words GROUP BY n, word`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rowsOf := func(q string) string {
		t.Helper()
		rows, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			vs, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.TrimSpace(fmt.Sprintln(vs...)))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return strings.Join(out, "; ")
	}
	// pgjdbc 42.5's getPrimaryKeys(null, "public", "by_two"), verbatim.
	got := rowsOf(`SELECT        result.TABLE_CAT,        result.TABLE_SCHEM,        result.TABLE_NAME,        result.COLUMN_NAME,        result.KEY_SEQ,        result.PK_NAME FROM      (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid) WHERE true  AND n.nspname = E'public' AND ct.relname = E'by_two' AND i.indisprimary  ) result where  result.A_ATTNUM = (result.KEYS).x  ORDER BY result.table_name, result.pk_name, result.key_seq`)
	if want := "<nil> public by_two n 1 by_two_pkey; <nil> public by_two word 2 by_two_pkey"; got != want {
		t.Errorf("getPrimaryKeys: %s, want %s", got, want)
	}
	// A record in binary (pgx decodes record_send into its fields) and as
	// text; fields of a text[] element and of a NULL element.
	got = rowsOf(`SELECT information_schema._pg_expandarray(indkey) AS k FROM pg_index WHERE indrelid = 'by_two'::regclass`)
	if want := "[3 1]; [2 2]"; got != want {
		t.Errorf("records in binary: %s, want %s", got, want)
	}
	got = rowsOf(`SELECT (e).x, ((e)).n + 1 AS m, e.q FROM (SELECT information_schema._pg_expandarray(ARRAY['a', NULL, 'c d']) AS e, 'q' AS q) e`)
	if want := "a 2 q; <nil> 3 q; c d 4 q"; got != want {
		t.Errorf("fields of text elements: %s, want %s", got, want)
	}
	// The key index as pg_get_indexdef and pg_get_constraintdef describe
	// it (PostgreSQL 15's text for a primary key on (n, word)); the view
	// has an index (relhasindex), its stream none.
	got = rowsOf(`SELECT pg_get_indexdef('by_two_pkey'::regclass), pg_get_indexdef('by_two_pkey'::regclass, 0, true),
		pg_get_indexdef(i.indexrelid, 2, false), pg_get_indexdef(i.indexrelid, 3, true), pg_get_indexdef(1), pg_get_indexdef(1, 1, true),
		pg_get_constraintdef(c.oid), pg_get_constraintdef(c.oid, true), pg_get_constraintdef(1)
		FROM pg_index i JOIN pg_constraint c ON c.conindid = i.indexrelid`)
	if want := "CREATE UNIQUE INDEX by_two_pkey ON public.by_two USING btree (n, word) " +
		"CREATE UNIQUE INDEX by_two_pkey ON public.by_two USING btree (n, word) word  <nil> <nil> " +
		"PRIMARY KEY (n, word) PRIMARY KEY (n, word) <nil>"; got != want {
		t.Errorf("index definition: %s, want %s", got, want)
	}
	got = rowsOf(`SELECT relname, relhasindex, EXISTS (SELECT 1 FROM pg_index WHERE indrelid = c.oid),
		NOT EXISTS (SELECT indexrelid FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)
		FROM pg_class c WHERE relname IN ('by_two', 'words') ORDER BY 1`)
	if want := "by_two true true false; words false false true"; got != want {
		t.Errorf("relhasindex and EXISTS in a select list: %s, want %s", got, want)
	}
	// Records order field by field, a NULL field last (PostgreSQL's btree
	// record comparison).
	got = rowsOf(`SELECT min(k), max(k), count(DISTINCT k) FROM (SELECT information_schema._pg_expandarray(ARRAY['b', NULL, 'a']) AS k
		FROM (VALUES (1), (2)) v) s`)
	if want := "[a 3] [<nil> 2] 3"; got != want {
		t.Errorf("min, max, count(DISTINCT) of records: %s, want %s", got, want)
	}
	var out string
	if err := c.QueryRow(ctx, `SELECT information_schema._pg_expandarray(ARRAY['a b', NULL])`, pgx.QueryExecModeSimpleProtocol).Scan(&out); err != nil || out != `("a b",1)` {
		t.Errorf("a record in text: %q, %v; want (\"a b\",1)", out, err)
	}
	for q, want := range map[string]string{
		`SELECT (indkey).x FROM pg_index`:                                                         "42809",
		`SELECT pg_get_indexdef(indexrelid, 1) FROM pg_index`:                                     "42883",
		`SELECT pg_get_indexdef(indexrelid, 1, 'x') FROM pg_index`:                                "22P02",
		`SELECT (information_schema._pg_expandarray(indkey)).y FROM pg_index`:                     "42703",
		`SELECT _pg_expandarray(indkey) FROM pg_index`:                                            "42883",
		`SELECT 1 FROM pg_index WHERE (information_schema._pg_expandarray(indkey)).x = 1`:         "42883",
		`SELECT coalesce((information_schema._pg_expandarray(indkey)).x, 0) FROM pg_index`:        "0A000",
		`SELECT CASE WHEN true THEN information_schema._pg_expandarray(indkey) END FROM pg_index`: "0A000",
	} {
		if got := sqlState(t, c, q); got != want {
			t.Errorf("%s: SQLSTATE %q, want %q", q, got, want)
		}
	}
	// Records are DISTINCT and join keys since composite types (2026-12-07):
	// each (x, n) of the index keys once, and each joins itself.
	distinct := `SELECT count(*) FROM (SELECT DISTINCT information_schema._pg_expandarray(indkey) AS k FROM pg_index) d`
	pairs := `SELECT count(*) FROM (SELECT information_schema._pg_expandarray(indkey) AS k FROM pg_index) a
			JOIN (SELECT DISTINCT information_schema._pg_expandarray(indkey) AS k FROM pg_index) b ON a.k = b.k`
	all := `SELECT count(*) FROM (SELECT information_schema._pg_expandarray(indkey) AS k FROM pg_index) a`
	var nd, np, na int
	for q, n := range map[string]*int{distinct: &nd, pairs: &np, all: &na} {
		if err := c.QueryRow(ctx, q).Scan(n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if nd == 0 || nd > na || np != na {
		t.Errorf("records as keys: %d distinct of %d, %d joined (want each of the %d to join its one distinct)", nd, na, np, na)
	}
}
