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
