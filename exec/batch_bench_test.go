package exec

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// Batch queries through Run, as the server runs them (with a memory budget
// and a cancelable context): a hash aggregate, a hash join and a sort over
// prebuilt batches of (k BIGINT, v BIGINT).
// docs/benchmarks/2026-12-01-memory-accounting-batch-queries.md.
//
//	go test ./exec/ -run '^$' -bench BenchmarkBatch -benchtime 3x -cpu 1

// benchRun runs p over fresh references to its input batches and returns
// the output rows.
func benchRun(b *testing.B, p plan.Plan, inputs ...[]arrow.RecordBatch) int64 {
	for _, recs := range inputs {
		for _, r := range recs {
			r.Retain()
		}
	}
	var rows int64
	if err := batch.Run(benchCtx(context.Background()), p, func(r arrow.RecordBatch) error {
		rows += r.NumRows()
		r.Release()
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return rows
}

// benchCtx is the context of BenchmarkBatch: a budget (no limit) in a pool,
// as the server gives every query.
func benchCtx(c context.Context) *plan.Ctx {
	bu := plan.NewBudget(0, plan.NewMemPool(0))
	return &plan.Ctx{Context: c, Expr: &expr.Ctx{Mem: bu.Allocator()}, Mem: bu}
}

func BenchmarkBatch(b *testing.B) {
	mem := memory.NewGoAllocator()
	k := &expr.ColRef{Idx: 0, T: types.TInt64, Name: "k"}
	v := &expr.ColRef{Idx: 1, T: types.TInt64, Name: "v"}
	kvTs := []types.T{types.TInt64, types.TInt64}
	for _, keys := range []int{1000, 1 << 20} {
		recs := kvBatches(mem, aggBenchRows, keys)
		agg := countSumSpec()
		agg.In = &plan.Batches{Recs: recs, Ts: kvTs}
		b.Run(fmt.Sprintf("agg/keys=%d", keys), func(b *testing.B) {
			for b.Loop() {
				benchRun(b, agg, recs)
			}
			b.ReportMetric(float64(aggBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		for _, r := range recs {
			r.Release()
		}
	}

	build := seqBatches(mem, 1<<20, 1<<20, 0) // 1M distinct keys
	probe := seqBatches(mem, 4<<20, 1<<20, 0) // 4M rows, 4 per key
	join := &plan.HashJoin{Left: &plan.Batches{Recs: probe, Ts: kvTs}, Right: &plan.Batches{Recs: build, Ts: kvTs},
		Kind: plan.JoinInner, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}
	b.Run("join/build=1M/probe=4M", func(b *testing.B) {
		for b.Loop() {
			if n := benchRun(b, join, build, probe); n != 4<<20 {
				b.Fatalf("join: %d rows", n)
			}
		}
		b.ReportMetric(float64(4<<20)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})

	sortIn := &plan.Sort{In: &plan.Batches{Recs: build, Ts: kvTs}, Keys: []plan.SortKey{{E: v}}, Limit: -1}
	b.Run("sort/rows=1M", func(b *testing.B) {
		for b.Loop() {
			benchRun(b, sortIn, build)
		}
		b.ReportMetric(float64(1<<20)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	for _, r := range append(build, probe...) {
		r.Release()
	}
}
