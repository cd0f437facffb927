package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// TestJoinTimeOf checks which join conditions make an interval join and
// the bounds read from them.
func TestJoinTimeOf(t *testing.T) {
	side := wmStream("s", 1, types.TInt64, types.TTimestamp) // k, ts
	col := func(i int) expr.Expr {
		ts := types.TTimestamp
		if i%2 == 0 {
			ts = types.TInt64
		}
		return &expr.ColRef{Idx: i, T: ts}
	}
	sec := func(n int64) expr.Expr {
		return &expr.Const{T: types.TInterval, D: types.Datum{IV: arrow.MonthDayNanoInterval{Nanoseconds: n * 1e9}}}
	}
	fn := func(name string, args ...expr.Expr) expr.Expr {
		tt := types.TBool
		if name == "+" || name == "-" {
			tt = types.TTimestamp
		}
		return &expr.Func{Name: name, Args: args, T: tt}
	}
	// a.ts is column 1, b.ts column 3 of the pairs.
	between := fn("and", fn(">=", col(1), fn("-", col(3), sec(2))), fn("<=", col(1), fn("+", col(3), sec(1))))
	cases := []struct {
		name     string
		kind     plan.JoinKind
		residual expr.Expr
		preds    []expr.Expr
		want     *[2]int64 // free offsets, µs; nil: not an interval join
	}{
		{"between", plan.JoinInner, between, nil, &[2]int64{2e6 + 1, 1e6 + 1}},
		{"between as a filter over the join", plan.JoinInner, nil, []expr.Expr{between}, &[2]int64{2e6 + 1, 1e6 + 1}},
		{"operands swapped, strict", plan.JoinInner, fn("and", fn("<=", col(3), fn("+", col(1), sec(1))), fn(">", col(3), fn("-", col(1), sec(2)))), nil, &[2]int64{1e6 + 1, 2e6 + 1}},
		{"tighter bound wins", plan.JoinInner, fn("and", between, fn("<=", col(3), col(1))), nil, &[2]int64{1, 1e6 + 1}},
		{"one way only", plan.JoinInner, fn(">=", col(1), fn("-", col(3), sec(2))), nil, nil},
		{"both columns of one side", plan.JoinInner, fn("and", fn(">=", col(1), col(1)), fn("<=", col(3), col(3))), nil, nil},
		{"left outer", plan.JoinLeft, between, nil, &[2]int64{2e6 + 1, 1e6 + 1}},
		{"full outer", plan.JoinFull, between, nil, &[2]int64{2e6 + 1, 1e6 + 1}},
		{"semi (EXISTS)", plan.JoinSemi, between, nil, &[2]int64{2e6 + 1, 1e6 + 1}},
		{"anti (NOT EXISTS)", plan.JoinAnti, between, nil, &[2]int64{2e6 + 1, 1e6 + 1}},
		{"left outer: a filter over it does not bound", plan.JoinLeft, nil, []expr.Expr{between}, nil},
	}
	for _, c := range cases {
		j := &plan.HashJoin{Left: side, Right: side, Kind: c.kind, LeftKeys: []expr.Expr{col(0)}, RightKeys: []expr.Expr{col(0)}, Residual: c.residual}
		jt := joinTimeOf(j, c.preds)
		switch {
		case c.want == nil && jt != nil:
			t.Errorf("%s: %+v, want none", c.name, jt)
		case c.want != nil && jt == nil:
			t.Errorf("%s: none, want free offsets %v", c.name, *c.want)
		case c.want != nil && (jt.Kind != "interval join" || jt.Free != *c.want || jt.Col != [2]int{1, 1} || jt.Late != [2]int64{1, 1}):
			t.Errorf("%s: %+v, want free offsets %v on columns 1, 1", c.name, jt, *c.want)
		}
	}

	// Each side by its own time's watermark: none on the right (not its
	// WATERMARK FOR column), the left's shifted by - 2 s.
	plain := wmStream("p", -1, types.TInt64, types.TTimestamp)
	left := &plan.Project{In: side, Exprs: []expr.Expr{col(0), fn("-", col(1), sec(2))}}
	j := &plan.HashJoin{Left: left, Right: plain, Kind: plan.JoinInner, LeftKeys: []expr.Expr{col(0)}, RightKeys: []expr.Expr{col(0)}, Residual: between}
	jt := joinTimeOf(j, nil)
	if jt == nil || jt.Lates != [2]bool{true, false} || jt.Frees != [2]bool{false, true} ||
		jt.Late[0] != 2e6+1 || jt.Free[1] != 1e6+2e6+1 || jt.Shift[0] != -2e6 {
		t.Errorf("left shifted, right without a watermark: %+v", jt)
	}
	j.Left = plain
	if jt := joinTimeOf(j, nil); jt != nil {
		t.Errorf("neither side with a watermark: %+v", jt)
	}
}
