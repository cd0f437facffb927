package accum

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// BenchmarkNumericSumAvg measures sum and avg updates over a NUMERIC(15,2)
// column and an unconstrained one whose values carry display scales
// (docs/benchmarks/2026-12-07-numeric-dscale.md): 64k rows into 64 groups.
func BenchmarkNumericSumAvg(b *testing.B) {
	const n = 64 << 10
	for _, tc := range []struct {
		name string
		t    types.T
	}{{"numeric(15,2)", types.NumericOf(15, 2)}, {"numeric", types.TNumeric}} {
		bl := types.NewBuilder(memory.DefaultAllocator, tc.t)
		for i := 0; i < n; i++ {
			types.AppendDatum(bl, types.Datum{D: decimal128.FromI64(int64(i*37%100000 - 3000)), DS: types.PackDScale(int32(i % 5))}, tc.t)
		}
		arr := bl.NewArray()
		bl.Release()
		gids := make([]int32, n)
		for i := range gids {
			gids[i] = int32(i % 64)
		}
		for _, kind := range []Kind{Sum, Avg} {
			name := "sum"
			out := tc.t
			if kind == Avg {
				name, out = "avg", types.T{Kind: types.Numeric, Scale: 20}
			}
			b.Run(tc.name+"/"+name, func(b *testing.B) {
				a := New(Spec{Kind: kind, Arg: &expr.ColRef{T: tc.t}, T: out}, false)
				a.Grow(64)
				b.ReportAllocs()
				b.SetBytes(n * 16)
				for i := 0; i < b.N; i++ {
					if err := a.Update(gids, arr, nil); err != nil {
						b.Fatal(err)
					}
				}
				_ = a.Result(0)
			})
		}
		arr.Release()
	}
}
