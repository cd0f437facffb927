package exec

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/hop"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// hopBuf is the scratch of expand, reused from batch to batch.
type hopBuf = hop.Buf

// hopLast tells, for a consumer whose window bound traces to a Hop, which
// of a row's window rows is its last window (opkit.HopLast).
type hopLast = opkit.HopLast

// hopRows are a batch's row times for hopLast.IsLast.
type hopRows = opkit.HopRows

// hopRowTime finds the Hop whose window_start or window_end is column col
// of p's rows, through projections and filters, and returns the row's
// time over p's rows (nil if it cannot be followed: a projection that
// drops the time column, or one over a time that is an expression).
func hopRowTime(p plan.Plan, col int) *hopLast {
	switch p := p.(type) {
	case *plan.Hop:
		n := len(p.In.Types())
		if col == n || col == n+1 {
			h := &hopLast{TS: p.TS, Slide: p.Slide, Size: p.Size, Cumulate: p.Cumulate}
			if p.Cumulate && col == n {
				h.End = &expr.ColRef{Idx: n + 1, T: types.TTimestamp, Name: "window_end"}
			}
			return h
		}
	case *plan.Filter:
		return hopRowTime(p.In, col)
	case *plan.Project:
		if col >= len(p.Exprs) {
			return nil
		}
		r, ok := p.Exprs[col].(*expr.ColRef)
		if !ok {
			return nil
		}
		h := hopRowTime(p.In, r.Idx)
		if h == nil {
			return nil
		}
		tr, ok := h.TS.(*expr.ColRef)
		if !ok {
			return nil
		}
		ts := projectedCol(p, tr)
		if ts == nil {
			return nil
		}
		out := &hopLast{TS: ts, Slide: h.Slide, Size: h.Size, Cumulate: h.Cumulate}
		if er, ok := h.End.(*expr.ColRef); ok {
			out.End = projectedCol(p, er)
		}
		return out
	}
	return nil
}

// projectedCol is the column of p's output that is column r of its input
// (nil if p drops it).
func projectedCol(p *plan.Project, r *expr.ColRef) expr.Expr {
	for j, e := range p.Exprs {
		if c, ok := e.(*expr.ColRef); ok && c.Idx == r.Idx {
			return &expr.ColRef{Idx: j, T: r.T, Name: r.Name}
		}
	}
	return nil
}

// pruneHops marks, on the Hop stages of g's edges into an aggregate, the
// input columns read above them (Hop.Used), so the columns a window
// aggregate does not read are not copied once per window. The aggregate
// reads its keys, its arguments and the row's time for lateness; a job
// that records late rows (recordLate) keeps every column, which the
// recorded row shows. Other consumers keep every column.
func pruneHops(g *graph, recordLate bool) {
	if recordLate {
		return
	}
	for _, n := range g.nodes {
		if n.kind != nAgg {
			continue
		}
		e := n.ins[0]
		need := make([]bool, len(e.from.outTypes(e)))
		var es []expr.Expr
		es = append(es, n.agg.Keys...)
		for _, a := range n.agg.Aggs {
			es = append(es, a.Arg)
		}
		if w := windowCloseOf(n.agg); w != nil && w.Hop != nil {
			es = append(es, w.Hop.TS, w.Hop.End)
		}
		if !markCols(need, es...) {
			continue
		}
		for i := len(e.stages) - 1; i >= 0 && need != nil; i-- {
			switch st := e.stages[i].(type) {
			case *plan.Project:
				below := make([]bool, len(st.In.Types()))
				for j, x := range st.Exprs {
					if need[j] && !markCols(below, x) {
						below = nil
						break
					}
				}
				need = below
			case *plan.Filter:
				if !markCols(need, st.Pred) {
					need = nil
				}
			case *plan.Hop:
				nin := len(st.In.Types())
				below := append([]bool(nil), need[:nin]...)
				if !markCols(below, st.TS) {
					need = nil
					break
				}
				pruned := *st
				pruned.Used = below
				e.stages[i] = &pruned
				need = below
			default:
				need = nil
			}
		}
	}
}

// markCols marks in used the columns es read; false if one reads a column
// out of range or is an expression it does not know.
func markCols(used []bool, es ...expr.Expr) bool {
	for _, e := range es {
		switch e := e.(type) {
		case nil, *expr.Const, *expr.Param:
		case *expr.ColRef:
			if e.Idx < 0 || e.Idx >= len(used) {
				return false
			}
			used[e.Idx] = true
		case *expr.Cast:
			if !markCols(used, e.E) {
				return false
			}
		case *expr.Func:
			if !markCols(used, e.Args...) {
				return false
			}
		case *expr.Case:
			for _, w := range e.Whens {
				if !markCols(used, w.Cond, w.Then) {
					return false
				}
			}
			if !markCols(used, e.Else) {
				return false
			}
		case *expr.InList:
			if !markCols(used, e.E) || !markCols(used, e.List...) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
