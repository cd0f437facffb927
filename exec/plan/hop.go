package plan

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/hop"
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
func (p *Hop) Name() string { return hop.Name(p.Cumulate) }

// spec is the expand stage's spec (exec/hop).
func (p *Hop) spec() hop.Spec {
	return hop.Spec{In: p.In.Types(), TS: p.TS, Slide: p.Slide, Size: p.Size, Cumulate: p.Cumulate, Used: p.Used}
}

// expand returns rec's rows expanded into their windows and, for each
// output row, the index of the input row it came from (valid until the
// next call). It does not take ownership of rec.
func (p *Hop) Expand(ectx *expr.Ctx, mem memory.Allocator, buf *hop.Buf, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	s := p.spec()
	return s.Expand(ectx, mem, buf, rec)
}

// ExpandBatchRows bounds the rows a window expand stage makes of one batch.
const ExpandBatchRows = 64 << 10

// expandStep is the most input rows per batch that the stages' window
// expansion keeps within expandBatchRows (all of them without one).
func expandStep(stages []Plan) int {
	fan := 1
	for _, st := range stages {
		if h, ok := st.(*Hop); ok {
			fan *= max(1, h.windows())
		}
	}
	if fan == 1 {
		return math.MaxInt
	}
	return max(1, ExpandBatchRows/fan)
}

// CutForExpand calls f, in order, with rec's rows [lo, hi) in parts that
// the stages' window expansion keeps within expandBatchRows: rec itself
// when it needs no cut, slices of it otherwise, and nothing when it has
// no rows. The caller keeps rec; f borrows part (Retain to keep it) and
// the first error f returns ends the cut.
func CutForExpand(stages []Plan, rec arrow.RecordBatch, f func(part arrow.RecordBatch, lo, hi int) error) error {
	n := int(rec.NumRows())
	step := expandStep(stages)
	if step >= n {
		if n == 0 {
			return nil
		}
		return f(rec, 0, n)
	}
	for lo := 0; lo < n; lo += step {
		hi := min(n, lo+step)
		part := rec.NewSlice(int64(lo), int64(hi))
		err := f(part, lo, hi)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
