package sql

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// mixedTable is a stream of (BIGINT, TEXT, BIGINT): every column is one
// fastLines can parse.
var mixedTable = &storage.TableDef{ID: 1, Name: "m", Kind: storage.KindStream, Partitions: 1,
	Columns: []storage.ColumnDef{{Name: "a", Type: types.TInt64}, {Name: "b", Type: types.T{Kind: types.Text}}, {Name: "c", Type: types.TInt64}}}

// oneText is a stream of one TEXT column, where a line holds one field.
var oneText = &storage.TableDef{ID: 2, Name: "o", Kind: storage.KindStream, Partitions: 1,
	Columns: []storage.ColumnDef{{Name: "b", Type: types.T{Kind: types.Text}}}}

// parseMixed parses data, cut into chunks of n bytes, into mixedTable's
// columns cols (oneText's if there is one) (in the order the lines give them) with
// the fast path on or off, and returns the rows as strings ("NULL" for
// NULL), the error (code and detail, which names the line), and how many
// rows the fast path took.
func parseMixed(t testing.TB, opts copyOpts, cols []int, data []byte, n int, fast bool) (rows []string, errText string) {
	tab := mixedTable
	if len(cols) == 1 {
		tab = oneText
	}
	c := newCopyIn(nil, tab, cols, opts)
	c.stageAt = math.MaxInt
	c.fast = c.fast && fast
	defer c.release()
	errText = copyAll(c, data, n)
	for _, rec := range c.recs {
		for r := range int(rec.NumRows()) {
			var sb strings.Builder
			for i, a := range rec.Columns() {
				if i > 0 {
					sb.WriteByte('|')
				}
				switch {
				case a.IsNull(r):
					sb.WriteString("NULL")
				case tab.Columns[i].Type.Kind == types.Text:
					sb.WriteString(a.(*array.String).Value(r))
				default:
					fmt.Fprint(&sb, a.(*array.Int64).Value(r))
				}
			}
			rows = append(rows, sb.String())
		}
	}
	if fast && c.fast && tab == mixedTable {
		// Every batch was made from the int columns' own buffers.
		for _, rec := range c.recs {
			if rec.Column(0).DataType().ID() != types.TInt64.Arrow().ID() {
				t.Fatalf("column a is %s", rec.Column(0).DataType())
			}
		}
	}
	return rows, errText
}

// randomCopyLines makes COPY input for mixedTable: mostly plain lines the
// fast path takes, and lines it must leave to the general path (NULLs,
// escapes, quotes, 19-digit and out-of-range integers, signs, CRLF, wrong
// field counts, empty fields), in text or CSV.
func randomCopyLines(r *rand.Rand, csv bool, lines int) []byte {
	return []byte(strings.Join(randomCopyRecords(r, csv, []int{0, 1, 2}, lines), ""))
}

// randomCopyRecords is randomCopyLines as records, each with its newline
// (a CSV record may hold more), for mixedTable's columns cols.
func randomCopyRecords(r *rand.Rand, csv bool, cols []int, lines int) []string {
	d := "\t"
	if csv {
		d = ","
	}
	var recs []string
	intField := func() string {
		switch r.IntN(14) {
		case 0:
			if csv {
				return ""
			}
			return `\N`
		case 1:
			return "-" + fmt.Sprint(r.Int64N(1000))
		case 2:
			return "+7"
		case 3:
			// 19 digits: the general path, in range or not.
			return []string{"1234567890123456789", "-9223372036854775808", "9999999999999999999"}[r.IntN(3)]
		case 4:
			return "99999999999999999999" // out of range: an error
		case 5:
			return " 12"
		case 6:
			if csv {
				return `"42"`
			}
			return `4\2`
		default:
			return fmt.Sprint(r.Int64N(1_000_000))
		}
	}
	textField := func() string {
		switch r.IntN(12) {
		case 0:
			if csv {
				return ""
			}
			return `\N`
		case 1:
			if csv {
				return `"x,""y"""`
			}
			return `x\ty`
		case 2:
			if csv {
				return `"multi` + "\n" + `line"`
			}
			return `back\\slash`
		case 3:
			return "héllo"
		case 4:
			return "NA"
		default:
			return fmt.Sprintf("t%d", r.IntN(100))
		}
	}
	for range lines {
		if r.IntN(150) == 0 {
			recs = append(recs, "\\.\n") // the end of the data
			continue
		}
		var fields []string
		for _, col := range cols {
			if len(cols) > 1 && mixedTable.Columns[col].Type.Kind == types.Int64 {
				fields = append(fields, intField())
			} else {
				fields = append(fields, textField())
			}
		}
		switch r.IntN(40) {
		case 0:
			fields = fields[:len(fields)-1]
		case 1:
			fields = append(fields, "9")
		}
		rec := strings.Join(fields, d)
		if r.IntN(20) == 0 {
			rec += "\r"
		}
		recs = append(recs, rec+"\n")
	}
	return recs
}

// TestCopyFastPathSameRows: the fast path parses exactly what the general
// path does (rows, NULLs, and the first error with its line number), for
// text and CSV, with and without HEADER and a NULL string, however the
// input is cut into chunks. Inputs without errors are checked too, by
// dropping the lines that make one.
func TestCopyFastPathSameRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, o := range []map[string]string{
		{},
		{"format": "csv"},
		{"format": "csv", "header": "true"},
		{"format": "csv", "null": "NA"},
		{"null": "NA"},
		{"delimiter": "|"},
		{"format": "csv", "order": "a,c,b"}, // the last field is TEXT
		{"order": "a,c,b"},
		{"format": "csv", "order": "b,a,c"}, // the first field is TEXT
		{"format": "csv", "order": "b"},     // oneText: a line is one TEXT field
		{"order": "b"},
	} {
		cols := map[string][]int{"": {0, 1, 2}, "a,c,b": {0, 2, 1}, "b,a,c": {1, 0, 2}, "b": {0}}[o["order"]]
		delete(o, "order")
		opts := mustOpts(t, o)
		csv := o["format"] == "csv"
		for trial := range 30 {
			recs := randomCopyRecords(r, csv, cols, 200)
			if o["delimiter"] == "|" {
				for i := range recs {
					recs[i] = strings.ReplaceAll(recs[i], "\t", "|")
				}
			}
			if trial%2 == 0 {
				// Without the records that fail, so that whole inputs parse.
				keep := recs[:0]
				head := ""
				if o["header"] == "true" {
					head = "h\n"
				}
				for _, rec := range recs {
					if _, e := parseMixed(t, opts, cols, []byte(head+rec), len(head+rec), false); e == "" {
						keep = append(keep, rec)
					}
				}
				recs = keep
			}
			data := []byte(strings.Join(recs, ""))
			wantRows, wantErr := parseMixed(t, opts, cols, data, len(data), false)
			for _, n := range []int{len(data), 1, 3, 17, 64, 4096} {
				rows, errText := parseMixed(t, opts, cols, data, n, true)
				if errText != wantErr {
					t.Fatalf("%v trial %d, chunks of %d: error %q, general path %q", o, trial, n, errText, wantErr)
				}
				if !reflect.DeepEqual(rows, wantRows) {
					t.Fatalf("%v trial %d, chunks of %d: %d rows differ from the general path's %d", o, trial, n, len(rows), len(wantRows))
				}
			}
			if trial == 0 {
				t.Logf("%v: %d rows, error %q", o, len(wantRows), wantErr)
			}
		}
	}
}

// TestCopyFastPathBatches: a COPY of plain lines longer than a batch is cut
// into full batches by the fast path, with the BIGINT values and their
// NULLs (from lines the general path took) in place.
func TestCopyFastPathBatches(t *testing.T) {
	opts := mustOpts(t, map[string]string{"format": "csv"})
	var b strings.Builder
	rows := copyBatchRows*2 + 5
	for i := range rows {
		if i%1000 == 999 {
			fmt.Fprintf(&b, ",x%d,%d\n", i, -i)
		} else {
			fmt.Fprintf(&b, "%d,x%d,%d\n", i, i, -i)
		}
	}
	data := []byte(b.String())
	c := newCopyIn(nil, mixedTable, []int{0, 1, 2}, opts)
	c.stageAt = math.MaxInt
	defer c.release()
	for len(data) > 0 {
		k := min(64<<10, len(data))
		if err := c.Write(data[:k]); err != nil {
			t.Fatal(err)
		}
		data = data[k:]
	}
	if err := c.flushBatch(); err != nil {
		t.Fatal(err)
	}
	if len(c.recs) != 3 || c.recs[0].NumRows() != copyBatchRows || c.recs[2].NumRows() != 5 {
		t.Fatalf("%d batches", len(c.recs))
	}
	i := 0
	for _, rec := range c.recs {
		a, cc := rec.Column(0).(*array.Int64), rec.Column(2).(*array.Int64)
		for r := range a.Len() {
			if null := i%1000 == 999; a.IsNull(r) != null || !null && a.Value(r) != int64(i) || cc.Value(r) != int64(-i) {
				t.Fatalf("row %d: a=%v (null %v), c=%d", i, a.Value(r), a.IsNull(r), cc.Value(r))
			}
			i++
		}
	}
	if c.line != rows {
		t.Fatalf("line count %d, want %d", c.line, rows)
	}
}

// FuzzCopyFastPath: on any input, in text or CSV and cut anywhere, the fast
// path and the general path parse the same rows and fail the same way.
func FuzzCopyFastPath(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	f.Add(randomCopyLines(r, false, 5), uint8(7), false)
	f.Add(randomCopyLines(r, true, 5), uint8(3), true)
	f.Add([]byte("1\tx\t2\n\\.\n3\ty\t4\n"), uint8(5), false)
	// Multi-byte characters cut by chunks, invalid UTF-8, NUL and
	// carriage returns: what the fast path leaves to the general one.
	f.Add([]byte("1\t\xc3\xa9t\xc3\xa9\t2\n3\t\xe2\x82\xac\t4\n5\tab\xffcd\t6\n"), uint8(2), false)
	f.Add([]byte("1,\xf0\x9f\x98\x80,2\n3,\xed\xa0\x80,4\n"), uint8(4), true)
	f.Add([]byte("1\tx\x00y\t2\n"), uint8(3), false)
	f.Add([]byte("1\tx\t2\n3\ta\rb\t4\n"), uint8(6), false)
	f.Add([]byte("1,x,2\r\n3,\"a\rb\",4\r\n5,y,6\n"), uint8(7), true)
	f.Add([]byte("1\tx\t2\r3\ty\t4\r"), uint8(1), false)
	f.Add([]byte("1\tx\\\ny\t2\n3\tz\\\\\t4\n"), uint8(2), false)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, csv bool) {
		o := map[string]string{}
		if csv {
			o["format"] = "csv"
		}
		opts := mustOpts(t, o)
		cols := []int{0, 1, 2}
		if chunk%2 == 1 {
			cols = []int{0, 2, 1}
		}
		wantRows, wantErr := parseMixed(t, opts, cols, data, len(data), false)
		rows, errText := parseMixed(t, opts, cols, data, int(chunk)+1, true)
		if errText != wantErr || !reflect.DeepEqual(rows, wantRows) {
			t.Fatalf("fast path: %q, %q; general path: %q, %q", rows, errText, wantRows, wantErr)
		}
	})
}

// copyAll writes data to c in chunks of n bytes, ends the input and
// completes the last batch, and returns the first error as its code,
// message and detail (which names the line), "" if none.
func copyAll(c *copyIn, data []byte, n int) string {
	err := func() error {
		for len(data) > 0 && n > 0 {
			k := min(n, len(data))
			if err := c.Write(data[:k]); err != nil {
				return err
			}
			data = data[k:]
		}
		if err := c.finishInput(); err != nil {
			return err
		}
		return c.flushBatch()
	}()
	if err == nil {
		return ""
	}
	se := sqlerr.As(err)
	return se.Code + " " + se.Msg + " / " + se.Detail
}
