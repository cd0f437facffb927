package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// regexTestKernel is PostgreSQL's s ~ pattern: whether the pattern matches
// anywhere in s, column at a time. A constant pattern is compiled once per
// batch; a pattern column is recompiled only where it changes (regexCache).
func regexTestKernel(c *Ctx, args []vec, n int) (vec, error) {
	a, pv := args[0], args[1]
	if pv.scalar() && pv.d.Null || a.scalar() && a.d.Null {
		return scalarVec(types.Null, types.TBool), nil
	}
	rc, err := newRegexCache("~", pv, nil)
	if err != nil {
		return vec{}, err
	}
	mem := c.mem()
	valid, nulls := validity(mem, n, a, pv)
	vb := bufBytes(valid)
	buf, out := bitBuf(mem, n)
	s := strColOf(a)
	for i := 0; i < n; i++ {
		if !isValid(vb, i) {
			continue
		}
		re, err := rc.at(i)
		if err != nil {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return vec{}, err
		}
		if v := s.at(i); !rc.opts.matchesNone(v) && re.MatchString(v) {
			out[i>>3] |= 1 << (i & 7)
		}
	}
	return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
}

// arrayToStringKernel is array_to_string(array, delimiter): the non-NULL
// elements' output text joined by the delimiter (NULL elements are
// skipped, as PostgreSQL does without its third argument).
func arrayToStringKernel(t, at types.T) kernel {
	elem := types.ArrayElem(at)
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		if args[0].scalar() && args[0].d.Null {
			return scalarVec(types.Null, t), nil
		}
		lst := args[0].column(mem, n).(*array.List)
		defer lst.Release()
		offs := lst.Offsets()[lst.Data().Offset():]
		vals := lst.ListValues()
		strs, _ := vals.(*array.String)
		delim := strColOf(args[1])
		// strMap sizes its output by its first argument, which must be text.
		return c.strMap(t, []vec{args[1], args[0]}, n, func(dst []byte, i int) ([]byte, error) {
			first := true
			for j := int(offs[i]); j < int(offs[i+1]); j++ {
				if !vals.IsValid(j) {
					continue
				}
				if !first {
					dst = append(dst, delim.at(i)...)
				}
				first = false
				if strs != nil {
					dst = append(dst, strs.Value(j)...)
				} else {
					dst = types.AppendText(dst, types.DatumAt(vals, j, elem), elem)
				}
			}
			return dst, nil
		})
	}
}

// arrayContainsKernel is PostgreSQL's x = ANY(array): true where an element
// equals x, otherwise NULL where x is NULL, the array is NULL or has a NULL
// element, otherwise false. x has the elements' layout (the binder makes
// it so): a typed loop per layout compares x with the list's values,
// floats as PostgreSQL's float8eq (-0 = 0, NaN = NaN).
func arrayContainsKernel(c *Ctx, args []vec, n int) (vec, error) {
	x, a := args[0], args[1]
	if a.scalar() && a.d.Null {
		return scalarVec(types.Null, types.TBool), nil
	}
	mem := c.mem()
	lst := a.column(mem, n).(*array.List)
	defer lst.Release()
	offs := lst.Offsets()[lst.Data().Offset():]
	vals := lst.ListValues()
	xNull := x.scalar() && x.d.Null
	var xs arrow.Array
	if !xNull {
		xs = x.column(mem, n)
		defer xs.Release()
	} else {
		vals = nil // no comparison
	}
	var eq func(i, j int) bool
	switch v := vals.(type) {
	case nil:
	case *array.Int64:
		xv, ev := int64s(xs), int64s(v)
		eq = func(i, j int) bool { return xv[i] == ev[j] }
	case *array.Float64:
		xv, ev := float64s(xs), float64s(v)
		eq = func(i, j int) bool { return xv[i] == ev[j] || xv[i] != xv[i] && ev[j] != ev[j] }
	case *array.Boolean:
		xb, _ := xs.(*array.Boolean)
		eq = func(i, j int) bool { return xb.Value(i) == v.Value(j) }
	case *array.String:
		xstr, _ := xs.(*array.String)
		eq = func(i, j int) bool { return xstr.Value(i) == v.Value(j) }
	case *array.FixedSizeBinary: // uuid
		xu := xs.(*array.FixedSizeBinary)
		eq = func(i, j int) bool { return [16]byte(xu.Value(i)) == [16]byte(v.Value(j)) }
	case *array.Decimal128: // numeric[]: x numeric or an integer, compared at the larger scale
		eq = decimalAnyEq(xs, v)
	default:
		return vec{}, sqlerr.New(sqlerr.FeatureNotSupported, "= ANY over an array of %s is not supported", vals.DataType())
	}
	vbuf, valid := bitBuf(mem, n)
	buf, out := bitBuf(mem, n)
	nulls := 0
	ints, _ := vals.(*array.Int64)
	elemNulls := vals != nil && vals.NullN() > 0
	for i := 0; i < n; i++ {
		if lst.IsNull(i) {
			nulls++
			continue
		}
		lo, hi := int(offs[i]), int(offs[i+1])
		if xNull || xs.IsNull(i) {
			// NULL = ANY('{}') is false: there is no element to compare.
			if lo == hi {
				valid[i>>3] |= 1 << (i & 7)
			} else {
				nulls++
			}
			continue
		}
		sawNull, found := false, false
		if ints != nil && !elemNulls { // the common case: a typed scan
			x := int64s(xs)[i]
			for _, v := range ints.Int64Values()[lo:hi] {
				if v == x {
					found = true
					break
				}
			}
		} else {
			for j := lo; j < hi; j++ {
				if !vals.IsValid(j) {
					sawNull = true
				} else if eq(i, j) {
					found = true
					break
				}
			}
		}
		if !found && sawNull {
			nulls++
			continue
		}
		valid[i>>3] |= 1 << (i & 7)
		if found {
			out[i>>3] |= 1 << (i & 7)
		}
	}
	return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, vbuf, nulls, buf), t: types.TBool}, nil
}

// decimalAnyEq compares x (numeric, or an integer: scale 0) with the
// values of a numeric[] list, both brought to the larger of their scales.
func decimalAnyEq(xs arrow.Array, v *array.Decimal128) func(i, j int) bool {
	es := v.DataType().(*arrow.Decimal128Type).Scale
	ev := v.Values()
	var xv []decimal128.Num
	var xsc int32
	if xd, ok := xs.(*array.Decimal128); ok {
		xv, xsc = xd.Values(), xd.DataType().(*arrow.Decimal128Type).Scale
	} else {
		ints := int64s(xs)
		xv = make([]decimal128.Num, len(ints))
		for i, x := range ints {
			xv[i] = decimal128.FromI64(x)
		}
	}
	sc := max(es, xsc)
	xm, em := decimal128.GetScaleMultiplier(int(sc-xsc)), decimal128.GetScaleMultiplier(int(sc-es))
	return func(i, j int) bool { return xv[i].Mul(xm) == ev[j].Mul(em) }
}
