package parse

import "testing"

// TestRowOneField checks that ROW(x) with one field, which TiDB's grammar
// refuses, becomes pg_row1(x), and that other rows stay as written.
func TestRowOneField(t *testing.T) {
	for _, c := range []struct{ in, rewritten string }{
		{"select row(a) from t", "select pg_row1(a) from t"},
		{"insert into row (x) values (row(1))", "insert into \"row\" (x) values (pg_row1(1))"},
		{"select row((1, 2)), row(f(x, y)), row(array[1, 2]) = row(b) from t", "select pg_row1((1, 2)), pg_row1(f(x, y)), pg_row1(pg_array_ctor(1, 2)) = pg_row1(b) from t"},
		{"select row(1, 2), (a), row(row(1)) from t", "select row(1, 2), (a), pg_row1(pg_row1(1)) from t"},
		{"select t.row(1) from t", "select t.row(1) from t"},
	} {
		stmts, err := ParseAll(c.in)
		if err != nil {
			t.Fatalf("ParseAll(%q): %v", c.in, err)
		}
		if q := stmts[0].(*Query); q.Rewritten != c.rewritten {
			t.Errorf("ParseAll(%q):\n Rewritten %q\n      want %q", c.in, q.Rewritten, c.rewritten)
		}
	}
}
