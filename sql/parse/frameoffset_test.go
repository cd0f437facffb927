package parse

import "testing"

// TestFrameOffsetText checks the text a ROWS, RANGE or GROUPS offset
// expression that TiDB's grammar does not take (PostgreSQL takes any
// expression without variables there) is given to TiDB with: wrapped as
// INTERVAL pg_frame_offset(expr) MICROSECOND, which the binder unwraps.
// Literals, parameters, UNBOUNDED and interval literals are left as they
// were.
func TestFrameOffsetText(t *testing.T) {
	checkRewritten(t, []rewriteCase{
		{"select sum(v) over (order by k rows 1::numeric preceding) from w",
			"select sum(v) over (order by k rows interval pg_frame_offset(pg_cast(1, 'numeric')) microsecond preceding) from w"},
		{"select sum(v) over (order by k rows between 1::numeric preceding and current row) from w",
			"select sum(v) over (order by k rows between interval pg_frame_offset(pg_cast(1, 'numeric')) microsecond preceding and current row) from w"},
		{"select sum(v) over (order by k rows between cast(1.5 as numeric) preceding and 2 - 1 following) from w",
			"select sum(v) over (order by k rows between interval pg_frame_offset(pg_cast(1.5, 'numeric')) microsecond preceding and interval pg_frame_offset(2 - 1) microsecond following) from w"},
		{"select sum(v) over (order by k groups 1::bigint * 2 preceding) from w",
			"select sum(v) over (order by k groups interval pg_frame_offset(pg_cast(1, 'bigint') * 2) microsecond preceding) from w"},
		{"select sum(v) over (order by k rows between 1 preceding and unbounded following) from w",
			"select sum(v) over (order by k rows between 1 preceding and unbounded following) from w"},
		{"select sum(v) over (order by ts range interval '1 day' preceding) from w",
			"select sum(v) over (order by ts range interval '1 day' microsecond preceding) from w"},
		// An offset in parentheses right after ROWS/RANGE is not an alias's column list.
		{"select sum(v) over (order by k rows (1) preceding) from w",
			"select sum(v) over (order by k rows interval pg_frame_offset((1)) microsecond preceding) from w"},
		{"select sum(v) over (order by ts range (interval '1 day') preceding) from w",
			"select sum(v) over (order by ts range interval pg_frame_offset((pg_interval('1 day'))) microsecond preceding) from w"},
		{"select * from t rows(a, b)", "select * from t \"rows\x1fa\x1fb\""},
	})
}

// TestWindowCallCast checks that a cast written straight after a window
// call casts the whole call, f(...) OVER (...) or f(...) OVER w.
func TestWindowCallCast(t *testing.T) {
	checkRewritten(t, []rewriteCase{
		{"select rank() over (order by x)::int + 1 from t",
			"select pg_cast(rank() over (order by x), 'integer') + 1 from t"},
		{"select sum(x) over w::text from t window w as (order by x)",
			"select pg_cast(sum(x) over w, 'text') from t window w as (order by x)"},
		{"select count(*) filter (where x > 1) over ()::numeric from t",
			"select pg_cast(count( case when pg_filter( x > 1 ) then 1 end) over (), 'numeric') from t"},
	})
}

// rewriteCase is a statement and the text the dialect layer gives TiDB.
type rewriteCase struct{ in, rewritten string }

// checkRewritten parses each case's statement and compares its rewritten text.
func checkRewritten(t *testing.T, cases []rewriteCase) {
	t.Helper()
	for _, c := range cases {
		stmts, err := ParseAll(c.in)
		if err != nil {
			t.Errorf("ParseAll(%q): %v", c.in, err)
			continue
		}
		if got := stmts[0].(*Query).Rewritten; got != c.rewritten {
			t.Errorf("ParseAll(%q):\n got %q\nwant %q", c.in, got, c.rewritten)
		}
	}
}
