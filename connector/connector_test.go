package connector_test

import (
	"errors"
	"fmt"
	"github.com/streamdb/streamdb/connector"
	_ "github.com/streamdb/streamdb/connector/datagen"
	_ "github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/connector/nexmark"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// readAll reads split from pos to its end in batches of at most batch
// events and renders each row as text.
func readAll(t *testing.T, mem memory.Allocator, c connector.Connector, split int, pos connector.Position, batch int) []string {
	t.Helper()
	r, err := c.Open(split, pos, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []string
	for {
		rec, err := r.Read(mem, batch)
		if errors.Is(err, connector.EOF) {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			t.Fatal("an unpaced reader had nothing to read")
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			rows = append(rows, rowString(rec, i))
		}
		rec.Release()
	}
}

func rowString(rec arrow.RecordBatch, i int) string {
	s := ""
	for c := 0; c < int(rec.NumCols()); c++ {
		col := rec.Column(c)
		switch a := col.(type) {
		case *array.Int64:
			s += fmt.Sprint(a.Value(i))
		case *array.String:
			s += a.Value(i)
		case *array.Float64:
			s += fmt.Sprint(a.Value(i))
		case *array.Boolean:
			s += fmt.Sprint(a.Value(i))
		}
		if col.IsNull(i) {
			s += "NULL"
		}
		s += "|"
	}
	return s
}

func bidColumns() []connector.Column { return nexmark.Columns[nexmark.KindBid] }

// TestNexmarkResume: a split reopened at any position reads exactly the
// rows after it, and the splits of a source together hold the events of
// one split, whatever the batch size.
func TestNexmarkResume(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	one, err := connector.New(bidColumns(), map[string]string{"connector": "nexmark", "nexmark.table": "bid", "nexmark.events": "3000", "nexmark.seed": "5"})
	if err != nil {
		t.Fatal(err)
	}
	all := readAll(t, mem, one, 0, 0, 4096)
	if len(all) != 3000/50*46 {
		t.Fatalf("%d bids in 3000 events, want %d", len(all), 3000/50*46)
	}
	small := readAll(t, mem, one, 0, 0, 7)
	if fmt.Sprint(small) != fmt.Sprint(all) {
		t.Fatal("batches of 7 events read other rows than one batch")
	}
	// Resume at event 1234: the bids of events 1234.. are the tail.
	tail := readAll(t, mem, one, 0, 1234, 100)
	skipped := 0
	for n := int64(0); n < 1234; n++ {
		if nexmark.KindOf(n) == nexmark.KindBid {
			skipped++
		}
	}
	if fmt.Sprint(tail) != fmt.Sprint(all[skipped:]) {
		t.Fatalf("resumed at 1234: %d rows, want the last %d", len(tail), len(all)-skipped)
	}
	three, err := connector.New(bidColumns(), map[string]string{"connector": "nexmark", "nexmark.table": "bid", "nexmark.events": "3000", "nexmark.seed": "5", "nexmark.split": "3"})
	if err != nil {
		t.Fatal(err)
	}
	var union []string
	for s := 0; s < 3; s++ {
		end, ok := three.End(s)
		if !ok || end != 1000 {
			t.Fatalf("split %d ends at %d (%v), want 1000", s, end, ok)
		}
		union = append(union, readAll(t, mem, three, s, 0, 333)...)
	}
	sort.Strings(union)
	sorted := append([]string(nil), all...)
	sort.Strings(sorted)
	if fmt.Sprint(union) != fmt.Sprint(sorted) {
		t.Fatal("three splits hold other bids than one split")
	}
}

// TestDatagen: values stay in their ranges, sequences count up and bound
// the source, and a row's values do not depend on where reading started.
func TestDatagen(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cols := []connector.Column{{"id", types.TInt64}, {"sensor", types.TInt32}, {"v", types.TFloat64}, {"s", types.TText}, {"ok", types.TBool}}
	c, err := connector.New(cols, map[string]string{"connector": "datagen", "rows-per-second": "0", "fields.id.kind": "sequence",
		"fields.id.start": "1", "fields.id.end": "500", "fields.sensor.min": "3", "fields.sensor.max": "7",
		"fields.v.min": "-1", "fields.v.max": "1", "fields.s.length": "4", "fields.ok.null_rate": "0.25"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Bounded() {
		t.Fatal("a sequence field must bound the source")
	}
	r, err := c.Open(0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n, nulls int
	var first []string
	for {
		rec, err := r.Read(mem, 128)
		if errors.Is(err, connector.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids, sensors, vs, ss := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Float64), rec.Column(3).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			if ids.Value(i) != int64(n+1) || sensors.Value(i) < 3 || sensors.Value(i) > 7 || vs.Value(i) < -1 || vs.Value(i) > 1 || len(ss.Value(i)) != 4 {
				t.Fatalf("row %d out of its ranges: %s", n, rowString(rec, i))
			}
			if rec.Column(4).IsNull(i) {
				nulls++
			}
			if n >= 300 && n < 310 {
				first = append(first, rowString(rec, i))
			}
			n++
		}
		rec.Release()
	}
	if n != 500 || nulls == 0 || nulls == 500 {
		t.Fatalf("%d rows, %d NULLs; want 500 with some NULLs", n, nulls)
	}
	if again := readAll(t, mem, c, 0, 300, 10); fmt.Sprint(again[:10]) != fmt.Sprint(first) {
		t.Fatalf("rows 300.. read again from 300 differ:\n%v\n%v", again[:10], first)
	}
}

// TestOptions: bad options get 22023 naming the option.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		code string
	}{
		{map[string]string{}, sqlerr.InvalidParameterValue},
		{map[string]string{"connector": "nexmark", "nexmark.table": "bid", "nexmark.events": "-1"}, sqlerr.InvalidParameterValue},
		{map[string]string{"connector": "nexmark", "nexmark.table": "bid", "nexmark.rat": "1"}, sqlerr.InvalidParameterValue},
		{map[string]string{"connector": "datagen", "fields.price.kind": "sequence", "fields.price.start": "1"}, sqlerr.InvalidParameterValue},
		{map[string]string{"connector": "pulsar"}, sqlerr.InvalidParameterValue},
		{map[string]string{"connector": "file"}, sqlerr.FeatureNotSupported},
		{map[string]string{"connector": "kafka"}, sqlerr.InvalidParameterValue}, // topic is required
	} {
		_, err := connector.New([]connector.Column{{"price", types.TInt64}}, tc.opts)
		if sqlerr.Code(err) != tc.code {
			t.Errorf("%v: %v, want %s", tc.opts, err, tc.code)
		}
	}
}

// readColumns reads split 0 to its end as text, one slice per column.
func readColumns(t *testing.T, mem memory.Allocator, c connector.Connector) [][]string {
	t.Helper()
	r, err := c.Open(0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var cols [][]string
	for {
		rec, err := r.Read(mem, 700)
		if errors.Is(err, connector.EOF) {
			return cols
		}
		if err != nil {
			t.Fatal(err)
		}
		if cols == nil {
			cols = make([][]string, rec.NumCols())
		}
		for c := range cols {
			col := rec.Column(c)
			for i := 0; i < int(rec.NumRows()); i++ {
				v := "NULL"
				if !col.IsNull(i) {
					v = col.ValueStr(i)
				}
				cols[c] = append(cols[c], v)
			}
		}
		rec.Release()
	}
}

// TestProjectKeepsReadColumns: a generator told which columns are read
// (connector.Projector) gives each of them exactly the values it gives
// without the projection, and NULL in every other column, for every
// single column and pair of columns read (a generator's later columns
// depend on the random draws of its earlier ones), with the columns
// declared in the tables' order and reversed.
func TestProjectKeepsReadColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	type source struct {
		name string
		cols []connector.Column
		opts map[string]string
	}
	var sources []source
	for k, table := range nexmark.Tables {
		cols := nexmark.Columns[k]
		rev := make([]connector.Column, len(cols))
		for i, c := range cols {
			rev[len(cols)-1-i] = c
		}
		opts := map[string]string{"connector": "nexmark", "nexmark.table": table, "nexmark.events": "5000", "nexmark.seed": "3"}
		sources = append(sources, source{"nexmark " + table, cols, opts}, source{"nexmark " + table + " reversed", rev, opts})
	}
	sources = append(sources, source{"datagen",
		[]connector.Column{{Name: "a", Type: types.TInt64}, {Name: "s", Type: types.TText}, {Name: "f", Type: types.TFloat64},
			{Name: "b", Type: types.TBool}, {Name: "ts", Type: types.TTimestamp}, {Name: "t2", Type: types.TText}, {Name: "q", Type: types.TInt64}},
		map[string]string{"connector": "datagen", "number_of_rows": "3000", "rows_per_second": "0", "fields.s.length": "7",
			"fields.s.null_rate": "0.3", "fields.t2.length": "3", "fields.q.kind": "sequence", "fields.q.start": "5", "fields.q.end": "100000",
			"fields.ts.max_past": "1000", "fields.f.min": "-3", "fields.f.max": "9"}})
	for _, s := range sources {
		c, err := connector.New(s.cols, s.opts)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := c.(connector.Projector)
		if !ok {
			t.Fatalf("%s: not a connector.Projector", s.name)
		}
		full := readColumns(t, mem, c)
		if len(full) != len(s.cols) || len(full[0]) == 0 {
			t.Fatalf("%s: %d columns of %d rows", s.name, len(full), len(full[0]))
		}
		n := len(s.cols)
		var sets [][]bool
		for a := 0; a < n; a++ {
			for b := a; b < n; b++ {
				read := make([]bool, n)
				read[a], read[b] = true, true
				sets = append(sets, read)
			}
		}
		sets = append(sets, make([]bool, n)) // nothing read: count(*)
		for _, read := range sets {
			got := readColumns(t, mem, p.Project(read))
			for col := range full {
				if len(got[col]) != len(full[col]) {
					t.Fatalf("%s, read %v: column %d has %d rows, not %d", s.name, read, col, len(got[col]), len(full[col]))
				}
				for i, v := range got[col] {
					want := full[col][i]
					if !read[col] {
						want = "NULL"
					}
					if v != want {
						t.Fatalf("%s, read %v: column %s row %d is %q, not %q", s.name, read, s.cols[col].Name, i, v, want)
					}
				}
			}
		}
	}
}

// BenchmarkNexmarkBidRead reads 200,000 events of the bid table making
// every column, q0/q1's (auction, bidder, price, date_time) and q5's
// (auction, date_time).
func BenchmarkNexmarkBidRead(b *testing.B) {
	c, err := connector.New(bidColumns(), map[string]string{"connector": "nexmark", "nexmark.table": "bid", "nexmark.events": "200000"})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		read []bool
	}{{"all", nil}, {"q0", []bool{true, true, true, false, false, true, false}}, {"q5", []bool{true, false, false, false, false, true, false}}} {
		b.Run(bc.name, func(b *testing.B) {
			conn := c
			if bc.read != nil {
				conn = c.(connector.Projector).Project(bc.read)
			}
			mem := memory.NewGoAllocator()
			for i := 0; i < b.N; i++ {
				r, err := conn.Open(0, 0, false)
				if err != nil {
					b.Fatal(err)
				}
				for {
					rec, err := r.Read(mem, 4096)
					if errors.Is(err, connector.EOF) {
						break
					}
					rec.Release()
				}
				r.Close()
			}
		})
	}
}
