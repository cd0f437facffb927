package exec

import (
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// TestRankSpecAppendOnly: a bounded rank over a source that does not
// retract keeps only its partitions' tops (exec/rank's append-only
// variant); over one that retracts, or unbounded, it keeps every row.
func TestRankSpecAppendOnly(t *testing.T) {
	k, v := kvRefs()
	ts := []types.T{types.TInt64, types.TInt64}
	w := &plan.Window{In: &plan.Batches{Ts: ts}, PartitionBy: []expr.Expr{k}, OrderBy: []plan.SortKey{{E: v, Desc: true}},
		Funcs: []plan.WindowFunc{{Kind: plan.WinRowNumber, T: types.TInt64}}}
	for _, c := range []struct {
		retracts bool
		hi       int64
		want     bool
	}{{false, 3, true}, {true, 3, false}, {false, -1, false}} {
		in := &gedge{from: &gnode{kind: nSource, retracts: c.retracts}, stages: []plan.Plan{&plan.Batches{Ts: ts}}}
		spec := &rankSpec{window: w, partition: w.PartitionBy, order: w.OrderBy, hi: c.hi}
		s := rankSpecOf(&gnode{kind: nRank, rank: spec, ins: []*gedge{in}})
		if s.AppendOnly != c.want {
			t.Errorf("retracts %v, hi %d: append-only %v", c.retracts, c.hi, s.AppendOnly)
		}
		if len(s.OutTs) != 3 || len(s.InTs) != 2 {
			t.Errorf("types in %v out %v", s.InTs, s.OutTs)
		}
	}
}
