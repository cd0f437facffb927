package expr

import (
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// NUMERIC sqrt, ln, exp and log(b, x) as PostgreSQL 15's numeric.c
// computes them: each picks its result scale (rscale) from the argument's
// weight so that the result has at least NUMERIC_MIN_SIG_DIGITS (16)
// significant digits and no fewer fraction digits than the arguments'
// display scales; the value is then rounded there, half away from zero.
// The value is computed here in binary floating point with far more bits
// than the 38 decimal digits a result can hold, so the rounding at rscale
// is that of the exact value (PostgreSQL's own guard digits give the same
// but for values a hair's breadth from a rounding boundary).
//
// The result is unconstrained NUMERIC held at its type's storage scale
// (the binder's choice, sql/bind/funcs_numeric.go) and carries rscale as
// its display scale. A result whose digits at rscale go past the storage
// scale cannot be held: 22003, as for a quotient (never silently fewer
// digits than PostgreSQL prints).

const (
	numericMinSigDigits   = 16   // NUMERIC_MIN_SIG_DIGITS
	numericMaxDisplay     = 1000 // NUMERIC_MAX_DISPLAY_SCALE
	numTransPrec          = 512  // bits of the intermediate values
	numericMaxResultScale = 2000 // NUMERIC_MAX_RESULT_SCALE
)

// numArg is a NUMERIC operand: its value, held at scale s, with display
// scale ds.
type numArg struct {
	v  *big.Int
	s  int32
	ds int32
}

func (a numArg) float(prec uint) *big.Float {
	f := new(big.Float).SetPrec(prec).SetInt(a.v)
	if a.s > 0 {
		f.Quo(f, new(big.Float).SetPrec(prec).SetInt(pow10(a.s)))
	}
	return f
}

func (a numArg) float64() float64 {
	f, _ := a.float(64).Float64()
	return f
}

// nbase returns the base-10000 weight of a (PostgreSQL's NumericVar
// weight: the power of 10000 of its first digit group, 0 for zero) and
// its first two base-10000 digits.
func (a numArg) nbase() (weight int, d0, d1 int64) {
	if a.v.Sign() == 0 {
		return 0, 0, 0
	}
	x := new(big.Int).Abs(a.v)
	d := len(x.String()) - 1 - int(a.s) // |a| is in [10^d, 10^(d+1))
	weight = d / 4
	if d < 0 && d%4 != 0 {
		weight-- // floor
	}
	group := func(e int) int64 { // floor(x / 10^e) mod 10000
		q := new(big.Int)
		if e >= 0 {
			q.Quo(x, pow10(int32(e)))
		} else {
			q.Mul(x, pow10(int32(-e)))
		}
		return q.Mod(q, big.NewInt(10000)).Int64()
	}
	e := int(a.s) + 4*weight
	return weight, group(e), group(e - 4)
}

// clampScale applies the bounds every rscale gets.
func clampScale(r int32) int32 { return min(max(r, 0), numericMaxDisplay) }

// estimateLnDweight is numeric.c's estimate_ln_dweight for a > 0.
func estimateLnDweight(a numArg) int32 {
	if a.v.Sign() <= 0 {
		return 0
	}
	// 0.9 <= a <= 1.1: ln(a) ~= a - 1, whose first decimal digit it is.
	lo, hi := big.NewInt(9), big.NewInt(11)
	scaled := new(big.Int).Mul(a.v, big.NewInt(10))
	p := pow10(a.s)
	if scaled.Cmp(new(big.Int).Mul(lo, p)) >= 0 && scaled.Cmp(new(big.Int).Mul(hi, p)) <= 0 {
		x := numArg{v: new(big.Int).Sub(a.v, p), s: a.s}
		if x.v.Sign() == 0 {
			return 0
		}
		w, d0, _ := x.nbase()
		return int32(w*4 + int(math.Log10(float64(d0))))
	}
	// Two digits even when a has one: d1 is then 0, which changes nothing.
	w, d0, d1 := a.nbase()
	digits := d0*10000 + d1
	dweight := w*4 - 4
	lnVar := math.Log(float64(digits)) + float64(dweight)*2.302585092994046
	return int32(math.Log10(math.Abs(lnVar))) // C's (int): toward zero
}

func errLogZero() error {
	return sqlerr.New(invalidArgumentForLog, "cannot take logarithm of zero")
}

func errLogNegative() error {
	return sqlerr.New(invalidArgumentForLog, "cannot take logarithm of a negative number")
}

// numSqrt is numeric_sqrt: the rounded root and its rscale.
func numSqrt(a numArg) (*big.Int, int32, error) {
	if a.v.Sign() < 0 {
		return nil, 0, sqlerr.New(sqlerr.InvalidArgumentForPower, "cannot take square root of a negative number")
	}
	w, _, _ := a.nbase()
	sweight := (w+1)*4/2 - 1
	rscale := clampScale(max(numericMinSigDigits-int32(sweight), a.ds))
	// round(sqrt(v/10^s) * 10^r) = round(sqrt(v * 10^(2r-s))); make the
	// exponent even by working one digit finer when s is odd.
	e := 2*rscale - a.s
	n := new(big.Int).Set(a.v)
	if e >= 0 {
		n.Mul(n, pow10(e))
	} else {
		n.Quo(n, pow10(-e)) // exact: the digits past rscale >= ds are zeros
	}
	q := new(big.Int).Sqrt(n)
	// Half up: q+1 when n >= (q + 1/2)^2, i.e. 4n >= (2q+1)^2.
	t := new(big.Int).Lsh(q, 1)
	t.Add(t, big.NewInt(1))
	t.Mul(t, t)
	if new(big.Int).Lsh(n, 2).Cmp(t) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q, rscale, nil
}

// numExp is numeric_exp.
func numExp(a numArg) (*big.Int, int32, error) {
	val := a.float64() * 0.434294481903252
	val = min(max(val, -numericMaxResultScale), numericMaxResultScale)
	rscale := clampScale(max(numericMinSigDigits-int32(val), a.ds))
	if val > types.MaxNumericPrecision+1 {
		return nil, 0, errNumericOverflow()
	}
	r := bigExp(a.float(numTransPrec), numTransPrec)
	return scaleRound(r, rscale), rscale, nil
}

// numLn is numeric_ln.
func numLn(a numArg) (*big.Int, int32, error) {
	if err := lnDomain(a); err != nil {
		return nil, 0, err
	}
	rscale := clampScale(max(numericMinSigDigits-estimateLnDweight(a), a.ds))
	return scaleRound(bigLn(a.float(numTransPrec), numTransPrec), rscale), rscale, nil
}

func lnDomain(a numArg) error {
	switch a.v.Sign() {
	case 0:
		return errLogZero()
	case -1:
		return errLogNegative()
	}
	return nil
}

// numLog is numeric_log (log_var): the logarithm of x to base b.
func numLog(b, x numArg) (*big.Int, int32, error) {
	if err := lnDomain(b); err != nil {
		return nil, 0, err
	}
	if err := lnDomain(x); err != nil {
		return nil, 0, err
	}
	resultDweight := estimateLnDweight(x) - estimateLnDweight(b)
	rscale := clampScale(max(numericMinSigDigits-resultDweight, b.ds, x.ds))
	lb := bigLn(b.float(numTransPrec), numTransPrec)
	if lb.Sign() == 0 {
		return nil, 0, errDivZero()
	}
	lx := bigLn(x.float(numTransPrec), numTransPrec)
	return scaleRound(lx.Quo(lx, lb), rscale), rscale, nil
}

// scaleRound is f·10^r rounded half away from zero.
func scaleRound(f *big.Float, r int32) *big.Int {
	g := new(big.Float).SetPrec(f.Prec()).SetInt(pow10(r))
	return roundFloat(g.Mul(g, f))
}

// numTransKernel applies one of numSqrt, numExp, numLn (one argument) or
// numLog (two: base, value) to NUMERIC operands; t is the unconstrained
// result type.
func numTransKernel(name string, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		rds := make([]dsReader, len(args))
		for j, a := range args {
			rds[j] = newDSReader(a)
		}
		arg := func(j, i int) numArg {
			return numArg{v: decAt(args[j], i).BigInt(), s: args[j].t.Scale, ds: rds[j].at(i)}
		}
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			var r *big.Int
			var rscale int32
			var err error
			switch name {
			case "sqrt_numeric":
				r, rscale, err = numSqrt(arg(0, i))
			case "exp_numeric":
				r, rscale, err = numExp(arg(0, i))
			case "ln_numeric":
				r, rscale, err = numLn(arg(0, i))
			default: // log_numeric
				r, rscale, err = numLog(arg(0, i), arg(1, i))
			}
			if err != nil {
				return types.Null, err
			}
			d, err := transHeld(r, rscale, t.Scale, name)
			return types.Datum{D: d, DS: types.PackDScale(rscale)}, err
		})
	}
}

// transHeld converts r (at scale rs) to storage scale st, which must lose no
// digit: 22003 otherwise.
func transHeld(r *big.Int, rs, st int32, name string) (decimal128.Num, error) {
	if rs > st {
		q, m := new(big.Int).QuoRem(r, pow10(rs-st), new(big.Int))
		if m.Sign() != 0 {
			return decimal128.Num{}, sqlerr.New(sqlerr.NumericOutOfRange,
				"%s: the result has %d fraction digits; streamdb's NUMERIC holds %d here", name[:len(name)-len("_numeric")], rs, st)
		}
		r, rs = q, st
	}
	return bigToDec(r, rs, st)
}
