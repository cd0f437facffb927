package expr

import (
	"math"
	"math/big"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Arithmetic kernels. Integer loops compute every row and fold an overflow
// (or zero divisor) flag into a register; only when the flag is set is the
// batch rescanned row by row, so that a problem in a NULL row's garbage
// value is ignored and the first real one is reported with its SQLSTATE.

func errBigintRange() error { return sqlerr.New(sqlerr.NumericOutOfRange, "bigint out of range") }
func errDivZero() error     { return sqlerr.New(sqlerr.DivisionByZero, "division by zero") }
func errFloatOverflow() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, "value out of range: overflow")
}
func errNumericOverflow() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, "value overflows numeric format")
}

func arithKernel(op byte, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) { return c.arith(op, t, args[0], args[1], n) }
}

func (c *Ctx) arith(op byte, t types.T, a, b vec, n int) (vec, error) {
	if (a.scalar() && a.d.Null) || (b.scalar() && b.d.Null) {
		return scalarVec(types.Null, t), nil
	}
	pa, pb := a.t.Physical(), b.t.Physical()
	switch {
	case a.t.Kind == types.Date && b.t.Kind == types.Date && op == '-':
		return c.dateDiff(t, a, b, n)
	case t.Kind == types.Time || t.Kind == types.TimeTZ || a.t.Kind == types.Time && b.t.Kind == types.Time ||
		t.Kind == types.Timestamp && b.t.Kind == types.TimeTZ:
		return c.timeArith(op, t, a, b, n)
	case pa == types.PhysInt64 && pb == types.PhysInt64 && t.Physical() == types.PhysInt64:
		return c.intArith(op, t, a, b, n)
	case pa == types.PhysFloat64 && pb == types.PhysFloat64:
		return c.floatArith(op, t, a, b, n)
	case pa == types.PhysDecimal && pb == types.PhysDecimal:
		return c.decArith(op, t, a, b, n)
	case pa == types.PhysInt64 || pb == types.PhysInterval || pa == types.PhysInterval:
		return c.temporalArith(op, t, a, b, n)
	}
	return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s %c %s", a.t, op, b.t)
}

// timeArith is PostgreSQL's time and timetz arithmetic, as the binder
// resolved it (time first): time or timetz ± interval (the interval's
// time part, wrapped to the day; months and days do not move a time of
// day), time - time (an interval), and timestamp + timetz (a date made a
// timestamp, plus the time in its zone: a timestamptz).
func (c *Ctx) timeArith(op byte, t types.T, a, b vec, n int) (vec, error) {
	const day = int64(24 * 3600 * 1e6)
	wrap := func(us int64) int64 {
		us %= day
		if us < 0 {
			us += day
		}
		return us
	}
	var f func(i int) (types.Datum, error)
	switch {
	case a.t.Kind == types.Time && b.t.Kind == types.Interval:
		f = func(i int) (types.Datum, error) {
			d := ivAt(b, i).Nanoseconds / 1000
			if op == '-' {
				d = -d
			}
			return types.Int(wrap(intAt(a, i) + d)), nil
		}
	case a.t.Kind == types.TimeTZ && b.t.Kind == types.Interval:
		f = func(i int) (types.Datum, error) {
			d := ivAt(b, i).Nanoseconds / 1000
			if op == '-' {
				d = -d
			}
			us, west := types.UnpackTimeTZ(intAt(a, i))
			return types.Int(types.PackTimeTZ(wrap(us+d), west)), nil
		}
	case a.t.Kind == types.Time && b.t.Kind == types.Time && op == '-':
		f = func(i int) (types.Datum, error) {
			return types.Datum{IV: arrow.MonthDayNanoInterval{Nanoseconds: (intAt(a, i) - intAt(b, i)) * 1000}}, nil
		}
	case a.t.Kind == types.Timestamp && b.t.Kind == types.TimeTZ && op == '+':
		f = func(i int) (types.Datum, error) {
			ts := intAt(a, i)
			if ts == types.TimestampInfinity || ts == types.TimestampNegInfinity {
				return types.Int(ts), nil
			}
			us, west := types.UnpackTimeTZ(intAt(b, i))
			return types.Int(ts + us + west*1e6), nil
		}
	default:
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s %c %s", a.t, op, b.t)
	}
	return c.rowwise(t, n, []vec{a, b}, f)
}

// dateDiff is date - date: the number of days between them (an integer);
// 22008 if either is infinite, as in PostgreSQL.
func (c *Ctx) dateDiff(t types.T, a, b vec, n int) (vec, error) {
	return c.rowwise(t, n, []vec{a, b}, func(i int) (types.Datum, error) {
		x, y := intAt(a, i), intAt(b, i)
		if x >= types.DateInfinity || x <= types.DateNegInfinity || y >= types.DateInfinity || y <= types.DateNegInfinity {
			return types.Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "cannot subtract infinite dates")
		}
		return types.Int(x - y), nil
	})
}

func int64s(a arrow.Array) []int64     { return a.(*array.Int64).Int64Values() }
func float64s(a arrow.Array) []float64 { return a.(*array.Float64).Float64Values() }
func decs(a arrow.Array) []decimal128.Num {
	return a.(*array.Decimal128).Values()
}
func intervals(a arrow.Array) []arrow.MonthDayNanoInterval {
	return a.(*array.MonthDayNanoInterval).MonthDayNanoIntervalValues()
}

// uuids is a uuid column's values, 16 bytes each.
func uuids(a arrow.Array) [][16]byte {
	f := a.(*array.FixedSizeBinary)
	if f.Len() == 0 {
		return nil
	}
	return unsafe.Slice((*[16]byte)(unsafe.Pointer(&f.Value(0)[0])), f.Len())
}

// ---- int64 ----

func (c *Ctx) intArith(op byte, t types.T, a, b vec, n int) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, a, b)
	buf, out := fixedBuf[int64](mem, n)
	var bad bool
	switch {
	case !a.scalar() && !b.scalar():
		bad = intVV(op, int64s(a.arr), int64s(b.arr), out)
	case b.scalar():
		bad = intVS(op, int64s(a.arr), b.d.I, out)
	case op == '+' || op == '*':
		bad = intVS(op, int64s(b.arr), a.d.I, out)
	default:
		bad = intSV(op, a.d.I, int64s(b.arr), out)
	}
	if bad {
		if err := rowErr(n, bufBytes(valid), func(i int) error {
			_, err := intOp(op, intAt(a, i), intAt(b, i))
			return err
		}); err != nil {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return vec{}, err
		}
	}
	return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
}

func intAt(v vec, i int) int64 {
	if v.scalar() {
		return v.d.I
	}
	return int64s(v.arr)[i]
}

// rowErr returns the first error f reports for a valid row.
func rowErr(n int, valid []byte, f func(i int) error) error {
	for i := 0; i < n; i++ {
		if isValid(valid, i) {
			if err := f(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// intOp is the checked scalar form of the int64 kernels.
func intOp(op byte, x, y int64) (int64, error) {
	switch op {
	case '+':
		r := x + y
		if (x^r)&(y^r) < 0 {
			return 0, errBigintRange()
		}
		return r, nil
	case '-':
		r := x - y
		if (x^y)&(x^r) < 0 {
			return 0, errBigintRange()
		}
		return r, nil
	case '*':
		r, ovf := mulOvf(x, y)
		if ovf {
			return 0, errBigintRange()
		}
		return r, nil
	case '/':
		if y == 0 {
			return 0, errDivZero()
		}
		if y == -1 {
			if x == math.MinInt64 {
				return 0, errBigintRange()
			}
			return -x, nil
		}
		return x / y, nil
	case '%':
		if y == 0 {
			return 0, errDivZero()
		}
		if y == -1 {
			return 0, nil
		}
		return x % y, nil
	}
	return 0, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: bigint %c bigint", op)
}

func mulOvf(x, y int64) (int64, bool) {
	r := x * y
	if x>>31 == x>>63 && y>>31 == y>>63 { // both fit in 32 bits
		return r, false
	}
	return r, x != 0 && (r/x != y || (x == -1 && y == math.MinInt64))
}

// intVV computes out[i] = a[i] op b[i]; it reports whether some row
// overflowed or divided by zero.
func intVV(op byte, a, b, out []int64) bool {
	a, b = a[:len(out)], b[:len(out)]
	switch op {
	case '+':
		var ovf int64
		for i := range out {
			r := a[i] + b[i]
			ovf |= (a[i] ^ r) & (b[i] ^ r)
			out[i] = r
		}
		return ovf < 0
	case '-':
		var ovf int64
		for i := range out {
			r := a[i] - b[i]
			ovf |= (a[i] ^ b[i]) & (a[i] ^ r)
			out[i] = r
		}
		return ovf < 0
	case '*':
		bad := false
		for i := range out {
			r, o := mulOvf(a[i], b[i])
			bad = bad || o
			out[i] = r
		}
		return bad
	case '/', '%':
		bad := false
		for i := range out {
			r, o := divMod(op, a[i], b[i])
			bad = bad || o
			out[i] = r
		}
		return bad
	}
	return true
}

// divMod divides without trapping; ok is false for a zero divisor or
// MinInt64 / -1.
func divMod(op byte, x, y int64) (int64, bool) {
	switch y {
	case 0:
		return 0, true
	case -1:
		if op == '%' {
			return 0, false
		}
		return -x, x == math.MinInt64
	}
	if op == '/' {
		return x / y, false
	}
	return x % y, false
}

func intVS(op byte, a []int64, c int64, out []int64) bool {
	a = a[:len(out)]
	switch op {
	case '+':
		var ovf int64
		for i, x := range a {
			r := x + c
			ovf |= (x ^ r) & (c ^ r)
			out[i] = r
		}
		return ovf < 0
	case '-':
		var ovf int64
		for i, x := range a {
			r := x - c
			ovf |= (x ^ c) & (x ^ r)
			out[i] = r
		}
		return ovf < 0
	case '*':
		bad := false
		for i, x := range a {
			r, o := mulOvf(x, c)
			bad = bad || o
			out[i] = r
		}
		return bad
	case '/', '%':
		if c == 0 {
			return len(out) > 0
		}
		if c == -1 {
			bad := false
			for i, x := range a {
				r, o := divMod(op, x, c)
				bad = bad || o
				out[i] = r
			}
			return bad
		}
		if op == '/' {
			for i, x := range a {
				out[i] = x / c
			}
		} else {
			for i, x := range a {
				out[i] = x % c
			}
		}
		return false
	}
	return true
}

func intSV(op byte, c int64, b []int64, out []int64) bool {
	b = b[:len(out)]
	switch op {
	case '-':
		var ovf int64
		for i, y := range b {
			r := c - y
			ovf |= (c ^ y) & (c ^ r)
			out[i] = r
		}
		return ovf < 0
	case '/', '%':
		bad := false
		for i, y := range b {
			r, o := divMod(op, c, y)
			bad = bad || o
			out[i] = r
		}
		return bad
	}
	return true
}

// ---- float64 ----

func (c *Ctx) floatArith(op byte, t types.T, a, b vec, n int) (vec, error) {
	if op == '%' {
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: double precision %% double precision")
	}
	mem := c.mem()
	valid, nulls := validity(mem, n, a, b)
	buf, out := fixedBuf[float64](mem, n)
	var zero bool
	switch {
	case !a.scalar() && !b.scalar():
		zero = floatVV(op, float64s(a.arr), float64s(b.arr), out)
	case b.scalar():
		zero = floatVS(op, float64s(a.arr), b.d.F, out)
	default:
		zero = floatSV(op, a.d.F, float64s(b.arr), out)
	}
	vb := bufBytes(valid)
	var err error
	if zero {
		err = rowErr(n, vb, func(i int) error {
			if floatAt(b, i) == 0 {
				return errDivZero()
			}
			return nil
		})
	}
	if err == nil {
		// PostgreSQL reports overflow when finite inputs give an infinite result.
		for i, r := range out {
			if math.IsInf(r, 0) && isValid(vb, i) && !math.IsInf(floatAt(a, i), 0) && !math.IsInf(floatAt(b, i), 0) {
				err = errFloatOverflow()
				break
			}
		}
	}
	if err != nil {
		buf.Release()
		if valid != nil {
			valid.Release()
		}
		return vec{}, err
	}
	return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
}

func floatAt(v vec, i int) float64 {
	if v.scalar() {
		return v.d.F
	}
	return float64s(v.arr)[i]
}

// floatVV computes out[i] = a[i] op b[i]; it reports a zero divisor.
func floatVV(op byte, a, b, out []float64) bool {
	a, b = a[:len(out)], b[:len(out)]
	switch op {
	case '+':
		for i := range out {
			out[i] = a[i] + b[i]
		}
	case '-':
		for i := range out {
			out[i] = a[i] - b[i]
		}
	case '*':
		for i := range out {
			out[i] = a[i] * b[i]
		}
	case '/':
		zero := false
		for i := range out {
			zero = zero || b[i] == 0
			out[i] = a[i] / b[i]
		}
		return zero
	}
	return false
}

func floatVS(op byte, a []float64, c float64, out []float64) bool {
	a = a[:len(out)]
	switch op {
	case '+':
		for i, x := range a {
			out[i] = x + c
		}
	case '-':
		for i, x := range a {
			out[i] = x - c
		}
	case '*':
		for i, x := range a {
			out[i] = x * c
		}
	case '/':
		for i, x := range a {
			out[i] = x / c
		}
		return c == 0 && len(out) > 0
	}
	return false
}

func floatSV(op byte, c float64, b []float64, out []float64) bool {
	b = b[:len(out)]
	switch op {
	case '+':
		return floatVS(op, b, c, out)
	case '*':
		return floatVS(op, b, c, out)
	case '-':
		for i, y := range b {
			out[i] = c - y
		}
	case '/':
		zero := false
		for i, y := range b {
			zero = zero || y == 0
			out[i] = c / y
		}
		return zero
	}
	return false
}

// ---- numeric ----

func (c *Ctx) decArith(op byte, t types.T, a, b vec, n int) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, a, b)
	buf, out := fixedBuf[decimal128.Num](mem, n)
	vb := bufBytes(valid)
	sa, sb := a.t.Scale, b.t.Scale
	dsBuf, ds := newDS(mem, t, n)
	var ra, rb dsReader
	if ds != nil {
		ra, rb = newDSReader(a), newDSReader(b)
	}
	for i := range out {
		if !isValid(vb, i) {
			out[i] = decimal128.Num{}
			continue
		}
		var r decimal128.Num
		var err error
		if ds != nil {
			r, ds[i], err = decOpDS(op, decAt(a, i), sa, ra.at(i), decAt(b, i), sb, rb.at(i), t.Scale)
		} else {
			r, err = decOp(op, decAt(a, i), sa, decAt(b, i), sb, t.Scale)
		}
		if err != nil {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			if dsBuf != nil {
				dsBuf.Release()
			}
			return vec{}, err
		}
		out[i] = r
	}
	return vec{arr: finish(t.Arrow(), n, valid, nulls, withDS([]*memory.Buffer{buf}, dsBuf)...), t: t}, nil
}

func decAt(v vec, i int) decimal128.Num {
	if v.scalar() {
		return v.d.D
	}
	return decs(v.arr)[i]
}

var maxDec = decimal128.GetMaxValue(38)

func decFits(x decimal128.Num) bool { return x.FitsInPrecision(38) }

// decOp computes x (scale sx) op y (scale sy) at scale st, rounding half
// away from zero as PostgreSQL's numeric does.
func decOp(op byte, x decimal128.Num, sx int32, y decimal128.Num, sy int32, st int32) (decimal128.Num, error) {
	switch op {
	case '+', '-':
		if sx == sy && sx == st { // fast path: same scale, no overflow
			if op == '-' {
				y = y.Negate()
			}
			r := x.Add(y)
			if (x.HighBits()^r.HighBits())&(y.HighBits()^r.HighBits()) >= 0 && decFits(r) {
				return r, nil
			}
		}
	case '*':
		if sx+sy == st && x.HighBits() == int64(x.LowBits())>>63 && y.HighBits() == int64(y.LowBits())>>63 {
			// Both fit in int64: the 128-bit product cannot overflow.
			r := x.Mul(y)
			if decFits(r) {
				return r, nil
			}
		}
	case '/':
		return types.NumericDiv(x, sx, y, sy, st)
	case '%':
		if y.Sign() == 0 {
			return decimal128.Num{}, errDivZero()
		}
	}
	return decOpBig(op, x.BigInt(), sx, y.BigInt(), sy, st)
}

var bigTen = big.NewInt(10)

func pow10(k int32) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(k)), nil) }

// decOpBig is the general path of decOp in arbitrary precision.
func decOpBig(op byte, x *big.Int, sx int32, y *big.Int, sy int32, st int32) (decimal128.Num, error) {
	r := new(big.Int)
	var rs int32 // scale of r
	switch op {
	case '+', '-':
		rs = max(sx, sy)
		x = new(big.Int).Mul(x, pow10(rs-sx))
		y = new(big.Int).Mul(y, pow10(rs-sy))
		if op == '+' {
			r.Add(x, y)
		} else {
			r.Sub(x, y)
		}
	case '*':
		r.Mul(x, y)
		rs = sx + sy
	case '%':
		// Remainder with the sign of x: x - trunc(x/y)*y at scale max(sx,sy).
		rs = max(sx, sy)
		x = new(big.Int).Mul(x, pow10(rs-sx))
		y = new(big.Int).Mul(y, pow10(rs-sy))
		r.Rem(x, y)
	}
	return bigToDec(r, rs, st)
}

// bigToDec rescales r from scale rs to st (rounding half away from zero) and
// checks that it fits.
func bigToDec(r *big.Int, rs, st int32) (decimal128.Num, error) {
	if st > rs {
		r.Mul(r, pow10(st-rs))
	} else if st < rs {
		d := pow10(rs - st)
		q, m := new(big.Int).QuoRem(r, d, new(big.Int))
		m.Abs(m).Lsh(m, 1)
		if m.Cmp(d) >= 0 {
			q.Add(q, big.NewInt(int64(r.Sign())))
		}
		r = q
	}
	if r.CmpAbs(maxDec.BigInt()) > 0 {
		return decimal128.Num{}, errNumericOverflow()
	}
	return decimal128.FromBigInt(r), nil
}

// decRescale converts x from scale from to scale to.
func decRescale(x decimal128.Num, from, to int32) (decimal128.Num, error) {
	return types.Rescale(x, from, to)
}

// decTruncate is decRescale dropping digits toward zero instead of rounding.
func decTruncate(x decimal128.Num, from, to int32) (decimal128.Num, error) {
	if to >= from {
		return types.Rescale(x, from, to)
	}
	if from-to > types.MaxNumericPrecision {
		return decimal128.Num{}, nil
	}
	q, _ := x.Div(decimal128.GetScaleMultiplier(int(from - to)))
	return q, nil
}

// ---- float and numeric helpers shared with funcs ----

func decIsInt64(x decimal128.Num) (int64, bool) {
	if x.HighBits() == int64(x.LowBits())>>63 {
		return int64(x.LowBits()), true
	}
	return 0, false
}
