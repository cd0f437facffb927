package sql

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// TestSplitText checks COPY's text format: fields split on the delimiter,
// backslash escapes (an escaped delimiter is data), and \N for NULL.
func TestSplitText(t *testing.T) {
	c := &copyIn{opts: copyOpts{delim: '\t', null: `\N`}}
	for _, tc := range []struct {
		line string
		want []any // string, or nil for NULL
	}{
		{"a\tb\tc", []any{"a", "b", "c"}},
		{"a\\\tb\tc", []any{"a\tb", "c"}},
		{`\N` + "\t" + `x\\y` + "\t", []any{nil, `x\y`, ""}},
		{`back\\` + "\t" + `\n\t\x41\101`, []any{`back\`, "\n\tAA"}},
		{`\\N`, []any{`\N`}},
	} {
		if err := c.splitText([]byte(tc.line)); err != nil {
			t.Fatal(err)
		}
		var got []any
		for _, f := range c.fields {
			if f == nil {
				got = append(got, nil)
			} else {
				got = append(got, string(f))
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.line, got, tc.want)
		}
	}
}

// textTable is a stream of n TEXT columns, for parsing tests.
func textTable(n int) *storage.TableDef {
	t := &storage.TableDef{Name: "t", Kind: storage.KindStream}
	for i := range n {
		t.Columns = append(t.Columns, storage.ColumnDef{Name: fmt.Sprintf("c%d", i), Type: types.T{Kind: types.Text}})
	}
	return t
}

// parseChunks parses data, cut into chunks of size n, as COPY into a table
// of ncols TEXT columns, and returns the rows (nil for NULL) and the parser.
func parseChunks(t testing.TB, opts copyOpts, ncols int, data []byte, n int) ([][]any, *copyIn, error) {
	tab := textTable(ncols)
	cols := make([]int, ncols)
	for i := range cols {
		cols[i] = i
	}
	c := newCopyIn(nil, tab, cols, opts)
	c.stageAt = math.MaxInt // no engine to stage in: keep every batch
	defer c.release()
	for len(data) > 0 {
		k := min(n, len(data))
		if err := c.Write(data[:k]); err != nil {
			return nil, c, err
		}
		data = data[k:]
	}
	if err := c.finishInput(); err != nil {
		return nil, c, err
	}
	if err := c.flushBatch(); err != nil {
		return nil, c, err
	}
	var rows [][]any
	for _, rec := range c.recs {
		for r := range int(rec.NumRows()) {
			var row []any
			for _, a := range rec.Columns() {
				if a.IsNull(r) {
					row = append(row, nil)
				} else {
					row = append(row, a.(*array.String).Value(r))
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, c, nil
}

func mustOpts(t testing.TB, o map[string]string) copyOpts {
	opts, err := copyOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestCopyChunking: every way of cutting the input into CopyData chunks
// parses to the same rows: quoted fields holding newlines, delimiters and
// doubled quotes, CRLF line ends, HEADER, NULL, an escape other than the
// quote, the end marker, a last line without a newline.
func TestCopyChunking(t *testing.T) {
	csv := map[string]string{"format": "csv"}
	for _, tc := range []struct {
		opts map[string]string
		in   string
		want [][]any
	}{
		{csv, "a,\"b,\nc\"\r\n\"x\"\"y\",\r\n\"\",z", [][]any{{"a", "b,\nc"}, {`x"y`, nil}, {"", "z"}}},
		{csv, "a,\"b\rc\"\rx,y\r", [][]any{{"a", "b\rc"}, {"x", "y"}}},
		{map[string]string{"format": "csv", "header": "true"}, "h1,h2\n1,2\n", [][]any{{"1", "2"}}},
		{map[string]string{"format": "csv", "null": "NA"}, "NA,\"NA\"\n,x\n", [][]any{{nil, "NA"}, {"", "x"}}},
		{map[string]string{"format": "csv", "escape": `\`}, "\"a\\\"b\\\\\",\"\n\"\n", [][]any{{`a"b\`, "\n"}}},
		{csv, "1,2\n\\.\n3,4\n", [][]any{{"1", "2"}}},
		{map[string]string{}, "a\\tb\t\\N\nc\td", [][]any{{"a\tb", nil}, {"c", "d"}}},
		{map[string]string{}, "1\t2\r\n\\.\r\n", [][]any{{"1", "2"}}},
		{map[string]string{}, "a\\\nb\tc\\\\\nd\t\\\\\\\ne\n", [][]any{{"a\nb", `c\`}, {"d", "\\\ne"}}},
	} {
		opts := mustOpts(t, tc.opts)
		for n := 1; n <= len(tc.in); n++ {
			got, _, err := parseChunks(t, opts, 2, []byte(tc.in), n)
			if err != nil {
				t.Fatalf("%q in chunks of %d: %v", tc.in, n, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%q in chunks of %d: got %q, want %q", tc.in, n, got, tc.want)
			}
		}
	}
}

// TestCopyBadCSV: malformed records are errors whatever the chunking.
func TestCopyBadCSV(t *testing.T) {
	opts := mustOpts(t, map[string]string{"format": "csv"})
	for _, in := range []string{"\"abc\n", "\"a\"b,c\n", "a,b,c\n", "a\n"} {
		for n := 1; n <= len(in); n++ {
			if _, _, err := parseChunks(t, opts, 2, []byte(in), n); err == nil {
				t.Fatalf("%q in chunks of %d: no error", in, n)
			}
		}
	}
}

// singleLine is a one-record input of about size bytes: in CSV, one quoted
// field full of delimiters, doubled quotes and newlines, then a plain one;
// in text, one field with escapes, then a plain one.
func singleLine(csv bool, size int) (data []byte, field int) {
	unit, plain := []byte("ab,\"\"c\n"), 6 // decodes to 6 bytes
	if !csv {
		unit, plain = []byte(`ab\tc\\`), 5
	}
	n := size / len(unit)
	data = make([]byte, 0, n*len(unit)+8)
	if csv {
		data = append(data, '"')
	}
	for range n {
		data = append(data, unit...)
	}
	if csv {
		data = append(data, '"', ',')
	} else {
		data = append(data, '\t')
	}
	data = append(data, "x\n"...)
	return data, n * plain
}

// workBound is how many times over its size the scanner may scan, and
// copy, an input.
const workBound = 3

// TestCopyScanLinear: a single 10 MB and 100 MB record, in 4 KB chunks as
// psql sends them, is scanned and copied a bounded number of times per byte
// (it was rescanned and recopied for every chunk: quadratic).
func TestCopyScanLinear(t *testing.T) {
	for _, csv := range []bool{true, false} {
		for _, mb := range []int{10, 100} {
			if mb == 100 && testing.Short() {
				continue
			}
			data, field := singleLine(csv, mb<<20)
			opts := mustOpts(t, map[string]string{"format": map[bool]string{true: "csv", false: "text"}[csv]})
			rows, c, err := parseChunks(t, opts, 2, data, 4<<10)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || len(rows[0][0].(string)) != field || rows[0][1] != "x" {
				t.Fatalf("csv=%v %d MB: got %d rows", csv, mb, len(rows))
			}
			t.Logf("csv=%v %d MB: scanned %.2f, copied %.2f times the input", csv, mb,
				float64(c.sc.scanned)/float64(len(data)), float64(c.sc.copied)/float64(len(data)))
			if c.sc.scanned > workBound*int64(len(data)) || c.sc.copied > workBound*int64(len(data)) {
				t.Fatalf("csv=%v %d MB: scanned %d, copied %d bytes of %d: not linear", csv, mb, c.sc.scanned, c.sc.copied, len(data))
			}
		}
	}
}

// BenchmarkCopySingleLine parses one 10 MB or 100 MB record in 4 KB chunks
// and reports MB/s; it fails if the scanner's work is not linear in the
// input, which is what the timing would otherwise have to show.
func BenchmarkCopySingleLine(b *testing.B) {
	for _, format := range []string{"csv", "text"} {
		for _, mb := range []int{10, 100} {
			b.Run(fmt.Sprintf("%s/%dMB", format, mb), func(b *testing.B) {
				data, _ := singleLine(format == "csv", mb<<20)
				opts := mustOpts(b, map[string]string{"format": format})
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					_, c, err := parseChunks(b, opts, 2, data, 4<<10)
					if err != nil {
						b.Fatal(err)
					}
					if c.sc.scanned > workBound*int64(len(data)) || c.sc.copied > workBound*int64(len(data)) {
						b.Fatalf("scanned %d, copied %d bytes of %d: not linear", c.sc.scanned, c.sc.copied, len(data))
					}
				}
			})
		}
	}
}

// TestCopyTextChecks: invalid UTF-8, NUL and line ends of another kind
// than the first line's are PostgreSQL's errors whatever the chunking
// (TestTextInputPG compares them with PostgreSQL over the wire).
func TestCopyTextChecks(t *testing.T) {
	text, csv := map[string]string{}, map[string]string{"format": "csv"}
	for _, tc := range []struct {
		opts map[string]string
		in   string
		want string // the error's code and message
	}{
		{text, "a\tb\nab\xffcd\tx\n", `22021 invalid byte sequence for encoding "UTF8": 0xff`},
		{text, "a\t\xe2\x82", `22021 invalid byte sequence for encoding "UTF8": 0xe2 0x82`},
		{text, "a\t\xe2\x82x\n", `22021 invalid byte sequence for encoding "UTF8": 0xe2 0x82 0x78`},
		{text, "a\t\xed\xa0\x80\n", `22021 invalid byte sequence for encoding "UTF8": 0xed 0xa0 0x80`},
		{text, "a\tb\x00c\n", `22021 invalid byte sequence for encoding "UTF8": 0x00`},
		{text, "a\tb\\000c\n", `22021 invalid byte sequence for encoding "UTF8": 0x00`},
		{text, "a\tb\\xc3\n", `22021 invalid byte sequence for encoding "UTF8": 0xc3`},
		{csv, "a,\"\xc0\xaf\"\n", `22021 invalid byte sequence for encoding "UTF8": 0xc0 0xaf`},
		{text, "a\tb\nc\rd\te\n", "22P04 literal carriage return found in data"},
		{text, "a\tb\r\nc\td\n", "22P04 literal newline found in data"},
		{text, "a\tb\rc\td\n", "22P04 literal newline found in data"},
		{csv, "a,b\nc\rd,e\n", "22P04 unquoted carriage return found in data"},
		{csv, "a,b\r\nc,d\n", "22P04 unquoted newline found in data"},
	} {
		opts := mustOpts(t, tc.opts)
		for n := 1; n <= len(tc.in); n++ {
			_, _, err := parseChunks(t, opts, 2, []byte(tc.in), n)
			se := sqlerr.As(err)
			if err == nil || se.Code+" "+se.Msg != tc.want {
				t.Fatalf("%q in chunks of %d: %v, want %s", tc.in, n, err, tc.want)
			}
		}
	}
}
