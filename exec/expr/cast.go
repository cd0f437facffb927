package expr

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Casts. The common numeric conversions run as typed loops; conversions
// from text parse each row with types.ParseText (PostgreSQL's input syntax
// and messages); rare pairs go through types.CastDatum row by row.

func (c *Ctx) evalCast(e *Cast, b *batch) (vec, error) {
	v, err := c.eval(e.E, b)
	if err != nil {
		return vec{}, err
	}
	defer v.release()
	if v.scalar() && (v.d.Null || v.t.Physical() == types.PhysNull) {
		if v.d.Null {
			return scalarVec(types.Null, e.T), nil
		}
		v.t = types.TText // an untyped literal is text
	}
	if !v.scalar() && v.t.Physical() == types.PhysNull {
		return scalarVec(types.Null, e.T), nil
	}
	from, to := v.t, e.T
	return c.apply(func(c *Ctx, args []vec, n int) (vec, error) {
		return c.cast(args[0], from, to, n)
	}, []vec{v}, to, b.n)
}

func errIntRange(t types.T) error {
	switch t.Kind {
	case types.Int16:
		return sqlerr.New(sqlerr.NumericOutOfRange, "smallint out of range")
	case types.Int32:
		return sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
	}
	return errBigintRange()
}

// intRange is the value range of an integer kind.
func intRange(t types.T) (lo, hi int64) {
	switch t.Kind {
	case types.Int16:
		return math.MinInt16, math.MaxInt16
	case types.Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func (c *Ctx) cast(a vec, from, to types.T, n int) (vec, error) {
	same := func() (vec, error) {
		a.arr.Retain()
		return vec{arr: a.arr, t: to}, nil
	}
	if from == to {
		return same()
	}
	// Widening a type modifier keeps every value as it is.
	widens := from.Kind == to.Kind && (to.Prec == 0 || (from.Prec > 0 && from.Prec <= to.Prec))
	if widens && from.Kind == types.Numeric && from.Scale == to.Scale && unconstrained(to) && !unconstrained(from) {
		// NUMERIC(p,s) to unconstrained: the values keep dscale s.
		ds := make([]int8, a.arr.Len())
		for i := range ds {
			ds[i] = types.PackDScale(from.Scale)
		}
		return vec{arr: types.AttachDScales(a.arr, ds), t: to}, nil
	}
	if widens && (from.Kind == types.Text || (from.Kind == types.Numeric && from.Scale == to.Scale)) {
		return same()
	}
	if from.Kind == types.Timestamp && to.Kind == types.Timestamp {
		return same() // timestamp <-> timestamptz: the session's TimeZone is UTC
	}
	mem := c.mem()
	fp, tp := from.Physical(), to.Physical()
	switch {
	case from.IsInteger() && to.IsInteger():
		lo, hi := intRange(to)
		flo, fhi := intRange(from)
		if flo >= lo && fhi <= hi {
			return same()
		}
		in := int64s(a.arr)[:n]
		bad := false
		for _, x := range in {
			bad = bad || x < lo || x > hi
		}
		if bad {
			if err := rowErr(n, validBits(a.arr), func(i int) error {
				if in[i] < lo || in[i] > hi {
					return errIntRange(to)
				}
				return nil
			}); err != nil {
				return vec{}, err
			}
		}
		return same()

	case from.Kind == types.Date && to.Kind == types.Timestamp:
		return c.mapInt(to, a, n, func(d int64) int64 {
			switch {
			case d >= types.DateInfinity:
				return types.TimestampInfinity
			case d <= types.DateNegInfinity:
				return types.TimestampNegInfinity
			}
			return d * 86400e6
		}), nil
	case from.Kind == types.Timestamp && to.Kind == types.Date:
		return c.mapInt(to, a, n, func(ts int64) int64 {
			switch ts {
			case types.TimestampInfinity:
				return types.DateInfinity
			case types.TimestampNegInfinity:
				return types.DateNegInfinity
			}
			d := ts / 86400e6
			if ts%86400e6 < 0 {
				d--
			}
			return d
		}), nil

	case from.IsInteger() && to.IsFloat():
		valid, nulls := validity(mem, n, a)
		buf, out := fixedBuf[float64](mem, n)
		in := int64s(a.arr)[:n]
		if to.Kind == types.Float32 {
			for i, x := range in {
				out[i] = float64(float32(x))
			}
		} else {
			for i, x := range in {
				out[i] = float64(x)
			}
		}
		return vec{arr: finish(to.Arrow(), n, valid, nulls, buf), t: to}, nil

	case from.IsInteger() && to.Kind == types.Numeric:
		valid, nulls := validity(mem, n, a)
		buf, out := fixedBuf[decimal128.Num](mem, n)
		in := int64s(a.arr)[:n]
		var err error
		if to.Scale >= 0 && to.Scale <= 18 { // |x| * 10^18 < 10^38: cannot overflow
			m := decimal128.GetScaleMultiplier(int(to.Scale))
			for i, x := range in {
				out[i] = decimal128.FromI64(x).Mul(m)
			}
		} else {
			err = rowErr(n, bufBytes(valid), func(i int) (err error) {
				out[i], err = decRescale(decimal128.FromI64(in[i]), 0, to.Scale)
				return err
			})
		}
		if err == nil && to.Prec > 0 {
			err = rowErr(n, bufBytes(valid), func(i int) error { return types.NumericFit(out[i], to) })
		}
		if err != nil {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return vec{}, err
		}
		return vec{arr: finish(to.Arrow(), n, valid, nulls, withDS([]*memory.Buffer{buf}, intDS(mem, to, n))...), t: to}, nil

	case from.IsFloat() && to.IsInteger():
		valid, nulls := validity(mem, n, a)
		buf, out := fixedBuf[int64](mem, n)
		in := float64s(a.arr)[:n]
		lo, hi := intRange(to)
		flo, fhi := float64(lo), float64(hi)
		if to.Kind == types.Int64 {
			fhi = 9.223372036854775807e18 // 2^63: the first float past MaxInt64
		}
		bad := false
		for i, x := range in {
			r := math.RoundToEven(x)
			ok := r >= flo && (r < fhi || (to.Kind != types.Int64 && r <= fhi))
			bad = bad || !ok
			out[i] = int64(r)
		}
		if bad {
			if err := rowErr(n, bufBytes(valid), func(i int) error {
				r := math.RoundToEven(in[i])
				if !(r >= flo && (r < fhi || (to.Kind != types.Int64 && r <= fhi))) {
					return errIntRange(to)
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
		return vec{arr: finish(to.Arrow(), n, valid, nulls, buf), t: to}, nil

	case from.IsFloat() && to.IsFloat():
		if to.Kind == types.Float64 {
			return same()
		}
		return c.mapFloat(to, a, n, func(x float64) (float64, error) {
			r := float64(float32(x))
			if math.IsInf(r, 0) && !math.IsInf(x, 0) {
				return 0, errFloatOverflow()
			}
			if r == 0 && x != 0 {
				return 0, sqlerr.New(sqlerr.NumericOutOfRange, "value out of range: underflow")
			}
			return r, nil
		})

	case from.IsFloat() && to.Kind == types.Numeric:
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			x := float64s(a.arr)[i]
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return types.Null, sqlerr.New(sqlerr.FeatureNotSupported, "cannot convert %v to numeric", x)
			}
			var tmp [32]byte
			text := unsafeString(strconv.AppendFloat(tmp[:0], x, 'g', 15, 64))
			if ds, _ := types.TextDScale(text); unconstrained(to) && ds > to.Scale {
				return types.Null, types.ErrNumericDigits(text, ds, to.Scale)
			}
			d, err := types.ParseText(text, to)
			return d, err
		})

	case from.Kind == types.Numeric && to.IsFloat():
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			f := decToFloat(decs(a.arr)[i], from.Scale)
			if to.Kind == types.Float32 {
				f = float64(float32(f))
			}
			return types.Float(f), nil
		})

	case from.Kind == types.Numeric && to.IsInteger():
		lo, hi := intRange(to)
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			r, err := decRescale(decs(a.arr)[i], from.Scale, 0)
			v, ok := decIsInt64(r)
			if err != nil || !ok || v < lo || v > hi {
				return types.Null, errIntRange(to)
			}
			return types.Int(v), nil
		})

	case from.Kind == types.Numeric && to.Kind == types.Numeric:
		ds := newDSReader(a)
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			r, err := decRescale(decs(a.arr)[i], from.Scale, to.Scale)
			if err == nil {
				err = types.NumericFit(r, to)
			}
			return types.Datum{D: r, DS: types.PackDScale(min(ds.at(i), to.Scale))}, err
		})

	case fp == types.PhysBool && to.IsInteger():
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			return types.Int(int64(boolAt(a, i))), nil
		})
	case from.IsInteger() && tp == types.PhysBool:
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			return types.Boolean(int64s(a.arr)[i] != 0), nil
		})

	case from.Kind == types.JSON || from.Kind == types.JSONB || to.Kind == types.JSON || to.Kind == types.JSONB:
		if from.Kind == types.JSON && to.Kind == types.Text && to.Prec == 0 {
			return same() // json's text is the value (jsonb's binary layout is not: CastDatum prints it)
		}
		if fp == types.PhysString {
			s := a.arr.(*array.String)
			return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
				return types.CastDatum(types.Str(s.Value(i)), from, to)
			})
		}
	case from.Kind == types.Bytea && tp == types.PhysString: // byteaout's hex
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			return types.CastDatum(datumAt(a.arr, from, i), from, to)
		})
	case (to.Kind == types.UUID || to.Kind == types.Bytea) && fp == types.PhysString: // text to uuid or bytea: their input functions
		s := a.arr.(*array.String)
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			return types.ParseText(s.Value(i), to)
		})
	case tp == types.PhysString:
		return c.castToText(a, from, to, n)

	case fp == types.PhysString:
		s := a.arr.(*array.String)
		return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
			return types.ParseText(s.Value(i), to)
		})
	}
	return c.rowwise(to, n, []vec{a}, func(i int) (types.Datum, error) {
		return types.CastDatum(datumAt(a.arr, from, i), from, to)
	})
}

// castToText formats each row in PostgreSQL's output syntax; a VARCHAR(n)
// target truncates to n characters, as an explicit cast does.
func (c *Ctx) castToText(a vec, from, to types.T, n int) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, a)
	vb := bufBytes(valid)
	out := newStrOut(n, n*8)
	limit := int(to.Prec)
	for i := 0; i < n; i++ {
		if isValid(vb, i) {
			start := len(out.data)
			switch from.Physical() {
			case types.PhysString:
				out.data = append(out.data, a.arr.(*array.String).Value(i)...)
			case types.PhysUUID:
				out.data = types.AppendUUIDText(out.data, a.arr.(*array.FixedSizeBinary).Value(i))
			case types.PhysBool: // boolean::text spells the word out
				if boolAt(a, i) != 0 {
					out.data = append(out.data, "true"...)
				} else {
					out.data = append(out.data, "false"...)
				}
			case types.PhysInt64:
				if from.IsInteger() {
					out.data = strconv.AppendInt(out.data, int64s(a.arr)[i], 10)
					break
				}
				fallthrough
			default:
				out.data = types.AppendText(out.data, datumAt(a.arr, from, i), from)
			}
			if limit > 0 {
				out.data = truncRunes(out.data, start, limit)
			}
			if to.Pad { // character(n) keeps no trailing spaces (types.T.Pad)
				for len(out.data) > start && out.data[len(out.data)-1] == ' ' {
					out.data = out.data[:len(out.data)-1]
				}
			}
		}
		out.end()
	}
	return vec{arr: out.finish(mem, to, valid, nulls), t: to}, nil
}

// truncRunes cuts b[start:] to at most limit characters.
func truncRunes(b []byte, start, limit int) []byte {
	k := 0
	for i := start; i < len(b); {
		if k == limit {
			return b[:i]
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
		k++
	}
	return b
}

// decToFloat converts x at scale to the nearest float64.
func decToFloat(x decimal128.Num, scale int32) float64 {
	if v, ok := decIsInt64(x); ok && v > -1<<53 && v < 1<<53 && scale >= 0 && scale <= 22 {
		return float64(v) / math.Pow10(int(scale)) // both exact: one correctly rounded division
	}
	var tmp [48]byte
	f, _ := strconv.ParseFloat(unsafeString(types.AppendNumeric(tmp[:0], x, scale)), 64)
	return f
}

// mapInt applies an infallible int64 → int64 function.
func (c *Ctx) mapInt(t types.T, a vec, n int, f func(int64) int64) vec {
	mem := c.mem()
	valid, nulls := validity(mem, n, a)
	buf, out := fixedBuf[int64](mem, n)
	for i, x := range int64s(a.arr)[:n] {
		out[i] = f(x)
	}
	return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}
}

// mapFloat applies a fallible float64 → float64 function to valid rows.
func (c *Ctx) mapFloat(t types.T, a vec, n int, f func(float64) (float64, error)) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, a)
	vb := bufBytes(valid)
	buf, out := fixedBuf[float64](mem, n)
	for i, x := range float64s(a.arr)[:n] {
		if !isValid(vb, i) {
			out[i] = 0
			continue
		}
		r, err := f(x)
		if err != nil {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return vec{}, err
		}
		out[i] = r
	}
	return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
}

// intDS is the display-scale buffer of integers cast to an unconstrained
// NUMERIC t (dscale 0); nil for any other t.
func intDS(mem memory.Allocator, t types.T, n int) *memory.Buffer {
	if !unconstrained(t) {
		return nil
	}
	return fillDS(mem, types.PackDScale(0), n)
}
