package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/types"
)

// Per-value display scales of unconstrained NUMERIC (types/dscale.go): the
// kernels below compute a result's dscale with PostgreSQL's rules and keep
// it in the result array's third buffer.

// unconstrained reports whether t is NUMERIC without a declared scale
// (whose values carry their own display scale).
func unconstrained(t types.T) bool { return t.Kind == types.Numeric && t.Prec == 0 }

// dsReader reads the display scale of each value of a numeric operand.
type dsReader struct {
	fixed int32 // the scale of every value when static
	ds    []int8
	vals  []decimal128.Num
	store int32 // the storage scale (for values whose scale is not carried)
	trim  bool  // unconstrained: carried bytes, else trimmed
}

func newDSReader(v vec) dsReader {
	switch {
	case !unconstrained(v.t):
		return dsReader{fixed: types.DScaleOf(types.Datum{}, v.t)}
	case v.scalar():
		return dsReader{fixed: types.DScaleOf(v.d, v.t)}
	}
	return dsReader{ds: types.DScales(v.arr), vals: decs(v.arr), store: v.t.Scale, trim: true}
}

func (r *dsReader) at(i int) int32 {
	if !r.trim {
		return r.fixed
	}
	if r.ds != nil && r.ds[i] > 0 {
		return int32(r.ds[i]) - 1
	}
	return types.DisplayScale(r.vals[i], r.store)
}

// newDS allocates a display-scale buffer of n slots for an unconstrained
// result (nil, nil for any other type).
func newDS(mem memory.Allocator, t types.T, n int) (*memory.Buffer, []int8) {
	if !unconstrained(t) {
		return nil, nil
	}
	return types.NewDScaleBuf(mem, n)
}

// withDS appends the display-scale buffer ds (if any) to bufs.
func withDS(bufs []*memory.Buffer, ds *memory.Buffer) []*memory.Buffer {
	if ds == nil {
		return bufs
	}
	return append(bufs, ds)
}

// gatherDS gathers the display-scale bytes of decimal sources as gather
// gathers their values; nil if no source carries any.
func gatherDS(mem memory.Allocator, srcs []arrow.Array, which, pos []int32) *memory.Buffer {
	dss := make([][]int8, len(srcs))
	any := false
	for i, s := range srcs {
		dss[i] = types.DScales(s)
		any = any || dss[i] != nil
	}
	if !any {
		return nil
	}
	buf, out := types.NewDScaleBuf(mem, len(pos))
	for j, p := range pos {
		s := int32(0)
		if which != nil {
			if s = which[j]; s < 0 {
				continue
			}
		}
		if dss[s] != nil {
			out[j] = dss[s][p]
		}
	}
	return buf
}

// fillDS is a display-scale buffer of n copies of b (nil when b is 0).
func fillDS(mem memory.Allocator, b int8, n int) *memory.Buffer {
	if b == 0 {
		return nil
	}
	buf, out := types.NewDScaleBuf(mem, n)
	for i := range out {
		out[i] = b
	}
	return buf
}

// decOpDS is decOp for an unconstrained result held at scale st: x (held
// at sx, display scale dx) op y (sy, dy), with the result's display scale
// by PostgreSQL's rules (+ - %: the larger; *: the sum, 22003 if the
// product has digits past st (types.ErrProductScale); /:
// select_div_scale, the quotient rounded there, 22003 if it has digits
// past st: types.NumericDivHeld). A display scale past st is a value
// whose digits there are zeros, so + - % of such values are exact at st
// and keep it.
func decOpDS(op byte, x decimal128.Num, sx, dx int32, y decimal128.Num, sy, dy int32, st int32) (decimal128.Num, int8, error) {
	var rs int32
	switch op {
	case '/':
		rs = types.DivScaleDS(x, sx, dx, y, sy, dy)
		q, err := types.NumericDivHeld(x, sx, y, sy, rs, st)
		return q, types.PackDScale(rs), err
	case '*':
		// Past st only when the product is exact there (a padded
		// quotient times a value, 0.5 * 0.25); else PostgreSQL's digits
		// past st cannot be held: 22003, as for a quotient.
		if rs = dx + dy; rs > st && !types.ProductExact(x, sx, y, sy, st) {
			return decimal128.Num{}, 0, types.ErrProductScale(rs, st, dx, dy)
		}
	default:
		rs = max(dx, dy)
	}
	r, err := decOp(op, x, sx, y, sy, st)
	return r, types.PackDScale(rs), err
}
