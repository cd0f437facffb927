package sqllogic

import "testing"

// TestPsqlPgOperators runs the PostgreSQL operators and functions of
// pg_operators.slt through the real psql (unaligned, tuples only), whose
// output PostgreSQL 15 gives too (STREAMDB_TEST_ADDR runs it there).
func TestPsqlPgOperators(t *testing.T) {
	p := newPsqlTarget(t)
	res := p.run(t, "", "-A", "-t", "-c",
		"SELECT pg_typeof(1), pg_typeof(2 ^ 3 ^ 2), 2 ^ 3 ^ 2, 'abc' ~~ 'a%', 'ABC' !~~* 'a%', trim(both from 'xxaxx', 'x')")
	want := "integer|double precision|64|t|f|a\n"
	if res.code != 0 || res.stdout != want || res.stderr != "" {
		t.Errorf("psql: exit %d\nstdout: %q\nwant:   %q\nstderr: %s", res.code, res.stdout, want, res.stderr)
	}
	res = p.run(t, "", "-A", "-t", "-c", "SELECT 0 ^ -1")
	if res.code == 0 || !contains(res.stderr, "zero raised to a negative power is undefined") {
		t.Errorf("psql 0 ^ -1: exit %d, stderr %q", res.code, res.stderr)
	}
}
