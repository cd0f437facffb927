package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/hop"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// Hopping and cumulating windows: the HOP/CUMULATE expand stage (the
// stage itself is exec/hop).
//
// HOP(table, ts, slide, size) in FROM and GROUP BY HOP(ts, slide, size)
// plan as one Hop over the input (planner): each input row becomes
// size/slide output rows, its columns followed by window_start and
// window_end of one of the windows it is in, the earliest first. The
// row's last window (the greatest end) starts at tumble_start(ts, slide);
// the k-th before it starts k slides earlier. CUMULATE(table, ts, step,
// max) in FROM plans as a Hop with Cumulate set (Slide the step, Size the
// max size): a row's windows all start at s = tumble_start(ts, max) and
// end at s + k*step for each k with s + k*step > ts and k*step <= max,
// the earliest first; its last window is the max-sized one. A row whose
// time is NULL is in one window with NULL bounds. The stage is stateless:
// in a job it rides on an edge like a projection, so watermarks and
// barriers pass through it unchanged.
//
// Lateness is judged downstream (the window aggregate, a top-N per
// window, a window join) per window row, by the window's end; a row is
// late only when its last window is closed, so only that copy is counted
// and recorded (hopRowTime gives the consumer the row's time to tell it
// apart), and the copies for windows already closed while a later one is
// open are dropped silently: the row updates the open windows only.

// Hop expands each row of In into its hopping (or cumulating) windows;
// output: In's columns, window_start, window_end.
type Hop struct {
	In          Plan
	TS          expr.Expr // over In: the row's event time (timestamp)
	Slide, Size int64     // µs; Slide divides Size
	// Cumulate makes the windows CUMULATE's: Slide is the step, Size the
	// max size.
	Cumulate bool
	// Used, if set, marks the columns of In read above the stage (a job
	// sets it on its edges' stages, pruneHops): the others are NULL in
	// the output rather than copied once per window.
	Used []bool
}

func (p *Hop) Types() []types.T {
	return append(append([]types.T(nil), p.In.Types()...), types.TTimestamp, types.TTimestamp)
}

// windows is how many windows a row with a time is in (at most, for
// CUMULATE).
func (p *Hop) windows() int { return hop.Windows(p.Size, p.Slide) }

// name is the table function's.
func (p *Hop) name() string { return hop.Name(p.Cumulate) }

// hopBuf is the scratch of expand, reused from batch to batch.
type hopBuf = hop.Buf

// spec is the expand stage's spec (exec/hop).
func (p *Hop) spec() hop.Spec {
	return hop.Spec{In: p.In.Types(), TS: p.TS, Slide: p.Slide, Size: p.Size, Cumulate: p.Cumulate, Used: p.Used}
}

// expand returns rec's rows expanded into their windows and, for each
// output row, the index of the input row it came from (valid until the
// next call). It does not take ownership of rec.
func (p *Hop) expand(ectx *expr.Ctx, mem memory.Allocator, buf *hopBuf, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	s := p.spec()
	return s.Expand(ectx, mem, buf, rec)
}

// windowStartOf is the start of the tumbling window of size w holding ts
// (tumble_start, rounding toward minus infinity).
func windowStartOf(ts, w int64) int64 { return opkit.WindowStart(ts, w) }

// runHop expands the batches of a batch query.
func runHop(ctx *Ctx, p *Hop, emit func(arrow.RecordBatch) error) error {
	var buf hopBuf
	return run(ctx, p.In, func(rec arrow.RecordBatch) error {
		if err := ctx.canceled(); err != nil {
			rec.Release()
			return err
		}
		defer rec.Release()
		return cutForExpand([]Plan{p}, rec, func(part arrow.RecordBatch, _, _ int) error {
			out, _, err := p.expand(ctx.Expr, ctx.alloc(), &buf, part)
			if err != nil {
				return err
			}
			return emit(out)
		})
	})
}

// hopLast tells, for a consumer whose window bound traces to a Hop, which
// of a row's window rows is its last window (opkit.HopLast).
type hopLast = opkit.HopLast

// hopRows are a batch's row times for hopLast.IsLast.
type hopRows = opkit.HopRows

// hopRowTime finds the Hop whose window_start or window_end is column col
// of p's rows, through projections and filters, and returns the row's
// time over p's rows (nil if it cannot be followed: a projection that
// drops the time column, or one over a time that is an expression).
func hopRowTime(p Plan, col int) *hopLast {
	switch p := p.(type) {
	case *Hop:
		n := len(p.In.Types())
		if col == n || col == n+1 {
			h := &hopLast{TS: p.TS, Slide: p.Slide, Size: p.Size, Cumulate: p.Cumulate}
			if p.Cumulate && col == n {
				h.End = &expr.ColRef{Idx: n + 1, T: types.TTimestamp, Name: "window_end"}
			}
			return h
		}
	case *Filter:
		return hopRowTime(p.In, col)
	case *Project:
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
func projectedCol(p *Project, r *expr.ColRef) expr.Expr {
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
			case *Project:
				below := make([]bool, len(st.In.Types()))
				for j, x := range st.Exprs {
					if need[j] && !markCols(below, x) {
						below = nil
						break
					}
				}
				need = below
			case *Filter:
				if !markCols(need, st.Pred) {
					need = nil
				}
			case *Hop:
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
