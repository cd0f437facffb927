package parse

import "testing"

// TestAsofJoinText checks the text ASOF joins are given to TiDB with, and
// the forms the dialect layer refuses (the binder refuses the conditions
// an ASOF join cannot take: sql/bind asof.go).
func TestAsofJoinText(t *testing.T) {
	checkRewritten(t, []rewriteCase{
		{"select * from a asof join b on a.k = b.k and a.ts >= b.ts",
			"select * from a join b on pg_asof_join() and a.k = b.k and a.ts >= b.ts"},
		{"select * from a x ASOF LEFT OUTER JOIN (select * from b) y on (x.k = y.k and x.ts < y.ts) where x.v > 1",
			"select * from a x left join (select * from b) y on pg_asof_join() and (x.k = y.k and x.ts < y.ts) where x.v > 1"},
		{"select * from (select * from a asof inner join b on a.k = b.k and a.ts > b.ts) s join c on s.k = c.k",
			"select * from (select * from a join b on pg_asof_join() and a.k = b.k and a.ts > b.ts) s join c on s.k = c.k"},
		// AS asof, or asof not before a join, stays an alias.
		{"select asof.k from a as asof join b on asof.k = b.k", `select asof.k from a as "asof" join b on asof.k = b.k`},
		{"select asof.k from a asof where asof.k = 1", "select asof.k from a asof where asof.k = 1"},
	})
	for _, c := range []struct{ in, want string }{
		{"select * from a asof right join b on a.k = b.k and a.ts >= b.ts",
			"error 0A000 at 22: ASOF RIGHT JOIN is not supported (ASOF JOIN and ASOF LEFT JOIN are)"},
		{"select * from a asof full join b on a.k = b.k and a.ts >= b.ts",
			"error 0A000 at 22: ASOF FULL JOIN is not supported (ASOF JOIN and ASOF LEFT JOIN are)"},
		{"select * from a asof join b using (k)",
			"error 0A000 at 29: ASOF JOIN ... USING is not supported; write ASOF JOIN ... ON"},
		{"select * from a asof join b where a.k = b.k",
			"error 0A000 at 29: ASOF JOIN needs an ON condition (equalities and one inequality)"},
		{"select * from a asof join b",
			"error 0A000 at 28: ASOF JOIN needs an ON condition (equalities and one inequality)"},
		{"select * from a asof join b join c on b.k = c.k on a.k = b.k and a.ts >= b.ts",
			"error 0A000 at 29: the right side of an ASOF JOIN must be a table or a subquery, not a join"},
		{"select * from a asof left b", "error 42601 at 27: syntax error at or near \"b\""},
	} {
		if got := run(c.in); got != c.want {
			t.Errorf("ParseAll(%q)\n got: %q\nwant: %q", c.in, got, c.want)
		}
	}
}
