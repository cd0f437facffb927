package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/types"
)

// TestFieldSelect reads each field of a record column, whose second row is
// a NULL record (its fields NULL), and of a slice of it, and of a constant.
func TestFieldSelect(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rt := types.RecordOf([]types.RecordField{{Name: "x", T: types.TInt16}, {Name: "s", T: types.TText}})
	bl := types.NewBuilder(mem, rt)
	rows := []types.Datum{
		{R: &types.RecordValue{Fields: []types.Datum{types.Int(3), types.Str("a")}}},
		types.Null,
		{R: &types.RecordValue{Fields: []types.Datum{types.Null, types.Str("c")}}},
	}
	for _, d := range rows {
		types.AppendDatum(bl, d, rt)
	}
	arr := bl.NewArray()
	bl.Release()
	defer arr.Release()
	// A struct's children may hold values under a NULL record: make row 1's
	// x a value, as an array from elsewhere could have it.
	s := arr.(*array.Struct)
	xs := s.Field(0).Data()
	xs.Buffers()[0].Bytes()[0] |= 2 // row 1 of x valid
	ctx := &Ctx{Mem: mem}
	for _, c := range []struct {
		in   arrow.Array
		k    int64
		ft   types.T
		want []string
	}{
		{arr, 0, types.TInt16, []string{"3", "NULL", "NULL"}},
		{arr, 1, types.TText, []string{"a", "NULL", "c"}},
		{array.NewSlice(arr, 1, 3), 1, types.TText, []string{"NULL", "c"}},
	} {
		rec := array.NewRecordBatch(types.Schema([]string{"r"}, []types.T{rt}), []arrow.Array{c.in}, int64(c.in.Len()))
		out, err := Eval(ctx, fn("field_select", c.ft, &ColRef{Idx: 0, T: rt}, ci(c.k)), rec)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range c.want {
			got := "NULL"
			if d := types.DatumAt(out, i, c.ft); !d.Null {
				got = types.TextOf(d, c.ft)
			}
			if got != w {
				t.Errorf("field %d row %d: %s, want %s", c.k, i, got, w)
			}
		}
		out.Release()
		rec.Release()
		if c.in != arr {
			c.in.Release()
		}
	}
	d, err := EvalConst(ctx, fn("field_select", types.TText, &Const{D: rows[0], T: rt}, ci(1)))
	if err != nil || d.S != "a" {
		t.Errorf("field of a constant record: %v %v", d, err)
	}
}
