package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPGNumberFormatPG drives to_char of numbers (integer, bigint, real,
// double precision, numeric) and to_number over generated rows against
// PostgreSQL 15 (formatting.c's number templates: 9 0 . , D G S MI PL SG
// PR FM TH RN, quoted text, the '#' overflow fill): as materialized views
// and as batch queries, in two rounds of inserts, with a constant
// template and with a template per row; then the errors, each with
// PostgreSQL's SQLSTATE, and the patterns streamdb refuses (0A000).
func TestPGNumberFormatPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t,
		"CREATE TABLE nf (id INT, i INT, b BIGINT, x DOUBLE PRECISION, r REAL, n NUMERIC, m NUMERIC(12,3), f TEXT, s TEXT, g TEXT)")
	tmpls := []string{"999", "FM999", "9,999", "FM9G999D99", "0000", "9990.99", "FM990.00", "S999", "999S", "99.99S",
		"FMS999.9", "999MI", "MI999", "PL999", "SG999", "9SG99", "999PR", "FM999PR", "\"n=\"999.9", "9 9 9", ".99", "0.99",
		"FM0.9999", "99999999999999999.999", "B999", "FM9.9", "FM9999999999999999999", "9999999999.9999999999", "FM.999", "0.0"}
	var cols []string
	for k, tm := range tmpls {
		cols = append(cols, fmt.Sprintf("to_char(%%s, '%s') AS c%d", strings.ReplaceAll(tm, "'", "''"), k))
	}
	sel := func(col string) string {
		return "SELECT id, " + strings.ReplaceAll(strings.Join(cols, ", "), "%s", col) + " FROM nf"
	}
	views := []string{
		sel("i"), sel("b"), sel("x"), sel("r"), sel("n"), sel("m"),
		"SELECT id, to_char(i, f) AS c1, to_char(n, f) AS c2, to_char(x, f) AS c3, to_char(i, '999th') AS c4, to_char(b, 'FM9999TH') AS c5, to_char(i, 'RN') AS c6, to_char(m, 'FMrn') AS c7, to_char(x, 'FMRN') AS c8 FROM nf",
		"SELECT id, to_number(s, g) AS c1, to_number(s, '9999999.999') AS c2, to_number(s, 'FM9999999.999') AS c3, to_number(s, '99G999D99S') AS c4, to_number(s, '9999999MI') AS c5, to_number(s, '9999999PR') AS c6, to_number(s, 'S9999999.99') AS c7 FROM nf",
	}
	batch := []string{
		"SELECT to_char(-0.1, '99.99'), to_char(-0.1, 'FM9.99'), to_char(0.1, '0.9'), to_char(12, 'FM9990999.9'), to_char(485, 'PL999'), to_char(-485, '999PR'), to_char(482, '999th'), to_char(485.8, '\"Pre:\"999\" Post:\" .999')",
		"SELECT to_char('NaN'::float8, '999.9'), to_char('Infinity'::float8, '999.9'), to_char('-Infinity'::float8, 'FM999'), to_char(-0.0::float8, '9.9'), to_char(2.5::float8, '9'), to_char(1e300::float8, '9.99'), to_char(123456789012345678::float8, '999999999999999999.99')",
		"SELECT to_char(1234.5::real, '9999.999'), to_char(0.1::real, '9.9999999999'), to_char(1e20::numeric, '9.9'), to_char(-2147483648, '99999999999'), to_char(9223372036854775807, 'FM9,999,999,999,999,999,999'), to_char(0, 'FM9'), to_char(0, '9.99'), to_char(0.5, 'FM9')",
		"SELECT to_char(1, ''), to_number('1', '') IS NULL, to_number('12,454.8-', '99G999D9S'), to_number('<12.5>', '999.9PR'), to_number('1,2,3', 'FM9,9,9'), to_number(' 12 ', '9999'), to_number('12.345', '99.9'), to_number('-.5', 'S9.9'), to_number('.5', '9.9'), to_number('5.', '9.9')",
		"SELECT id, to_char(n, f), to_char(i, f) FROM nf WHERE f IS NOT NULL ORDER BY id",
	}
	cases := d.viewAndBatchCases("nf", "numfmt", views, batch)
	rng := rand.New(rand.NewPCG(30, 1209))
	nextID := 0
	pick := func(vals []string) string {
		if rng.IntN(10) == 0 {
			return "NULL"
		}
		return vals[rng.IntN(len(vals))]
	}
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	var tl []string
	for _, tm := range tmpls {
		tl = append(tl, lit(tm))
	}
	numStrs := []string{"12,454.8-", "1234", "-12.5", "  42", "<123>", "1.5e3", "+7", "0.001", "99.99", "12-", "$1,000.00", "3.14159", "-0", "007", "1 2 3"}
	var sl []string
	for _, s := range numStrs {
		sl = append(sl, lit(s))
	}
	numTmpls := []string{lit("9999999.999"), lit("FM9G999G999D999"), lit("S9999999"), lit("9999999MI"), lit("99999.99PR"), lit("\"$\"9,999.99"), lit("9 9 9 9"), lit("FM0000000.00")}
	ingest := func(n int) {
		ints := []string{"0", "1", "5", "-1", "12", "-485", "485", "999", "1000", "-1000", "3999", "4000", "1234567", "2147483647", "-2147483648"}
		bigs := []string{"0", "7", "-9", "1485", "3999", "9223372036854775807", "-9223372036854775807", "1234567890123", "-42"}
		floats := []string{"0", "1", "-1", "0.5", "1.5", "2.5", "-2.25", "3.14159", "148.5", "-17.5", "1e-7", "99.995", "1e10", "123456.789", "0.125", "-0.05"}
		nums := []string{"0", "1", "-1", "0.5", "0.05", "-0.005", "148.5", "148.500", "-485", "3148.5", "12.0500", "99.995", "-0.1", "1234567.891", "0.0001", "123456789012.345678", "-99999.999", "5.2"}
		for range n {
			nextID++
			d1 := pick(nums)
			m := d1
			if m != "NULL" && (strings.HasPrefix(strings.TrimLeft(m, "-"), "123456789012") || strings.HasPrefix(m, "1234567")) {
				m = "42.4245"
			}
			row := fmt.Sprintf("(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s)", nextID, pick(ints), pick(bigs), pick(floats), pick(floats),
				d1, m, pick(tl), pick(sl), pick(numTmpls))
			ins := "INSERT INTO nf VALUES " + row
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
		}
	}
	for round := 0; round < 2; round++ {
		ingest(50)
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	// Errors: the SQLSTATE is PostgreSQL's.
	for _, q := range []string{
		"SELECT to_char(1, '9.9.9')", "SELECT to_char(1, 'S9S')", "SELECT to_char(1, '9PR9')", "SELECT to_char(1, 'S9MI')",
		"SELECT to_char(1, 'MIS9')", "SELECT to_char(1, 'SGS9')", "SELECT to_char(1, 'PLPR9')", "SELECT to_char(1, '9D9.9')",
		"SELECT to_number('abc', '999')", "SELECT to_number('', '999')", "SELECT to_number('-', '999')",
		"SELECT to_number('12345', '9.9')", "SELECT to_number('1', 'RN')",
		"SELECT to_char(5000000000::bigint, 'RN')", "SELECT to_char(1e10::numeric, 'RN')",
		"SELECT to_char('NaN'::float8, '999th')", "SELECT to_char(1, 2)",
	} {
		if want, got := sqlState(t, d.pg, q), sqlState(t, d.sdb, q); want == "" || got != want {
			t.Errorf("%s: PostgreSQL SQLSTATE %q, streamdb %q", q, want, got)
		}
	}
	// Refused, never computed otherwise: the currency symbol (locale),
	// V and EEEE.
	for _, q := range []string{
		"SELECT to_char(1, 'L999')", "SELECT to_char(12, '99V9')", "SELECT to_char(1.5, '9.9EEEE')", "SELECT to_number('1', 'L9')",
		"SELECT to_number('1.12345678901234567', '9.99999999999999999')",
	} {
		if got := sqlState(t, d.sdb, q); got != "0A000" {
			t.Errorf("%s: streamdb SQLSTATE %q, want 0A000", q, got)
		}
	}
}
