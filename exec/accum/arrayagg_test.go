package accum

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// TestArrayAggAcc folds text into arrays per group (NULL elements kept, in
// input order; NULL for a group without rows), round-trips its state and
// refuses a retraction.
func TestArrayAggAcc(t *testing.T) {
	b := array.NewStringBuilder(memory.NewGoAllocator())
	b.AppendValues([]string{"a", "", "b", "c"}, []bool{true, false, true, true})
	arg := b.NewArray()
	defer arg.Release()
	a := &arrayAggAcc{}
	a.Grow(3)
	if err := a.Update([]int32{0, 0, 1, 0}, arg, nil); err != nil {
		t.Fatal(err)
	}
	render := func(acc *arrayAggAcc, g int32) string {
		d := acc.Result(g)
		if d.Null {
			return "NULL"
		}
		return string(types.AppendTextArray(nil, d.A))
	}
	want := []string{"{a,NULL,c}", "{b}", "NULL"}
	for g, w := range want {
		if got := render(a, int32(g)); got != w {
			t.Errorf("group %d: %s, want %s", g, got, w)
		}
	}
	back := &arrayAggAcc{}
	back.Grow(3)
	for g := int32(0); g < 3; g++ {
		rest, err := back.Decode(a.Encode(nil, g), g)
		if err != nil || len(rest) != 0 {
			t.Fatalf("decode group %d: %v, %d bytes left", g, err, len(rest))
		}
		if got := render(back, g); got != want[g] {
			t.Errorf("decoded group %d: %s, want %s", g, got, want[g])
		}
	}
	a.Reset(0)
	if got := render(a, 0); got != "NULL" {
		t.Errorf("after reset: %s", got)
	}
	err := a.Update([]int32{1, 1, 1, 1}, arg, []int8{1, 1, -1, 1})
	if sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		t.Errorf("retraction: %v, want 0A000", err)
	}
}

// TestArrayAggAccFiltered: with the argument ROW(x), a NULL record (a row
// the call's FILTER drops) is no element, while a record of a NULL x is a
// NULL element; a group whose rows are all dropped is NULL.
func TestArrayAggAccFiltered(t *testing.T) {
	mem := memory.NewGoAllocator()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"a", "", "b", "c"}, []bool{true, false, true, true})
	x := sb.NewArray()
	defer x.Release()
	arg, err := array.NewStructArrayWithNulls([]arrow.Array{x}, []string{"x"},
		memory.NewBufferBytes([]byte{0b1011}), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer arg.Release()
	a := &arrayAggAcc{}
	a.Grow(2)
	if err := a.Update([]int32{0, 0, 1, 0}, arg, nil); err != nil {
		t.Fatal(err)
	}
	for g, want := range []string{"{a,NULL,c}", "NULL"} {
		d := a.Result(int32(g))
		got := "NULL"
		if !d.Null {
			got = string(types.AppendTextArray(nil, d.A))
		}
		if got != want {
			t.Errorf("group %d: %s, want %s", g, got, want)
		}
	}
}
