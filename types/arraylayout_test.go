package types

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestUpgradeArrayLayout reads a block column in the layout before typed
// lists (List<String> of element text, the SQL type in the field's
// metadata) as today's List<Int64>, and leaves text[] alone.
func TestUpgradeArrayLayout(t *testing.T) {
	mem := memory.NewGoAllocator()
	it := ArrayOf(Int32)
	if got := it.Arrow(); !arrow.TypeEqual(got, arrow.ListOf(arrow.PrimitiveTypes.Int64)) {
		t.Fatalf("int4[] layout %s", got)
	}
	old := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	vb := old.ValueBuilder().(*array.StringBuilder)
	old.Append(true)
	vb.Append("7")
	vb.AppendNull()
	vb.Append("-3")
	old.AppendNull()
	old.Append(true)
	txt := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	txt.Append(true)
	txt.ValueBuilder().(*array.StringBuilder).Append("a b")
	txt.Append(true)
	txt.AppendNull()
	oldInt := Field("a", it)
	oldInt.Type = arrow.ListOf(arrow.BinaryTypes.String)
	schema := arrow.NewSchema([]arrow.Field{oldInt, Field("b", TTextArray)}, nil)
	cols := []arrow.Array{old.NewArray(), txt.NewArray()}
	rec := array.NewRecordBatch(schema, cols, 3)
	cols[0].Release()
	cols[1].Release()
	up := UpgradeArrayLayout(rec)
	defer up.Release()
	if !arrow.TypeEqual(up.Column(0).DataType(), it.Arrow()) || !arrow.TypeEqual(up.Column(1).DataType(), TTextArray.Arrow()) {
		t.Fatalf("upgraded layouts %s, %s", up.Column(0).DataType(), up.Column(1).DataType())
	}
	show := func(c int, i int, t T) string {
		d := DatumAt(up.Column(c), i, t)
		if d.Null {
			return "NULL"
		}
		return TextOf(d, t)
	}
	want := []string{`{7,NULL,-3} {"a b"}`, `NULL {}`, `{} NULL`}
	for i := range want {
		if got := show(0, i, it) + " " + show(1, i, TTextArray); got != want[i] {
			t.Errorf("row %d: %q, want %q", i, got, want[i])
		}
	}
	if typ := TypesOf(up.Schema())[0]; typ != it {
		t.Errorf("upgraded field type %s", typ)
	}
}
