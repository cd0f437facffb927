package accum

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// benchOrderedBatch is 4096 rows of ROW(y, x) (the argument of
// array_agg(x ORDER BY y)) over 64 groups, with 256 distinct (y, x) pairs:
// after the first batch every entry exists, as in a view's steady state.
func benchOrderedBatch(b *testing.B) (arrow.Array, types.T, []int32) {
	const n = 4096
	mem := memory.NewGoAllocator()
	t := types.RecordOf([]types.RecordField{{Name: "k1", T: types.TInt64}, {Name: "x", T: types.TInt64}})
	bl := types.NewBuilder(mem, t).(*array.StructBuilder)
	defer bl.Release()
	ys, xs := bl.FieldBuilder(0).(*array.Int64Builder), bl.FieldBuilder(1).(*array.Int64Builder)
	gids := make([]int32, n)
	for i := range n {
		bl.Append(true)
		ys.Append(int64(i % 16))
		xs.Append(int64(i % 256))
		gids[i] = int32(i % 64)
	}
	return bl.NewArray(), t, gids
}

// benchOrderedAcc is array_agg(x ORDER BY y DESC) with benchOrderedBatch
// folded in once.
func benchOrderedAcc(b *testing.B) (Accum, arrow.Array, []int32) {
	arg, t, gids := benchOrderedBatch(b)
	a := New(Spec{Kind: ArrayAgg, Arg: &expr.ColRef{T: t}, T: types.ArrayOf(types.Int64), Sorted: true, Order: []OrderDir{{Desc: true}}}, true)
	a.Grow(64)
	if err := a.Update(gids, arg, nil); err != nil {
		b.Fatal(err)
	}
	return a, arg, gids
}

// BenchmarkArrayAggOrderedUpdate folds a batch into array_agg(x ORDER BY
// y) (the sorted, retracting accumulator of views and ORDER BY calls):
// each row's entry is encoded into a reused buffer and counted in its
// group's map, with no allocation per row once the entries exist.
func BenchmarkArrayAggOrderedUpdate(b *testing.B) {
	a, arg, gids := benchOrderedAcc(b)
	defer arg.Release()
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Update(gids, arg, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(gids)), "ns/row")
}

// BenchmarkArrayAggOrderedResult builds one group's sorted array (64
// entries standing for 4096 rows after the loop's batches).
func BenchmarkArrayAggOrderedResult(b *testing.B) {
	a, arg, _ := benchOrderedAcc(b)
	defer arg.Release()
	b.ReportAllocs()
	for b.Loop() {
		if d := a.Result(3); d.Null {
			b.Fatal("NULL")
		}
	}
}

// TestArrayAggOrderedAcc: ORDER BY y DESC NULLS FIRST, ties by x
// ascending; DISTINCT lists each entry once; a retraction removes one copy.
func TestArrayAggOrderedAcc(t *testing.T) {
	mem := memory.NewGoAllocator()
	rt := types.RecordOf([]types.RecordField{{Name: "k1", T: types.TInt64}, {Name: "x", T: types.TText}})
	bl := types.NewBuilder(mem, rt).(*array.StructBuilder)
	ys, xs := bl.FieldBuilder(0).(*array.Int64Builder), bl.FieldBuilder(1).(*array.StringBuilder)
	for _, r := range []struct {
		y  int64
		yn bool
		x  string
	}{{1, false, "b"}, {2, false, "a"}, {1, false, "a"}, {0, true, "z"}, {2, false, "a"}} {
		bl.Append(true)
		if r.yn {
			ys.AppendNull()
		} else {
			ys.Append(r.y)
		}
		xs.Append(r.x)
	}
	arg := bl.NewArray()
	defer arg.Release()
	render := func(a Accum) string { return string(types.AppendTextArray(nil, a.Result(0).A)) }
	spec := Spec{Kind: ArrayAgg, Arg: &expr.ColRef{T: rt}, T: types.TTextArray, Sorted: true, Order: []OrderDir{{Desc: true, NullsFirst: true}}}
	a := New(spec, true)
	a.Grow(1)
	gids := []int32{0, 0, 0, 0, 0}
	if err := a.Update(gids, arg, nil); err != nil {
		t.Fatal(err)
	}
	if got := render(a); got != "{z,a,a,a,b}" {
		t.Errorf("ordered: %s", got)
	}
	if err := a.Update(gids, arg, []int8{0, -1, 0, -1, 0}); err != nil {
		t.Fatal(err)
	}
	if got := render(a); got != "{a,a,b}" {
		t.Errorf("after retractions: %s", got)
	}
	spec.Distinct = true
	d := New(spec, true)
	d.Grow(1)
	if err := d.Update(gids, arg, nil); err != nil {
		t.Fatal(err)
	}
	if got := render(d); got != "{z,a,a,b}" { // (2,a) once, (1,a) and (1,b)
		t.Errorf("distinct: %s", got)
	}
}
