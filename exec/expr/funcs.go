package expr

import (
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

func (c *Ctx) evalFunc(e *Func, b *batch) (vec, error) {
	switch {
	case e.Name == "now":
		return scalarVec(types.Int(c.Now), e.T), nil
	case e.Name == "gen_random_uuid": // volatile: a value per row
		buf, us := fixedBuf[[16]byte](c.mem(), b.n)
		for i := range us {
			types.RandomUUIDBytes(us[i][:])
		}
		return vec{arr: finish(e.T.Arrow(), b.n, nil, 0, buf), t: e.T}, nil
	case (e.Name == "and" || e.Name == "or") && len(e.Args) == 2 && mayFail(e.Args[1]):
		return c.evalShortCircuit(e.Name == "or", e.Args[0], e.Args[1], b)
	}
	k, err := kernelFor(e)
	if err != nil {
		return vec{}, err
	}
	args, err := c.evalArgs(e.Args, b)
	if err != nil {
		return vec{}, err
	}
	defer releaseAll(args)
	return c.apply(k, args, e.T, b.n)
}

// kernelFor picks the kernel of a Func node (see Func for the names).
func kernelFor(e *Func) (kernel, error) {
	nargs := func(lo, hi int) error {
		if len(e.Args) < lo || len(e.Args) > hi {
			return sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", e.Name, len(e.Args))
		}
		return nil
	}
	var k kernel
	lo, hi := 1, 1
	switch e.Name {
	case "+", "-", "*", "/", "%":
		k, lo, hi = arithKernel(e.Name[0], e.T), 2, 2
	case "neg":
		k = negKernel(e.T)
	case "&", "|", "#", "<<", ">>":
		k, lo, hi = bitKernel(e.Name, e.T), 2, 2
	case "bitnot":
		k = bitNotKernel(e.T)
	case "=", "<>", "<", "<=", ">", ">=":
		op, _ := cmpOpOf(e.Name)
		k, lo, hi = cmpKernel(op), 2, 2
	case "and", "or":
		k, lo, hi = logicKernel(e.Name == "or"), 2, 2
	case "not":
		k = notKernel
	case "is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false":
		k = isKernel(e.Name)
	case "like", "ilike":
		k, lo, hi = likeKernel(e.Name == "ilike"), 2, 2
	case "||":
		k, lo, hi = concatOpKernel(e.T), 2, 2
	case "lower", "upper":
		k = lowerKernel(e.Name == "upper", e.T)
	case "length":
		k = lengthKernel
	case "octet_length":
		k = octetLengthKernel
	case "substr":
		k, lo, hi = substrKernel(e.T), 2, 3
	case "concat":
		k, lo, hi = concatKernel(e.T), 0, math.MaxInt
	case "power":
		k, lo, hi = powerKernel(e.T), 2, 2
	case "abs":
		k = absKernel(e.T)
	case "round", "trunc":
		k, hi = roundKernel(e.T, e.Name == "trunc"), 2
	case "floor", "ceil":
		k = floorKernel(e.Name == "ceil", e.T)
	case "coalesce":
		k, hi = coalesceKernel(e.T), math.MaxInt
	case "nullif":
		k, lo, hi = nullifKernel(e.T), 2, 2
	case "date_trunc":
		k, lo, hi = dateTruncKernel(e.T), 2, 2
	case "extract":
		k, lo, hi = extractKernel(e.T), 2, 2
	case "tumble_start", "tumble_end":
		k, lo, hi = tumbleKernel(e.Name == "tumble_end", e.T), 2, 2
	case "replace":
		k, lo, hi = replaceKernel(e.T), 3, 3
	case "btrim", "ltrim", "rtrim":
		k, lo, hi = trimKernel(e.Name, e.T), 2, 2
	case "split_part":
		k, lo, hi = splitPartKernel(e.T), 3, 3
	case "to_char":
		k, lo, hi = toCharKernel(e.T), 2, 2
	case "to_char_num":
		k, lo, hi = toCharNumKernel(argTypes(e.Args)[0], e.T), 2, 2
	case "to_number":
		k, lo, hi = toNumberKernel(e.T), 2, 2
	case "to_date", "to_timestamp_fmt":
		k, lo, hi = toDateKernel(e.Name == "to_date", e.T), 2, 2
	case "regexp_match":
		k, lo, hi = regexpMatchKernel(e.T), 2, 3
	case "regexp_replace":
		k, lo, hi = regexpReplaceKernel(e.T), 3, 4
	case "array_to_string":
		k, lo, hi = arrayToStringKernel(e.T, argTypes(e.Args)[0]), 2, 2
	case "regex_test":
		k, lo, hi = regexTestKernel, 2, 2
	case "array_contains":
		k, lo, hi = arrayContainsKernel, 2, 2
	case "subscript":
		k, lo, hi = subscriptKernel(e.T), 2, 2
	case "single_value":
		k, lo, hi = singleValueKernel(e.T), 2, 2
	case "array_or_empty":
		k = arrayOrEmptyKernel(e.T)
	case "array_ctor":
		k, lo, hi = arrayCtorKernel(e.T), 0, math.MaxInt
	case "array_cat":
		k, lo, hi = arrayCatKernel(e.T), 2, 2
	case "array_upper", "array_lower", "array_length":
		k, lo, hi = arrayDimKernel(e.Name, e.T), 2, 2
	case "array_slice":
		k, lo, hi = arraySliceKernel(e.T), 3, 3
	case "cardinality":
		k = cardinalityKernel(e.T)
	case "array_key":
		k = arrayKeyKernel(e.T, argTypes(e.Args)[0])
	case "elem_out":
		k = elemOutKernel(e.T, argTypes(e.Args)[0])
	case "json_build_object":
		k, lo, hi = jsonBuildObjectKernel(e.T, argTypes(e.Args)), 0, math.MaxInt
	case "pg_size_pretty":
		k = sizePrettyKernel(e.T)
		if len(e.Args) == 1 && e.Args[0].Type().Kind == types.Numeric {
			k = sizePrettyNumericKernel(e.T, e.Args[0].Type())
		}
	case "quote_ident":
		k = quoteIdentKernel
	case "field_select":
		k, lo, hi = fieldSelectKernel(e.T), 2, 2
	case "row_ctor":
		k, lo, hi = rowCtorKernel(e.T), 0, math.MaxInt
	case "record_mask":
		k, lo, hi = recordMaskKernel(e.T), 2, 2
	case "record_key":
		k = recordKeyKernel(e.T, argTypes(e.Args)[0])
	case "varchar_assign": // Text → VARCHAR(n) as an assignment (INSERT) cast
		k = varcharAssignKernel(e.T)
	default:
		var ok bool
		if k, lo, hi, ok = jsonKernel(e); !ok {
			k, lo, hi, ok = pgAggKernel(e) // pgaggfinal.go
		}
		if !ok {
			k, lo, hi, ok = arrayKernel2(e) // arrayfuncs2.go
		}
		if !ok {
			k, lo, hi, ok = pgScalarKernel(e) // pgscalar.go
		}
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s does not exist", e.Name)
		}
	}
	return k, nargs(lo, hi)
}

// datumOf returns row i of v (per-row paths only).
func datumOf(v vec, i int) types.Datum {
	if v.scalar() {
		return v.d
	}
	return datumAt(v.arr, v.t, i)
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// ---- per-row fallback ----

// colOut builds a column of type t row by row from Datums.
type colOut struct {
	t     types.T
	vbuf  *memory.Buffer
	valid []byte
	nulls int
	buf   *memory.Buffer
	i64   []int64
	f64   []float64
	dec   []decimal128.Num
	iv    []arrow.MonthDayNanoInterval
	uid   [][16]byte // uuid
	bits  []byte
	str   *strOut
	lst   array.Builder // text[] and records (types.NewBuilder)
	dsb   *memory.Buffer
	ds    []int8 // display scales of an unconstrained NUMERIC (dscale.go)
}

func newColOut(mem memory.Allocator, t types.T, n int) *colOut {
	o := &colOut{t: t}
	o.vbuf, o.valid = bitBuf(mem, n)
	switch t.Physical() {
	case types.PhysBool:
		o.buf, o.bits = bitBuf(mem, n)
	case types.PhysInt64:
		o.buf, o.i64 = fixedBuf[int64](mem, n)
	case types.PhysFloat64:
		o.buf, o.f64 = fixedBuf[float64](mem, n)
	case types.PhysDecimal:
		o.buf, o.dec = fixedBuf[decimal128.Num](mem, n)
		o.dsb, o.ds = newDS(mem, t, n)
	case types.PhysInterval:
		o.buf, o.iv = fixedBuf[arrow.MonthDayNanoInterval](mem, n)
	case types.PhysUUID:
		o.buf, o.uid = fixedBuf[[16]byte](mem, n)
	case types.PhysList, types.PhysStruct:
		o.lst = types.NewBuilder(mem, t)
	default:
		o.str = newStrOut(n, 0)
	}
	return o
}

// set stores row i; rows must be set in order (strings are appended).
func (o *colOut) set(i int, d types.Datum) {
	if d.Null {
		o.nulls++
		if o.str != nil {
			o.str.end()
		}
		if o.lst != nil {
			o.lst.AppendNull()
		}
		switch {
		case o.i64 != nil:
			o.i64[i] = 0
		case o.f64 != nil:
			o.f64[i] = 0
		case o.dec != nil:
			o.dec[i] = decimal128.Num{}
		case o.iv != nil:
			o.iv[i] = arrow.MonthDayNanoInterval{}
		case o.uid != nil:
			o.uid[i] = [16]byte{}
		}
		return
	}
	o.valid[i>>3] |= 1 << (i & 7)
	switch {
	case o.lst != nil:
		types.AppendDatum(o.lst, d, o.t)
	case o.str != nil:
		o.str.data = append(o.str.data, d.S...)
		o.str.end()
	case o.bits != nil:
		if d.I != 0 {
			o.bits[i>>3] |= 1 << (i & 7)
		}
	case o.i64 != nil:
		o.i64[i] = d.I
	case o.f64 != nil:
		o.f64[i] = d.F
	case o.dec != nil:
		o.dec[i] = d.D
		if o.ds != nil {
			o.ds[i] = d.DS
		}
	case o.iv != nil:
		o.iv[i] = d.IV
	case o.uid != nil:
		o.uid[i] = types.UUIDBytes(d.S)
	}
}

func (o *colOut) release() {
	o.vbuf.Release()
	if o.buf != nil {
		o.buf.Release()
	}
	if o.lst != nil {
		o.lst.Release()
	}
	if o.dsb != nil {
		o.dsb.Release()
	}
}

func (o *colOut) finish(mem memory.Allocator, n int) vec {
	if o.lst != nil {
		defer o.release()
		return vec{arr: o.lst.NewArray(), t: o.t}
	}
	if o.str != nil {
		return vec{arr: o.str.finish(mem, o.t, o.vbuf, o.nulls), t: o.t}
	}
	return vec{arr: finish(o.t.Arrow(), n, o.vbuf, o.nulls, withDS([]*memory.Buffer{o.buf}, o.dsb)...), t: o.t}
}

// rowwise computes a column of t by calling f for each row where every arg
// is non-NULL (other rows are NULL). It is the path for rare types and
// functions; f may return NULL.
func (c *Ctx) rowwise(t types.T, n int, args []vec, f func(i int) (types.Datum, error)) (vec, error) {
	mem := c.mem()
	valid, _ := validity(mem, n, args...)
	if valid != nil {
		defer valid.Release()
	}
	vb := bufBytes(valid)
	o := newColOut(mem, t, n)
	for i := 0; i < n; i++ {
		if !isValid(vb, i) {
			o.set(i, types.Null)
			continue
		}
		d, err := f(i)
		if err != nil {
			o.release()
			return vec{}, err
		}
		o.set(i, d)
	}
	return o.finish(mem, n), nil
}

// ---- math ----

func negKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		switch a.t.Physical() {
		case types.PhysInt64:
			return c.intArith('-', t, scalarVec(types.Int(0), a.t), a, n)
		case types.PhysFloat64:
			mem := c.mem()
			valid, nulls := validity(mem, n, a)
			buf, out := fixedBuf[float64](mem, n)
			for i, x := range float64s(a.arr)[:n] {
				out[i] = -x
			}
			return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
		case types.PhysDecimal:
			ds := newDSReader(a)
			return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
				return types.Datum{D: decAt(a, i).Negate(), DS: types.PackDScale(ds.at(i))}, nil
			})
		case types.PhysInterval:
			return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
				v := ivAt(a, i)
				if v.Months == math.MinInt32 || v.Days == math.MinInt32 || v.Nanoseconds == math.MinInt64 {
					return types.Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "interval out of range")
				}
				return types.Datum{IV: arrow.MonthDayNanoInterval{Months: -v.Months, Days: -v.Days, Nanoseconds: -v.Nanoseconds}}, nil
			})
		}
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: - %s", a.t)
	}
}

func absKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		mem := c.mem()
		switch a.t.Physical() {
		case types.PhysInt64:
			valid, nulls := validity(mem, n, a)
			buf, out := fixedBuf[int64](mem, n)
			in := int64s(a.arr)[:n]
			bad := false
			for i, x := range in {
				bad = bad || x == math.MinInt64
				out[i] = max(x, -x)
			}
			if bad {
				if err := rowErr(n, bufBytes(valid), func(i int) error {
					if in[i] == math.MinInt64 {
						return errBigintRange()
					}
					return nil
				}); err != nil {
					buf.Release()
					if valid != nil {
						valid.Release()
					}
					return vec{}, err
				}
			}
			return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
		case types.PhysFloat64:
			return c.floatMap(t, a, n, math.Abs), nil
		case types.PhysDecimal:
			ds := newDSReader(a)
			return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
				return types.Datum{D: decAt(a, i).Abs(), DS: types.PackDScale(ds.at(i))}, nil
			})
		}
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "function abs(%s) does not exist", a.t)
	}
}

// floatMap applies f to every value of a Float64 column.
func (c *Ctx) floatMap(t types.T, a vec, n int, f func(float64) float64) vec {
	mem := c.mem()
	valid, nulls := validity(mem, n, a)
	buf, out := fixedBuf[float64](mem, n)
	for i, x := range float64s(a.arr)[:n] {
		out[i] = f(x)
	}
	return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}
}

// roundKernel is round(x) and round(x, digits). Floats round half to even
// (rint), numerics half away from zero, as in PostgreSQL.
// roundKernel is round(x [, d]) or, with trunc, trunc(x [, d]), which
// drops the digits past d instead of rounding them half away from zero.
func roundKernel(t types.T, trunc bool) kernel {
	rescale, whole := decRescale, math.RoundToEven
	if trunc {
		rescale, whole = decTruncate, math.Trunc
	}
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		switch a.t.Physical() {
		case types.PhysInt64:
			if len(args) == 1 {
				a.arr.Retain()
				return vec{arr: a.arr, t: t}, nil
			}
			return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
				x, d := intAt(a, i), intAt(args[1], i)
				if d >= 0 {
					return types.Int(x), nil
				}
				d = max(d, -38)
				r, err := rescale(decimal128.FromI64(x), 0, int32(d))
				if err == nil {
					r, err = decRescale(r, int32(d), 0)
				}
				v, ok := decIsInt64(r)
				if err != nil || !ok {
					return types.Null, errBigintRange()
				}
				return types.Int(v), nil
			})
		case types.PhysFloat64:
			if len(args) == 1 {
				return c.floatMap(t, a, n, whole), nil
			}
			return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
				p := math.Pow10(int(intAt(args[1], i)))
				return types.Float(math.Round(floatAt(a, i)*p) / p), nil
			})
		case types.PhysDecimal:
			return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
				d := int64(0)
				if len(args) > 1 {
					d = intAt(args[1], i)
				}
				ds := types.PackDScale(int32(min(max(d, 0), int64(t.Scale))))
				if d >= int64(a.t.Scale) {
					r, err := decRescale(decAt(a, i), a.t.Scale, t.Scale)
					return types.Datum{D: r, DS: ds}, err
				}
				d = max(d, -38)
				r, err := rescale(decAt(a, i), a.t.Scale, int32(d))
				if err == nil {
					r, err = decRescale(r, int32(d), t.Scale)
				}
				return types.Datum{D: r, DS: ds}, err
			})
		}
		name := "round"
		if trunc {
			name = "trunc"
		}
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, a.t)
	}
}

func floorKernel(ceil bool, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		switch a.t.Physical() {
		case types.PhysInt64:
			a.arr.Retain()
			return vec{arr: a.arr, t: t}, nil
		case types.PhysFloat64:
			if ceil {
				return c.floatMap(t, a, n, math.Ceil), nil
			}
			return c.floatMap(t, a, n, math.Floor), nil
		case types.PhysDecimal:
			s := a.t.Scale
			return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
				x := decAt(a, i)
				q, r := x.Div(decimal128.GetScaleMultiplier(int(s)))
				if r.Sign() != 0 && (r.Sign() > 0) == ceil {
					q = q.Add(decimal128.FromI64(int64(r.Sign())))
				}
				v, err := decRescale(q, 0, t.Scale)
				return types.Datum{D: v}, err
			})
		}
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "function floor(%s) does not exist", a.t)
	}
}

// ---- NULL handling ----

// coalesceKernel returns, per row, the first non-NULL argument. Arguments
// are all evaluated (PostgreSQL evaluates lazily; it only matters for
// arguments that raise errors).
func coalesceKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		if !args[0].scalar() && args[0].arr.NullN() == 0 {
			args[0].arr.Retain()
			return vec{arr: args[0].arr, t: t}, nil
		}
		return c.choose(t, args, n, func(i int) int32 {
			for k, a := range args {
				if a.scalar() {
					if !a.d.Null {
						return int32(k)
					}
				} else if a.arr.IsValid(i) {
					return int32(k)
				}
			}
			return -1
		})
	}
}

// nullifKernel is NULL where a = b, else a.
func nullifKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		eqv, err := c.compare(opEQ, args[0], args[1], n)
		if err != nil {
			return vec{}, err
		}
		defer eqv.release()
		e := eqv.column(c.mem(), n)
		defer e.Release()
		return c.choose(t, args[:1], n, func(i int) int32 {
			if e.IsValid(i) && boolBits(e)[i>>3]&(1<<(i&7)) != 0 {
				return -1
			}
			return 0
		})
	}
}

// choose builds a column of t whose row i is row i of args[pick(i)] (NULL
// for -1). Scalar args are read from one-row columns.
func (c *Ctx) choose(t types.T, args []vec, n int, pick func(i int) int32) (vec, error) {
	if t.Physical() == types.PhysNull {
		return scalarVec(types.Null, t), nil
	}
	mem := c.mem()
	srcs := make([]arrow.Array, len(args))
	for k, a := range args {
		if a.t.Physical() == types.PhysNull {
			a = scalarVec(types.Null, t)
		}
		srcs[k] = a.column(mem, 1)
	}
	defer func() {
		for _, s := range srcs {
			s.Release()
		}
	}()
	which := make([]int32, n)
	pos := make([]int32, n)
	for i := range which {
		k := pick(i)
		which[i] = k
		if k >= 0 && !args[k].scalar() {
			pos[i] = int32(i)
		}
	}
	return vec{arr: gather(mem, t.Arrow(), srcs, which, pos), t: t}, nil
}

// ---- date and time ----

func dateTruncKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			v, err := types.DateTrunc(strAt(args[0], i), intAt(args[1], i))
			return types.Int(v), err
		})
	}
}

func extractKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		from := args[1].t
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			field := strAt(args[0], i)
			d, err := types.Extract(field, datumOf(args[1], i), from)
			if err != nil || d.Null || t.Kind != types.Numeric {
				return d, err
			}
			d.D, err = decRescale(d.D, types.ExtractType(field, from).Scale, t.Scale)
			return d, err
		})
	}
}

// tumbleKernel is the start (or end) of the tumbling window of the given
// size that contains ts; windows are aligned to 1970-01-01.
func tumbleKernel(end bool, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		size := args[1]
		if size.scalar() {
			w := types.IntervalMicros(size.d.IV)
			if size.d.IV.Months != 0 || w <= 0 {
				return vec{}, errWindowSize()
			}
			mem := c.mem()
			valid, nulls := validity(mem, n, args...)
			buf, out := fixedBuf[int64](mem, n)
			for i, ts := range int64s(args[0].arr)[:n] {
				out[i] = windowStart(ts, w, end)
			}
			return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
		}
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			iv := ivAt(size, i)
			w := types.IntervalMicros(iv)
			if iv.Months != 0 || w <= 0 {
				return types.Null, errWindowSize()
			}
			return types.Int(windowStart(intAt(args[0], i), w, end)), nil
		})
	}
}

func errWindowSize() error {
	return sqlerr.New(sqlerr.InvalidParameterValue, "window size must be a positive interval without months")
}

func windowStart(ts, w int64, end bool) int64 {
	s := ts - ts%w
	if ts%w < 0 {
		s -= w
	}
	if end {
		return s + w
	}
	return s
}

// temporalArith covers timestamp ± interval, timestamp - timestamp,
// interval ± interval and interval * or / float.
func (c *Ctx) temporalArith(op byte, t types.T, a, b vec, n int) (vec, error) {
	pa, pb := a.t.Physical(), b.t.Physical()
	args := []vec{a, b}
	var f func(i int) (types.Datum, error)
	switch {
	case pa == types.PhysInt64 && pb == types.PhysInterval && (op == '+' || op == '-'):
		f = func(i int) (types.Datum, error) {
			iv := ivAt(b, i)
			if op == '-' {
				iv = arrow.MonthDayNanoInterval{Months: -iv.Months, Days: -iv.Days, Nanoseconds: -iv.Nanoseconds}
			}
			return types.Int(types.AddInterval(intAt(a, i), iv)), nil
		}
	case pa == types.PhysInterval && pb == types.PhysInt64 && op == '+':
		return c.temporalArith(op, t, b, a, n)
	case pa == types.PhysInt64 && pb == types.PhysInt64 && op == '-':
		f = func(i int) (types.Datum, error) {
			return types.Datum{IV: types.SubTimestamps(intAt(a, i), intAt(b, i))}, nil
		}
	case pa == types.PhysInterval && pb == types.PhysInterval && (op == '+' || op == '-'):
		f = func(i int) (types.Datum, error) {
			x, y := ivAt(a, i), ivAt(b, i)
			if op == '-' {
				y = arrow.MonthDayNanoInterval{Months: -y.Months, Days: -y.Days, Nanoseconds: -y.Nanoseconds}
			}
			return types.Datum{IV: arrow.MonthDayNanoInterval{
				Months: x.Months + y.Months, Days: x.Days + y.Days, Nanoseconds: x.Nanoseconds + y.Nanoseconds}}, nil
		}
	case pa == types.PhysInterval && pb == types.PhysFloat64 && (op == '*' || op == '/'):
		f = func(i int) (types.Datum, error) {
			k := floatAt(b, i)
			if op == '/' {
				if k == 0 {
					return types.Null, errDivZero()
				}
				k = 1 / k
			}
			return types.Datum{IV: IntervalMul(ivAt(a, i), k)}, nil
		}
	case pa == types.PhysFloat64 && pb == types.PhysInterval && op == '*':
		return c.temporalArith(op, t, b, a, n)
	default:
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s %c %s", a.t, op, b.t)
	}
	return c.rowwise(t, n, args, f)
}

// IntervalMul scales an interval as PostgreSQL's interval_mul does:
// fractional months spill into days (30 per month), fractional days into
// time (24 hours per day).
func IntervalMul(v arrow.MonthDayNanoInterval, k float64) arrow.MonthDayNanoInterval {
	m := float64(v.Months) * k
	d := float64(v.Days)*k + (m-math.Trunc(m))*30
	ns := float64(v.Nanoseconds)*k + (d-math.Trunc(d))*86400e9
	return arrow.MonthDayNanoInterval{
		Months:      int32(math.Trunc(m)),
		Days:        int32(math.Trunc(d)),
		Nanoseconds: int64(math.RoundToEven(ns/1000)) * 1000, // rint, as PostgreSQL
	}
}
