package sqllogic

import (
	"bytes"
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

// TestCopyParsePG: COPY FROM STDIN parses what PostgreSQL 15 parses, to the
// same rows, and refuses what it refuses, with the same SQLSTATE. Both
// servers get the same bytes through pgx's CopyFrom (64 KiB CopyData
// messages) into (a BIGINT, b TEXT, c BIGINT), in text and CSV, with
// HEADER, a NULL string, a delimiter, CRLF line ends and a column list
// that reorders the columns. Most lines are plain (streamdb's fast path
// takes them), mixed with NULLs, escapes, quotes, signs, spaces and
// 19-digit integers (its general path), so both paths are compared with
// the oracle on the wire.
func TestCopyParsePG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		// The parse runs on the connection's goroutine alone; the race
		// run (-short) has the other COPY tests.
		t.Skip("-short: PostgreSQL and 100K rows")
	}
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	r := rand.New(rand.NewPCG(19, 2026))
	cases := []struct {
		name, cols, opts string
		csv, crlf        bool
		delim            string
	}{
		{name: "text", delim: "\t"},
		{name: "text_crlf", delim: "\t", crlf: true},
		{name: "text_null", opts: "(NULL 'NA')", delim: "\t"},
		{name: "text_cols", cols: "(c, b, a)", delim: "\t"},
		{name: "csv", opts: "(FORMAT csv)", csv: true, delim: ","},
		{name: "csv_crlf", opts: "(FORMAT csv)", csv: true, crlf: true, delim: ","},
		{name: "csv_header", opts: "(FORMAT csv, HEADER true)", csv: true, delim: ","},
		{name: "csv_delim", opts: "(FORMAT csv, DELIMITER '|', NULL 'NA')", csv: true, delim: "|"},
		{name: "csv_cols", cols: "(b, c, a)", opts: "(FORMAT csv)", csv: true, delim: ","},
		{name: "text_last", cols: "(a, c, b)", delim: "\t", crlf: true},
		{name: "csv_last", cols: "(a, c, b)", opts: "(FORMAT csv)", csv: true, crlf: true, delim: ","},
	}
	for i, c := range cases {
		table := fmt.Sprintf("cp%d", i)
		for _, conn := range []*pgx.Conn{sdb, pgc} {
			mustExec(t, conn, "", "CREATE TABLE "+table+" (a BIGINT, b TEXT, c BIGINT)")
		}
		// Column kinds in the order the lines give them.
		order := []bool{true, false, true} // true: BIGINT
		switch c.cols {
		case "(c, b, a)":
			order = []bool{true, false, true}
		case "(b, c, a)":
			order = []bool{false, true, true}
		case "(a, c, b)":
			order = []bool{true, true, false}
		}
		null := `\N`
		if c.csv {
			null = ""
		}
		if strings.Contains(c.opts, "'NA'") {
			null = "NA"
		}
		var data bytes.Buffer
		if strings.Contains(c.opts, "HEADER") {
			data.WriteString("x" + c.delim + "y" + c.delim + "z\n")
		}
		eol := "\n"
		if c.crlf {
			eol = "\r\n"
		}
		rows := 8000
		for range rows {
			for f, isInt := range order {
				if f > 0 {
					data.WriteString(c.delim)
				}
				if isInt {
					data.WriteString(copyPGInt(r, c.csv, null))
				} else {
					data.WriteString(copyPGText(r, c.csv, null, c.delim))
				}
			}
			data.WriteString(eol)
		}
		stmt := "COPY " + table + " " + c.cols + " FROM STDIN " + c.opts
		for _, side := range []struct {
			name string
			conn *pgx.Conn
		}{{"PostgreSQL", pgc}, {"streamdb", sdb}} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			tag, err := side.conn.PgConn().CopyFrom(ctx, bytes.NewReader(data.Bytes()), stmt)
			cancel()
			if err != nil {
				t.Fatalf("%s: %s: %v", c.name, side.name, err)
			}
			if tag.RowsAffected() != int64(rows) {
				t.Fatalf("%s: %s: %s, want %d rows", c.name, side.name, tag, rows)
			}
		}
		if d := diffWithPG(t, sdb, pgc, "SELECT a, b, c FROM "+table); d != "" {
			t.Errorf("%s: COPY %s parsed differently from PostgreSQL\n%s", c.name, c.opts, d)
		}
	}

	// Bad input: refused by both, with PostgreSQL's SQLSTATE, and nothing
	// of the failed COPY is kept. The bad line comes after plain ones.
	mustExec(t, pgc, "", "CREATE TABLE bad (a BIGINT, b TEXT, c BIGINT NOT NULL)")
	mustExec(t, sdb, "", "CREATE TABLE bad (a BIGINT, b TEXT, c BIGINT NOT NULL)")
	plain := strings.Repeat("1\tx\t2\n", 1000)
	for _, b := range []struct{ opts, line string }{
		{"", "9999999999999999999\tx\t1\n"},
		{"", "12a\tx\t1\n"},
		{"", "\tx\t1\n"},
		{"", "1\tx\n"},
		{"", "1\tx\t2\t3\n"},
		{"", "1\tx\t\\N\n"},
		{"(FORMAT csv)", "1,\"x,2\n"},
		{"(FORMAT csv)", "1,x,\n"},
		{"(FORMAT csv)", "-,x,1\n"},
	} {
		data := plain + b.line
		if b.opts != "" {
			data = strings.ReplaceAll(plain, "\t", ",") + b.line
		}
		var codes [2]string
		for i, conn := range []*pgx.Conn{pgc, sdb} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(data), "COPY bad FROM STDIN "+b.opts)
			cancel()
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("%q %s: side %d: want an error, got %v", b.line, b.opts, i, err)
			}
			codes[i] = pe.Code
		}
		if codes[0] != codes[1] {
			t.Errorf("%q %s: SQLSTATE %s, PostgreSQL %s", b.line, b.opts, codes[1], codes[0])
		}
	}
	if rows, err := queryRows(sdb, "SELECT count(*) FROM bad"); err != nil || rows[0] != "'0'" {
		t.Errorf("failed COPYs left rows: %v %v", rows, err)
	}
}

// copyPGInt is a BIGINT field PostgreSQL accepts: mostly plain digits,
// sometimes NULL, a sign, surrounding spaces or 19 digits.
func copyPGInt(r *rand.Rand, csv bool, null string) string {
	switch r.IntN(20) {
	case 0:
		return null
	case 1:
		return fmt.Sprint(-r.Int64N(1 << 40))
	case 2:
		return "+" + fmt.Sprint(r.Int64N(1000))
	case 3:
		return " " + fmt.Sprint(r.Int64N(1000)) + " "
	case 4:
		return []string{"9223372036854775807", "-9223372036854775808", "1000000000000000000"}[r.IntN(3)]
	case 5:
		if csv {
			return `"` + fmt.Sprint(r.Int64N(1000)) + `"`
		}
	}
	return fmt.Sprint(r.Int64N(1_000_000))
}

// copyPGText is a TEXT field PostgreSQL reads back as some string:
// mostly plain, sometimes NULL, empty, escaped or quoted, holding the
// delimiter, a quote, a newline or non-ASCII letters.
func copyPGText(r *rand.Rand, csv bool, null, delim string) string {
	switch r.IntN(16) {
	case 0:
		return null
	case 1:
		if csv {
			return `""` // empty, not NULL
		}
		return ""
	case 2:
		if csv {
			return `"a` + delim + `b""c` + "\n" + `d"`
		}
		return `a\tb\\c\nd`
	case 3:
		return "héllo wörld"
	case 4:
		if csv {
			return `"NA"` // quoted: the string, not NULL
		}
		return `\x41\102`
	case 5:
		return "ends with space "
	}
	return fmt.Sprintf("t%d", r.IntN(10000))
}
