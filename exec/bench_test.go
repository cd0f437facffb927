package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// The aggregate operator alone, on prebuilt Arrow batches of (k BIGINT,
// v BIGINT): SELECT k, count(*), sum(v) GROUP BY k. Each iteration folds
// aggBenchRows rows into a fresh operator, as a batch query does. Target
// (issue 3): at least 50M rows/s per core with 1000 keys.
//
//	go test ./exec/ -run '^$' -bench BenchmarkAgg -benchtime 20x -cpu 1

const (
	aggBenchBatch = 64 << 10
	aggBenchRows  = 64 * aggBenchBatch // 4M rows
)

// kvBatches makes rows of (k, v) with k uniform in [0, keys).
func kvBatches(mem memory.Allocator, rows, keys int) []arrow.RecordBatch {
	r := rand.New(rand.NewPCG(7, 11))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	var out []arrow.RecordBatch
	for done := 0; done < rows; done += aggBenchBatch {
		n := min(aggBenchBatch, rows-done)
		kb, vb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
		kb.Reserve(n)
		vb.Reserve(n)
		for i := 0; i < n; i++ {
			kb.UnsafeAppend(r.Int64N(int64(keys)))
			vb.UnsafeAppend(r.Int64N(1000))
		}
		cols := []arrow.Array{kb.NewArray(), vb.NewArray()}
		out = append(out, array.NewRecordBatch(schema, cols, int64(n)))
		releaseAll(cols)
		kb.Release()
		vb.Release()
	}
	return out
}

func countSumSpec() *plan.HashAgg {
	k := &expr.ColRef{Idx: 0, T: types.TInt64, Name: "k"}
	v := &expr.ColRef{Idx: 1, T: types.TInt64, Name: "v"}
	return &plan.HashAgg{
		Keys: []expr.Expr{k},
		Aggs: []plan.AggSpec{
			{Kind: plan.AggCountStar, T: types.TInt64},
			{Kind: plan.AggSum, Arg: v, T: types.TNumeric},
		},
	}
}

func BenchmarkAgg(b *testing.B) {
	for _, keys := range []int{1000, 1 << 20} {
		mem := memory.NewGoAllocator()
		recs := kvBatches(mem, aggBenchRows, keys)
		spec := countSumSpec()
		ctx := &expr.Ctx{Mem: mem}
		for _, mode := range []struct {
			name  string
			track bool // a job tracks dirty groups for its per-epoch changes
			final bool // a batch query emits every group at the end
		}{
			{"push", false, false},
			{"push+emit", false, true},
			{"push+track", true, false},
		} {
			b.Run(fmt.Sprintf("keys=%d/%s", keys, mode.name), func(b *testing.B) {
				for b.Loop() {
					a := agg.New(plan.AggSpecOf(spec, false, nil), agg.Node{})
					for _, r := range recs {
						if err := a.Fold(ctx, r, nil, mode.track); err != nil {
							b.Fatal(err)
						}
					}
					if mode.final {
						if err := a.EmitAll(func(r arrow.RecordBatch) error { r.Release(); return nil }); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(aggBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
		for _, r := range recs {
			r.Release()
		}
	}
}

// BenchmarkGroupLookup isolates hashing and probing of the key column.
func BenchmarkGroupLookup(b *testing.B) {
	for _, keys := range []int{1000, 1 << 20} {
		recs := kvBatches(memory.NewGoAllocator(), aggBenchRows, keys)
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			gids := make([]int32, aggBenchBatch)
			for b.Loop() {
				g := newGroupTable([]types.T{types.TInt64})
				for _, r := range recs {
					g.Lookup([]arrow.Array{r.Column(0)}, int(r.NumRows()), gids, true)
				}
			}
			b.ReportMetric(float64(aggBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		for _, r := range recs {
			r.Release()
		}
	}
}

// BenchmarkBarrier is an aggregate instance's work at a barrier in a view
// job: sort the changed groups by state key, build their new rows, encode
// their state into a sorted run. 256K random keys of 2M groups change, as
// in an epoch of a view over millions of keys (docs/BENCHMARKS.md).
//
//	go test ./exec/ -run '^$' -bench BenchmarkBarrier -benchtime 10x
func BenchmarkBarrier(b *testing.B) {
	const groups, changed = 2 << 20, 256 << 10
	mem := memory.NewGoAllocator()
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	j := &Job{spec: JobSpec{ID: 1, View: &storage.TableDef{ID: 1}}, db: db}
	ctx := &expr.Ctx{Mem: mem}
	spec := countSumSpec()
	spec.Aggs[1].T = types.NumericOf(types.MaxNumericPrecision, 0) // sum(BIGINT), as bound
	// A view without readers keeps no emitted rows and sends no old ones.
	out := &opkittest.Outlet{Discard: true}
	op := agg.New(plan.AggSpecOf(spec, false, nil), agg.Node{Node: opkittest.Node(out, opFactory{j}.opState(1, 0, 1)),
		OldRows: func() bool { return false }, PerEpoch: true})
	push := func(keys []int64) {
		for len(keys) > 0 {
			n := min(len(keys), aggBenchBatch)
			kb, vb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
			kb.AppendValues(keys[:n], nil)
			for range n {
				vb.Append(1)
			}
			cols := []arrow.Array{kb.NewArray(), vb.NewArray()}
			rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{
				{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			}, nil), cols, int64(n))
			if err := op.Fold(ctx, rec, nil, true); err != nil {
				b.Fatal(err)
			}
			rec.Release()
			releaseAll(cols)
			kb.Release()
			vb.Release()
			keys = keys[n:]
		}
	}
	all := make([]int64, groups)
	for i := range all {
		all[i] = int64(i)
	}
	r := rand.New(rand.NewPCG(3, 5))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	push(all)
	// The first barrier takes every group's first changes.
	epoch := uint64(1)
	if err := op.Barrier(ctx, &Barrier{Epoch: epoch}, db.State().NewEpochBatch()); err != nil {
		b.Fatal(err)
	}
	some := make([]int64, changed)
	for b.Loop() {
		b.StopTimer()
		for i := range some {
			some[i] = all[r.IntN(groups)] // groups created at any time: scattered ids
		}
		push(some)
		w := db.State().NewEpochBatch()
		epoch++
		b.StartTimer()
		if err := op.Barrier(ctx, &Barrier{Epoch: epoch}, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(changed)*float64(b.N)/b.Elapsed().Seconds(), "groups/s")
}
