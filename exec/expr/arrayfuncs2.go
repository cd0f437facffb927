package expr

import (
	"strconv"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// More of PostgreSQL's array functions (the binder: sql/bind
// arrayfuncs2.go). Elements compare as PostgreSQL's IS NOT DISTINCT FROM
// does, by their output text in the array's element type (an array holds
// each element as it; types.Array), so a NULL value finds NULL elements.
//
//	array_position(x, v[, start])  Int32: the first index of v (from start), NULL if none
//	array_positions(x, v)          Int32[]: every index of v
//	array_remove(x, v)             x without the elements equal to v
//	array_replace(x, v, w)         x with w for each element equal to v
//	trim_array(x, n)               x without its last n elements (2202E past its length)
//	array_dims(x)                  Text: [1:n], NULL for {}
//	array_fill(v, dims)            v repeated dims[1] times (one dimension)

// arrayKernel2 picks the kernel of these functions; ok is false for other
// names.
func arrayKernel2(e *Func) (k kernel, lo, hi int, ok bool) {
	ts := argTypes(e.Args)
	switch e.Name {
	case "array_position":
		return arrayRowKernel(e.T, arrayPosition(ts)), 2, 3, true
	case "array_positions":
		return arrayRowKernel(e.T, arrayPositions(ts)), 2, 2, true
	case "array_remove":
		return arrayRowKernel(e.T, arrayRemove(ts, false)), 2, 2, true
	case "array_replace":
		return arrayRowKernel(e.T, arrayRemove(ts, true)), 3, 3, true
	case "trim_array":
		return arrayRowKernel(e.T, trimArray), 2, 2, true
	case "array_dims":
		return arrayRowKernel(e.T, arrayDims), 1, 1, true
	case "array_fill":
		return arrayFillKernel(e.T, ts[0]), 2, 2, true
	}
	return nil, 0, 0, false
}

// arrayRowKernel calls f for each row whose array (the first argument) is
// not NULL, with the row's arguments; other rows are NULL.
func arrayRowKernel(t types.T, f func(a *types.Array, ds []types.Datum) (types.Datum, error)) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		o := newColOut(mem, t, n)
		ds := make([]types.Datum, len(args))
		for i := 0; i < n; i++ {
			for j := range args {
				ds[j] = datumOf(args[j], i)
			}
			if ds[0].Null {
				o.set(i, types.Null)
				continue
			}
			d, err := f(ds[0].A, ds)
			if err != nil {
				o.release()
				return vec{}, err
			}
			o.set(i, d)
		}
		return o.finish(mem, n), nil
	}
}

// elemMatch returns whether element j of a is v (of element type et), NULL
// matching NULL.
func elemMatch(a *types.Array, j int, v types.Datum, vtext string) bool {
	if a.IsNull(j) || v.Null {
		return a.IsNull(j) && v.Null
	}
	return a.Elems[j] == vtext
}

func valueText(v types.Datum, t types.T) string {
	if v.Null {
		return ""
	}
	return types.TextOf(v, t)
}

func arrayPosition(ts []types.T) func(a *types.Array, ds []types.Datum) (types.Datum, error) {
	return func(a *types.Array, ds []types.Datum) (types.Datum, error) {
		from := 0
		if len(ds) > 2 {
			if ds[2].Null {
				return types.Null, sqlerr.New(sqlerr.NullValueNotAllowed, "initial position must not be null")
			}
			from = int(max(ds[2].I-1, 0))
		}
		vt := valueText(ds[1], ts[1])
		for j := from; j < len(a.Elems); j++ {
			if elemMatch(a, j, ds[1], vt) {
				return types.Int(int64(j + 1)), nil
			}
		}
		return types.Null, nil
	}
}

func arrayPositions(ts []types.T) func(a *types.Array, ds []types.Datum) (types.Datum, error) {
	return func(a *types.Array, ds []types.Datum) (types.Datum, error) {
		vt := valueText(ds[1], ts[1])
		out := &types.Array{Elems: []string{}}
		for j := range a.Elems {
			if elemMatch(a, j, ds[1], vt) {
				out.Elems = append(out.Elems, strconv.Itoa(j+1))
			}
		}
		return types.Datum{A: out}, nil
	}
}

// arrayRemove is array_remove, or array_replace when replace is set.
func arrayRemove(ts []types.T, replace bool) func(a *types.Array, ds []types.Datum) (types.Datum, error) {
	return func(a *types.Array, ds []types.Datum) (types.Datum, error) {
		vt := valueText(ds[1], ts[1])
		var wt string
		if replace {
			wt = valueText(ds[2], ts[2])
		}
		out := &types.Array{Elems: make([]string, 0, len(a.Elems))}
		var nulls []bool
		for j, s := range a.Elems {
			null := a.IsNull(j)
			if elemMatch(a, j, ds[1], vt) {
				if !replace {
					continue
				}
				s, null = wt, ds[2].Null
			}
			out.Elems = append(out.Elems, s)
			nulls = append(nulls, null)
		}
		for _, n := range nulls {
			if n {
				out.Null = nulls
				break
			}
		}
		return types.Datum{A: out}, nil
	}
}

func trimArray(a *types.Array, ds []types.Datum) (types.Datum, error) {
	if ds[1].Null {
		return types.Null, nil
	}
	k := ds[1].I
	if k < 0 || k > int64(len(a.Elems)) {
		return types.Null, sqlerr.New("2202E", "number of elements to trim must be between 0 and %d", len(a.Elems))
	}
	out := &types.Array{Elems: a.Elems[:int64(len(a.Elems))-k]}
	if a.Null != nil {
		out.Null = a.Null[:len(out.Elems)]
	}
	return types.Datum{A: out}, nil
}

func arrayDims(a *types.Array, _ []types.Datum) (types.Datum, error) {
	if len(a.Elems) == 0 {
		return types.Null, nil
	}
	return types.Str("[1:" + strconv.Itoa(len(a.Elems)) + "]"), nil
}

// arrayFillKernel is array_fill(v, dims) for one dimension: dims NULL is
// 22004, a negative length 2202E... as PostgreSQL (a length below 0 is an
// empty array there too).
func arrayFillKernel(t, vt types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		o := newColOut(mem, t, n)
		for i := 0; i < n; i++ {
			v, dims := datumOf(args[0], i), datumOf(args[1], i)
			if dims.Null || len(dims.A.Elems) != 1 || dims.A.IsNull(0) {
				o.release()
				if dims.Null || len(dims.A.Elems) == 1 {
					return vec{}, sqlerr.New(sqlerr.NullValueNotAllowed, "dimension array or low bound array cannot be null")
				}
				return vec{}, sqlerr.New(sqlerr.FeatureNotSupported, "array_fill with other than one dimension is not supported")
			}
			k, err := strconv.Atoi(dims.A.Elems[0])
			if err != nil {
				o.release()
				return vec{}, err
			}
			out := &types.Array{Elems: make([]string, max(k, 0))}
			if v.Null {
				out.Null = make([]bool, len(out.Elems))
			}
			vs := valueText(v, vt)
			for j := range out.Elems {
				out.Elems[j] = vs
				if v.Null {
					out.Null[j] = true
				}
			}
			o.set(i, types.Datum{A: out})
		}
		return o.finish(mem, n), nil
	}
}
