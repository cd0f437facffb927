package sql

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// typedTable has a column of every type fastLines parses besides BIGINT
// and TEXT: its rows are compared between the fast and the general path.
var typedTable = &storage.TableDef{ID: 3, Name: "ty", Kind: storage.KindStream, Partitions: 1, Columns: []storage.ColumnDef{
	{Name: "i", Type: types.TInt32}, {Name: "s", Type: types.TInt16}, {Name: "f", Type: types.TFloat64}, {Name: "r", Type: types.TFloat32},
	{Name: "ts", Type: types.TTimestamp}, {Name: "tz", Type: types.TTimestampTZ}, {Name: "d", Type: types.TDate},
	{Name: "tm", Type: types.T{Kind: types.Time}}, {Name: "ttz", Type: types.T{Kind: types.TimeTZ}}, {Name: "b", Type: types.TBool},
	{Name: "n", Type: types.T{Kind: types.Numeric, Prec: 10, Scale: 2}}, {Name: "u", Type: types.T{Kind: types.Numeric, Scale: types.UnconstrainedScale}},
	{Name: "v", Type: types.T{Kind: types.Text, Prec: 5}}, {Name: "big", Type: types.TInt64},
	{Name: "j", Type: types.T{Kind: types.JSONB}}, {Name: "js", Type: types.T{Kind: types.JSON}}, {Name: "iv", Type: types.T{Kind: types.Interval}}}}

// typedFields are, per column of typedTable, values the fast path takes
// (first) and values it must leave to the general path, which accepts or
// refuses them with PostgreSQL's rules.
var typedFields = [][]string{
	{"7", "-2147483648", "2147483647", "2147483648", "+5", " 9", "0012", "1e3", "x"},
	{"12", "-32768", "32767", "32768", "-32769", "1.5"},
	{"1.5", "-0.25", "1e10", "3", "Infinity", "-inf", "NaN", "1e400", "0x10", "1_0", " 2.5 ", "1e-400"},
	{"1.5", "0.1", "3.4e38", "3.5e38", "1e-50", "nan"},
	{"2026-03-04 05:06:07", "2026-03-04 05:06:07.123456", "2026-03-04", "epoch", "infinity", "2026-02-30 00:00:00", "2026-03-04T05:06:07", "2026-03-04 25:00:00", "garbage", "2026-03-04 05:06:07.1234567"},
	{"2026-03-04 05:06:07+00", "2026-03-04 05:06:07+02:30", "2026-03-04 05:06:07", "2026-03-04 05:06:07 Europe/Paris", "-infinity", "2026-03-04 05:06:07+99"},
	{"2026-03-04", "1999-12-31", "0001-01-01 BC", "2026-13-01", "epoch", "20260304"},
	{"05:06:07", "23:59:59.999999", "24:00:00", "24:00:01", "5:6", "x"},
	{"05:06:07+02", "05:06:07-11:30", "05:06:07", "05:06:07+20"},
	{"t", "f", "true", "false", "yes", "off", "1", "TRUE", " t", "maybe"},
	{"1.5", "12345678.99", "0.005", "-1.004", "123456789.0", "1e2", "NaN", "abc"},
	{"1.50", "0.000100", "-3", "1e-3", "123456789012345678901234567890", "Infinity", "."},
	{"abc", "héllo", "abcde", "abcdef", "ab   ", "abcde  ", "héllo!", ""},
	{"1", "-9", "99999999999999999999"},
	{`{"a": 1, "b": [1, 2]}`, `[]`, `"é"`, `null`, `3.50`, `{"a":1,"a":2}`, ` {"x": true} `, `{"k": {"b": [1, {"z": 1, "y": -0.0}], "a": "x"}, "a": 1e2, "é": {}}`, `{`, `{"a" 1}`, `1e1001`},
	{`{"b":1,  "a":2}`, `[1,2]`, `{"a"`, `tru`},
	{"1 day", "02:00:00", "1 year 2 mons", "P1D", "-1 days +2:03", "x"},
}

// randomTypedRecords makes n COPY records for typedTable in text or CSV:
// each field a value the fast path takes, one it leaves, or NULL, and an
// escape or quotes now and then.
func randomTypedRecords(r *rand.Rand, csv bool, n int) []string {
	d := "\t"
	if csv {
		d = ","
	}
	var recs []string
	for range n {
		var fields []string
		for _, vals := range typedFields {
			var f string
			switch k := r.IntN(60); {
			case k == 0:
				if !csv {
					f = `\N`
				}
			case k == 1:
				f = vals[r.IntN(len(vals))]
				if csv {
					f = `"` + f + `"`
				} else if len(f) > 1 {
					f = f[:1] + `\` + f[1:] // an escape the fast path leaves
				}
			case k < 5:
				f = vals[r.IntN(len(vals))]
			default:
				f = vals[r.IntN(min(2, len(vals)))]
			}
			if csv && strings.ContainsAny(f, `",`) && f[0] != '"' { // JSON: quoted as CSV writers quote it
				f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
			fields = append(fields, f)
		}
		recs = append(recs, strings.Join(fields, d)+"\n")
	}
	return recs
}

// parseTyped parses data, cut into chunks of n bytes, into typedTable
// with the fast path on or off, and returns the rows in text output form
// and the error (code, message and detail).
func parseTyped(t testing.TB, opts copyOpts, data []byte, n int, fast bool) (rows []string, errText string) {
	cols := make([]int, len(typedTable.Columns))
	for i := range cols {
		cols[i] = i
	}
	c := newCopyIn(nil, typedTable, cols, opts)
	if fast && !c.fast && !opts.csv { // CSV quotes JSON: that table takes the general path
		t.Fatal("typedTable is not parsed by fastLines")
	}
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
				ct := typedTable.Columns[i].Type
				if d := types.DatumAt(a, r, ct); d.Null {
					sb.WriteString("NULL")
				} else {
					sb.Write(types.AppendText(nil, d, ct))
				}
			}
			rows = append(rows, sb.String())
		}
	}
	return rows, errText
}

// TestCopyFastPathTypedSameRows: over a column of every type the fast
// path parses (INT, SMALLINT, DOUBLE PRECISION, REAL, TIMESTAMP(TZ),
// DATE, TIME(TZ), BOOLEAN, NUMERIC(p,s), NUMERIC, VARCHAR(n), BIGINT,
// JSONB, JSON, INTERVAL), the
// fast path gives exactly the general path's rows and first error, in
// text and CSV, however the input is cut; inputs without errors too.
func TestCopyFastPathTypedSameRows(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for _, o := range []map[string]string{{}, {"format": "csv"}, {"null": "NA"}} {
		opts := mustOpts(t, o)
		csv := o["format"] == "csv"
		fastRows := 0
		for trial := range 20 {
			recs := randomTypedRecords(r, csv, 150)
			if trial%2 == 0 {
				keep := recs[:0]
				for _, rec := range recs {
					if _, e := parseTyped(t, opts, []byte(rec), len(rec), false); e == "" {
						keep = append(keep, rec)
					}
				}
				recs = keep
			}
			data := []byte(strings.Join(recs, ""))
			wantRows, wantErr := parseTyped(t, opts, data, len(data), false)
			for _, n := range []int{len(data), 1, 5, 64, 4096} {
				rows, errText := parseTyped(t, opts, data, n, true)
				if errText != wantErr {
					t.Fatalf("%v trial %d, chunks of %d: error %q, general path %q", o, trial, n, errText, wantErr)
				}
				if !reflect.DeepEqual(rows, wantRows) {
					for i := range min(len(rows), len(wantRows)) {
						if rows[i] != wantRows[i] {
							t.Fatalf("%v trial %d, chunks of %d: row %d\n fast:    %s\n general: %s", o, trial, n, i, rows[i], wantRows[i])
						}
					}
					t.Fatalf("%v trial %d, chunks of %d: %d rows, general path %d", o, trial, n, len(rows), len(wantRows))
				}
			}
			fastRows += len(wantRows)
		}
		t.Logf("%v: %d rows compared", o, fastRows)
	}
}

// FuzzCopyFastPathTyped is TestCopyFastPathTypedSameRows on any input.
func FuzzCopyFastPathTyped(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 5))
	f.Add([]byte(strings.Join(randomTypedRecords(r, false, 4), "")), uint8(7), false)
	f.Add([]byte(strings.Join(randomTypedRecords(r, true, 4), "")), uint8(3), true)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, csv bool) {
		o := map[string]string{}
		if csv {
			o["format"] = "csv"
		}
		opts := mustOpts(t, o)
		wantRows, wantErr := parseTyped(t, opts, data, len(data), false)
		rows, errText := parseTyped(t, opts, data, int(chunk)+1, true)
		if errText != wantErr || !reflect.DeepEqual(rows, wantRows) {
			t.Fatalf("fast path: %q, %q; general path: %q, %q", rows, errText, wantRows, wantErr)
		}
	})
}
