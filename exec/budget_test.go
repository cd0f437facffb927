package exec

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

func wantCode(t *testing.T, err error, code string) *sqlerr.Error {
	t.Helper()
	var e *sqlerr.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want SQLSTATE %s", err, code)
	}
	return e
}

// budgetCtx runs plans with a budget of limit bytes in pool.
func budgetCtx(c context.Context, limit int64, pool *plan.MemPool) *plan.Ctx {
	b := plan.NewBudget(limit, pool)
	return &plan.Ctx{Context: c, Expr: &expr.Ctx{Mem: b.Allocator()}, Mem: b}
}

func TestBudgetCountsBuffers(t *testing.T) {
	b := plan.NewBudget(1<<20, nil)
	mem := b.Allocator()
	buf := mem.Allocate(1000)
	if b.Used() != 1000 {
		t.Fatalf("after Allocate(1000): %d", b.Used())
	}
	buf = mem.Reallocate(5000, buf)
	b.Grow(24)
	if b.Used() != 5024 {
		t.Fatalf("after Reallocate(5000) and Grow(24): %d", b.Used())
	}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	mem.Free(buf)
	b.Grow(-24)
	if b.Used() != 0 || b.Peak() != 5024 {
		t.Fatalf("after Free: used %d, peak %d; want 0 and 5024", b.Used(), b.Peak())
	}
	b.Grow(2 << 20)
	e := wantCode(t, b.Check(), sqlerr.OutOfMemory)
	if e.Msg != "out of memory" || e.Detail == "" || e.Hint == "" {
		t.Fatalf("error: %+v", e)
	}
}

func TestMemPoolCapsAllQueries(t *testing.T) {
	pool := plan.NewMemPool(10 << 20)
	a, b := plan.NewBudget(0, pool), plan.NewBudget(0, pool)
	a.Grow(6 << 20)
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	b.Grow(6 << 20)
	wantCode(t, b.Check(), sqlerr.OutOfMemory)
	if pool.Used() != 12<<20 {
		t.Fatalf("pool holds %d", pool.Used())
	}
	a.Close()
	a.Close() // a second Close returns nothing more
	if err := b.Check(); err != nil {
		t.Fatalf("after the other query closed: %v", err)
	}
	b.Close()
	if pool.Used() != 0 {
		t.Fatalf("pool holds %d after every query closed", pool.Used())
	}
}

func TestFormatMemory(t *testing.T) {
	for n, want := range map[int64]string{64 << 10: "64kB", 1 << 30: "1GB", 1536 << 10: "1536kB", 3 << 40: "3TB", 100: "100B"} {
		if got := plan.FormatMemory(n); got != want {
			t.Errorf("FormatMemory(%d) = %s, want %s", n, got, want)
		}
	}
}

// crossJoin is a cross join of n rows with n rows of (text, bigint).
func crossJoin(n int) *plan.HashJoin {
	rows := make([][2]expr.Expr, n)
	for i := range rows {
		rows[i] = [2]expr.Expr{str("some text to hold"), lit(int64(i))}
	}
	return &plan.HashJoin{Left: kv(rows...), Right: kv(rows...), Kind: plan.JoinInner}
}

// TestBudgetFailsSortAndAgg: a sort and an aggregate over a cross join
// fail with 53200 under a small budget, run under a big one, and leave
// nothing allocated either way.
func TestBudgetFailsSortAndAgg(t *testing.T) {
	join := crossJoin(1000) // a million rows
	plans := map[string]plan.Plan{
		"sort": &plan.Sort{In: join, Keys: []plan.SortKey{{E: col(0, types.TText)}, {E: col(3, types.TInt64), Desc: true}}, Limit: -1},
		"agg":  &plan.HashAgg{In: join, Keys: []expr.Expr{col(1, types.TInt64), col(3, types.TInt64)}, Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}},
	}
	for name, p := range plans {
		pool := plan.NewMemPool(0)
		ctx := budgetCtx(context.Background(), 4<<20, pool)
		err := batch.Run(ctx, p, func(rec arrow.RecordBatch) error { rec.Release(); return nil })
		wantCode(t, err, sqlerr.OutOfMemory)
		if ctx.Mem.Used() != 0 {
			t.Fatalf("%s: %d bytes still accounted after the failure", name, ctx.Mem.Used())
		}
		ctx.Mem.Close()
		if pool.Used() != 0 {
			t.Fatalf("%s: pool holds %d", name, pool.Used())
		}

		ctx = budgetCtx(context.Background(), 1<<30, nil)
		rows := int64(0)
		if err := batch.Run(ctx, p, func(rec arrow.RecordBatch) error {
			rows += rec.NumRows()
			rec.Release()
			return nil
		}); err != nil {
			t.Fatalf("%s with 1GB: %v", name, err)
		}
		if rows != 1000*1000 || ctx.Mem.Used() != 0 {
			t.Fatalf("%s: %d rows, %d bytes left accounted", name, rows, ctx.Mem.Used())
		}
		t.Logf("%s: peak %s", name, plan.RoughMemory(ctx.Mem.Peak()))
	}
}

// TestCancelInsideOperators: a canceled or timed-out context stops a
// cross join's probe, a sort and an aggregate with 57014 and the right
// message.
func TestCancelInsideOperators(t *testing.T) {
	join := crossJoin(3000)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	timedOut, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-timedOut.Done()
	for _, p := range []plan.Plan{join,
		&plan.Sort{In: join, Keys: []plan.SortKey{{E: col(1, types.TInt64)}}, Limit: -1},
		&plan.HashAgg{In: join, Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}},
	} {
		for c, msg := range map[context.Context]string{canceled: "canceling statement due to user request",
			timedOut: "canceling statement due to statement timeout"} {
			err := batch.Run(budgetCtx(c, 0, nil), p, func(rec arrow.RecordBatch) error { rec.Release(); return nil })
			if e := wantCode(t, err, sqlerr.QueryCanceled); e.Msg != msg {
				t.Fatalf("%T: %q, want %q", p, e.Msg, msg)
			}
		}
	}
}

// TestJoinProbeChecksPerChunk: one left batch against a big build side
// yields many bounded output batches, and a cancel between them stops the
// probe.
func TestJoinProbeChecksPerChunk(t *testing.T) {
	withChecked(t)
	join := crossJoin(1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batches := 0
	err := batch.Run(&plan.Ctx{Context: ctx, Expr: &expr.Ctx{Mem: memory.DefaultAllocator}}, join, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if rec.NumRows() > batch.JoinChunk {
			t.Fatalf("output batch of %d rows, want at most %d", rec.NumRows(), batch.JoinChunk)
		}
		if batches++; batches == 3 {
			cancel()
		}
		return nil
	})
	wantCode(t, err, sqlerr.QueryCanceled)
	if batches != 3 {
		t.Fatalf("%d batches emitted; the probe should stop at the one after the cancel", batches)
	}
}

// benchCtx is the context of BenchmarkBatch: a budget (no limit) in a pool,
// as the server gives every query.
func benchCtx(c context.Context) *plan.Ctx { return budgetCtx(c, 0, plan.NewMemPool(0)) }
