package parse

import "testing"

// TestLookupJoinText checks the text lookup joins are given to TiDB with,
// and the forms the dialect layer refuses (the binder refuses the rest:
// sql/bind lookup.go).
func TestLookupJoinText(t *testing.T) {
	checkRewritten(t, []rewriteCase{
		{"select * from s join dim for system_time as of proctime() on s.k = dim.k",
			"select * from s join dim on pg_lookup_join() and s.k = dim.k"},
		{"SELECT * FROM s LEFT JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() AS d ON s.k = d.k WHERE s.v > 1",
			"select * from s left join dim as \"d\" on pg_lookup_join() and s.k = d.k where s.v > 1"},
		{"select * from s join dim d for system_time as of proctime() on (s.k = d.k)",
			"select * from s join dim d on pg_lookup_join() and (s.k = d.k)"},
		{"select * from (select * from s join dim for system_time as of proctime() on s.k = dim.k) x join y on x.k = y.k",
			"select * from (select * from s join dim on pg_lookup_join() and s.k = dim.k) x join y on x.k = y.k"},
		// The event-time form: the column goes into the marker.
		{"select * from o left join rates for system_time as of o.order_time as r on o.c = r.c",
			"select * from o left join rates as \"r\" on pg_versioned_join(o.order_time) and o.c = r.c"},
		{"select * from o join rates for system_time as of ts on o.c = rates.c",
			"select * from o join rates on pg_versioned_join(ts) and o.c = rates.c"},
		// Inside a literal it is text.
		{"select 'for system_time as of proctime()'", "select 'for system_time as of proctime()'"},
	})
	for _, c := range []struct{ in, want string }{
		{"select * from s join dim for system_time as of s.ts + interval '1' day on s.k = dim.k",
			"error 0A000 at 48: FOR SYSTEM_TIME AS OF takes PROCTIME() (a lookup join) or a time column of the left side, [table.]column (a versioned-table join)"},
		{"select * from s join dim for system_time as of now() on s.k = dim.k",
			"error 0A000 at 48: FOR SYSTEM_TIME AS OF takes PROCTIME() (a lookup join) or a time column of the left side, [table.]column (a versioned-table join)"},
		{"select * from s join dim for system_time as of s.ts using (k)",
			"error 0A000 at 53: a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) ... USING is not supported; write JOIN ... ON"},
		{"select * from s join dim for system_time as of proctime() using (k)",
			"error 0A000 at 59: a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) ... USING is not supported; write JOIN ... ON"},
		{"select * from s, dim for system_time as of proctime() where s.k = dim.k",
			"error 0A000 at 55: FOR SYSTEM_TIME AS OF PROCTIME() needs a JOIN ... ON condition"},
		{"select * from dim for system_time as of proctime()",
			"error 0A000 at 51: FOR SYSTEM_TIME AS OF PROCTIME() needs a JOIN ... ON condition"},
		{"select * from s join dim for system_time as of", "error 42601 at 47: syntax error at end of input"},
	} {
		if got := run(c.in); got != c.want {
			t.Errorf("ParseAll(%q)\n got: %q\nwant: %q", c.in, got, c.want)
		}
	}
}
