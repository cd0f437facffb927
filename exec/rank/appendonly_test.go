package rank

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/over"
	"github.com/streamdb/streamdb/types"
)

// TestRankAppendOnlyKeepsTop: a rank op over an input that only inserts
// keeps only each partition's top rows, and after every barrier its output
// equals the output computed over every row pushed so far (ROW_NUMBER,
// RANK and DENSE_RANK with many ties, ORDER BY ... LIMIT with an offset).
func TestRankAppendOnlyKeepsTop(t *testing.T) {
	k, v := kvRefs()
	ts := []types.T{types.TInt64, types.TInt64}
	order := []over.SortKey{{E: v, Desc: true}}
	window := func(kinds ...over.FuncKind) *Spec {
		var fs []over.Func
		for _, m := range kinds {
			fs = append(fs, over.Func{Kind: m, T: types.TInt64})
		}
		return windowSpec([]expr.Expr{k}, order, 3, fs...)
	}
	specs := map[string]*Spec{
		"row_number": window(over.RowNumber, over.Rank),
		"rank":       window(over.Rank, over.DenseRank),
		"dense_rank": window(over.DenseRank, over.RowNumber),
		"limit":      {InTs: ts, OutTs: ts, Order: order, Lo: 2, Hi: 7, AppendOnly: true},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			db := memDB(t)
			rk := newTestOp(spec, &opkittest.Outlet{Discard: true})
			if !rk.appendOnly {
				t.Fatal("the rank op of an append-only spec is not append-only")
			}
			ectx := &expr.Ctx{Mem: opkit.Mem}
			// An oracle op that keeps every row computes the expected output.
			all := map[int64]map[string]int64{}
			r := rand.New(rand.NewPCG(31, 1))
			for e := uint64(1); e <= 40; e++ {
				var rows [][2]int64
				for range 200 {
					row := [2]int64{int64(r.IntN(6)), int64(r.IntN(30))}
					rows = append(rows, row)
					enc := string(opkit.EncodeDatum(opkit.EncodeDatum(nil, types.Int(row[0]), types.TInt64), types.Int(row[1]), types.TInt64))
					if spec.Funcs == nil {
						row[0] = 0 // one partition
					}
					if all[row[0]] == nil {
						all[row[0]] = map[string]int64{}
					}
					all[row[0]][enc]++
				}
				if err := rk.Push(ectx, op.Chunk{Rec: opkittest.KVRecord(rows)}, 0); err != nil {
					t.Fatal(err)
				}
				w := db.State().NewEpochBatch()
				if err := rk.Barrier(ectx, &op.Barrier{Epoch: e, Checkpoint: e%5 == 0}, w); err != nil {
					t.Fatal(err)
				}
				w.TakeOpSnapshots()
				got, want := map[string]int64{}, map[string]int64{}
				kept, stored := 0, 0
				for _, p := range rk.parts {
					for enc, c := range p.out {
						got[enc] += c
					}
					for _, c := range p.rows {
						kept += int(c)
					}
					for _, c := range p.top {
						stored += int(c)
					}
				}
				for _, rows := range all {
					o, _, err := rk.compute(ectx, maps.Clone(rows))
					if err != nil {
						t.Fatal(err)
					}
					for enc, c := range o {
						want[enc] += c
					}
				}
				if !maps.Equal(got, want) {
					t.Fatalf("epoch %d: output %d rows, over every row %d", e, len(got), len(want))
				}
				if kept != stored {
					t.Fatalf("epoch %d: %d rows kept, %d in the tops", e, kept, stored)
				}
			}
		})
	}
}
