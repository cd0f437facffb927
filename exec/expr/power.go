package expr

import (
	"math"
	"math/big"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// PostgreSQL's ^ operator and power(): double precision ^ double precision
// (float.c dpow, with its explicit NaN, infinity and error cases) and
// numeric ^ numeric (numeric.c power_var: exact for an integer exponent,
// through ln and exp otherwise), rounded half away from zero to the
// result type's scale, which the binder chose.

func errZeroNegativePower() error {
	return sqlerr.New(sqlerr.InvalidArgumentForPower, "zero raised to a negative power is undefined")
}

func errComplexPower() error {
	return sqlerr.New(sqlerr.InvalidArgumentForPower, "a negative number raised to a non-integer power yields a complex result")
}

func errFloatUnderflow() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, "value out of range: underflow")
}

// powerKernel is power(a, b) for t Float64 or Numeric (both operands of t's kind).
func powerKernel(t types.T) kernel {
	numeric := t.Kind == types.Numeric
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a, b := args[0], args[1]
		mem := c.mem()
		valid, nulls := validity(mem, n, a, b)
		vb := bufBytes(valid)
		fail := func(err error) (vec, error) {
			if valid != nil {
				valid.Release()
			}
			return vec{}, err
		}
		if numeric {
			buf, out := fixedBuf[decimal128.Num](mem, n)
			for i := range out {
				out[i] = decimal128.Num{}
				if !isValid(vb, i) {
					continue
				}
				r, err := decPow(decAt(a, i), a.t.Scale, decAt(b, i), b.t.Scale, t.Scale)
				if err != nil {
					buf.Release()
					return fail(err)
				}
				out[i] = r
			}
			return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
		}
		buf, out := fixedBuf[float64](mem, n)
		for i := range out {
			out[i] = 0
			if !isValid(vb, i) {
				continue
			}
			r, err := floatPow(floatAt(a, i), floatAt(b, i))
			if err != nil {
				buf.Release()
				return fail(err)
			}
			out[i] = r
		}
		return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
	}
}

// floatPow is PostgreSQL's dpow.
func floatPow(x, y float64) (float64, error) {
	switch {
	case math.IsNaN(x):
		if math.IsNaN(y) || y != 0 {
			return math.NaN(), nil
		}
		return 1, nil
	case math.IsNaN(y):
		if x != 1 {
			return math.NaN(), nil
		}
		return 1, nil
	case x == 0 && y < 0:
		return 0, errZeroNegativePower()
	case x < 0 && math.Floor(y) != y:
		return 0, errComplexPower()
	case math.IsInf(y, 0):
		ax := math.Abs(x)
		switch {
		case ax == 1:
			return 1, nil
		case (y > 0) == (ax > 1):
			return math.Inf(1), nil
		}
		return 0, nil
	case math.IsInf(x, 0):
		if y == 0 {
			return 1, nil
		}
		if x > 0 {
			if y > 0 {
				return x, nil
			}
			return 0, nil
		}
		oddInt := math.Floor(y/2) != y/2
		if y > 0 {
			if oddInt {
				return x, nil
			}
			return -x, nil
		}
		if oddInt {
			return math.Copysign(0, -1), nil
		}
		return 0, nil
	}
	r := correctPow(x, y)
	switch {
	case math.IsInf(r, 0):
		return 0, errFloatOverflow()
	case r == 0 && x != 0:
		return 0, errFloatUnderflow()
	}
	return r, nil
}

// correctPow is x^y for finite x and y (x < 0 only with an integer y)
// rounded once to the nearest double, as glibc's pow (which PostgreSQL
// calls) gives it: Go's math.Pow is off by many units in the last place
// for some inputs (1.0001 ^ 10000). Where math.Pow rounds only once (y of
// 1, 2, -1, 0.5, x of 0 or ±1) it is used; an integer y up to 2^31 is
// raised by repeated squaring in double-double (ddPowInt); otherwise the
// power is computed as exp(y·ln|x|) in 128-bit floats (bigPow). An
// infinite or zero result reports overflow or underflow to the caller.
func correctPow(x, y float64) float64 {
	switch {
	case y == 0 || y == 1 || y == 2 || y == -1 || y == 0.5 || x == 0 || x == 1 || x == -1:
		return math.Pow(x, y)
	}
	if y == math.Trunc(y) && math.Abs(y) <= 1<<31 {
		if r, ok := ddPowInt(x, int64(y)); ok {
			return r
		}
	}
	return bigPow(x, y)
}

// bigPow is correctPow as exp(y·ln|x|) in 128-bit floats.
func bigPow(x, y float64) float64 {
	neg := x < 0 && math.Abs(y) < 1<<53 && int64(y)&1 == 1
	ax := math.Abs(x)
	// log2 of the result, roughly: beyond the double range without the
	// exact work (and without exponents the series cannot reach).
	switch lg := y * math.Log2(ax); {
	case lg > 1100 && neg:
		return math.Inf(-1)
	case lg > 1100:
		return math.Inf(1)
	case lg < -1200:
		return 0
	}
	const prec = 128
	fx := new(big.Float).SetPrec(prec).SetFloat64(ax)
	fy := new(big.Float).SetPrec(prec).SetFloat64(y)
	r, _ := bigExp(fy.Mul(fy, bigLn(fx, prec)), prec).Float64()
	if neg {
		r = -r
	}
	return r
}

// ddPowInt is x^n by repeated squaring in double-double arithmetic (each
// value an unevaluated sum hi+lo of two doubles, products exact through
// FMA): about 2^-100 relative error after the at most 64 steps an |n| up
// to 2^31 takes, so hi+lo rounds to the correctly rounded power but for
// results a hair's breadth from a rounding boundary, and in tens of
// nanoseconds where the 128-bit path takes microseconds. ok is false when
// a step leaves the range where double-double keeps that precision (near
// overflow, or subnormal); the caller then takes the exact path, which
// also reports overflow and underflow.
func ddPowInt(x float64, n int64) (r float64, ok bool) {
	neg := n < 0
	if neg {
		n = -n
	}
	rh, rl := 1.0, 0.0
	bh, bl := x, 0.0
	for {
		if n&1 == 1 {
			rh, rl = ddMul(rh, rl, bh, bl)
			if !ddInRange(rh) {
				return 0, false
			}
		}
		if n >>= 1; n == 0 {
			break
		}
		bh, bl = ddMul(bh, bl, bh, bl)
		if !ddInRange(bh) {
			return 0, false
		}
	}
	if neg {
		// 1/(rh+rl): q1 = 1/rh, corrected by the residual 1 - (rh+rl)·q1.
		q1 := 1 / rh
		res := math.FMA(-rh, q1, 1) - rl*q1
		rh, rl = twoSum(q1, res/rh)
		if !ddInRange(rh) {
			return 0, false
		}
	}
	return rh + rl, true
}

// ddInRange reports whether |v| is well inside the normal doubles, where
// a double-double keeps its 106 bits.
func ddInRange(v float64) bool {
	a := math.Abs(v)
	return a > 0x1p-960 && a < 0x1p1000
}

// ddMul is (ah+al)·(bh+bl) as a normalized double-double.
func ddMul(ah, al, bh, bl float64) (float64, float64) {
	p := ah * bh
	e := math.FMA(ah, bh, -p) + (ah*bl + al*bh)
	return twoSum(p, e)
}

// twoSum is a+b as hi+lo with hi the rounded sum and lo its exact error
// (|b| ≤ |a|, or a is zero).
func twoSum(a, b float64) (float64, float64) {
	s := a + b
	return s, b - (s - a)
}

// maxExactPowDigits bounds the digits of base^|n| computed exactly; beyond
// it (a base near 1 to a huge power) the ln/exp path is used.
const maxExactPowDigits = 4000

// decPow computes x (scale sx) ^ y (scale sy) at scale st.
func decPow(x decimal128.Num, sx int32, y decimal128.Num, sy int32, st int32) (decimal128.Num, error) {
	X, Y := x.BigInt(), y.BigInt()
	if X.Sign() == 0 {
		switch Y.Sign() {
		case -1:
			return decimal128.Num{}, errZeroNegativePower()
		case 0:
			return bigToDec(big.NewInt(1), 0, st)
		}
		return decimal128.Num{}, nil
	}
	n, m := new(big.Int).QuoRem(Y, pow10(sy), new(big.Int))
	integer := m.Sign() == 0
	if X.Sign() < 0 && !integer {
		return decimal128.Num{}, errComplexPower()
	}
	// The result's decimal weight, roughly: overflow and underflow are
	// decided before any exact work.
	absX := new(big.Int).Abs(X)
	lx, _ := new(big.Float).SetInt(absX).Float64()
	ly, _ := new(big.Float).SetInt(Y).Float64()
	w := ly / math.Pow(10, float64(sy)) * (math.Log10(lx) - float64(sx))
	switch {
	case w > types.MaxNumericPrecision+1:
		return decimal128.Num{}, errNumericOverflow()
	case w < -float64(st)-2:
		return decimal128.Num{}, nil
	}
	if integer && n.IsInt64() {
		e := n.Int64()
		if digits := int64(len(absX.String())); abs64(e)*digits <= maxExactPowDigits && abs64(e)*int64(sx) <= maxExactPowDigits {
			// base^e = X^e / 10^(sx*e), exactly, then rounded to st.
			num, den := new(big.Int), new(big.Int)
			p := new(big.Int).Exp(X, big.NewInt(abs64(e)), nil)
			if e >= 0 {
				num.Mul(p, pow10(st))
				den.Set(pow10(sx * int32(e)))
			} else {
				num.Mul(pow10(sx*int32(-e)), pow10(st))
				den.Set(p)
			}
			return bigToDec(roundQuo(num, den), st, st)
		}
	}
	// exp(y * ln|x|), negated for a negative base to an odd power.
	const prec = 384
	fx := new(big.Float).SetPrec(prec).SetInt(absX)
	fx.Quo(fx, new(big.Float).SetPrec(prec).SetInt(pow10(sx)))
	fy := new(big.Float).SetPrec(prec).SetInt(Y)
	fy.Quo(fy, new(big.Float).SetPrec(prec).SetInt(pow10(sy)))
	r := bigExp(new(big.Float).SetPrec(prec).Mul(fy, bigLn(fx, prec)), prec)
	r.Mul(r, new(big.Float).SetPrec(prec).SetInt(pow10(st)))
	if X.Sign() < 0 && n.Bit(0) == 1 {
		r.Neg(r)
	}
	return bigToDec(roundFloat(r), st, st)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// roundQuo is num/den rounded half away from zero (den > 0).
func roundQuo(num, den *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	m.Abs(m).Lsh(m, 1)
	if m.Cmp(den) >= 0 {
		q.Add(q, big.NewInt(int64(num.Sign())))
	}
	return q
}

// roundFloat is f rounded half away from zero to an integer.
func roundFloat(f *big.Float) *big.Int {
	h := new(big.Float).SetPrec(f.Prec()).SetFloat64(0.5)
	if f.Sign() < 0 {
		h.Neg(h)
	}
	i, _ := new(big.Float).SetPrec(f.Prec()).Add(f, h).Int(nil) // truncates toward zero
	return i
}

// bigLn is ln(x) for x > 0: x = m·2^e with m in [1/√2, √2), ln m by the
// series 2·atanh((m-1)/(m+1)), whose ratio is then at most 0.03.
func bigLn(x *big.Float, prec uint) *big.Float {
	m := new(big.Float).SetPrec(prec)
	e := x.MantExp(m) // m in [0.5, 1)
	if m.Cmp(big.NewFloat(math.Sqrt2/2)) < 0 {
		m.SetMantExp(m, 1)
		e--
	}
	r := lnSeries(m, prec)
	if e != 0 {
		r.Add(r, new(big.Float).SetPrec(prec).Mul(ln2(prec), new(big.Float).SetPrec(prec).SetInt64(int64(e))))
	}
	return r
}

// ln2Cache holds ln 2 at the precisions asked for (two in practice).
var ln2Cache sync.Map // uint → *big.Float

// ln2 returns ln 2 at precision prec; the caller must not change it.
func ln2(prec uint) *big.Float {
	if v, ok := ln2Cache.Load(prec); ok {
		return v.(*big.Float)
	}
	v := lnSeries(new(big.Float).SetPrec(prec).SetInt64(2), prec)
	ln2Cache.Store(prec, v)
	return v
}

// lnSeries is ln(m) = 2·Σ z^(2k+1)/(2k+1), z = (m-1)/(m+1), for m near 1.
func lnSeries(m *big.Float, prec uint) *big.Float {
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	z := new(big.Float).SetPrec(prec).Sub(m, one)
	z.Quo(z, new(big.Float).SetPrec(prec).Add(m, one))
	z2 := new(big.Float).SetPrec(prec).Mul(z, z)
	sum := new(big.Float).SetPrec(prec).Set(z)
	term := new(big.Float).SetPrec(prec).Set(z)
	t, d := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec)
	for k := int64(1); term.Sign() != 0; k++ {
		term.Mul(term, z2)
		t.Quo(term, d.SetInt64(2*k+1))
		if t.Sign() == 0 || t.MantExp(nil)-sum.MantExp(nil) < -int(prec) {
			break
		}
		sum.Add(sum, t)
	}
	return sum.SetMantExp(sum, 1)
}

// expHalvings is how often exp's reduced argument is halved before its
// Taylor series (and the sum squared after).
const expHalvings = 8

// bigExp is e^y: y = k·ln2 + r with |r| <= ln2/2, e^r = (e^(r/2^8))^(2^8),
// e^(r/2^8) by its Taylor series.
func bigExp(y *big.Float, prec uint) *big.Float {
	l2 := ln2(prec)
	kf := new(big.Float).SetPrec(prec).Quo(y, l2)
	k := roundFloat(kf)
	r := new(big.Float).SetPrec(prec).Mul(l2, new(big.Float).SetPrec(prec).SetInt(k))
	r.Sub(y, r)
	r.SetMantExp(r, -expHalvings)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	d := new(big.Float).SetPrec(prec)
	for i := int64(1); ; i++ {
		term.Mul(term, r)
		term.Quo(term, d.SetInt64(i))
		if term.Sign() == 0 || term.MantExp(nil) < -int(prec)-4 {
			break
		}
		sum.Add(sum, term)
	}
	for range expHalvings {
		sum.Mul(sum, sum)
	}
	return sum.SetMantExp(sum, int(k.Int64()))
}
