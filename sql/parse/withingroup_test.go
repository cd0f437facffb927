package parse

import (
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
)

// TestWithinGroup checks the rewrite of ordered-set aggregates and its
// errors, which name the aggregate as the user wrote it.
func TestWithinGroup(t *testing.T) {
	for _, c := range []struct{ in, rewritten string }{
		{"select k, percentile_cont(0.5) within group (order by v) from t group by k",
			"select k, max(pg_within_group('percentile_cont', v, 0, 0.5)) from t group by k"},
		{"select percentile_disc(0.25) WITHIN GROUP (ORDER BY (a + 1)::int DESC NULLS LAST), mode() within group (order by f(x, y) asc) from t",
			"select max(pg_within_group('percentile_disc', pg_cast((a + 1), 'integer'), 1, 0.25)), max(pg_within_group('mode', f(x, y), 0)) from t"},
		{"select percentile_cont(array[0.25, 0.5]) within group (order by v) from t",
			"select max(pg_within_group('percentile_cont', v, 0, pg_array_ctor(0.25, 0.5))) from t"},
	} {
		stmts, err := ParseAll(c.in)
		if err != nil {
			t.Fatalf("ParseAll(%q): %v", c.in, err)
		}
		if q := stmts[0].(*Query); q.Rewritten != c.rewritten {
			t.Errorf("ParseAll(%q):\n Rewritten %q\n      want %q", c.in, q.Rewritten, c.rewritten)
		}
	}
	for _, c := range []struct{ in, code, msg string }{
		{"select count(v) within group (order by v) from t", sqlerr.UndefinedFunction, "function count ... WITHIN GROUP does not exist: count is not an ordered-set aggregate"},
		{"select percentile_cont(0.5) within group (order by a, b) from t", sqlerr.UndefinedFunction, "function percentile_cont with 2 ORDER BY expressions does not exist: it takes one"},
		{"select mode() within group (order by v) over () from t", sqlerr.FeatureNotSupported, "OVER is not supported for ordered-set aggregate mode"},
		{"select mode() within group (order by v) filter (where v > 0) from t", sqlerr.FeatureNotSupported, "FILTER is not supported with ordered-set aggregate mode"},
		{"select mode() within group (v) from t", sqlerr.SyntaxError, `syntax error at or near "v"`},
		{"select mode() within group (order by) from t", sqlerr.SyntaxError, `syntax error at or near ")"`},
	} {
		_, err := ParseAll(c.in)
		e, ok := err.(*sqlerr.Error)
		if !ok || e.Code != c.code || e.Msg != c.msg || e.Position == 0 {
			t.Errorf("ParseAll(%q): %v, want %s %q (positioned)", c.in, err, c.code, c.msg)
		}
	}
}
