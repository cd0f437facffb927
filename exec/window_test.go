package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// joinInputs are (text, bigint) rows on both sides: keys 1, 2, 2, NULL on
// the left and 2, 3, NULL on the right.
func joinInputs() (*plan.Values, *plan.Values) {
	l := kv([2]expr.Expr{str("l1"), lit(1)}, [2]expr.Expr{str("l2"), lit(2)}, [2]expr.Expr{str("l2b"), lit(2)},
		[2]expr.Expr{str("lnull"), null(types.TInt64)})
	r := kv([2]expr.Expr{str("r2"), lit(2)}, [2]expr.Expr{str("r3"), lit(3)}, [2]expr.Expr{str("rnull"), null(types.TInt64)})
	return l, r
}

func TestJoinKinds(t *testing.T) {
	withChecked(t)
	l, r := joinInputs()
	k := col(1, types.TInt64)
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
		if got := runText(t, p, false); got != c.want {
			t.Errorf("kind %d:\n%s\nwant\n%s", c.kind, got, c.want)
		}
	}
}

func TestJoinResidualAndEmptySides(t *testing.T) {
	withChecked(t)
	l, r := joinInputs()
	k := col(1, types.TInt64)
	// residual: left name <> 'l2b' (over left then right columns)
	res := &expr.Func{Name: "<>", Args: []expr.Expr{col(0, types.TText), str("l2b")}, T: types.TBool}
	full := &plan.HashJoin{Left: l, Right: r, Kind: plan.JoinFull, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}, Residual: res}
	want := "NULL NULL r3 3\nNULL NULL rnull NULL\nl1 1 NULL NULL\nl2 2 r2 2\nl2b 2 NULL NULL\nlnull NULL NULL NULL"
	if got := runText(t, full, false); got != want {
		t.Errorf("full with residual:\n%s\nwant\n%s", got, want)
	}
	anti := &plan.HashJoin{Left: l, Right: r, Kind: plan.JoinAnti, LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}, Residual: res}
	if got, want := runText(t, anti, false), "l1 1\nl2b 2\nlnull NULL"; got != want {
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
		if got := runText(t, c.p, false); got != c.want {
			t.Errorf("kind %d:\n%s\nwant\n%s", c.p.Kind, got, c.want)
		}
	}
}

func TestWindow(t *testing.T) {
	withChecked(t)
	in := kv([2]expr.Expr{str("a"), lit(10)}, [2]expr.Expr{str("a"), lit(30)}, [2]expr.Expr{str("a"), lit(30)},
		[2]expr.Expr{str("a"), lit(20)}, [2]expr.Expr{str("b"), lit(5)}, [2]expr.Expr{str("b"), null(types.TInt64)},
		[2]expr.Expr{null(types.TText), lit(7)})
	v := col(1, types.TInt64)
	w := &plan.Window{
		In:          in,
		PartitionBy: []expr.Expr{col(0, types.TText)},
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
	if got := runText(t, w, true); got != want {
		t.Errorf("window:\n%s\nwant\n%s", got, want)
	}
	whole := &plan.Window{In: in, Funcs: []plan.WindowFunc{{Kind: plan.WinAgg, Agg: plan.AggSpec{Kind: plan.AggMax, Arg: v, T: types.TInt64}, T: types.TInt64}, {Kind: plan.WinRank, T: types.TInt64}}}
	if got, want := runText(t, whole, false), "NULL 7 30 1\na 10 30 1\na 20 30 1\na 30 30 1\na 30 30 1\nb 5 30 1\nb NULL 30 1"; got != want {
		t.Errorf("OVER ():\n%s\nwant\n%s", got, want)
	}
	empty := &plan.Window{In: &plan.Values{Ts: []types.T{types.TText, types.TInt64}}, Funcs: []plan.WindowFunc{{Kind: plan.WinRowNumber, T: types.TInt64}}}
	if got := runText(t, empty, false); got != "" {
		t.Errorf("empty input gave %q", got)
	}
}

func TestSingleRow(t *testing.T) {
	withChecked(t)
	one := kv([2]expr.Expr{str("x"), lit(1)})
	if got := runText(t, &plan.SingleRow{In: one}, false); got != "x 1" {
		t.Errorf("one row: %q", got)
	}
	if got := runText(t, &plan.SingleRow{In: &plan.Values{Ts: []types.T{types.TText, types.TInt64}}}, false); got != "NULL NULL" {
		t.Errorf("no rows: %q", got)
	}
	two := kv([2]expr.Expr{str("x"), lit(1)}, [2]expr.Expr{str("y"), lit(2)})
	ctx := &plan.Ctx{Context: context.Background(), Expr: &expr.Ctx{Mem: memoryPool}}
	err := batch.Run(ctx, &plan.SingleRow{In: two}, func(rec arrow.RecordBatch) error { rec.Release(); return nil })
	if sqlerr.Code(err) != sqlerr.CardinalityViolation {
		t.Errorf("two rows: %v, want 21000", err)
	}
}
