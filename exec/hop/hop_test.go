package hop

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// TestExpand: a HOP row is in Size/Slide windows, the earliest first, its
// last one starting at tumble_start(ts, slide); a CUMULATE row's windows
// share their start and grow by the step up to the max; a NULL time is in
// one window with NULL bounds; a column not Used is NULL in the output.
func TestExpand(t *testing.T) {
	mem := memory.NewGoAllocator()
	vb := array.NewInt64Builder(mem)
	vb.AppendValues([]int64{7, 8}, nil)
	tb := array.NewInt64Builder(mem)
	tb.AppendValues([]int64{12, 0}, []bool{true, false})
	in := []types.T{types.TInt64, types.TTimestamp}
	rec := opkit.NewRecord(in, []arrow.Array{vb.NewArray(), tb.NewArray()}, 2)
	defer rec.Release()
	ts := &expr.ColRef{Idx: 1, T: types.TTimestamp}
	type win struct {
		src        int
		start, end int64
		null       bool
	}
	for _, c := range []struct {
		spec Spec
		want []win
	}{
		{Spec{In: in, TS: ts, Slide: 5, Size: 10}, []win{{0, 5, 15, false}, {0, 10, 20, false}, {1, 0, 0, true}}},
		{Spec{In: in, TS: ts, Slide: 5, Size: 20, Cumulate: true}, []win{{0, 0, 15, false}, {0, 0, 20, false}, {1, 0, 0, true}}},
		{Spec{In: in, TS: ts, Slide: 10, Size: 10, Used: []bool{false, true}}, []win{{0, 10, 20, false}, {1, 0, 0, true}}},
	} {
		var buf Buf
		out, src, err := c.spec.Expand(&expr.Ctx{Mem: mem}, mem, &buf, rec)
		if err != nil {
			t.Fatal(err)
		}
		if int(out.NumRows()) != len(c.want) || out.NumCols() != 4 {
			t.Fatalf("%+v: %d rows, %d columns, want %d, 4", c.spec, out.NumRows(), out.NumCols(), len(c.want))
		}
		starts, ends := out.Column(2).(*array.Int64), out.Column(3).(*array.Int64)
		for i, w := range c.want {
			if src[i] != w.src || starts.IsNull(i) != w.null || ends.IsNull(i) != w.null ||
				!w.null && (starts.Value(i) != w.start || ends.Value(i) != w.end) {
				t.Errorf("%+v row %d: src %d [%v, %v), want %+v", c.spec, i, src[i], starts.GetOneForMarshal(i), ends.GetOneForMarshal(i), w)
			}
			if used := c.spec.Used == nil || c.spec.Used[0]; out.Column(0).IsNull(i) == used {
				t.Errorf("%+v row %d: column 0 NULL %v, used %v", c.spec, i, out.Column(0).IsNull(i), used)
			}
		}
		out.Release()
	}
}
