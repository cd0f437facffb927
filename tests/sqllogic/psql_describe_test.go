package sqllogic

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestPsqlDescribeCatalog checks over pgx what psql's \d name reads beyond
// the columns: x = ANY(array) with PostgreSQL's NULL rules, plain views as
// relkind 'v' in pg_class and pg_views, the empty pg_policy,
// pg_statistic_ext, pg_publication and pg_inherits, and the reloptions
// that carry a view's sources and a materialized view's job state.
func TestPsqlDescribeCatalog(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	for _, stmt := range []string{
		`CREATE TABLE words (word VARCHAR(20), n BIGINT)`,
		`CREATE MATERIALIZED VIEW word_counts AS SELECT word, count(*) AS c FROM words GROUP BY word`,
		`CREATE VIEW long_words AS SELECT word, n FROM words WHERE n > 1`,
	} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	check := func(q, want string) {
		t.Helper()
		rs, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var b strings.Builder
		for rs.Next() {
			vs, err := rs.Values()
			if err != nil {
				t.Fatal(err)
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			for i, v := range vs {
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(fmtValue(v))
			}
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := b.String(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", q, got, want)
		}
	}

	t.Run("any array", func(t *testing.T) {
		// regexp_match makes text[] values: {a,b}, and {a,NULL} where the
		// optional group does not match.
		check(`SELECT 'b' = ANY (regexp_match('ab', '(a)(b)')), 'c' = ANY (regexp_match('ab', '(a)(b)')),
			'c' = ANY (regexp_match('a', '(a)(x)?')), 'a' = ANY (regexp_match('a', '(a)(x)?')),
			NULL = ANY (regexp_match('a', '(a)')), 'a' = SOME (regexp_match('b', '(a)'))`,
			"true false <nil> true <nil> <nil>")
		// An integer compares with the elements' text, as an oid with the
		// catalog's oid[] columns.
		check(`SELECT 2 = ANY (regexp_match('12', '(1)(2)')), 3 = ANY (regexp_match('12', '(1)(2)'))`, "true false")
		check(`SELECT word FROM (VALUES ('a'), ('b'), ('c')) AS v(word) WHERE word = ANY (ARRAY(SELECT 'c' UNION ALL SELECT 'a')) ORDER BY word`, "a; c")
		// A driver's array parameter.
		rs, err := c.Query(ctx, `SELECT word FROM (VALUES ('a'), ('b'), ('c')) AS v(word) WHERE word = ANY ($1) ORDER BY word`, []string{"b", "c"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rs.Next() {
			var w string
			if err := rs.Scan(&w); err != nil {
				t.Fatal(err)
			}
			got = append(got, w)
		}
		if err := rs.Err(); err != nil || strings.Join(got, ",") != "b,c" {
			t.Errorf("word = ANY($1) with {b,c}: %v, %v", got, err)
		}
		// = ANY (subquery) is still the subquery form, which batch
		// queries do not have.
		queryErr(t, c, `SELECT 'a' = ANY (SELECT 'a')`, "0A000", "ANY, SOME and ALL comparisons with a subquery are not supported")
		queryErr(t, c, `SELECT 'a' = ANY (1)`, "42809", "op ANY/ALL (array) requires array on right side")
		// psql's policy query: an empty pg_policy, so no row.
		check(`SELECT pol.polname FROM pg_catalog.pg_policy pol WHERE 10 = any (pol.polroles)`, "")
	})

	t.Run("views", func(t *testing.T) {
		check(`SELECT relname, relkind FROM pg_class WHERE relnamespace = 2200 ORDER BY relname`,
			"long_words v; word_counts m; word_counts_pkey i; words r")
		check(`SELECT viewname, definition FROM pg_views`, "long_words  SELECT word, n FROM words WHERE n > 1;")
		check(`SELECT matviewname FROM pg_matviews`, "word_counts")
		check(`SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
			"long_words VIEW; word_counts VIEW; words BASE TABLE")
		check(`SELECT pg_get_viewdef('long_words'::regclass, true)`, " SELECT word, n FROM words WHERE n > 1;")
	})

	t.Run("reloptions", func(t *testing.T) {
		check(`SELECT relname, array_to_string(reloptions, ', ') FROM pg_class WHERE relname IN ('long_words', 'words') ORDER BY relname`,
			"long_words sources=words; words <nil>")
		// A checkpoint may complete at any time: its id or none.
		var opts string
		if err := c.QueryRow(ctx, `SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE relname = 'word_counts'`).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^job_state=RUNNING, last_checkpoint=(none|[0-9]+), sources=words$`).MatchString(opts) {
			t.Errorf("word_counts reloptions: %q", opts)
		}
	})

	t.Run("lateral functions", func(t *testing.T) {
		// A set-returning function in the FROM of a correlated subquery
		// reads the enclosing query's columns, as \d+ does with
		// ARRAY(SELECT 'toast.' || x FROM unnest(tc.reloptions) x).
		check(`SELECT relname, array_to_string(ARRAY(SELECT 'opt.' || x FROM unnest(c.reloptions) x), ',') FROM pg_class c
			WHERE relname IN ('long_words', 'words') ORDER BY 1`, "long_words opt.sources=words; words ")
		check(`SELECT v, array_to_string(ARRAY(SELECT s::text FROM generate_series(1, v) s), ',') FROM (VALUES (0), (2), (3), (2), (NULL)) t(v) ORDER BY 1`,
			"0 ; 2 1,2; 2 1,2; 3 1,2,3; <nil> ")
		check(`SELECT v, (SELECT s FROM generate_series(v, v + 1) s WHERE s > v) FROM (VALUES (1), (5)) t(v) ORDER BY 1`, "1 2; 5 6")
		check(`SELECT v, array_to_string(ARRAY(SELECT relname || ':' || s FROM generate_series(1, v) s, pg_class WHERE relname = 'words'), ',')
			FROM (VALUES (1), (2)) t(v) ORDER BY 1`, "1 words:1; 2 words:1,words:2")
		queryErr(t, c, `SELECT v, ARRAY(SELECT relname FROM pg_class, generate_series(1, v) s) FROM (VALUES (1)) t(v)`,
			"0A000", "supported only as the first FROM item of a subquery used as a value")
		queryErr(t, c, `SELECT v FROM (VALUES (1)) t(v) WHERE EXISTS (SELECT 1 FROM generate_series(1, v) x)`,
			"0A000", "(LATERAL) is supported only in a subquery used as a value")
		// unnest over a column of an earlier FROM item of the same query
		// (2026-12-07-timetz-lateral-unnest).
		check(`SELECT (SELECT count(*) FROM pg_class c, unnest(c.reloptions) x WHERE c.relname = 'long_words')`, "1")
	})

	t.Run("aggregating subqueries", func(t *testing.T) {
		// A correlated subquery used as a value may aggregate its rows;
		// an outer value without rows gets the aggregates over no rows.
		check(`SELECT v, (SELECT string_agg(x, ',') FROM unnest(ARRAY['a','b','c']) x WHERE x <> v) FROM (VALUES ('a'), ('z'), (NULL)) t(v) ORDER BY 1`,
			"a b,c; z a,b,c; <nil> <nil>")
		check(`SELECT relname, (SELECT count(*) FROM pg_attribute WHERE attrelid = c.oid AND attnum > 5),
			(SELECT string_agg(attname, ', ') FROM pg_attribute WHERE attrelid = c.oid AND attnum > 0) FROM pg_class c WHERE relnamespace = 2200 ORDER BY 1`,
			"long_words 0 word, n; word_counts 0 word, c; word_counts_pkey 0 word; words 0 word, n")
		check(`SELECT v, (SELECT count(*) FROM generate_series(1, v) s), (SELECT sum(s) + 1 FROM generate_series(1, v) s) FROM (VALUES (0), (3)) t(v) ORDER BY 1`,
			"0 0 <nil>; 3 3 7")
		// psql's publication query's column list, over int2[] values.
		check(`SELECT v, (SELECT string_agg(attname, ', ') FROM generate_series(0, array_upper(v::int2[], 1)) s, pg_attribute
			WHERE attrelid = 'words'::regclass AND attnum = (v::int2[])[s]) FROM (VALUES ('{1,2}'), ('{2}'), (NULL)) t(v) ORDER BY 1`,
			"{1,2} word, n; {2} n; <nil> <nil>")
		queryErr(t, c, `SELECT (SELECT count(*) FROM pg_class WHERE oid = c.oid GROUP BY relkind) FROM pg_class c`, "0A000", "without GROUP BY")
		// PostgreSQL accepts an outer column there (a constant per row).
		queryErr(t, c, `SELECT (SELECT count(*) + c.oid FROM pg_class WHERE oid = c.oid) FROM pg_class c`, "42803", "must appear in the GROUP BY clause")
		// AND/OR over an empty input and an all-NULL operand (this crashed
		// the server).
		check(`SELECT 1 FROM (SELECT true AS b WHERE false) t WHERE b AND false`, "")
		check(`SELECT b AND NULL, b OR NULL, NULL OR b, NULL AND b FROM (VALUES (true), (false), (NULL)) t(b)`,
			"<nil> true true <nil>; false <nil> <nil> false; <nil> <nil> <nil> <nil>")
	})

	t.Run("foreign table options", func(t *testing.T) {
		// PostgreSQL 15 quotes $ and the keywords it reserves (select,
		// int), not unreserved ones (abort).
		check(`SELECT quote_ident('abc'), quote_ident('Ab"c'), quote_ident('nexmark.table'), quote_ident('_x$1'), quote_ident('1x'),
			quote_literal('it''s'), quote_literal('a\b'), quote_literal(NULL), quote_literal(5),
			quote_ident('select'), quote_ident('int'), quote_ident('abort'), quote_ident(NULL)`,
			`abc "Ab""c" "nexmark.table" "_x$1" "1x" 'it''s' E'a\\b' <nil> '5' "select" "int" abort <nil>`)
		check(`SELECT option_name, option_value FROM pg_options_to_table(ARRAY['a=b=c', 'x=', 'y']) ORDER BY 1`, "a b=c; x ; y ")
		check(`SELECT o.option_name FROM pg_catalog.pg_options_to_table(ARRAY['k=v']) AS o`, "k")
		// Per row of the enclosing query, as psql's FDW options column.
		check(`SELECT v, array_to_string(ARRAY(SELECT quote_ident(option_name) || ' ' || quote_literal(option_value)
			FROM pg_options_to_table(v)), ', ') FROM (VALUES (ARRAY['a=1', 'B=x''y']), (NULL)) t(v) ORDER BY 2`,
			"<nil> ; [a=1 B=x'y] a '1', \"B\" 'x''y'")
		check(`SELECT count(*) FROM pg_foreign_table`, "0")
		check(`SELECT fdwname FROM pg_foreign_data_wrapper`, "streamdb")
	})

	t.Run("empty catalogs", func(t *testing.T) {
		for _, q := range []string{
			`SELECT count(*) FROM pg_catalog.pg_policy pol WHERE pol.polrelid = 'words'::regclass`,
			`SELECT count(*) FROM pg_catalog.pg_statistic_ext WHERE 'd' = any(stxkind)`,
			`SELECT count(*) FROM pg_catalog.pg_publication p JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid`,
			`SELECT count(*) FROM pg_catalog.pg_publication_namespace`,
			`SELECT count(*) FROM pg_catalog.pg_inherits`,
			`SELECT count(*) FROM pg_catalog.pg_trigger`,
			`SELECT count(*) FROM pg_catalog.pg_rewrite`,
		} {
			check(q, "0")
		}
		check(`SELECT pg_catalog.pg_relation_is_publishable('words'::regclass), pg_catalog.pg_get_statisticsobjdef_columns(1) IS NULL`, "false true")
	})
}
