package parse

import "testing"

// TestNames checks which TiDB-reserved words the rewriter quotes: names
// are quoted, the same words in their grammar roles and as functions are
// not. tests/sqllogic TestKeywordNamesPG checks every PostgreSQL keyword
// against PostgreSQL 15 itself.
func TestNames(t *testing.T) {
	cases := []struct{ in, rewritten string }{
		{"select key, status, sum(value) from t group by key, status order by key desc",
			`select "key", status, sum(value) from t group by "key", status order by "key" desc`},
		{"select lag(x) over (partition by key order by ts rows between 1 preceding and current row), rank() over w from t window w as (order by x)",
			`select lag(x) over (partition by "key" order by ts rows between 1 preceding and current row), rank() over w from t window w as (order by x)`},
		{"select 1 revoke, of.of, t.key from revoke as of, t", `select 1 "revoke", "of".of, t.key from "revoke" as "of", t`},
		{"select replace(a, 'x', 'y'), interval '1' day from t where key in (select key from values_t)",
			`select replace(a, 'x', 'y'), pg_interval('1 day') from t where "key" in (select "key" from values_t)`},
		{"select k from t where k not between -1 and 3 or not (k not between (1) and -2)",
			`select k from t where k not between -1 and 3 or not (k not between (1) and -2)`},
	}
	for _, c := range cases {
		stmts, err := ParseAll(c.in)
		if err != nil {
			t.Fatalf("ParseAll(%q): %v", c.in, err)
		}
		if q := stmts[0].(*Query); q.Rewritten != c.rewritten {
			t.Errorf("ParseAll(%q):\n Rewritten %q\n want      %q", c.in, q.Rewritten, c.rewritten)
		}
	}
	for _, in := range []string{"insert into rows (key, values) values (1, 2)", "insert into t values (1)",
		"update t set key = 1 where rows = 2"} {
		if _, err := ParseAll(in); err != nil {
			t.Errorf("ParseAll(%q): %v", in, err)
		}
	}
}
