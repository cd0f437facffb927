package exec

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// BenchmarkUnnestInt is FROM t, unnest(t.a) over (id bigint, a integer[])
// with 8 elements per row: the stateless stage a view runs.
func BenchmarkUnnestInt(b *testing.B) {
	const rows = 16 << 10
	mem := memory.NewGoAllocator()
	at := types.ArrayOf(types.Int32)
	ts := []types.T{types.TInt64, at}
	r := rand.New(rand.NewPCG(1, 2))
	ib := types.NewBuilder(mem, types.TInt64)
	ab := types.NewBuilder(mem, at)
	for i := 0; i < rows; i++ {
		ib.(*array.Int64Builder).Append(int64(i))
		a := &types.Array{Elems: make([]string, 8)}
		for j := range a.Elems {
			a.Elems[j] = strconv.Itoa(r.IntN(1000))
		}
		types.AppendDatum(ab, types.Datum{A: a}, at)
	}
	rec := newRecord(ts, []arrow.Array{ib.NewArray(), ab.NewArray()}, rows)
	defer rec.Release()
	p := &plan.LateralFuncScan{In: &plan.Batches{Ts: ts}, Func: "unnest", Args: []expr.Expr{&expr.ColRef{Idx: 1, T: at, Name: "a"}}, T: types.TInt32}
	ectx := &expr.Ctx{Mem: mem}
	b.ResetTimer()
	for b.Loop() {
		out, _, err := p.Expand(ectx, mem, rec)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(b.N)*rows/b.Elapsed().Seconds(), "rows/s")
}
