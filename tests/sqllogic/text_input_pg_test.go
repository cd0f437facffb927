package sqllogic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// textPayloads are byte strings of every class of invalid UTF-8 (and NUL,
// which PostgreSQL refuses in text too), with valid neighbours of each.
var textPayloads = []struct{ name, b string }{
	{"ascii", "plain"},
	{"2-byte", "\xc3\xa9"},
	{"3-byte", "\xe2\x82\xac"},
	{"4-byte", "\xf0\x9f\x98\x80"},
	{"U+FFFD", "\xef\xbf\xbd"},
	{"U+D7FF", "\xed\x9f\xbf"},
	{"U+E000", "\xee\x80\x80"},
	{"U+10FFFF", "\xf4\x8f\xbf\xbf"},
	{"lone 0xff", "\xff"},
	{"lone 0xfe", "\xfe"},
	{"lone continuation", "\x80"},
	{"continuations", "\xbf\x80"},
	{"truncated 2", "\xc3"},
	{"truncated 3 of 2", "\xe2\x82"},
	{"truncated 3 of 1", "\xe2"},
	{"truncated 4 of 3", "\xf0\x9f\x98"},
	{"overlong /", "\xc0\xaf"},
	{"overlong 0xc1", "\xc1\xbf"},
	{"overlong 3", "\xe0\x80\xaf"},
	{"overlong 4", "\xf0\x80\x80\xaf"},
	{"surrogate D800", "\xed\xa0\x80"},
	{"surrogate DFFF", "\xed\xbf\xbf"},
	{"U+110000", "\xf4\x90\x80\x80"},
	{"0xf5 lead", "\xf5\x80\x80\x80"},
	{"5-byte form", "\xf8\x88\x80\x80\x80"},
	{"NUL", "\x00"},
}

// textCase is one input sent to both servers: a statement, its Bind
// parameters or its COPY data.
type textCase struct {
	name string
	run  func(ctx context.Context, c *pgconn.PgConn) error
}

// TestTextInputPG: text that enters the server — a query string, a Bind
// parameter in text or binary format, a COPY line in text or CSV format —
// is accepted or refused as PostgreSQL 15 accepts or refuses the same
// bytes, with its SQLSTATE and message, and what is accepted is stored as
// PostgreSQL stores it. The byte strings cover every class of invalid
// UTF-8 (lone continuation bytes, truncated sequences, overlong forms,
// surrogates, code points above U+10FFFF), NUL, and COPY's line ends
// (bare carriage returns, CRLF, CR-only data, carriage returns in CSV
// quoted fields). A failed COPY keeps nothing: its plain lines come first,
// and every row carries its case's key, so the final comparison of the
// tables shows any row kept by one server and not the other.
func TestTextInputPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, c := range []*pgx.Conn{sdb, pgc} {
		mustExec(t, c, "", "CREATE TABLE tin (a BIGINT, b TEXT)")
	}
	// plain is n plain COPY lines of key k (the fast path takes them),
	// with the delimiter d and line end eol.
	plain := func(k, n int, d, eol string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%d%splain %d%s", k*10000+i, d, i, eol)
		}
		return b.String()
	}
	var cases []textCase
	key := 0
	next := func() int { key++; return key }
	copyCase := func(name, opts, data string) {
		cases = append(cases, textCase{name, func(ctx context.Context, c *pgconn.PgConn) error {
			_, err := c.CopyFrom(ctx, strings.NewReader(data), "COPY tin FROM STDIN "+opts)
			return err
		}})
	}
	for _, p := range textPayloads {
		v := "ab" + p.b + "cd"
		// A NUL cannot be in a query string: the message is malformed
		// (08P01 from both; PostgreSQL keeps the connection, streamdb
		// closes it, as for any malformed message).
		if !strings.Contains(v, "\x00") {
			k := next()
			cases = append(cases, textCase{"query " + p.name, func(ctx context.Context, c *pgconn.PgConn) error {
				return c.Exec(ctx, fmt.Sprintf("INSERT INTO tin VALUES (%d, '%s')", k*10000, v)).Close()
			}})
		}
		for _, f := range []int16{0, 1} {
			k := next()
			cases = append(cases, textCase{fmt.Sprintf("bind format %d %s", f, p.name), func(ctx context.Context, c *pgconn.PgConn) error {
				return c.ExecParams(ctx, "INSERT INTO tin VALUES ($1, $2)",
					[][]byte{fmt.Appendf(nil, "%d", k*10000), []byte(v)}, []uint32{20, 25}, []int16{0, f}, nil).Read().Err
			}})
		}
		k := next()
		cases = append(cases, textCase{"bind bigint " + p.name, func(ctx context.Context, c *pgconn.PgConn) error {
			return c.ExecParams(ctx, "INSERT INTO tin VALUES ($1, 'x')",
				[][]byte{fmt.Appendf(nil, "%d%s", k*10000, p.b)}, []uint32{20}, nil, nil).Read().Err
		}})
		// COPY: after plain lines, so that a failure must drop rows; in a
		// plain field (the fast path's), beside an escape (the general
		// path's), in CSV plain and quoted, and in the last line without
		// a newline.
		k = next()
		copyCase("copy text "+p.name, "", plain(k, 300, "\t", "\n")+fmt.Sprintf("%d\t%s\n", k*10000+9999, v))
		k = next()
		copyCase("copy text escape "+p.name, "", plain(k, 10, "\t", "\n")+fmt.Sprintf("%d\t\\t%s\n", k*10000+9999, v))
		k = next()
		copyCase("copy text last "+p.name, "", plain(k, 10, "\t", "\n")+fmt.Sprintf("%d\t%s", k*10000+9999, v))
		k = next()
		copyCase("copy csv "+p.name, "(FORMAT csv)", plain(k, 300, ",", "\n")+fmt.Sprintf("%d,%s\n", k*10000+9999, v))
		k = next()
		copyCase("copy csv quoted "+p.name, "(FORMAT csv)", plain(k, 10, ",", "\r\n")+fmt.Sprintf("%d,\"%s\"\r\n", k*10000+9999, v))
		k = next()
		copyCase("copy csv header "+p.name, "(FORMAT csv, HEADER true)", "a,"+v+"\n"+plain(k, 10, ",", "\n"))
	}
	// Escapes that make bytes in a text-format field.
	for _, esc := range []string{`\xff`, `\xc3\xa9`, `\xc3`, `\000`, `\x00`, `\303\251`, `\355\240\200`, `\xe2\x82\xac`, `\xe2\x82`} {
		k := next()
		copyCase("copy text escape "+esc, "", plain(k, 10, "\t", "\n")+fmt.Sprintf("%d\tab%scd\n", k*10000+9999, esc))
	}
	// Escapes that make bytes in a string constant.
	for _, esc := range []string{`\xff`, `\xc3\xa9`, `\xc3`, `\000`, `\x00`, `\303\251`, `\355\240\200`, `\u00e9`, `\ud800`, `\ud800\udc00`, `\udc00`, `\ud800x`, `\u0000`, `\u12`, `\U0010ffff`, `\U00110000`, `\x`, `\xg`, `\8`} {
		k := next()
		cases = append(cases, textCase{"query E'' " + esc, func(ctx context.Context, c *pgconn.PgConn) error {
			return c.Exec(ctx, fmt.Sprintf("INSERT INTO tin VALUES (%d, E'ab%scd')", k*10000, esc)).Close()
		}})
	}
	// Line ends.
	for _, le := range []struct{ name, opts, data string }{
		{"bare CR in a field", "", "%d\tplain\n%d\tab\rcd\n"},
		{"bare CR in the first line", "", "%d\tab\rcd\n%d\tx\n"},
		{"CRLF", "", "%d\tx\r\n%d\ty\r\n"},
		{"CRLF then LF", "", "%d\tx\r\n%d\ty\n"},
		{"LF then CRLF", "", "%d\tx\n%d\ty\r\n"},
		{"CR only", "", "%d\tx\r%d\ty\r"},
		{"CR only, last line open", "", "%d\tx\r%d\ty"},
		{"CR then LF", "", "%d\tx\r%d\ty\n"},
		{"CR then CRLF", "", "%d\tx\r%d\ty\r\n"},
		{"CRLF then CR", "", "%d\tx\r\n%d\ty\rz\r\n"},
		{"escaped CR", "", "%d\tx\\\ry\n%d\tz\n"},
		{"trailing CR", "", "%d\tx\n%d\ty\r"},
		{"escaped r", "", "%d\tx\\ry\n%d\tz\n"},
		{"escaped LF", "", "%d\tx\\\ny\n%d\tz\n"},
		{"escaped backslash, LF", "", "%d\tx\\\\\n%d\tz\n"},
		{"three backslashes, LF", "", "%d\tx\\\\\\\ny\n%d\tz\n"},
		{"escaped CRLF", "", "%d\tx\\\r\ny\r\n%d\tz\r\n"},
		{"CSV quoted CR", "(FORMAT csv)", "%d,\"a\rb\"\n%d,\"c\r\nd\"\n"},
		{"CSV quoted CR, CRLF", "(FORMAT csv)", "%d,\"a\rb\"\r\n%d,\"c\r\nd\"\r\n"},
		{"CSV unquoted CR", "(FORMAT csv)", "%d,x\n%d,a\rb\n"},
		{"CSV CR only", "(FORMAT csv)", "%d,x\r%d,\"y\nz\"\r"},
		{"CSV CRLF then LF", "(FORMAT csv)", "%d,x\r\n%d,y\n"},
	} {
		k := next()
		copyCase("copy "+le.name, le.opts, fmt.Sprintf(le.data, k*10000+9998, k*10000+9999))
	}
	// Many multi-byte characters: 64 KiB CopyData chunks cut some of them.
	var big bytes.Buffer
	k := next()
	for i := range 20000 {
		fmt.Fprintf(&big, "%d\t\xc3\xa9t\xc3\xa9 \xe2\x82\xac%d \xf0\x9f\x98\x80\n", k*10000+i%9999, i)
	}
	copyCase("copy multi-byte", "", big.String())

	for _, tc := range cases {
		var errs [2]*pgconn.PgError
		for i, c := range []*pgx.Conn{pgc, sdb} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := tc.run(ctx, c.PgConn())
			cancel()
			if err != nil && !errors.As(err, &errs[i]) {
				t.Fatalf("%s: side %d: %v", tc.name, i, err)
			}
		}
		pe, se := errs[0], errs[1]
		switch {
		case pe == nil && se == nil:
		case pe == nil:
			t.Errorf("%s: streamdb refused it (%s %s), PostgreSQL accepted it", tc.name, se.Code, se.Message)
		case se == nil:
			t.Errorf("%s: streamdb accepted it, PostgreSQL refused it (%s %s)", tc.name, pe.Code, pe.Message)
		case pe.Code != se.Code || pe.Message != se.Message:
			t.Errorf("%s: streamdb: %s %q, PostgreSQL: %s %q", tc.name, se.Code, se.Message, pe.Code, pe.Message)
		}
	}
	if d := diffWithPG(t, sdb, pgc, "SELECT a, b FROM tin"); d != "" {
		t.Errorf("stored rows differ from PostgreSQL's\n%s", d)
	}
	t.Logf("%d cases", len(cases))
}
