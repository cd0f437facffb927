package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	bt "github.com/streamdb/streamdb/exec/batch/batchtest"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// The runners of batch.Run over small inputs, checked by hand (the wire
// tests check them against PostgreSQL), with every allocation returned.

// mem is the allocator of the running test (withChecked).
var mem memory.Allocator = memory.DefaultAllocator

// withChecked makes the runners allocate from a checked allocator and
// fails the test if anything is left allocated at the end.
func withChecked(t *testing.T) {
	old := mem
	mem = bt.WithChecked(t)
	t.Cleanup(func() { mem = old })
}

// joinInputs are (text, bigint) rows on both sides: keys 1, 2, 2, NULL on
// the left and 2, 3, NULL on the right.
func joinInputs() (*plan.Values, *plan.Values) {
	l := bt.KV([2]expr.Expr{bt.Str("l1"), bt.Lit(1)}, [2]expr.Expr{bt.Str("l2"), bt.Lit(2)}, [2]expr.Expr{bt.Str("l2b"), bt.Lit(2)},
		[2]expr.Expr{bt.Str("lnull"), bt.Null(types.TInt64)})
	r := bt.KV([2]expr.Expr{bt.Str("r2"), bt.Lit(2)}, [2]expr.Expr{bt.Str("r3"), bt.Lit(3)}, [2]expr.Expr{bt.Str("rnull"), bt.Null(types.TInt64)})
	return l, r
}

func TestJoinKinds(t *testing.T) {
	withChecked(t)
	l, r := joinInputs()
	k := bt.Col(1, types.TInt64)
	cases := []struct {
		kind plan.JoinKind
		want string
	}{
		{plan.JoinInner, "l2 2 r2 2\nl2b 2 r2 2"},
		{plan.JoinLeft, "l1 1 NULL NULL\nl2 2 r2 2\nl2b 2 r2 2\nlnull NULL NULL NULL"},
		{plan.JoinRight, "NULL NULL r3 3\nNULL NULL rnull NULL\nl2 2 r2 2\nl2b 2 r2 2"},
		{plan.JoinFull, "NULL NULL r3 3\nNULL NULL rnull NULL\nl1 1 NULL NULL\nl2 2 r2 2\nl2b 2 r2 2\nlnull NULL NULL NULL"},
		{plan.JoinSemi, "l2 2\nl2b 2"},
		{plan.JoinAnti, "l1 1\nlnull NULL"},
	}
	for _, c := range cases {
		p := &plan.HashJoin{Left: l, Right: r, Kind: c.kind, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}
		if got := bt.RunText(t, mem, p, false); got != c.want {
			t.Errorf("kind %d:\n%s\nwant\n%s", c.kind, got, c.want)
		}
	}
}

func TestJoinResidualAndEmptySides(t *testing.T) {
	withChecked(t)
	l, r := joinInputs()
	k := bt.Col(1, types.TInt64)
	// residual: left name <> 'l2b' (over left then right columns)
	res := &expr.Func{Name: "<>", Args: []expr.Expr{bt.Col(0, types.TText), bt.Str("l2b")}, T: types.TBool}
	full := &plan.HashJoin{Left: l, Right: r, Kind: plan.JoinFull, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}, Residual: res}
	want := "NULL NULL r3 3\nNULL NULL rnull NULL\nl1 1 NULL NULL\nl2 2 r2 2\nl2b 2 NULL NULL\nlnull NULL NULL NULL"
	if got := bt.RunText(t, mem, full, false); got != want {
		t.Errorf("full with residual:\n%s\nwant\n%s", got, want)
	}
	anti := &plan.HashJoin{Left: l, Right: r, Kind: plan.JoinAnti, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}, Residual: res}
	if got, want := bt.RunText(t, mem, anti, false), "l1 1\nl2b 2\nlnull NULL"; got != want {
		t.Errorf("anti with residual:\n%s\nwant\n%s", got, want)
	}
	empty := &plan.Values{Ts: []types.T{types.TText, types.TInt64}}
	for _, c := range []struct {
		p    *plan.HashJoin
		want string
	}{
		{&plan.HashJoin{Left: empty, Right: r, Kind: plan.JoinFull, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}, "NULL NULL r2 2\nNULL NULL r3 3\nNULL NULL rnull NULL"},
		{&plan.HashJoin{Left: l, Right: empty, Kind: plan.JoinFull, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}, "l1 1 NULL NULL\nl2 2 NULL NULL\nl2b 2 NULL NULL\nlnull NULL NULL NULL"},
		{&plan.HashJoin{Left: l, Right: empty, Kind: plan.JoinSemi}, ""},
		{&plan.HashJoin{Left: l, Right: empty, Kind: plan.JoinAnti}, "l1 1\nl2 2\nl2b 2\nlnull NULL"},
		{&plan.HashJoin{Left: l, Right: r, Kind: plan.JoinSemi}, "l1 1\nl2 2\nl2b 2\nlnull NULL"},
	} {
		if got := bt.RunText(t, mem, c.p, false); got != c.want {
			t.Errorf("kind %d:\n%s\nwant\n%s", c.p.Kind, got, c.want)
		}
	}
}

func TestWindow(t *testing.T) {
	withChecked(t)
	in := bt.KV([2]expr.Expr{bt.Str("a"), bt.Lit(10)}, [2]expr.Expr{bt.Str("a"), bt.Lit(30)}, [2]expr.Expr{bt.Str("a"), bt.Lit(30)},
		[2]expr.Expr{bt.Str("a"), bt.Lit(20)}, [2]expr.Expr{bt.Str("b"), bt.Lit(5)}, [2]expr.Expr{bt.Str("b"), bt.Null(types.TInt64)},
		[2]expr.Expr{bt.Null(types.TText), bt.Lit(7)})
	v := bt.Col(1, types.TInt64)
	w := &plan.Window{
		In:          in,
		PartitionBy: []expr.Expr{bt.Col(0, types.TText)},
		OrderBy:     []plan.SortKey{{E: v, Desc: true, NullsFirst: true}},
		Funcs: []plan.WindowFunc{
			{Kind: plan.WinRowNumber, T: types.TInt64},
			{Kind: plan.WinRank, T: types.TInt64},
			{Kind: plan.WinDenseRank, T: types.TInt64},
			{Kind: plan.WinAgg, Agg: plan.AggSpec{Kind: plan.AggSum, Arg: v, T: types.TFloat64}, T: types.TFloat64},
			{Kind: plan.WinAgg, Agg: plan.AggSpec{Kind: plan.AggCountStar, T: types.TInt64}, T: types.TInt64},
		},
	}
	// Sum over bigint is numeric in SQL; float64 keeps the test's output short.
	w.Funcs[3].Agg.Arg = &expr.Cast{E: v, T: types.TFloat64}
	// Columns: k, v, row_number, rank, dense_rank, running sum, running
	// count(*), partitions in first-seen order; ties (a 30) are peers.
	want := "a 30 1 1 1 60 2\na 30 2 1 1 60 2\na 20 3 3 2 80 3\na 10 4 4 3 90 4\n" +
		"b NULL 1 1 1 NULL 1\nb 5 2 2 2 5 2\nNULL 7 1 1 1 7 1"
	if got := bt.RunText(t, mem, w, true); got != want {
		t.Errorf("window:\n%s\nwant\n%s", got, want)
	}
	whole := &plan.Window{In: in, Funcs: []plan.WindowFunc{{Kind: plan.WinAgg, Agg: plan.AggSpec{Kind: plan.AggMax, Arg: v, T: types.TInt64}, T: types.TInt64}, {Kind: plan.WinRank, T: types.TInt64}}}
	if got, want := bt.RunText(t, mem, whole, false), "NULL 7 30 1\na 10 30 1\na 20 30 1\na 30 30 1\na 30 30 1\nb 5 30 1\nb NULL 30 1"; got != want {
		t.Errorf("OVER ():\n%s\nwant\n%s", got, want)
	}
	empty := &plan.Window{In: &plan.Values{Ts: []types.T{types.TText, types.TInt64}}, Funcs: []plan.WindowFunc{{Kind: plan.WinRowNumber, T: types.TInt64}}}
	if got := bt.RunText(t, mem, empty, false); got != "" {
		t.Errorf("empty input gave %q", got)
	}
}

func TestSingleRow(t *testing.T) {
	withChecked(t)
	one := bt.KV([2]expr.Expr{bt.Str("x"), bt.Lit(1)})
	if got := bt.RunText(t, mem, &plan.SingleRow{In: one}, false); got != "x 1" {
		t.Errorf("one row: %q", got)
	}
	if got := bt.RunText(t, mem, &plan.SingleRow{In: &plan.Values{Ts: []types.T{types.TText, types.TInt64}}}, false); got != "NULL NULL" {
		t.Errorf("no rows: %q", got)
	}
	two := bt.KV([2]expr.Expr{bt.Str("x"), bt.Lit(1)}, [2]expr.Expr{bt.Str("y"), bt.Lit(2)})
	ctx := &plan.Ctx{Context: context.Background(), Expr: &expr.Ctx{Mem: mem}}
	err := batch.Run(ctx, &plan.SingleRow{In: two}, func(rec arrow.RecordBatch) error { rec.Release(); return nil })
	if sqlerr.Code(err) != sqlerr.CardinalityViolation {
		t.Errorf("two rows: %v, want 21000", err)
	}
}

func TestHashAggBatch(t *testing.T) {
	withChecked(t)
	in := bt.KV([2]expr.Expr{bt.Str("a"), bt.Lit(1)}, [2]expr.Expr{bt.Str("b"), bt.Lit(2)}, [2]expr.Expr{bt.Str("a"), bt.Lit(5)},
		[2]expr.Expr{bt.Str("a"), bt.Null(types.TInt64)}, [2]expr.Expr{bt.Null(types.TText), bt.Lit(7)}, [2]expr.Expr{bt.Str("b"), bt.Lit(2)})
	v := bt.Col(1, types.TInt64)
	p := &plan.HashAgg{In: in, Keys: []expr.Expr{bt.Col(0, types.TText)}, Aggs: []plan.AggSpec{
		{Kind: plan.AggCountStar, T: types.TInt64},
		{Kind: plan.AggCount, Arg: v, T: types.TInt64},
		{Kind: plan.AggSum, Arg: v, T: types.NumericOf(38, 0)},
		{Kind: plan.AggMin, Arg: v, T: types.TInt64},
		{Kind: plan.AggMax, Arg: v, T: types.TInt64},
		{Kind: plan.AggCount, Distinct: true, Arg: v, T: types.TInt64},
		{Kind: plan.AggAvg, Arg: v, T: types.NumericOf(38, 2)},
	}}
	want := "NULL 1 1 7 7 7 1 7.00\na 3 2 6 1 5 2 3.00\nb 2 2 4 2 2 1 2.00"
	if got := bt.RunText(t, mem, p, false); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestGlobalAggOnEmptyInput(t *testing.T) {
	withChecked(t)
	p := &plan.HashAgg{In: bt.KV(), Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64},
		{Kind: plan.AggSum, Arg: bt.Col(1, types.TInt64), T: types.NumericOf(38, 0)}}}
	if got := bt.RunText(t, mem, p, false); got != "0 NULL" {
		t.Errorf("count(*), sum over no rows = %q, want 0 NULL", got)
	}
}

func TestHashJoin(t *testing.T) {
	withChecked(t)
	left := bt.KV([2]expr.Expr{bt.Str("a"), bt.Lit(1)}, [2]expr.Expr{bt.Str("b"), bt.Lit(2)}, [2]expr.Expr{bt.Str("c"), bt.Null(types.TInt64)}, [2]expr.Expr{bt.Str("d"), bt.Lit(2)})
	right := bt.KV([2]expr.Expr{bt.Str("x"), bt.Lit(2)}, [2]expr.Expr{bt.Str("y"), bt.Lit(2)}, [2]expr.Expr{bt.Str("z"), bt.Lit(3)}, [2]expr.Expr{bt.Str("n"), bt.Null(types.TInt64)})
	inner := &plan.HashJoin{Left: left, Right: right, Kind: plan.JoinInner,
		LeftKeys: []expr.Expr{bt.Col(1, types.TInt64)}, RightKeys: []expr.Expr{bt.Col(1, types.TInt64)}}
	if got, want := bt.RunText(t, mem, inner, false), "b 2 x 2\nb 2 y 2\nd 2 x 2\nd 2 y 2"; got != want {
		t.Errorf("inner join:\n%s\nwant\n%s", got, want)
	}
	leftJ := *inner
	leftJ.Kind = plan.JoinLeft
	leftJ.Residual = &expr.Func{Name: "<>", Args: []expr.Expr{bt.Col(2, types.TText), bt.Str("y")}, T: types.TBool}
	if got, want := bt.RunText(t, mem, &leftJ, false), "a 1 NULL NULL\nb 2 x 2\nc NULL NULL NULL\nd 2 x 2"; got != want {
		t.Errorf("left join with residual:\n%s\nwant\n%s", got, want)
	}
}

func TestSortLimit(t *testing.T) {
	withChecked(t)
	in := bt.KV([2]expr.Expr{bt.Str("a"), bt.Lit(3)}, [2]expr.Expr{bt.Str("b"), bt.Null(types.TInt64)}, [2]expr.Expr{bt.Str("c"), bt.Lit(1)}, [2]expr.Expr{bt.Str("d"), bt.Lit(3)})
	asc := &plan.Sort{In: in, Keys: []plan.SortKey{{E: bt.Col(1, types.TInt64)}, {E: bt.Col(0, types.TText), Desc: true}}, Limit: -1}
	if got, want := bt.RunText(t, mem, asc, true), "c 1\nd 3\na 3\nb NULL"; got != want {
		t.Errorf("ORDER BY v, k DESC:\n%s\nwant\n%s", got, want)
	}
	desc := &plan.Sort{In: in, Keys: []plan.SortKey{{E: bt.Col(1, types.TInt64), Desc: true, NullsFirst: true}}, Limit: -1}
	lim := &plan.Limit{In: desc, Offset: 1, Count: 2}
	if got, want := bt.RunText(t, mem, lim, true), "a 3\nd 3"; got != want {
		t.Errorf("ORDER BY v DESC OFFSET 1 LIMIT 2:\n%s\nwant\n%s", got, want)
	}
}

// budgetCtx runs plans with a budget of limit bytes in pool.
func budgetCtx(c context.Context, limit int64, pool *plan.MemPool) *plan.Ctx {
	b := plan.NewBudget(limit, pool)
	return &plan.Ctx{Context: c, Expr: &expr.Ctx{Mem: b.Allocator()}, Mem: b}
}

// crossJoin is a cross join of n rows with n rows of (text, bigint).
func crossJoin(n int) *plan.HashJoin {
	rows := make([][2]expr.Expr, n)
	for i := range rows {
		rows[i] = [2]expr.Expr{bt.Str("some text to hold"), bt.Lit(int64(i))}
	}
	return &plan.HashJoin{Left: bt.KV(rows...), Right: bt.KV(rows...), Kind: plan.JoinInner}
}

// TestBudgetFailsSortAndAgg: a sort and an aggregate over a cross join
// fail with 53200 under a small budget, run under a big one, and leave
// nothing allocated either way.
func TestBudgetFailsSortAndAgg(t *testing.T) {
	join := crossJoin(1000) // a million rows
	plans := map[string]plan.Plan{
		"sort": &plan.Sort{In: join, Keys: []plan.SortKey{{E: bt.Col(0, types.TText)}, {E: bt.Col(3, types.TInt64), Desc: true}}, Limit: -1},
		"agg":  &plan.HashAgg{In: join, Keys: []expr.Expr{bt.Col(1, types.TInt64), bt.Col(3, types.TInt64)}, Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}},
	}
	for name, p := range plans {
		pool := plan.NewMemPool(0)
		ctx := budgetCtx(context.Background(), 4<<20, pool)
		err := batch.Run(ctx, p, func(rec arrow.RecordBatch) error { rec.Release(); return nil })
		bt.WantCode(t, err, sqlerr.OutOfMemory)
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
		&plan.Sort{In: join, Keys: []plan.SortKey{{E: bt.Col(1, types.TInt64)}}, Limit: -1},
		&plan.HashAgg{In: join, Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}},
	} {
		for c, msg := range map[context.Context]string{canceled: "canceling statement due to user request",
			timedOut: "canceling statement due to statement timeout"} {
			err := batch.Run(budgetCtx(c, 0, nil), p, func(rec arrow.RecordBatch) error { rec.Release(); return nil })
			if e := bt.WantCode(t, err, sqlerr.QueryCanceled); e.Msg != msg {
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
	bt.WantCode(t, err, sqlerr.QueryCanceled)
	if batches != 3 {
		t.Fatalf("%d batches emitted; the probe should stop at the one after the cancel", batches)
	}
}
