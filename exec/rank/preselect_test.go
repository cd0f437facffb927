package rank

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/over"
	"github.com/streamdb/streamdb/types"
)

// TestRankPreselect checks that narrowing a partition to its first rows
// before sorting (preselect) gives what sorting every row gives: ties in
// the order, duplicate rows, NULLs, OFFSET, ROW_NUMBER with a bound.
func TestRankPreselect(t *testing.T) {
	ts := []types.T{types.TInt64, types.TInt64}
	k := &expr.ColRef{Idx: 0, T: types.TInt64, Name: "k"}
	v := &expr.ColRef{Idx: 1, T: types.TInt64, Name: "v"}
	order := []over.SortKey{{E: v, Desc: true}, {E: k}}
	specs := []*Spec{
		{InTs: ts, OutTs: ts, Order: order, Lo: 0, Hi: 10, AppendOnly: true},
		{InTs: ts, OutTs: ts, Order: order[:1], Lo: 3, Hi: 13, AppendOnly: true},
		{InTs: ts, OutTs: ts, Order: []over.SortKey{{E: v, NullsFirst: true}}, Lo: 0, Hi: 1, AppendOnly: true},
		windowSpec(nil, order[:1], 3, over.Func{Kind: over.RowNumber, T: types.TInt64}, over.Func{Kind: over.Rank, T: types.TInt64}),
	}
	r := rand.New(rand.NewPCG(4, 2))
	for si, spec := range specs {
		for trial := 0; trial < 20; trial++ {
			rows := map[string]int64{}
			for i := 0; i < 500; i++ {
				d := types.Int(int64(r.IntN(40)))
				if r.IntN(10) == 0 {
					d = types.Null
				}
				enc := opkit.EncodeDatum(opkit.EncodeDatum(nil, types.Int(int64(r.IntN(5))), types.TInt64), d, types.TInt64)
				rows[string(enc)] += int64(1 + r.IntN(3))
			}
			o := newTestOp(spec, &opkittest.Outlet{Discard: true})
			ectx := &expr.Ctx{Mem: opkit.Mem}
			rankPreselectMin = 1 << 40
			wantOut, wantTop, err := o.compute(ectx, maps.Clone(rows))
			if err != nil {
				t.Fatal(err)
			}
			rankPreselectMin = 0
			gotOut, gotTop, err := o.compute(ectx, maps.Clone(rows))
			rankPreselectMin = 64
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(gotOut, wantOut) || !maps.Equal(gotTop, wantTop) {
				t.Fatalf("spec %d trial %d: preselect gives %v / %v, sorting all %v / %v", si, trial, gotOut, gotTop, wantOut, wantTop)
			}
		}
	}
}
