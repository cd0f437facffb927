package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
	"golang.org/x/sys/unix"
)

// BenchmarkBarrierPerGroup is the cost of one barrier per changed group in
// a view job, at 1K to 1M groups with 1 % of them changed per epoch: the
// operator's work at the barrier (aggregates: sort the changed groups,
// build their rows, encode their state; the join: write its changed rows)
// and the commit of its writes to Pebble (on disk, no fsync). Issue 18:
// the cost per changed group must stay flat (within 2x) from 1K to 1M
// groups. Reported per changed group: ns/group, the wall time of the whole
// barrier; cpu-ns/group, the CPU time of the whole process meanwhile (the
// commit, Pebble's flushes and compactions, the GC); op-cpu-ns/group, the
// CPU time of the operator's part alone (its thread, up to the commit).
// Cases:
//   - count: SELECT k, count(*) GROUP BY k; an epoch adds a row to each
//     changed group.
//   - distinct: SELECT k, count(DISTINCT v) GROUP BY k, 4 values per group;
//     an epoch adds a new value to each changed group and retracts an old one.
//   - minretract: SELECT k, min(v) GROUP BY k over a retracting input, 4
//     values per group; an epoch retracts each changed group's min and
//     adds a larger value.
//   - join: an inner join on k, one row per key on each side; an epoch adds
//     a left row to each changed key.
//
// Setup (building the groups, committing them, compacting them and
// collecting the garbage) is not timed.
//
//	go test ./exec/ -run '^$' -bench BenchmarkBarrierPerGroup -benchtime 20x -cpu 1
func BenchmarkBarrierPerGroup(b *testing.B) {
	sizes := []int{1_000, 10_000, 100_000, 1_000_000}
	for _, kind := range []string{"count", "distinct", "minretract", "join"} {
		for _, groups := range sizes {
			b.Run(fmt.Sprintf("%s/groups=%d", kind, groups), func(b *testing.B) {
				benchBarrier(b, kind, groups)
			})
		}
	}
}

func benchBarrier(b *testing.B, kind string, groups int) {
	var db *storage.DB
	if kind != "join" {
		var err error
		if db, err = storage.Open(b.TempDir(), storage.Options{}); err != nil {
			b.Fatal(err)
		}
		defer db.Close()
	}
	changed := max(1, groups/100)
	r := rand.New(rand.NewPCG(3, 5))
	epoch := uint64(1)
	// opCPU adds up the CPU time of the operator's part of the barriers
	// (this goroutine, locked to its thread): everything before commit.
	var opCPU time.Duration
	var opStart time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	commit := func(w *storage.Batch) {
		opCPU += threadCPU() - opStart
		if err := db.State().CommitEpoch([]*storage.Batch{w}, epoch, nil, false); err != nil {
			b.Fatal(err)
		}
		epoch++
	}
	// rows: per group, its initial rows (k, v); per epoch, the rows each
	// changed group gets (+) and loses (-).
	const perGroup = 4
	var barrier func()
	var push func(keys []int64, e uint64)
	switch kind {
	case "join":
		k, _ := kvRefs()
		ts := []types.T{types.TInt64, types.TInt64}
		spec := &plan.HashJoin{Left: &plan.Batches{Ts: ts}, Right: &plan.Batches{Ts: ts}, Kind: plan.JoinInner,
			LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}
		var err error
		if db, err = storage.Open(b.TempDir(), storage.Options{}); err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		jj := &Job{spec: JobSpec{ID: 1, View: &storage.TableDef{ID: 1}}, db: db, ctx: ctx}
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
		defer func() { close(ch); <-done }()
		out := &outlet{j: jj, outs: []chan msg{ch}}
		op := newJoinOp(jj, &gnode{kind: nJoin, join: spec}, out, 0)
		ectx := jj.exprCtx()
		pushSide := func(rows [][2]int64, side int) {
			for len(rows) > 0 {
				n := min(len(rows), 64<<10)
				rec := kvRecord(rows[:n])
				if err := op.Push(ectx, Chunk{Rec: rec}, side); err != nil {
					b.Fatal(err)
				}
				rows = rows[n:]
			}
		}
		var init [][2]int64
		for g := range int64(groups) {
			init = append(init, [2]int64{g, g})
		}
		pushSide(init, 0)
		pushSide(init, 1)
		barrier = func() {
			opStart = threadCPU()
			w := db.State().NewEpochBatch()
			if err := op.Barrier(ectx, &Barrier{Epoch: epoch}, w); err != nil {
				b.Fatal(err)
			}
			commit(w)
		}
		push = func(keys []int64, e uint64) {
			rows := make([][2]int64, len(keys))
			for i, k := range keys {
				rows[i] = [2]int64{k, int64(e)<<32 | k}
			}
			pushSide(rows, 0)
		}
	default:
		k, v := kvRefs()
		spec := &plan.HashAgg{Keys: []expr.Expr{k}}
		retract := false
		switch kind {
		case "count":
			spec.Aggs = []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}
		case "distinct":
			spec.Aggs = []plan.AggSpec{{Kind: plan.AggCount, Distinct: true, Arg: v, T: types.TInt64}}
		case "minretract":
			spec.Aggs = []plan.AggSpec{{Kind: plan.AggMin, Arg: v, T: types.TInt64}}
			retract = true
		}
		j := &Job{spec: JobSpec{ID: 1, View: &storage.TableDef{ID: 1}}, db: db}
		// A view without readers keeps no emitted rows and sends no old ones.
		op := agg.New(plan.AggSpecOf(spec, retract, nil), agg.Node{Node: opkittest.Node(&opkittest.Outlet{Discard: true}, nil),
			OldRows: func() bool { return false }, PerEpoch: true})
		if err := op.Load(opFactory{j}.opState(1, 0, 1), 0, 1, false); err != nil {
			b.Fatal(err)
		}
		ectx := &expr.Ctx{Mem: memoryPool}
		pushRows := func(rows [][2]int64, s int8) {
			for len(rows) > 0 {
				n := min(len(rows), 64<<10)
				rec := kvRecord(rows[:n])
				signs := make([]int8, n)
				for i := range signs {
					signs[i] = s
				}
				if err := op.Fold(ectx, rec, signs, true); err != nil {
					b.Fatal(err)
				}
				rec.Release()
				rows = rows[n:]
			}
		}
		var init [][2]int64
		for g := range int64(groups) {
			for v := range int64(perGroup) {
				init = append(init, [2]int64{g, v})
			}
		}
		pushRows(init, 1)
		barrier = func() {
			opStart = threadCPU()
			w := db.State().NewEpochBatch()
			if err := op.Barrier(ectx, &Barrier{Epoch: epoch}, w); err != nil {
				b.Fatal(err)
			}
			commit(w)
		}
		// Epoch e adds value e+perGroup to each changed group and, for
		// distinct and min, retracts the group's smallest value (its min).
		low := make([]int64, groups)
		push = func(keys []int64, e uint64) {
			add := make([][2]int64, len(keys))
			var del [][2]int64
			for i, k := range keys {
				add[i] = [2]int64{k, int64(e) + perGroup}
				if kind != "count" {
					del = append(del, [2]int64{k, low[k]})
				}
			}
			pushRows(add, 1)
			if len(del) > 0 {
				pushRows(del, -1)
				for _, k := range keys {
					low[k]++ // the group's values stay consecutive
				}
			}
		}
	}
	// Keys changed per epoch: distinct within the epoch.
	perm := r.Perm(groups)
	keys := make([]int64, changed)
	next := 0
	pick := func() []int64 {
		for i := range keys {
			if next == len(perm) {
				next = 0
			}
			keys[i] = int64(perm[next])
			next++
		}
		return keys
	}
	barrier() // the initial state
	// The bulk load's compactions and garbage are setup, not the barriers'.
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Compact([]byte{0}, []byte{0xff}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	opCPU = 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		push(pick(), epoch)
		c0 := processCPU()
		b.StartTimer()
		barrier()
		b.StopTimer()
		cpu += processCPU() - c0
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*changed), "ns/group")
	// CPU time of the whole process (every thread: Pebble's, the GC's)
	// during the barriers: steadier than wall time on a shared machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*changed), "cpu-ns/group")
	// The operator's own work, without Pebble's commit and compactions.
	b.ReportMetric(float64(opCPU.Nanoseconds())/float64(b.N*changed), "op-cpu-ns/group")
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID:
// exact, where getrusage's per-thread figures move in scheduler ticks).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var _ = arrow.RecordBatch(nil)
