package over

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// FrameBoundKind is one end of a window frame.
type FrameBoundKind uint8

const (
	BoundUnboundedPreceding FrameBoundKind = iota
	BoundPreceding                         // N PRECEDING
	BoundCurrentRow
	BoundFollowing // N FOLLOWING
	BoundUnboundedFollowing
)

// FrameBound is a frame start or end; N is the offset of BoundPreceding
// and BoundFollowing.
type FrameBound struct {
	Kind FrameBoundKind
	N    int64
	// Off is a RANGE frame's offset (rangeframe.go): I for an integer
	// ORDER BY key, F for a floating-point one, D for numeric (scaled by
	// 10^N: N is the offset's scale), IV for timestamp, timestamptz, date
	// and time.
	Off types.Datum
}

// Frame is a window function's frame: ROWS counts rows from the
// current one; RANGE (Rows false) moves by ORDER BY values, CURRENT ROW
// including the current row's peers (offsets: rangeframe.go); GROUPS
// (Groups, Rows false) counts peer groups (groupsFrame). DefaultFrame is
// PostgreSQL's default.
type Frame struct {
	Rows       bool
	Groups     bool `json:",omitempty"`
	Start, End FrameBound
}

// DefaultFrame is RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW: with
// ORDER BY up to the current row's last peer, without it the partition.
var DefaultFrame = Frame{Start: FrameBound{Kind: BoundUnboundedPreceding}, End: FrameBound{Kind: BoundCurrentRow}}

// WholePartition reports whether the frame is every row of the partition.
func (f Frame) WholePartition() bool {
	return f.Start.Kind == BoundUnboundedPreceding && f.End.Kind == BoundUnboundedFollowing
}

// frameFunc returns the frame [lo, hi) of the sorted row k, as bounds.
type frameFunc func(k, ps, pe, gs, ge int) (lo, hi int)

// bounds returns the frame [lo, hi) of the sorted row k, in the partition
// [ps, pe) and the peer group [gs, ge); empty when hi <= lo.
func (f Frame) bounds(k, ps, pe, gs, ge int) (lo, hi int) {
	back := func(n int64) int { // k-n, not before ps
		if n > int64(k-ps) {
			return ps
		}
		return k - int(n)
	}
	fwd := func(n int64) int { // k+n, not after pe
		if n > int64(pe-k) {
			return pe
		}
		return k + int(n)
	}
	switch f.Start.Kind {
	case BoundUnboundedPreceding:
		lo = ps
	case BoundPreceding:
		lo = back(f.Start.N)
	case BoundCurrentRow:
		lo = k
		if !f.Rows {
			lo = gs
		}
	case BoundFollowing:
		lo = fwd(f.Start.N)
	default:
		lo = pe
	}
	switch f.End.Kind {
	case BoundUnboundedPreceding:
		hi = ps
	case BoundPreceding:
		hi = back(f.End.N) + 1
		if f.End.N > int64(k-ps) {
			hi = ps
		}
	case BoundCurrentRow:
		hi = k + 1
		if !f.Rows {
			hi = ge
		}
	case BoundFollowing:
		hi = fwd(f.End.N)
		if hi < pe {
			hi++
		}
	default:
		hi = pe
	}
	return lo, hi
}

// windowValue computes lag, lead, first_value, last_value or nth_value
// over the rows sorted by idx (partition, then ORDER BY): for every sorted
// row it picks the input row whose Arg is its value (-1 for NULL), or marks
// that lag/lead's default applies, then takes the values in one pass.
func windowValue(env *Env, f Func, rec arrow.RecordBatch, idx []int, spids []int32, peer []bool, frame frameFunc) (arrow.Array, error) {
	n := len(idx)
	if f.Kind == NthValue && f.N <= 0 && !f.NNull {
		return nil, sqlerr.New("22016", "argument of nth_value must be greater than zero")
	}
	arg, err := expr.Eval(env.Expr, f.Arg, rec)
	if err != nil {
		return nil, err
	}
	defer arg.Release()
	src := make([]int, n)
	useDef := f.Default != nil && !f.NNull
	rows := int(rec.NumRows())
	defer env.hold(int64(n) * 8)()
	if err := env.check(); err != nil {
		return nil, err
	}
	for ps := 0; ps < n; {
		pe := ps + 1
		for pe < n && spids[pe] == spids[ps] {
			pe++
		}
		for gs := ps; gs < pe; {
			ge := gs + 1
			for ge < pe && peer[ge] {
				ge++
			}
			for k := gs; k < ge; k++ {
				j := -1
				switch f.Kind {
				case Lag, Lead:
					off := f.N
					if f.Kind == Lead {
						off = -off
					}
					switch {
					case f.NNull:
					case off >= 0 && off <= int64(k-ps):
						j = k - int(off)
					case off < 0 && -off < int64(pe-k):
						j = k - int(off)
					case useDef:
						src[k] = rows + idx[k] // the default at the current row
						continue
					}
				default:
					lo, hi := frame(k, ps, pe, gs, ge)
					switch f.Kind {
					case FirstValue:
						if lo < hi {
							j = lo
						}
					case LastValue:
						if lo < hi {
							j = hi - 1
						}
					default: // nth_value
						if !f.NNull && f.N <= int64(hi-lo) {
							j = lo + int(f.N) - 1
						}
					}
				}
				if j >= 0 {
					j = idx[j]
				}
				src[k] = j
			}
			gs = ge
		}
		ps = pe
	}
	if !useDef {
		return opkit.TakeArrayMem(env.alloc(), arg, src, f.T), nil
	}
	def, err := expr.Eval(env.Expr, f.Default, rec)
	if err != nil {
		return nil, err
	}
	defer def.Release()
	// Values then defaults, so src indexes both (rows+i is row i's default).
	both, err := types.Concatenate([]arrow.Array{arg, def}, env.alloc())
	if err != nil {
		return nil, err
	}
	defer both.Release()
	return opkit.TakeArrayMem(env.alloc(), both, src, f.T), nil
}

// Aggregate frames: frameRunning is ROWS UNBOUNDED PRECEDING to CURRENT ROW
// (the running fold, one row at a time); frameSliding is any other ROWS
// frame but the whole partition, folded afresh for every row (the work is
// the sum of the frames' sizes, as PostgreSQL's for an aggregate without
// an inverse: quadratic in the partition for a frame with an unbounded end).
func frameRunning(f Frame) bool {
	return f.Rows && f.Start.Kind == BoundUnboundedPreceding && f.End.Kind == BoundCurrentRow
}

func frameSliding(f Frame) bool {
	return f.Rows && !frameRunning(f) && !f.WholePartition()
}

// windowAggSliding computes an aggregate over a ROWS, GROUPS or RANGE
// offset frame: every
// sorted row is its own group of the accumulator, fed the rows of its
// frame, so the work is the sum of the frames' sizes (at most n times the
// frame's width).
func windowAggSliding(env *Env, f Func, rec arrow.RecordBatch, idx []int, spids []int32, frame frameFunc) (arrow.Array, error) {
	n := len(idx)
	acc := accum.New(f.Agg, false)
	acc.Grow(n)
	var sorted arrow.Array
	if f.Agg.Arg != nil {
		arg, err := expr.Eval(env.Expr, f.Agg.Arg, rec)
		if err != nil {
			return nil, err
		}
		sorted = opkit.TakeArrayMem(opkit.Mem, arg, idx, f.Agg.Arg.Type())
		arg.Release()
		defer sorted.Release()
	}
	defer env.hold(int64(n) * 64)()
	if err := env.check(); err != nil {
		return nil, err
	}
	check, _ := acc.(interface{ CheckResult(int32) error })
	bl := types.NewBuilder(env.alloc(), f.T)
	defer bl.Release()
	bl.Reserve(n)
	var gids []int32
	stop := env.stopper()
	for ps := 0; ps < n; {
		pe := ps + 1
		for pe < n && spids[pe] == spids[ps] {
			pe++
		}
		for k := ps; k < pe; k++ {
			if stop.Stopped() {
				return nil, env.canceled()
			}
			lo, hi := frame(k, ps, pe, k, k+1)
			if lo < hi {
				gids = gids[:0]
				for range hi - lo {
					gids = append(gids, int32(k))
				}
				var part arrow.Array
				if sorted != nil {
					part = array.NewSlice(sorted, int64(lo), int64(hi))
				}
				err := acc.Update(gids, part, nil)
				if part != nil {
					part.Release()
				}
				if err != nil {
					return nil, err
				}
			}
			if check != nil {
				if err := check.CheckResult(int32(k)); err != nil {
					return nil, err
				}
			}
			types.AppendDatum(bl, acc.Result(int32(k)), f.T)
		}
		ps = pe
	}
	return bl.NewArray(), nil
}
