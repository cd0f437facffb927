package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Hopping windows: the HOP expand stage.
//
// HOP(table, ts, slide, size) in FROM and GROUP BY HOP(ts, slide, size)
// plan as one Hop over the input (planner): each input row becomes
// size/slide output rows, its columns followed by window_start and
// window_end of one of the windows it is in, the earliest first. The
// row's last window (the greatest end) starts at tumble_start(ts, slide);
// the k-th before it starts k slides earlier. A row whose time is NULL is
// in one window with NULL bounds. The stage is stateless: in a job it
// rides on an edge like a projection, so watermarks and barriers pass
// through it unchanged.
//
// Lateness is judged downstream (the window aggregate, a top-N per
// window) per window row, by the window's end; a row is late only when
// its last window is closed, so only that copy is counted and recorded
// (hopRowTime gives the consumer the row's time to tell it apart), and
// the copies for windows already closed while a later one is open are
// dropped silently: the row updates the open windows only.

// Hop expands each row of In into its hopping windows; output: In's
// columns, window_start, window_end.
type Hop struct {
	In          Plan
	TS          expr.Expr // over In: the row's event time (timestamp)
	Slide, Size int64     // µs; Slide divides Size
	// Used, if set, marks the columns of In read above the stage (a job
	// sets it on its edges' stages, pruneHops): the others are NULL in
	// the output rather than copied once per window.
	Used []bool
}

func (p *Hop) Types() []types.T {
	return append(append([]types.T(nil), p.In.Types()...), types.TTimestamp, types.TTimestamp)
}

// windows is how many windows a row with a time is in.
func (p *Hop) windows() int { return int(p.Size / p.Slide) }

// hopBuf is the scratch of expand, reused from batch to batch.
type hopBuf struct {
	src        []int
	start, end []int64
	valid      []bool
}

// expand returns rec's rows expanded into their windows and, for each
// output row, the index of the input row it came from (valid until the
// next call). It does not take ownership of rec.
func (p *Hop) expand(ectx *expr.Ctx, mem memory.Allocator, buf *hopBuf, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	col, err := expr.Eval(ectx, p.TS, rec)
	if err != nil {
		return nil, nil, err
	}
	defer col.Release()
	ts, ok := col.(*array.Int64)
	if !ok {
		return nil, nil, sqlerr.New(sqlerr.Internal, "exec: HOP's time column is %s, not a timestamp", col.DataType())
	}
	n := int(rec.NumRows())
	w := p.windows()
	src, start, end, valid := buf.src[:0], buf.start[:0], buf.end[:0], buf.valid[:0]
	vals := ts.Int64Values()
	nulls := ts.NullN() > 0
	for i := 0; i < n; i++ {
		if nulls && ts.IsNull(i) {
			src = append(src, i)
			start = append(start, 0)
			end = append(end, 0)
			valid = append(valid, false)
			continue
		}
		first := windowStartOf(vals[i], p.Slide) - int64(w-1)*p.Slide
		for k := 0; k < w; k++ {
			s := first + int64(k)*p.Slide
			src = append(src, i)
			start = append(start, s)
			end = append(end, s+p.Size)
			valid = append(valid, true)
		}
	}
	buf.src, buf.start, buf.end, buf.valid = src, start, end, valid
	inTs := p.In.Types()
	cols := make([]arrow.Array, 0, len(inTs)+2)
	for c, t := range inTs {
		if p.Used != nil && !p.Used[c] {
			cols = append(cols, newNullArrayMem(mem, t, len(src)))
			continue
		}
		cols = append(cols, takeArrayMem(mem, rec.Column(c), src, t))
	}
	if !nulls {
		valid = nil
	}
	cols = append(cols, int64Array(mem, start, valid), int64Array(mem, end, valid))
	return newRecord(p.Types(), cols, len(src)), src, nil
}

// int64Array builds an Int64 array of vs (valid nil: no NULLs).
func int64Array(mem memory.Allocator, vs []int64, valid []bool) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(vs, valid)
	return b.NewArray()
}

// windowStartOf is the start of the tumbling window of size w holding ts
// (tumble_start, rounding toward minus infinity).
func windowStartOf(ts, w int64) int64 {
	s := ts - ts%w
	if ts%w < 0 {
		s -= w
	}
	return s
}

// runHop expands the batches of a batch query.
func runHop(ctx *Ctx, p *Hop, emit func(arrow.RecordBatch) error) error {
	var buf hopBuf
	return run(ctx, p.In, func(rec arrow.RecordBatch) error {
		if err := ctx.canceled(); err != nil {
			rec.Release()
			return err
		}
		out, _, err := p.expand(ctx.Expr, ctx.alloc(), &buf, rec)
		rec.Release()
		if err != nil {
			return err
		}
		return emit(out)
	})
}

// hopLast tells, for a consumer whose window bound traces to a Hop, which
// of a row's window rows is its last window: only that one is counted
// and recorded when late.
type hopLast struct {
	TS          expr.Expr // the row's time, over the consumer's input
	Slide, Size int64
}

// hopRowTime finds the Hop whose window_start or window_end is column col
// of p's rows, through projections and filters, and returns the row's
// time over p's rows (nil if it cannot be followed: a projection that
// drops the time column, or one over a time that is an expression).
func hopRowTime(p Plan, col int) *hopLast {
	switch p := p.(type) {
	case *Hop:
		n := len(p.In.Types())
		if col == n || col == n+1 {
			return &hopLast{TS: p.TS, Slide: p.Slide, Size: p.Size}
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
		for j, e := range p.Exprs {
			if c, ok := e.(*expr.ColRef); ok && c.Idx == tr.Idx {
				return &hopLast{TS: &expr.ColRef{Idx: j, T: tr.T, Name: tr.Name}, Slide: h.Slide, Size: h.Size}
			}
		}
	}
	return nil
}

// times evaluates the rows' times over rec; the caller releases them.
func (h *hopLast) times(ectx *expr.Ctx, rec arrow.RecordBatch) (*array.Int64, error) {
	col, err := expr.Eval(ectx, h.TS, rec)
	if err != nil {
		return nil, err
	}
	ts, ok := col.(*array.Int64)
	if !ok {
		col.Release()
		return nil, sqlerr.New(sqlerr.Internal, "exec: HOP's time column is %s, not a timestamp", col.DataType())
	}
	return ts, nil
}

// isLast says whether the window row ending at end, of a row whose time
// is ts[i], is the row's last window.
func (h *hopLast) isLast(ts *array.Int64, i int, end int64) bool {
	if ts == nil || ts.IsNull(i) {
		return true
	}
	return windowStartOf(ts.Value(i), h.Slide)+h.Size == end
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
			es = append(es, w.Hop.TS)
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
