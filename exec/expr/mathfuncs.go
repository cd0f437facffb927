package expr

import (
	"math"
	"math/big"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// PostgreSQL's mathematical functions over double precision (sqrt, cbrt,
// ln, log10, exp, sign, degrees, radians, the trigonometric functions,
// atan2, width_bucket, random), over bigint (gcd, lcm, factorial) and
// div(numeric, numeric). Each is a typed loop over the column (mapFloat,
// map2); the errors are PostgreSQL's, with its SQLSTATEs.

const invalidArgumentForLog = "2201E"
const invalidArgumentForWidthBucket = "2201G"

func errOutOfRange() error { return sqlerr.New(sqlerr.NumericOutOfRange, "input is out of range") }

// floatFuncs are the one-argument double precision functions.
var floatFuncs = map[string]func(float64) (float64, error){
	"sqrt": func(x float64) (float64, error) {
		if x < 0 {
			return 0, sqlerr.New(sqlerr.InvalidArgumentForPower, "cannot take square root of a negative number")
		}
		return math.Sqrt(x), nil
	},
	"cbrt": func(x float64) (float64, error) { return math.Cbrt(x), nil },
	"ln":   func(x float64) (float64, error) { return floatLog(x, math.Log) },
	"log10": func(x float64) (float64, error) {
		return floatLog(x, math.Log10)
	},
	"exp": func(x float64) (float64, error) {
		switch {
		case math.IsNaN(x):
			return x, nil
		case math.IsInf(x, 1):
			return x, nil
		case math.IsInf(x, -1):
			return 0, nil
		}
		r := math.Exp(x)
		if r == 0 {
			return 0, errFloatUnderflow()
		}
		if math.IsInf(r, 0) {
			return 0, errFloatOverflow()
		}
		return r, nil
	},
	"sign": func(x float64) (float64, error) {
		switch {
		case x > 0:
			return 1, nil
		case x < 0:
			return -1, nil
		}
		return 0, nil
	},
	"degrees": func(x float64) (float64, error) { return checkFloat(x / (math.Pi / 180)) },
	"radians": func(x float64) (float64, error) { return checkFloat(x * (math.Pi / 180)) },
	"sin":     func(x float64) (float64, error) { return trig(x, math.Sin) },
	"cos":     func(x float64) (float64, error) { return trig(x, math.Cos) },
	"tan":     func(x float64) (float64, error) { return trig(x, math.Tan) },
	"cot": func(x float64) (float64, error) {
		return trig(x, func(v float64) float64 { return 1 / math.Tan(v) })
	},
	"asin": func(x float64) (float64, error) { return inverseTrig(x, math.Asin) },
	"acos": func(x float64) (float64, error) { return inverseTrig(x, math.Acos) },
	"atan": func(x float64) (float64, error) { return math.Atan(x), nil },
}

// checkFloat is PostgreSQL's float_overflow_error check on a result.
func checkFloat(r float64) (float64, error) {
	if math.IsInf(r, 0) {
		return 0, errFloatOverflow()
	}
	return r, nil
}

func floatLog(x float64, f func(float64) float64) (float64, error) {
	switch {
	case x == 0:
		return 0, sqlerr.New(invalidArgumentForLog, "cannot take logarithm of zero")
	case x < 0:
		return 0, sqlerr.New(invalidArgumentForLog, "cannot take logarithm of a negative number")
	}
	return f(x), nil
}

// trig is dsin/dcos/dtan: NaN in, NaN out; an infinite input is 22003.
func trig(x float64, f func(float64) float64) (float64, error) {
	if math.IsNaN(x) {
		return x, nil
	}
	if math.IsInf(x, 0) {
		return 0, errOutOfRange()
	}
	return f(x), nil
}

func inverseTrig(x float64, f func(float64) float64) (float64, error) {
	if math.IsNaN(x) {
		return x, nil
	}
	if x < -1 || x > 1 {
		return 0, errOutOfRange()
	}
	return f(x), nil
}

func floatFuncKernel(f func(float64) (float64, error), t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.mapFloat(t, args[0], n, f)
	}
}

// map2 applies a fallible two-argument function to the rows where both
// arguments are non-NULL (either may be a scalar); at reads a row.
func map2[T int64 | float64](c *Ctx, t types.T, a, b vec, n int, at func(vec, int) T, f func(x, y T) (T, error)) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, a, b)
	vb := bufBytes(valid)
	buf, out := fixedBuf[T](mem, n)
	for i := range out {
		out[i] = 0
		if !isValid(vb, i) {
			continue
		}
		r, err := f(at(a, i), at(b, i))
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

func atan2Kernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return map2(c, t, args[0], args[1], n, floatAt, func(y, x float64) (float64, error) { return math.Atan2(y, x), nil })
	}
}

// randomKernel is random(): a value in [0, 1) per row (volatile).
func randomKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		buf, out := fixedBuf[float64](c.mem(), n)
		for i := range out {
			out[i] = rand.Float64()
		}
		return vec{arr: finish(t.Arrow(), n, nil, 0, buf), t: t}, nil
	}
}

// gcd is PostgreSQL's int8gcd in int64 (the binder casts a smaller
// result back, which range checks it): the result is never negative, and
// gcd(min, 0) and gcd(min, min) do not fit.
func gcd(x, y int64) (int64, error) {
	if x == math.MinInt64 && (y == 0 || y == math.MinInt64) || y == math.MinInt64 && x == 0 {
		return 0, errBigintRange()
	}
	r := uint64(abs64(x))
	s := uint64(abs64(y))
	if x == math.MinInt64 {
		r = 1 << 63
	}
	if y == math.MinInt64 {
		s = 1 << 63
	}
	for s != 0 {
		r, s = s, r%s
	}
	return int64(r), nil
}

func lcm(x, y int64) (int64, error) {
	if x == 0 || y == 0 {
		return 0, nil
	}
	g, err := gcd(x, y)
	if err != nil {
		return 0, err
	}
	r, ovf := mulOvf(x/g, y)
	if ovf || r == math.MinInt64 {
		return 0, errBigintRange()
	}
	return abs64(r), nil
}

func intFuncKernel(t types.T, f func(x, y int64) (int64, error)) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return map2(c, t, args[0], args[1], n, intAt, f)
	}
}

// factorialKernel is factorial(bigint) → numeric (scale 0); a result past
// NUMERIC's 38 digits (33!) is 22003.
func factorialKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		x := intColOf(args[0])
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			k := x.at(i)
			if k < 0 {
				return types.Null, sqlerr.New(sqlerr.NumericOutOfRange, "factorial of a negative number is undefined")
			}
			r := big.NewInt(1)
			for j := int64(2); j <= k; j++ {
				if j > 40 {
					return types.Null, errNumericOverflow()
				}
				r.Mul(r, big.NewInt(j))
			}
			d, err := bigToDec(r, 0, t.Scale)
			return types.Datum{D: d}, err
		})
	}
}

// divKernel is div(numeric, numeric): the quotient truncated toward zero,
// at scale 0.
func divKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a, b := args[0], args[1]
		sa, sb := a.t.Scale, b.t.Scale
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			x, y := decAt(a, i), decAt(b, i)
			if y == (decimal128.Num{}) {
				return types.Null, errDivZero()
			}
			// x/10^sa ÷ y/10^sb = x·10^sb ÷ y·10^sa
			num := new(big.Int).Mul(x.BigInt(), pow10(sb))
			den := new(big.Int).Mul(y.BigInt(), pow10(sa))
			q := num.Quo(num, den)
			d, err := bigToDec(q, 0, t.Scale)
			return types.Datum{D: d}, err
		})
	}
}

// widthBucketKernel is width_bucket(double, double, double, integer) as
// PostgreSQL 15's width_bucket_float8.
func widthBucketKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		cnt := intColOf(args[3])
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			op, b1, b2, count := floatAt(args[0], i), floatAt(args[1], i), floatAt(args[2], i), cnt.at(i)
			r, err := widthBucket(op, b1, b2, count)
			return types.Int(r), err
		})
	}
}

func widthBucket(op, b1, b2 float64, count int64) (int64, error) {
	if count <= 0 {
		return 0, sqlerr.New(invalidArgumentForWidthBucket, "count must be greater than zero")
	}
	if math.IsNaN(op) || math.IsNaN(b1) || math.IsNaN(b2) {
		return 0, sqlerr.New(invalidArgumentForWidthBucket, "operand, lower bound, and upper bound cannot be NaN")
	}
	if math.IsInf(b1, 0) || math.IsInf(b2, 0) {
		return 0, sqlerr.New(invalidArgumentForWidthBucket, "lower and upper bounds must be finite")
	}
	var r int64
	switch {
	case b1 < b2:
		switch {
		case op < b1:
			return 0, nil
		case op >= b2:
			r = count + 1
		default:
			var q float64
			if !math.IsInf(b2-b1, 0) {
				q = float64(count) * ((op - b1) / (b2 - b1))
			} else {
				q = float64(count) * ((op/2 - b1/2) / (b2/2 - b1/2))
			}
			r = min(int64(q), count-1) + 1
		}
	case b1 > b2:
		switch {
		case op > b1:
			return 0, nil
		case op <= b2:
			r = count + 1
		default:
			var q float64
			if !math.IsInf(b1-b2, 0) {
				q = float64(count) * ((b1 - op) / (b1 - b2))
			} else {
				q = float64(count) * ((b1/2 - op/2) / (b1/2 - b2/2))
			}
			r = min(int64(q), count-1) + 1
		}
	default:
		return 0, sqlerr.New(invalidArgumentForWidthBucket, "lower bound cannot equal upper bound")
	}
	if r > math.MaxInt32 {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
	}
	return r, nil
}
