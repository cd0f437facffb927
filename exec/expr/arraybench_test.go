package expr

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/types"
)

// ArrayBenchBatch has columns x (BIGINT) and a (integer[], 8 elements of
// 0..999 per row), as SELECT x = ANY(a) reads them.
func arrayBenchBatch(mem memory.Allocator) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(1, 2))
	at := types.ArrayOf(types.Int32)
	xb := types.NewBuilder(mem, types.TInt64)
	ab := types.NewBuilder(mem, at)
	defer xb.Release()
	defer ab.Release()
	for i := 0; i < benchRows; i++ {
		xb.(*array.Int64Builder).Append(r.Int64N(1000))
		a := &types.Array{Elems: make([]string, 8)}
		for j := range a.Elems {
			a.Elems[j] = strconv.Itoa(r.IntN(1000))
		}
		types.AppendDatum(ab, types.Datum{A: a}, at)
	}
	cols := []arrow.Array{xb.NewArray(), ab.NewArray()}
	defer cols[0].Release()
	defer cols[1].Release()
	return array.NewRecordBatch(types.Schema([]string{"x", "a"}, []types.T{types.TInt64, at}), cols, benchRows)
}

// BenchmarkArrayAnyInt is x = ANY(a) over a bigint x and an integer[] a,
// as the binder writes it.
func BenchmarkArrayAnyInt(b *testing.B) {
	mem := memory.NewGoAllocator()
	a := &ColRef{Idx: 1, T: types.ArrayOf(types.Int32), Name: "a"}
	e := fn("array_contains", types.TBool, bx, a)
	benchEvalOn(b, e, mem, arrayBenchBatch(mem))
}
