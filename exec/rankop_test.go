package exec

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// TestRankPreselect checks that narrowing a partition to its first rows
// before sorting (preselect) gives what sorting every row gives: ties in
// the order, duplicate rows, NULLs, OFFSET, ROW_NUMBER with a bound.
func TestRankPreselect(t *testing.T) {
	ts := []types.T{types.TInt64, types.TInt64}
	k := &expr.ColRef{Idx: 0, T: types.TInt64, Name: "k"}
	v := &expr.ColRef{Idx: 1, T: types.TInt64, Name: "v"}
	order := []SortKey{{E: v, Desc: true}, {E: k}}
	w := &Window{In: &Batches{Ts: ts}, OrderBy: order[:1], Funcs: []WindowFunc{{Kind: WinRowNumber, T: types.TInt64}, {Kind: WinRank, T: types.TInt64}}}
	specs := []*rankSpec{
		{order: order, lo: 0, hi: 10},
		{order: order[:1], lo: 3, hi: 13},
		{order: []SortKey{{E: v, NullsFirst: true}}, lo: 0, hi: 1},
		{window: w, order: w.OrderBy, hi: 3},
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
				enc := encodeDatum(encodeDatum(nil, types.Int(int64(r.IntN(5))), types.TInt64), d, types.TInt64)
				rows[string(enc)] += int64(1 + r.IntN(3))
			}
			in := &gedge{from: &gnode{kind: nSource}, stages: []Plan{&Batches{Ts: ts}}}
			o := newRankOp(&Job{}, &gnode{kind: nRank, rank: spec, ins: []*gedge{in}})
			ectx := &expr.Ctx{Mem: memoryPool}
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
