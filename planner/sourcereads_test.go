package planner

import (
	"fmt"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

func sourceOf(name string, cols ...string) *Scan {
	s := scanOf(name, cols...)
	s.Table.Kind = storage.KindSource
	for _, c := range s.Cols {
		s.Table.Columns = append(s.Table.Columns, storage.ColumnDef{Name: c.Name, Type: c.T})
	}
	return s
}

// SELECT l.a, count(*) FROM l JOIN r ON l.k = r.k WHERE r.y > 0 GROUP BY
// l.a: each source's scan reads its key and what the filter and the
// aggregate read; the plan's columns are unchanged.
func TestMarkSourceReads(t *testing.T) {
	l := sourceOf("l", "k", "a", "pad", "x") // 0..3
	r := sourceOf("r", "k", "b", "pad", "y") // 4..7
	cols := append(append([]Column(nil), l.Cols...), r.Cols...)
	j := &Join{Left: l, Right: r, Kind: InnerJoin, On: eq(ref(0, types.TInt64), ref(4, types.TInt64)), Cols: cols}
	f := &Filter{Input: j, Pred: &expr.Func{Name: ">", Args: []expr.Expr{ref(7, types.TInt64), &expr.Const{T: types.TInt64}}, T: types.TBool}}
	a := &Aggregate{Input: f, GroupBy: []expr.Expr{ref(1, types.TInt64)}, Aggs: []AggCall{{Func: AggCountStar, T: types.TInt64}},
		Cols: []Column{l.Cols[1], {Name: "count", T: types.TInt64}}}

	out := MarkSourceReads(a).(*Aggregate)
	nj := out.Input.(*Filter).Input.(*Join)
	if got := fmt.Sprint(nj.Left.(*Scan).Reads); got != "[true true false false]" {
		t.Errorf("l reads %s", got)
	}
	if got := fmt.Sprint(nj.Right.(*Scan).Reads); got != "[true false false true]" {
		t.Errorf("r reads %s", got)
	}
	if l.Reads != nil || r.Reads != nil {
		t.Error("the input plan was changed")
	}
	if len(nj.Cols) != 8 {
		t.Errorf("the join has %d columns, want 8", len(nj.Cols))
	}
	// Under a node it does not know (a window function), every column.
	w := &WindowAgg{Input: sourceOf("s", "k", "pad"), Cols: []Column{{Name: "k"}, {Name: "pad"}}}
	p := &Project{Input: w, Exprs: []expr.Expr{ref(0, types.TInt64)}, Cols: []Column{{Name: "k"}}}
	if got := MarkSourceReads(p).(*Project).Input.(*WindowAgg).Input.(*Scan).Reads; got != nil {
		t.Errorf("a scan under a window function reads %v, want every column", got)
	}
}
