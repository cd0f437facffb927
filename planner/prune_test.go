package planner

import (
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

func scanOf(name string, cols ...string) *Scan {
	s := &Scan{Table: &storage.TableDef{Name: name}, Alias: name}
	for _, c := range cols {
		t := types.TInt64
		if c == "pad" {
			t = types.TText
		}
		s.Cols = append(s.Cols, Column{Name: c, T: t, Table: name})
	}
	return s
}

func ref(i int, t types.T) *expr.ColRef { return &expr.ColRef{Idx: i, T: t} }

func eq(a, b expr.Expr) expr.Expr {
	return &expr.Func{Name: "=", Args: []expr.Expr{a, b}, T: types.TBool}
}

// SELECT l.a, r.b FROM l JOIN r ON l.k = r.k WHERE r.y > l.a: each side
// keeps the key and what the filter and the projection read, and the
// expressions above the join read the narrowed columns.
func TestPruneJoinInputsNarrowsSides(t *testing.T) {
	l := scanOf("l", "k", "a", "pad", "x") // 0..3
	r := scanOf("r", "k", "b", "pad", "y") // 4..7
	cols := append(append([]Column(nil), l.Cols...), r.Cols...)
	j := &Join{Left: l, Right: r, Kind: InnerJoin, On: eq(ref(0, types.TInt64), ref(4, types.TInt64)), Cols: cols}
	f := &Filter{Input: j, Pred: &expr.Func{Name: ">", Args: []expr.Expr{ref(7, types.TInt64), ref(1, types.TInt64)}, T: types.TBool}}
	p := &Project{Input: f, Exprs: []expr.Expr{ref(1, types.TInt64), ref(5, types.TInt64)}, Cols: []Column{l.Cols[1], r.Cols[1]}}

	out := PruneJoinInputs(p).(*Project)
	nf := out.Input.(*Filter)
	nj := nf.Input.(*Join)
	lp, ok := nj.Left.(*Project)
	if !ok || len(lp.Exprs) != 2 {
		t.Fatalf("left side not narrowed to k, a: %#v", nj.Left)
	}
	rp, ok := nj.Right.(*Project)
	if !ok || len(rp.Exprs) != 3 {
		t.Fatalf("right side not narrowed to k, b, y: %#v", nj.Right)
	}
	if len(nj.Cols) != 5 {
		t.Fatalf("join has %d columns, want 5", len(nj.Cols))
	}
	// l: k a | r: k b y
	if got := nj.On.String(); got != eq(ref(0, types.TInt64), ref(2, types.TInt64)).String() {
		t.Errorf("ON = %s", got)
	}
	if got, want := nf.Pred.(*expr.Func).Args[0].(*expr.ColRef).Idx, 4; got != want {
		t.Errorf("filter reads r.y at %d, want %d", got, want)
	}
	if a, b := out.Exprs[0].(*expr.ColRef).Idx, out.Exprs[1].(*expr.ColRef).Idx; a != 1 || b != 3 {
		t.Errorf("projection reads %d, %d, want 1, 3", a, b)
	}
	if len(out.Cols) != 2 {
		t.Errorf("the plan's output changed: %d columns", len(out.Cols))
	}
}

// A semi join outputs its left side only; a side none of whose columns is
// read keeps one.
func TestPruneJoinInputsSemiAndUnread(t *testing.T) {
	l := scanOf("l", "k", "a", "pad")
	r := scanOf("r", "k", "b", "pad")
	semi := &Join{Left: l, Right: r, Kind: SemiJoin, On: eq(ref(0, types.TInt64), ref(3, types.TInt64)), Cols: l.Cols}
	p := &Project{Input: semi, Exprs: []expr.Expr{ref(1, types.TInt64)}, Cols: []Column{l.Cols[1]}}
	nj := PruneJoinInputs(p).(*Project).Input.(*Join)
	if len(nj.Cols) != 2 || len(nj.Right.Schema()) != 1 {
		t.Fatalf("semi join: %d columns out, right side %d, want 2 and 1", len(nj.Cols), len(nj.Right.Schema()))
	}
	cross := &Join{Left: l, Right: r, Kind: InnerJoin, Cols: append(append([]Column(nil), l.Cols...), r.Cols...)}
	c := &Project{Input: cross, Exprs: []expr.Expr{ref(4, types.TInt64)}, Cols: []Column{r.Cols[1]}}
	cj := PruneJoinInputs(c).(*Project)
	if n := len(cj.Input.(*Join).Left.Schema()); n != 1 {
		t.Fatalf("unread left side keeps %d columns, want 1", n)
	}
	if got := cj.Exprs[0].(*expr.ColRef).Idx; got != 1 {
		t.Errorf("projection reads %d, want 1", got)
	}
}
