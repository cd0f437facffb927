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
	// Errors: the SQLSTATE is PostgreSQL's.
	errs := []string{
		"SELECT to_char(1, '9.9.9')", "SELECT to_char(1, 'S9S')", "SELECT to_char(1, '9PR9')", "SELECT to_char(1, 'S9MI')",
		"SELECT to_char(1, 'MIS9')", "SELECT to_char(1, 'SGS9')", "SELECT to_char(1, 'PLPR9')", "SELECT to_char(1, '9D9.9')",
		"SELECT to_number('abc', '999')", "SELECT to_number('', '999')", "SELECT to_number('-', '999')",
		"SELECT to_number('12345', '9.9')", "SELECT to_number('1', 'RN')",
		"SELECT to_char(5000000000::bigint, 'RN')", "SELECT to_char(1e10::numeric, 'RN')",
		"SELECT to_char('NaN'::float8, '999th')", "SELECT to_char(1, 2)",
	}
	// Refused, never computed otherwise: the currency symbol (locale),
	// V and EEEE.
	refused := []string{
		"SELECT to_char(1, 'L999')", "SELECT to_char(12, '99V9')", "SELECT to_char(1.5, '9.9EEEE')", "SELECT to_number('1', 'L9')",
		"SELECT to_number('1.12345678901234567', '9.99999999999999999')",
	}
	d.formatRounds(t, cases, ingest, errs, refused)
}

// TestPGDateFormatPG drives to_date(text, template) and
// to_timestamp(text, template) over strings generated from random times
// in several spellings (fixed width, FM, month and day names, 12-hour
// clock, day of year, extra spaces and separators, fractions of a
// second), against PostgreSQL 15, as materialized views and batch
// queries; then the errors with PostgreSQL's SQLSTATEs, and the patterns
// streamdb refuses (0A000).
func TestPGDateFormatPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t,
		"CREATE TABLE df (id INT, a TEXT, b TEXT, c TEXT, e TEXT, f TEXT, g TEXT, h TEXT, tm TEXT)")
	views := []string{
		"SELECT id, to_date(a, 'YYYY-MM-DD') AS c1, to_timestamp(a, 'YYYY-MM-DD HH24:MI:SS') AS c2, to_timestamp(b, 'DD Mon YYYY HH12:MI AM') AS c3, to_date(c, 'YYYYMMDD') AS c4, to_date(e, 'FMDD/FMMM/YYYY') AS c5 FROM df",
		"SELECT id, to_date(f, 'Month DD, YYYY') AS c1, to_date(g, 'DDD YYYY') AS c2, to_timestamp(h, 'YY-MM-DD HH24:MI:SS.US') AS c3, to_date(a, 'YYYY MM DD') AS c4, to_timestamp(b, 'DD MON YYYY HH:MI PM') AS c5, to_date(f, 'FMMonth FMDD, YYYY') AS c6 FROM df",
		"SELECT id, to_timestamp(a, tm) AS c1, to_date(b, 'DD Mon YYYY') AS c2, to_date(a, 'YYYY-MM') AS c3 FROM df",
	}
	batch := []string{
		"SELECT to_date('2000    JUN', 'YYYY MON'), to_date('2000 + JUN', 'YYYY MON'), to_date('2011x 12  18', 'YYYYxMM  DD'), to_date('05', 'MM'), to_date('366 2024', 'DDD YYYY'), to_date('99-1-1', 'YY-MM-DD'), to_date('2024', 'YYYY TZ')",
		"SELECT to_timestamp('05 Dec 2000 11:22:33.5 p.m.', 'DD Mon YYYY HH:MI:SS.MS a.m.'), to_timestamp('2024-01-01 10:00:00.12', 'YYYY-MM-DD HH24:MI:SS.US'), to_date('Monday 2024-01-01', 'Day YYYY-MM-DD'), to_date('mon 2024 1 1', 'Dy YYYY MM DD'), to_date('12th 2024 1', 'DDth YYYY MM'), to_date('\"2024\"', '\"\"\"YYYY'), to_date('2024-1-1', 'YYYY-MM-DD'), to_timestamp('2024-01-01 1 PM', 'YYYY-MM-DD HH24 PM')",
		"SELECT id, to_date(a, 'YYYY-MM-DD') - to_date(c, 'YYYYMMDD') FROM df ORDER BY id",
	}
	cases := d.viewAndBatchCases("df", "datefmt", views, batch)
	rng := rand.New(rand.NewPCG(30, 1210))
	months := []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	tmpls := []string{"'YYYY-MM-DD HH24:MI:SS'", "'YYYY-MM-DD'", "'FMYYYY-FMMM-FMDD FMHH24:FMMI'", "'YYYY MM DD HH24 MI SS'"}
	nextID := 0
	ingest := func(n int) {
		for range n {
			nextID++
			y := 1900 + rng.IntN(250)
			if rng.IntN(8) == 0 {
				y = 1 + rng.IntN(3000)
			}
			mo := 1 + rng.IntN(12)
			leap := y%4 == 0 && (y%100 != 0 || y%400 == 0)
			mdays := []int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[mo-1]
			if mo == 2 && leap {
				mdays = 29
			}
			dd := 1 + rng.IntN(mdays)
			hh, mi, ss := rng.IntN(24), rng.IntN(60), rng.IntN(60)
			h12, ampm := hh%12, "AM"
			if h12 == 0 {
				h12 = 12
			}
			if hh >= 12 {
				ampm = "PM"
			}
			doy := dd
			for k := 1; k < mo; k++ {
				md := []int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[k-1]
				if k == 2 && leap {
					md = 29
				}
				doy += md
			}
			frac := fmt.Sprint(rng.IntN(1000000))[:1+rng.IntN(6)]
			a := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, mo, dd, hh, mi, ss)
			b := fmt.Sprintf("%02d %s %04d %02d:%02d %s", dd, months[mo-1][:3], y, h12, mi, ampm)
			if rng.IntN(3) == 0 {
				b = strings.ToUpper(b)
			}
			c := fmt.Sprintf("%04d%02d%02d", y, mo, dd)
			e := fmt.Sprintf("%d/%d/%04d", dd, mo, y)
			f := fmt.Sprintf("%s %02d, %04d", months[mo-1], dd, y)
			if rng.IntN(2) == 0 {
				f = fmt.Sprintf("%s   %02d , %04d", strings.ToLower(months[mo-1]), dd, y)
			}
			g := fmt.Sprintf("%03d %04d", doy, y)
			h := fmt.Sprintf("%02d-%02d-%02d %02d:%02d:%02d.%s", y%100, mo, dd, hh, mi, ss, frac)
			if rng.IntN(4) == 0 {
				a = fmt.Sprintf("%04d / %02d /%02d %02d:%02d:%02d", y, mo, dd, hh, mi, ss)
			}
			lit := func(s string) string { return "'" + s + "'" }
			row := fmt.Sprintf("(%d, %s, %s, %s, %s, %s, %s, %s, %s)", nextID, lit(a), lit(b), lit(c), lit(e), lit(f), lit(g), lit(h), tmpls[rng.IntN(len(tmpls))])
			if rng.IntN(12) == 0 {
				row = fmt.Sprintf("(%d, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)", nextID)
			}
			ins := "INSERT INTO df VALUES " + row
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
		}
	}
	errs := []string{
		"SELECT to_date('2023-02-29', 'YYYY-MM-DD')", "SELECT to_date('367 2024', 'DDD YYYY')", "SELECT to_date('abc', 'YYYY')",
		"SELECT to_date('2024-13-01', 'YYYY-MM-DD')", "SELECT to_date('2024-01-32', 'YYYY-MM-DD')", "SELECT to_timestamp('13:00 PM', 'HH:MI AM')",
		"SELECT to_timestamp('2024-01-01 25:00', 'YYYY-MM-DD HH24:MI')", "SELECT to_timestamp('2024-01-01 10:61', 'YYYY-MM-DD HH24:MI')",
		"SELECT to_date('1', 'YYYYMMDD')", "SELECT to_date('2024 Foo', 'YYYY Mon')", "SELECT to_date('2024 01 02 03', 'YYYY MM DD MM')",
		"SELECT to_date('100 x', 'DDD')", "SELECT to_date('99999999999', 'FMYYYY')",
		"SELECT to_date('2024 x', 'YYYY TZ')", "SELECT to_date('0936--05-06', 'YYYY-MM-DD')",
	}
	refused := []string{
		"SELECT to_date('2024 5', 'YYYY J')", "SELECT to_date('2024 12', 'YYYY WW')", "SELECT to_date('2024', 'FXYYYY')",
		"SELECT to_date('1 BC', 'YYYY BC')", "SELECT to_timestamp('2024 3', 'YYYY SSSS')",
	}
	d.formatRounds(t, cases, ingest, errs, refused)
}

// formatRounds runs the cases over two rounds of ingest(50) (a checkpoint
// between), then checks that each of errs fails with PostgreSQL's SQLSTATE
// and each of refused with 0A000.
func (d *diffRun) formatRounds(t *testing.T, cases []*diffCase, ingest func(int), errs, refused []string) {
	for round := 0; round < 2; round++ {
		ingest(50)
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	for _, q := range errs {
		if want, got := sqlState(t, d.pg, q), sqlState(t, d.sdb, q); want == "" || got != want {
			t.Errorf("%s: PostgreSQL SQLSTATE %q, streamdb %q", q, want, got)
		}
	}
	for _, q := range refused {
		if got := sqlState(t, d.sdb, q); got != "0A000" {
			t.Errorf("%s: streamdb SQLSTATE %q, want 0A000", q, got)
		}
	}
}
