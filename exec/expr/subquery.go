package expr

import (
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// singleValueKernel is single_value(n, v): v, or 21000 where the count n
// of rows a scalar subquery matched is more than one (a decorrelated
// scalar subquery: n and v come from its rows grouped by the correlation).
func singleValueKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		cnt := args[0]
		over := false
		if cnt.scalar() {
			over = !cnt.d.Null && cnt.d.I > 1
		} else {
			vals := int64s(cnt.arr)
			for i := 0; i < n && !over; i++ {
				over = vals[i] > 1 && cnt.arr.IsValid(i)
			}
		}
		if over {
			return vec{}, sqlerr.New(sqlerr.CardinalityViolation, "more than one row returned by a subquery used as an expression")
		}
		v := args[1]
		if v.arr != nil {
			v.arr.Retain()
		}
		return vec{arr: v.arr, d: v.d, t: t}, nil
	}
}

// arrayOrEmptyKernel is array_or_empty(a): a, or the empty array where a is
// NULL (ARRAY(subquery) over no rows is '{}', not NULL).
func arrayOrEmptyKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		if a.scalar() {
			if a.d.Null {
				return scalarVec(types.Datum{A: &types.Array{}}, t), nil
			}
			return vec{d: a.d, t: t}, nil
		}
		if a.arr.NullN() == 0 {
			a.arr.Retain()
			return vec{arr: a.arr, t: t}, nil
		}
		lb := types.NewBuilder(c.mem(), t)
		defer lb.Release()
		empty := types.Datum{A: &types.Array{}}
		for i := 0; i < n; i++ {
			if a.arr.IsValid(i) {
				types.AppendDatum(lb, datumOf(a, i), t)
			} else {
				types.AppendDatum(lb, empty, t)
			}
		}
		return vec{arr: lb.NewArray(), t: t}, nil
	}
}
