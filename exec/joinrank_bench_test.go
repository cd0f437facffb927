package exec

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// The join and rank operators alone, on prebuilt Arrow batches of
// (k BIGINT, v BIGINT), row i with k = i mod keys and v a permutation of
// the rows: a view instance's work, push and barrier (its output goes to a
// goroutine that releases it, its state into an epoch batch that is
// dropped). docs/benchmarks/2026-12-01-joins-and-top-n.md.
//
//	go test ./exec/ -run '^$' -bench 'BenchmarkJoinOp|BenchmarkRankOp' -benchtime 3x -cpu 1

const opBenchBatch = 64 << 10

func seqBatches(mem memory.Allocator, rows, keys int, vOff int64) []arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	var out []arrow.RecordBatch
	for done := 0; done < rows; done += opBenchBatch {
		n := min(opBenchBatch, rows-done)
		kb, vb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
		for i := done; i < done+n; i++ {
			kb.Append(int64(i % keys))
			vb.Append(int64((uint64(i)*2654435761)%uint64(rows)) + vOff)
		}
		cols := []arrow.Array{kb.NewArray(), vb.NewArray()}
		out = append(out, array.NewRecordBatch(schema, cols, int64(n)))
		releaseAll(cols)
		kb.Release()
		vb.Release()
	}
	return out
}

// opBenchJob is a job shell with a discarding outlet and an in-memory store.
func opBenchJob(b *testing.B) (*Job, *outlet, func()) {
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{spec: JobSpec{ID: 1, View: &storage.TableDef{ID: 1}}, db: db, ctx: ctx}
	ch := make(chan msg, 64)
	done := make(chan struct{})
	go func() {
		for m := range ch {
			if m.c.Rec != nil {
				m.c.Rec.Release()
			}
		}
		close(done)
	}()
	return j, &outlet{j: j, outs: []chan msg{ch}}, func() { close(ch); <-done; cancel(); db.Close() }
}

func kvRefs() (k, v *expr.ColRef) {
	return &expr.ColRef{Idx: 0, T: types.TInt64, Name: "k"}, &expr.ColRef{Idx: 1, T: types.TInt64, Name: "v"}
}

// BenchmarkJoinOp: an inner join of two streams of rows rows each on k,
// rows*rows/keys pairs out; a barrier every 8 batches per side.
func BenchmarkJoinOp(b *testing.B) {
	for _, c := range []struct{ rows, keys int }{{1 << 20, 1 << 20}, {1 << 20, 1 << 17}} {
		mem := memory.NewGoAllocator()
		left := seqBatches(mem, c.rows, c.keys, 0)
		right := seqBatches(mem, c.rows, c.keys, 1<<40)
		b.Run(fmt.Sprintf("rows=%d/keys=%d", c.rows, c.keys), func(b *testing.B) {
			k, _ := kvRefs()
			ts := []types.T{types.TInt64, types.TInt64}
			spec := &plan.HashJoin{Left: &plan.Batches{Ts: ts}, Right: &plan.Batches{Ts: ts}, Kind: plan.JoinInner,
				LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}
			for b.Loop() {
				j, out, stop := opBenchJob(b)
				op := newJoinOp(j, &gnode{kind: nJoin, join: spec}, out, 0)
				ectx := j.exprCtx()
				for i := range left {
					for side, recs := range [][]arrow.RecordBatch{left, right} {
						recs[i].Retain()
						if err := op.Push(ectx, Chunk{Rec: recs[i]}, side); err != nil {
							b.Fatal(err)
						}
					}
					if i%8 == 7 || i == len(left)-1 {
						if err := op.Barrier(ectx, &Barrier{}, j.db.State().NewEpochBatch()); err != nil {
							b.Fatal(err)
						}
					}
				}
				stop()
			}
			b.ReportMetric(float64(2*c.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(c.rows)*float64(c.rows)/float64(c.keys)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
		releaseRecs(left)
		releaseRecs(right)
	}
}

// BenchmarkRankOp: ORDER BY v DESC LIMIT 10 (one partition), and
// ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) <= 3 over keys
// partitions; a barrier every 8 batches.
func BenchmarkRankOp(b *testing.B) {
	const rows = 4 << 20
	mem := memory.NewGoAllocator()
	for _, c := range []struct {
		name string
		keys int
	}{{"topn", 1000}, {"rownum/keys=1000", 1000}, {"rownum/keys=1048576", 1 << 20}} {
		recs := seqBatches(mem, rows, c.keys, 0)
		b.Run(c.name, func(b *testing.B) {
			k, v := kvRefs()
			ts := []types.T{types.TInt64, types.TInt64}
			spec := &rankSpec{order: []plan.SortKey{{E: v, Desc: true}}, lo: 0, hi: 10}
			if c.name != "topn" {
				w := &plan.Window{In: &plan.Batches{Ts: ts}, PartitionBy: []expr.Expr{k}, OrderBy: spec.order,
					Funcs: []plan.WindowFunc{{Kind: plan.WinRowNumber, T: types.TInt64}}}
				spec = &rankSpec{window: w, partition: w.PartitionBy, order: w.OrderBy, hi: 3}
			}
			for b.Loop() {
				j, out, stop := opBenchJob(b)
				in := &gedge{from: &gnode{kind: nSource}, stages: []plan.Plan{&plan.Batches{Ts: ts}}} // gives the input's types
				op := newRankOp(j, &gnode{kind: nRank, rank: spec, ins: []*gedge{in}}, out, 0)
				ectx := j.exprCtx()
				for i, r := range recs {
					r.Retain()
					if err := op.Push(ectx, Chunk{Rec: r}, 0); err != nil {
						b.Fatal(err)
					}
					if i%8 == 7 || i == len(recs)-1 {
						if err := op.Barrier(ectx, &Barrier{}, j.db.State().NewEpochBatch()); err != nil {
							b.Fatal(err)
						}
					}
				}
				stop()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		releaseRecs(recs)
	}
}

func releaseRecs(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
