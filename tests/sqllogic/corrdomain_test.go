package sqllogic

import (
	"context"
	"strings"
	"testing"
)

// TestCorrelatedSubqueryDomain: a correlated subquery used as a value
// whose conditions on the outer query are not equalities (psql's
// ARRAY(SELECT rolname FROM pg_roles WHERE oid = ANY (pol.polroles))) is
// evaluated over the distinct outer values, as if run per outer row.
func TestCorrelatedSubqueryDomain(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	rows := func(q string) string {
		t.Helper()
		rs, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for rs.Next() {
			vs, err := rs.Values()
			if err != nil {
				t.Fatal(err)
			}
			var f []string
			for _, v := range vs {
				f = append(f, fmtValue(v))
			}
			out = append(out, strings.Join(f, " "))
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return strings.Join(out, "; ")
	}
	// ARRAY over a text[] outer column (grouped by its text form), with
	// the subquery's ORDER BY; a NULL array finds nothing: '{}'.
	if got, want := rows(`SELECT o.k, ARRAY(SELECT v.w FROM (VALUES ('a'), ('b'), ('c')) AS v(w)
			WHERE v.w = ANY (o.arr) ORDER BY 1 DESC) AS a
		FROM (VALUES (1, regexp_match('ab', '(a)(b)')), (2, regexp_match('c', '(c)')), (3, NULL),
			(4, regexp_match('ab', '(a)(b)'))) AS o(k, arr) ORDER BY o.k`),
		"1 [b a]; 2 [c]; 3 []; 4 [b a]"; got != want {
		t.Errorf("ARRAY over = ANY:\n got %s\nwant %s", got, want)
	}
	// A scalar subquery with an inequality: NULL for no row, 21000 for two.
	if got, want := rows(`SELECT o.k, (SELECT v.w FROM (VALUES ('a'), ('b')) AS v(w) WHERE v.w > o.m AND v.w < 'b') AS n
		FROM (VALUES (1, 'a'), (2, 'z'), (3, NULL), (4, '')) AS o(k, m) ORDER BY o.k`),
		"1 <nil>; 2 <nil>; 3 <nil>; 4 a"; got != want {
		t.Errorf("scalar subquery over >:\n got %s\nwant %s", got, want)
	}
	_, err := c.Exec(ctx, `SELECT (SELECT v.w FROM (VALUES ('a'), ('b')) AS v(w) WHERE v.w > o.m) FROM (VALUES ('')) AS o(m)`)
	wantCode(t, "two rows from a correlated subquery", err, "21000")
	execAll(t, c, "CREATE TABLE words (word TEXT)")
	// What SQLAlchemy's get_columns reads besides: json_build_object (as
	// text), pg_get_serial_sequence (no sequences: NULL), the empty
	// pg_sequence and pg_enum, pg_type_is_visible.
	if got, want := rows(`SELECT json_build_object('a', 1, 'b', 'x"y', 'c', true, 'd', NULL::text), pg_get_serial_sequence('words', 'word'),
			(SELECT count(*) FROM pg_catalog.pg_sequence), (SELECT count(*) FROM pg_catalog.pg_enum), pg_type_is_visible(25)`),
		`{"a" : 1, "b" : "x\"y", "c" : true, "d" : null} <nil> 0 0 true`; got != want {
		t.Errorf("driver functions:\n got %s\nwant %s", got, want)
	}
	_, err = c.Exec(ctx, "SELECT json_build_object('a')")
	wantCode(t, "json_build_object with an odd argument count", err, "22023")
	// psql 15's policy query of \d name.
	if got := rows(`SELECT pol.polname, pol.polpermissive,
  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
  CASE pol.polcmd
    WHEN 'r' THEN 'SELECT'
    WHEN 'a' THEN 'INSERT'
    WHEN 'w' THEN 'UPDATE'
    WHEN 'd' THEN 'DELETE'
    END AS cmd
FROM pg_catalog.pg_policy pol
WHERE pol.polrelid = 'words'::regclass ORDER BY 1`); got != "" {
		t.Errorf("psql's policy query: %q, want no rows", got)
	}
}
