package expr

import (
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Final functions of PostgreSQL's statistical aggregates, which the
// binder composes of retractable count and sum aggregates
// (sql/bind/aggs_pg.go), so that they work in batch queries, in views
// under retractions, across checkpoints and over windows as count and sum
// do:
//
//	pg_var_samp, pg_var_pop, pg_stddev_samp, pg_stddev_pop (n, Σx, Σx²)
//	    NUMERIC: PostgreSQL's numeric_stddev_internal exactly (the
//	    numerator N·Σx² − (Σx)² and the quotient's scale from
//	    select_div_scale, the square root rounded at that scale);
//	    DOUBLE PRECISION: the same formula in floats.
//	pg_regr_<name> (n, Σx, Σy, Σx², Σy², Σxy): corr, covar_pop,
//	    covar_samp, regr_slope, regr_intercept, regr_r2, regr_avgx,
//	    regr_avgy, regr_sxx, regr_syy, regr_sxy over floats.

// pgAggKernel picks the kernel of a final function; ok is false for other
// names.
func pgAggKernel(e *Func) (k kernel, lo, hi int, ok bool) {
	switch e.Name {
	case "pg_var_samp", "pg_var_pop", "pg_stddev_samp", "pg_stddev_pop":
		stddev, sample := strings.HasPrefix(e.Name, "pg_stddev"), strings.HasSuffix(e.Name, "_samp")
		if e.T.Kind == types.Numeric {
			return numVarKernel(e.T, argTypes(e.Args), stddev, sample), 3, 3, true
		}
		return floatVarKernel(e.T, stddev, sample), 3, 3, true
	}
	if name, ok := strings.CutPrefix(e.Name, "pg_regr_"); ok {
		if f := regrFinal(name); f != nil {
			return regrKernel(e.T, f), 6, 6, true
		}
	}
	return nil, 0, 0, false
}

// floatVarKernel computes the variance or standard deviation from n, Σx
// and Σx² as floats: (N·Σx² − (Σx)²) / (N·(N−1)), or / N² for the
// population, a numerator below rounding noise read as 0.
func floatVarKernel(t types.T, stddev, sample bool) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			cnt := float64(datumOf(args[0], i).I)
			s1, s2 := datumOf(args[1], i).F, datumOf(args[2], i).F
			if cnt == 0 || sample && cnt == 1 {
				return types.Null, nil
			}
			num := cnt*s2 - s1*s1
			if num <= cnt*s2*4*epsilon {
				num = 0
			}
			den := cnt * cnt
			if sample {
				den = cnt * (cnt - 1)
			}
			v := num / den
			if stddev {
				v = math.Sqrt(v)
			}
			return types.Float(v), nil
		})
	}
}

// epsilon is the float64 rounding unit.
const epsilon = 1.0 / (1 << 52)

// numVarKernel is PostgreSQL's numeric_stddev_internal over n, Σx, Σx²
// (of types ts), exact: the result is held at t's storage scale and
// carries PostgreSQL's display scale; 22003 if the digits PostgreSQL
// prints do not fit.
func numVarKernel(t types.T, ts []types.T, stddev, sample bool) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			cnt := datumOf(args[0], i).I
			if cnt == 0 || sample && cnt == 1 {
				return types.Null, nil
			}
			d1, d2 := datumOf(args[1], i), datumOf(args[2], i)
			st1, st2 := storeScale(ts[1]), storeScale(ts[2])
			ds1 := types.DScaleOf(d1, ts[1])
			// numerator N·Σx² − (Σx)², exact at scale s, displayed at 2·ds1
			s := max(st2, 2*st1)
			num := new(big.Int).Mul(big.NewInt(cnt), d2.D.BigInt())
			num.Mul(num, pow10(s-st2))
			sq := new(big.Int).Mul(d1.D.BigInt(), d1.D.BigInt())
			num.Sub(num, sq.Mul(sq, pow10(s-2*st1)))
			if num.Sign() <= 0 {
				return types.WithDScale(types.Datum{D: decimal128.Num{}}, 0), nil
			}
			den := big.NewInt(cnt)
			if sample {
				den.Mul(den, big.NewInt(cnt-1))
			} else {
				den.Mul(den, big.NewInt(cnt))
			}
			rs := bigDivScale(num, s, 2*ds1, den)
			// q = round(num / 10^s / den, rs) · 10^rs
			q := roundedQuo(new(big.Int).Mul(num, pow10(rs)), new(big.Int).Mul(den, pow10(s)))
			if stddev {
				// sqrt at rs with one more digit, then rounded half up
				r := new(big.Int).Sqrt(q.Mul(q, pow10(rs+2)))
				q = roundedQuo(r, big.NewInt(10))
			}
			return heldAt(q, rs, t.Scale)
		})
	}
}

// storeScale is the scale t's numeric values are held at (0 for integers).
func storeScale(t types.T) int32 {
	if t.Kind == types.Numeric {
		return t.Scale
	}
	return 0
}

// roundedQuo is a/b for a >= 0, b > 0, rounded half up.
func roundedQuo(a, b *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(a, b, new(big.Int))
	if r.Lsh(r, 1).Cmp(b) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// bigDivScale is PostgreSQL's select_div_scale for a positive dividend
// a/10^sa of display scale dsa and a positive integer divisor b.
func bigDivScale(a *big.Int, sa, dsa int32, b *big.Int) int32 {
	w1, f1 := bigWeightFirst(a, sa)
	w2, f2 := bigWeightFirst(b, 0)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	return min(max(int32(16-4*qweight), dsa, 0), 1000)
}

// bigWeightFirst is the base-10000 weight and first digit of m/10^scale (m > 0).
func bigWeightFirst(m *big.Int, scale int32) (weight, first int) {
	d := m.String()
	e := len(d) - 1 - int(scale)
	weight = e / 4
	if e < 0 && e%4 != 0 {
		weight--
	}
	k := e - 4*weight + 1
	for i := 0; i < k; i++ {
		first *= 10
		if i < len(d) {
			first += int(d[i] - '0')
		}
	}
	return weight, first
}

// heldAt returns q/10^rs held at storage scale st with display scale rs:
// 22003 when it has digits past st or 38 digits.
func heldAt(q *big.Int, rs, st int32) (types.Datum, error) {
	if rs > st {
		r := new(big.Int)
		if new(big.Int).QuoRem(q, pow10(rs-st), r); r.Sign() != 0 {
			return types.Null, sqlerr.New(sqlerr.NumericOutOfRange, "numeric result needs %d decimal places, more than the %d this aggregate holds", rs, st)
		}
		q = new(big.Int).Quo(q, pow10(rs-st))
	} else {
		q = new(big.Int).Mul(q, pow10(st-rs))
	}
	if q.Cmp(maxNumeric) >= 0 {
		return types.Null, sqlerr.New(sqlerr.NumericOutOfRange, "numeric field overflow")
	}
	return types.WithDScale(types.Datum{D: decimal128.FromBigInt(q)}, rs), nil
}

var maxNumeric = new(big.Int).Exp(big.NewInt(10), big.NewInt(types.MaxNumericPrecision), nil)

// regrSums are the sums the regression aggregates are computed from,
// over the rows where both arguments are non-NULL.
type regrSums struct{ n, sx, sy, sxx, syy, sxy float64 }

// centered returns Sxx, Syy, Sxy: the sums of squares and products of
// the deviations from the means, each below rounding noise read as 0.
func (s regrSums) centered() (sxx, syy, sxy float64) {
	noise := func(v, scale float64) float64 {
		if math.Abs(v) <= math.Abs(scale)*4*epsilon*s.n {
			return 0
		}
		return v
	}
	sxx = noise(s.sxx-s.sx*s.sx/s.n, s.sxx)
	syy = noise(s.syy-s.sy*s.sy/s.n, s.syy)
	sxy = noise(s.sxy-s.sx*s.sy/s.n, math.Sqrt(s.sxx*s.syy))
	return max(sxx, 0), max(syy, 0), sxy
}

// regrFinal returns the final function of regression aggregate name (nil
// if none); ok false means NULL.
func regrFinal(name string) func(s regrSums) (float64, bool) {
	switch name {
	case "corr":
		return func(s regrSums) (float64, bool) {
			sxx, syy, sxy := s.centered()
			if sxx == 0 || syy == 0 {
				return 0, false
			}
			return sxy / math.Sqrt(sxx*syy), true
		}
	case "covar_pop":
		return func(s regrSums) (float64, bool) { _, _, sxy := s.centered(); return sxy / s.n, true }
	case "covar_samp":
		return func(s regrSums) (float64, bool) {
			_, _, sxy := s.centered()
			return sxy / (s.n - 1), s.n > 1
		}
	case "regr_slope":
		return func(s regrSums) (float64, bool) {
			sxx, _, sxy := s.centered()
			return sxy / sxx, sxx != 0
		}
	case "regr_intercept":
		return func(s regrSums) (float64, bool) {
			sxx, _, sxy := s.centered()
			return (s.sy - s.sx*sxy/sxx) / s.n, sxx != 0
		}
	case "regr_r2":
		return func(s regrSums) (float64, bool) {
			sxx, syy, sxy := s.centered()
			switch {
			case sxx == 0:
				return 0, false
			case syy == 0:
				return 1, true
			}
			return sxy * sxy / (sxx * syy), true
		}
	case "regr_avgx":
		return func(s regrSums) (float64, bool) { return s.sx / s.n, true }
	case "regr_avgy":
		return func(s regrSums) (float64, bool) { return s.sy / s.n, true }
	case "regr_sxx":
		return func(s regrSums) (float64, bool) { v, _, _ := s.centered(); return v, true }
	case "regr_syy":
		return func(s regrSums) (float64, bool) { _, v, _ := s.centered(); return v, true }
	case "regr_sxy":
		return func(s regrSums) (float64, bool) { _, _, v := s.centered(); return v, true }
	}
	return nil
}

// regrKernel applies f to (n, Σx, Σy, Σx², Σy², Σxy); NULL for no rows.
func regrKernel(t types.T, f func(s regrSums) (float64, bool)) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			s := regrSums{n: float64(datumOf(args[0], i).I)}
			if s.n == 0 {
				return types.Null, nil
			}
			s.sx, s.sy = datumOf(args[1], i).F, datumOf(args[2], i).F
			s.sxx, s.syy, s.sxy = datumOf(args[3], i).F, datumOf(args[4], i).F, datumOf(args[5], i).F
			v, ok := f(s)
			if !ok {
				return types.Null, nil
			}
			return types.Float(v), nil
		})
	}
}
