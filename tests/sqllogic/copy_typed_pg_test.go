package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// copyTypedCols is a table of the column types users have, each of which
// streamdb's one-pass COPY parser reads (sql/copyfast.go), with values per
// column: mostly plain ones (the one-pass parser's), then forms only the
// general path reads (signs, spaces, special values, zones, other
// spellings, trailing blanks).
var copyTypedCols = []struct {
	decl  string
	plain []string
	other []string
}{
	{"i INT", []string{"7", "-2147483648", "2147483647", "0"}, []string{"+5", " 9", "0012"}},
	{"s SMALLINT", []string{"12", "-32768", "32767"}, []string{"+3", "-0"}},
	{"f DOUBLE PRECISION", []string{"1.5", "-0.25", "1e10", "3", "0.1"}, []string{"Infinity", "-inf", "NaN", " 2.5 ", "1E-5"}},
	{"r REAL", []string{"1.5", "0.1", "3.4e38", "-7.25"}, []string{"nan", " 2"}},
	{"ts TIMESTAMP", []string{"2026-03-04 05:06:07", "2026-03-04 05:06:07.123456", "2024-02-29 23:59:59.5", "2026-03-04"},
		[]string{"epoch", "infinity", "2026-03-04T05:06:07", "2026-03-04 24:00:00", "2026-03-04 05:06:07.1234567", "0001-01-01 00:00:00 BC"}},
	{"tz TIMESTAMPTZ", []string{"2026-03-04 05:06:07", "1999-12-31 23:59:59.999999"},
		[]string{"2026-03-04 05:06:07+02:30", "2026-03-04 05:06:07-08", "-infinity", "2026-03-04 05:06:07 Europe/Paris"}},
	{"d DATE", []string{"2026-03-04", "1999-12-31", "2000-02-29"}, []string{"epoch", "0044-03-15 BC", "2026-03-04 10:00:00", "20260304"}},
	{"tm TIME", []string{"05:06:07", "23:59:59.999999"}, []string{"24:00:00", "5:6"}},
	{"ttz TIMETZ", []string{"05:06:07+02"}, []string{"05:06:07-11:30", "05:06:07"}},
	{"b BOOLEAN", []string{"t", "f", "true", "false"}, []string{"yes", "off", "1", "TRUE", " t"}},
	{"n NUMERIC(10,2)", []string{"1.5", "12345678.99", "0.005", "-1.004"}, []string{"1e2", " 3"}},
	{"u NUMERIC", []string{"1.50", "0.000100", "-3", "123456789012345678.5"}, []string{"1e-3", "+7.0"}},
	{"v VARCHAR(5)", []string{"abc", "héllo", "abcde", ""}, []string{"ab   ", "abcde  "}},
	{"big BIGINT", []string{"1", "-9", "9223372036854775807"}, []string{"+4"}},
	{"j JSONB", []string{`{"a": 1, "b": [1, 2]}`, `[1, "x"]`, `{"k": "é"}`, `null`,
		`{"z": {"b": [1, {"y": 2, "x": -0.0}], "a": "x"}, "id": 1e2, "é": {}, "id": 7, "": [12e-1, 1.50, -0]}`},
		[]string{` {"x": true} `, `{"a":1,"a":2}`, `3.50`, `{"s": "x\\u00e9y\\tz", "s": "\\ud83d\\ude00"}`, `[1e1001, -0e-16383]`}},
	{"iv INTERVAL", []string{"1 day", "02:00:00", "1 year 2 mons"}, []string{"P1D", "-1 days +2:03"}},
}

// TestCopyTypedPG: COPY into a table of INT, SMALLINT, DOUBLE PRECISION,
// REAL, TIMESTAMP, TIMESTAMPTZ, DATE, TIME, TIMETZ, BOOLEAN, NUMERIC(p,s),
// NUMERIC, VARCHAR(n), BIGINT, JSONB and INTERVAL columns reads the rows PostgreSQL 15
// reads, in text and CSV, and refuses what it refuses with its SQLSTATE
// after plain lines (which the one-pass parser reads).
func TestCopyTypedPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	var decls, names []string
	for _, c := range copyTypedCols {
		decls = append(decls, c.decl)
		names = append(names, strings.Fields(c.decl)[0])
	}
	r := rand.New(rand.NewPCG(6, 2026))
	lines := func(n int, delim string, csv bool) string {
		var b strings.Builder
		for range n {
			for i, c := range copyTypedCols {
				if i > 0 {
					b.WriteString(delim)
				}
				switch k := r.IntN(30); {
				case k == 0:
					if !csv {
						b.WriteString(`\N`)
					}
				case k < 4:
					v := c.other[r.IntN(len(c.other))]
					if csv && (r.IntN(2) == 0 || strings.ContainsAny(v, `",`)) {
						v = `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
					}
					b.WriteString(v)
				default:
					v := c.plain[r.IntN(len(c.plain))]
					if csv && strings.ContainsAny(v, `",`) {
						v = `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
					}
					b.WriteString(v)
				}
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	copyIn := func(conn *pgx.Conn, stmt, data string) (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tag, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(data), stmt)
		return tag.RowsAffected(), err
	}
	for i, format := range []struct{ opts, delim string }{{"", "\t"}, {"(FORMAT csv)", ","}} {
		table := fmt.Sprintf("ct%d", i)
		for _, conn := range []*pgx.Conn{sdb, pgc} {
			mustExec(t, conn, "", "CREATE TABLE "+table+" ("+strings.Join(decls, ", ")+")")
		}
		data := lines(6000, format.delim, format.opts != "")
		stmt := "COPY " + table + " FROM STDIN " + format.opts
		for _, conn := range []*pgx.Conn{pgc, sdb} {
			if n, err := copyIn(conn, stmt, data); err != nil || n != 6000 {
				t.Fatalf("%s: %d rows, %v", stmt, n, err)
			}
		}
		if d := diffWithPG(t, sdb, pgc, "SELECT "+strings.Join(names, ", ")+" FROM "+table); d != "" {
			t.Errorf("COPY %s parsed differently from PostgreSQL\n%s", format.opts, d)
		}
	}

	// Bad values, one column at a time after plain lines: refused by both
	// with the same SQLSTATE, nothing kept.
	mustExec(t, pgc, "", "CREATE TABLE ctbad ("+strings.Join(decls, ", ")+")")
	mustExec(t, sdb, "", "CREATE TABLE ctbad ("+strings.Join(decls, ", ")+")")
	plain := lines(0, "\t", false)
	for range 500 {
		var f []string
		for _, c := range copyTypedCols {
			f = append(f, c.plain[0])
		}
		plain += strings.Join(f, "\t") + "\n"
	}
	bad := map[string][]string{
		"i": {"2147483648", "1.5", "x", ""}, "s": {"32768", "-32769"}, "f": {"1e400", "1_0"}, "r": {"3.5e38", "1e-50"},
		"ts": {"2026-02-30 00:00:00", "2026-03-04 25:00:00", "garbage", "0000-01-01"}, "tz": {"2026-03-04 05:06:07+99"},
		"d": {"2026-13-01", "20261301"}, "tm": {"24:00:01"}, "ttz": {"05:06:07+20"}, "b": {"maybe"},
		"n": {"123456789.0", "abc"}, "u": {"."}, "v": {"abcdef", "héllo!"}, "big": {"99999999999999999999"},
		"j": {`{"a" 1}`, `{`, `{"a": "\\u0000"}`, `[1e131072]`, `[0e-16384]`, `"\\ud800"`}, "iv": {"1 fortnight"},
	}
	for col, vals := range bad {
		for _, v := range vals {
			var f []string
			for i, c := range copyTypedCols {
				if names[i] == col {
					f = append(f, v)
				} else {
					f = append(f, c.plain[0])
				}
			}
			data := plain + strings.Join(f, "\t") + "\n"
			var codes [2]string
			for k, conn := range []*pgx.Conn{pgc, sdb} {
				_, err := copyIn(conn, "COPY ctbad FROM STDIN", data)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) {
					t.Fatalf("%s = %q: %v", col, v, err)
				}
				codes[k] = pe.Code
			}
			if codes[0] != codes[1] {
				t.Errorf("%s = %q: streamdb SQLSTATE %s, PostgreSQL %s", col, v, codes[1], codes[0])
			}
		}
	}
	if d := diffWithPG(t, sdb, pgc, "SELECT count(*) FROM ctbad"); d != "" {
		t.Errorf("a failed COPY kept rows\n%s", d)
	}
}
