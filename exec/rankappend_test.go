package exec

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// TestRankAppendOnlyKeepsTop: a rank op over an input that only inserts
// keeps only each partition's top rows, and after every barrier its output
// equals the output computed over every row pushed so far (ROW_NUMBER,
// RANK and DENSE_RANK with many ties, ORDER BY ... LIMIT with an offset).
func TestRankAppendOnlyKeepsTop(t *testing.T) {
	k, v := kvRefs()
	ts := []types.T{types.TInt64, types.TInt64}
	order := []SortKey{{E: v, Desc: true}}
	window := func(kind WindowFuncKind, more ...WindowFuncKind) *rankSpec {
		fs := []WindowFunc{{Kind: kind, T: types.TInt64}}
		for _, m := range more {
			fs = append(fs, WindowFunc{Kind: m, T: types.TInt64})
		}
		w := &Window{In: &Batches{Ts: ts}, PartitionBy: []expr.Expr{k}, OrderBy: order, Funcs: fs}
		return &rankSpec{window: w, partition: w.PartitionBy, order: order, hi: 3}
	}
	specs := map[string]*rankSpec{
		"row_number": window(WinRowNumber, WinRank),
		"rank":       window(WinRank, WinDenseRank),
		"dense_rank": window(WinDenseRank, WinRowNumber),
		"limit":      {order: order, lo: 2, hi: 7},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			j, out := memOpJob(t)
			in := &gedge{from: &gnode{kind: nSource}, stages: []Plan{&Batches{Ts: ts}}}
			op := newRankOp(j, &gnode{kind: nRank, rank: spec, ins: []*gedge{in}})
			if !op.appendOnly {
				t.Fatal("the rank op over a source that does not retract is not append-only")
			}
			op.out = out
			ectx := j.exprCtx()
			// An oracle op that keeps every row computes the expected output.
			all := map[int64]map[string]int64{}
			r := rand.New(rand.NewPCG(31, 1))
			for e := uint64(1); e <= 40; e++ {
				var rows [][2]int64
				for range 200 {
					row := [2]int64{int64(r.IntN(6)), int64(r.IntN(30))}
					rows = append(rows, row)
					enc := string(encodeDatum(encodeDatum(nil, types.Int(row[0]), types.TInt64), types.Int(row[1]), types.TInt64))
					if spec.window == nil {
						row[0] = 0 // one partition
					}
					if all[row[0]] == nil {
						all[row[0]] = map[string]int64{}
					}
					all[row[0]][enc]++
				}
				if err := op.Push(ectx, Chunk{Rec: kvRecord(rows)}, 0); err != nil {
					t.Fatal(err)
				}
				w := j.db.NewEpochBatch()
				if err := op.Barrier(ectx, &Barrier{Epoch: e, Checkpoint: e%5 == 0}, w); err != nil {
					t.Fatal(err)
				}
				w.TakeOpSnapshots()
				got, want := map[string]int64{}, map[string]int64{}
				kept, stored := 0, 0
				for _, p := range op.parts {
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
					o, _, err := op.compute(ectx, maps.Clone(rows))
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
