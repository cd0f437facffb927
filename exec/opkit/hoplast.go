package opkit

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
)

// HopLast tells, for a consumer whose window bound traces to a Hop, which
// of a row's window rows is its last window: only that one is counted
// and recorded when late.
type HopLast struct {
	TS          expr.Expr // the row's time, over the consumer's input
	Slide, Size int64
	Cumulate    bool
	// End, for a CUMULATE bound that is window_start (all of a row's
	// windows share it), is the window row's window_end over the
	// consumer's input; nil if it cannot be followed, and then every
	// copy of a late row counts.
	End expr.Expr
}

// HopRows are a batch's row times (and window ends, HopLast.End) for
// IsLast; release them after use.
type HopRows struct{ TS, End *array.Int64 }

func (r HopRows) Release() {
	if r.TS != nil {
		r.TS.Release()
	}
	if r.End != nil {
		r.End.Release()
	}
}

// Times evaluates the rows' times (and window ends) over rec; the caller
// releases them.
func (h *HopLast) Times(ectx *expr.Ctx, rec arrow.RecordBatch) (HopRows, error) {
	var r HopRows
	for _, x := range []struct {
		e   expr.Expr
		dst **array.Int64
	}{{h.TS, &r.TS}, {h.End, &r.End}} {
		if x.e == nil {
			continue
		}
		col, err := expr.Eval(ectx, x.e, rec)
		if err != nil {
			r.Release()
			return HopRows{}, err
		}
		a, ok := col.(*array.Int64)
		if !ok {
			col.Release()
			r.Release()
			return HopRows{}, sqlerr.New(sqlerr.Internal, "exec: a window's time column is %s, not a timestamp", col.DataType())
		}
		*x.dst = a
	}
	return r, nil
}

// IsLast says whether the window row ending at end (for a CUMULATE bound
// on window_start, at the row's window_end instead), of a row whose time
// is r.TS[i], is the row's last window.
func (h *HopLast) IsLast(r HopRows, i int, end int64) bool {
	if r.TS == nil || r.TS.IsNull(i) {
		return true
	}
	if h.Cumulate {
		if h.End != nil {
			if r.End == nil || r.End.IsNull(i) {
				return true
			}
			end = r.End.Value(i)
		}
		return WindowStart(r.TS.Value(i), h.Size)+h.Size == end
	}
	return WindowStart(r.TS.Value(i), h.Slide)+h.Size == end
}

// WindowStart is the start of the tumbling window of size w holding ts
// (tumble_start, rounding toward minus infinity).
func WindowStart(ts, w int64) int64 {
	s := ts - ts%w
	if ts%w < 0 {
		s -= w
	}
	return s
}
