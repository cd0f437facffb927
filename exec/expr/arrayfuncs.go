package expr

import (
	"github.com/streamdb/streamdb/types"
)

// Functions over arrays, with PostgreSQL's results. An array column is a
// List of its element type's layout (types.ArrayArrow):
//
//	array_ctor(a, b, ...)   ARRAY[a, b, ...]: NULL arguments are NULL elements (of the element type)
//	array_cat(x, y)         x || y: a NULL side is the other array
//	array_upper(x, d)       the last index of dimension d: n, NULL for {} or d <> 1
//	array_lower(x, d)       1, NULL for {} or d <> 1
//	array_length(x, d)      n, NULL for {} or d <> 1
//	array_slice(x, j, k)    x[j:k]: elements j to k (1-based, clamped), {} when none
//	cardinality(x)          the number of elements
//	array_key(x)            Text: equal exactly for arrays PostgreSQL finds equal (grouping)
//	elem_out(v)             Text: v's output text, as an array element holds it

// arrayCtorKernel builds one array per row from the arguments' values,
// each of the array's element type.
func arrayCtorKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		elem := types.ArrayElem(t)
		lb := types.NewBuilder(c.mem(), t).(types.ListAppender)
		defer lb.Release()
		vb := lb.ValueBuilder()
		for i := 0; i < n; i++ {
			lb.Append(true)
			for _, a := range args {
				types.AppendDatum(vb, datumOf(a, i), elem)
			}
		}
		return vec{arr: lb.NewArray(), t: t}, nil
	}
}

// arrayCatKernel concatenates two arrays per row.
func arrayCatKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		lb := types.NewBuilder(c.mem(), t)
		defer lb.Release()
		for i := 0; i < n; i++ {
			x, y := datumOf(args[0], i), datumOf(args[1], i)
			switch {
			case x.Null && y.Null:
				lb.AppendNull()
			case x.Null:
				types.AppendDatum(lb, y, t)
			case y.Null:
				types.AppendDatum(lb, x, t)
			default:
				out := &types.Array{Elems: append(append([]string(nil), x.A.Elems...), y.A.Elems...)}
				if x.A.Null != nil || y.A.Null != nil {
					out.Null = make([]bool, len(out.Elems))
					for j := range x.A.Elems {
						out.Null[j] = x.A.IsNull(j)
					}
					for j := range y.A.Elems {
						out.Null[len(x.A.Elems)+j] = y.A.IsNull(j)
					}
				}
				types.AppendDatum(lb, types.Datum{A: out}, t)
			}
		}
		return vec{arr: lb.NewArray(), t: t}, nil
	}
}

// arrayDimKernel is array_upper, array_lower and array_length.
func arrayDimKernel(name string, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			a := datumOf(args[0], i).A
			k := int64(len(a.Elems))
			if datumOf(args[1], i).I != 1 || k == 0 {
				return types.Null, nil
			}
			switch name {
			case "array_lower":
				return types.Int(1), nil
			}
			return types.Int(k), nil // array_upper and array_length
		})
	}
}

// arraySliceKernel is x[j:k].
func arraySliceKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			a := datumOf(args[0], i).A
			j, k := datumOf(args[1], i).I, datumOf(args[2], i).I
			j = max(j, 1)
			k = min(k, int64(len(a.Elems)))
			out := &types.Array{}
			if j <= k {
				out.Elems = a.Elems[j-1 : k]
				if a.Null != nil {
					out.Null = a.Null[j-1 : k]
				}
			}
			return types.Datum{A: out}, nil
		})
	}
}

// cardinalityKernel is cardinality(x).
func cardinalityKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			return types.Int(int64(len(datumOf(args[0], i).A.Elems))), nil
		})
	}
}

// arrayKeyKernel is array_key(x).
func arrayKeyKernel(t, at types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			return types.Str(types.ArrayKey(datumOf(args[0], i).A, at)), nil
		})
	}
}

// elemOutKernel is elem_out(v).
func elemOutKernel(t, vt types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			return types.Str(types.TextOf(datumOf(args[0], i), vt)), nil
		})
	}
}
