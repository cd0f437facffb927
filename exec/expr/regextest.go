package expr

import (
	"github.com/apache/arrow-go/v18/arrow"

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
