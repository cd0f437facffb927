package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

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
		if re.MatchString(s.at(i)) {
			out[i>>3] |= 1 << (i & 7)
		}
	}
	return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
}

// arrayToStringKernel is array_to_string(text[], delimiter): the non-NULL
// elements joined by the delimiter (NULL elements are skipped, as
// PostgreSQL does without its third argument).
func arrayToStringKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		if args[0].scalar() && args[0].d.Null {
			return scalarVec(types.Null, t), nil
		}
		lst := args[0].column(mem, n).(*array.List)
		defer lst.Release()
		offs := lst.Offsets()[lst.Data().Offset():]
		elems := lst.ListValues().(*array.String)
		delim := strColOf(args[1])
		// strMap sizes its output by its first argument, which must be text.
		return c.strMap(t, []vec{args[1], args[0]}, n, func(dst []byte, i int) ([]byte, error) {
			first := true
			for j := int(offs[i]); j < int(offs[i+1]); j++ {
				if !elems.IsValid(j) {
					continue
				}
				if !first {
					dst = append(dst, delim.at(i)...)
				}
				first = false
				dst = append(dst, elems.Value(j)...)
			}
			return dst, nil
		})
	}
}

// arrayContainsKernel is PostgreSQL's x = ANY(array) for text x and text[]:
// true where an element equals x, otherwise NULL where x is NULL, the array
// is NULL or has a NULL element, otherwise false.
func arrayContainsKernel(c *Ctx, args []vec, n int) (vec, error) {
	x, a := args[0], args[1]
	if a.scalar() && a.d.Null {
		return scalarVec(types.Null, types.TBool), nil
	}
	mem := c.mem()
	lst := a.column(mem, n).(*array.List)
	defer lst.Release()
	offs := lst.Offsets()[lst.Data().Offset():]
	elems := lst.ListValues().(*array.String)
	xNull := x.scalar() && x.d.Null
	var s strCol
	if !xNull {
		s = strColOf(x)
	}
	out := newColOut(mem, types.TBool, n)
	for i := 0; i < n; i++ {
		if lst.IsNull(i) {
			out.set(i, types.Null)
			continue
		}
		if xNull || s.arr != nil && s.arr.IsNull(i) {
			// NULL = ANY('{}') is false: there is no element to compare.
			if offs[i] == offs[i+1] {
				out.set(i, types.Boolean(false))
			} else {
				out.set(i, types.Null)
			}
			continue
		}
		v, sawNull, found := s.at(i), false, false
		for j := int(offs[i]); j < int(offs[i+1]); j++ {
			if !elems.IsValid(j) {
				sawNull = true
			} else if elems.Value(j) == v {
				found = true
				break
			}
		}
		if !found && sawNull {
			out.set(i, types.Null)
			continue
		}
		out.set(i, types.Boolean(found))
	}
	return out.finish(mem, n), nil
}
