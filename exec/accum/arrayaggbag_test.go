package accum

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// TestArrayAggBagAcc: a view's array_agg(int) lists each group's values in
// ascending numeric order, NULLs last, duplicates kept; a retraction
// removes one copy; a group whose rows are all retracted is NULL.
func TestArrayAggBagAcc(t *testing.T) {
	b := array.NewInt64Builder(memory.NewGoAllocator())
	b.AppendValues([]int64{10, 0, 9, -3, 9, 5}, []bool{true, false, true, true, true, true})
	arg := b.NewArray()
	defer arg.Release()
	x := &expr.ColRef{T: types.TInt64}
	a := New(Spec{Kind: ArrayAgg, Arg: x, T: types.ArrayOf(types.Int64), Sorted: true}, true).(*arrayAggBagAcc)
	a.Grow(2)
	if err := a.Update([]int32{0, 0, 0, 0, 0, 1}, arg, nil); err != nil {
		t.Fatal(err)
	}
	render := func(g int32) string {
		d := a.Result(g)
		if d.Null {
			return "NULL"
		}
		return string(types.AppendTextArray(nil, d.A))
	}
	if got := render(0); got != "{-3,9,9,10,NULL}" {
		t.Errorf("group 0: %s", got)
	}
	if err := a.Update([]int32{0, 0, 0, 0, 0, 1}, arg, []int8{1, -1, -1, 1, 1, -1}); err != nil {
		t.Fatal(err)
	}
	if got := render(0); got != "{-3,-3,9,9,10,10}" {
		t.Errorf("group 0 after retractions: %s", got)
	}
	if got := render(1); got != "NULL" {
		t.Errorf("group 1 emptied: %s", got)
	}
}
