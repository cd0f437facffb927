// Package hop is the expand stage of hopping and cumulating windows
// (HOP/CUMULATE): each input row becomes one output row per window it is
// in, its columns followed by window_start and window_end. The stage is
// stateless: in a job it rides on an edge like a projection, so watermarks
// and barriers pass through it unchanged, and it needs none of the
// operator contract's barrier or state handling. The plan node, the
// batch query's loop and the lateness of window rows downstream stay in
// exec (hop.go).
//
// It imports neither the runtime nor another operator family.
package hop

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Spec is a HOP or CUMULATE expand over rows of types In.
type Spec struct {
	In          []types.T
	TS          expr.Expr // over In: the row's event time (timestamp)
	Slide, Size int64     // µs; Slide divides Size
	// Cumulate makes the windows CUMULATE's: Slide is the step, Size the
	// max size.
	Cumulate bool
	// Used, if set, marks the columns of In read above the stage: the
	// others are NULL in the output rather than copied once per window.
	Used []bool
}

// Types are the output columns' types: In's, window_start, window_end.
func (p *Spec) Types() []types.T {
	return append(append([]types.T(nil), p.In...), types.TTimestamp, types.TTimestamp)
}

// Windows is how many windows a row with a time is in (at most, for
// CUMULATE) with windows of size, every slide.
func Windows(size, slide int64) int { return int(size / slide) }

// Name is the table function's: cumulate or hop.
func Name(cumulate bool) string {
	if cumulate {
		return "cumulate"
	}
	return "hop"
}

// Buf is the scratch of Expand, reused from batch to batch.
type Buf struct {
	src        []int
	start, end []int64
	valid      []bool
}

// Expand returns rec's rows expanded into their windows and, for each
// output row, the index of the input row it came from (valid until the
// next call). It does not take ownership of rec.
//
// A row's last window (the greatest end) starts at tumble_start(ts,
// slide); the k-th before it starts k slides earlier. CUMULATE's windows
// all start at s = tumble_start(ts, max) and end at s + k*step for each k
// with s + k*step > ts and k*step <= max, the earliest first. A row whose
// time is NULL is in one window with NULL bounds.
func (p *Spec) Expand(ectx *expr.Ctx, mem memory.Allocator, buf *Buf, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	col, err := expr.Eval(ectx, p.TS, rec)
	if err != nil {
		return nil, nil, err
	}
	defer col.Release()
	ts, ok := col.(*array.Int64)
	if !ok {
		return nil, nil, sqlerr.New(sqlerr.Internal, "exec: %s's time column is %s, not a timestamp", strings.ToUpper(Name(p.Cumulate)), col.DataType())
	}
	n := int(rec.NumRows())
	w := Windows(p.Size, p.Slide)
	if most := n * max(w, 1); cap(buf.src) < most {
		// At most w windows a row (CUMULATE's max/step too): one
		// allocation, not a slice grown by doubling each batch.
		buf.src, buf.start, buf.end, buf.valid = make([]int, 0, most), make([]int64, 0, most), make([]int64, 0, most), make([]bool, 0, most)
	}
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
		if p.Cumulate {
			// [s, s + k*step) for k from the first end after ts to max.
			s := opkit.WindowStart(vals[i], p.Size)
			for e := s + ((vals[i]-s)/p.Slide+1)*p.Slide; e <= s+p.Size; e += p.Slide {
				src = append(src, i)
				start = append(start, s)
				end = append(end, e)
				valid = append(valid, true)
			}
			continue
		}
		first := opkit.WindowStart(vals[i], p.Slide) - int64(w-1)*p.Slide
		for k := 0; k < w; k++ {
			s := first + int64(k)*p.Slide
			src = append(src, i)
			start = append(start, s)
			end = append(end, s+p.Size)
			valid = append(valid, true)
		}
	}
	buf.src, buf.start, buf.end, buf.valid = src, start, end, valid
	cols := make([]arrow.Array, 0, len(p.In)+2)
	for c, t := range p.In {
		if p.Used != nil && !p.Used[c] {
			cols = append(cols, opkit.NewNullArrayMem(mem, t, len(src)))
			continue
		}
		cols = append(cols, opkit.TakeArrayMem(mem, rec.Column(c), src, t))
	}
	if !nulls {
		valid = nil
	}
	cols = append(cols, int64Array(mem, start, valid), int64Array(mem, end, valid))
	return opkit.NewRecord(p.Types(), cols, len(src)), src, nil
}

// int64Array builds an Int64 array of vs (valid nil: no NULLs).
func int64Array(mem memory.Allocator, vs []int64, valid []bool) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(vs, valid)
	return b.NewArray()
}
