package accum

import (
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// A numeric sum is held in 192 bits: the Decimal128 s (its low 128 bits,
// unsigned) and a high word x, so that wide = x*2^128 + unsigned(s). A sum
// past the 128 bits of a Decimal128 (many values near 10^38 / n) is then
// still exact, and an average of it correct; a sum whose result does not
// fit is 22003 (CheckResult), never a wrapped value.

// addWide adds the signed Decimal128 v to the wide sum (x, s).
func addWide(x int64, s, v decimal128.Num) (int64, decimal128.Num) {
	lo, c := bits.Add64(s.LowBits(), v.LowBits(), 0)
	hi, c2 := bits.Add64(uint64(s.HighBits()), uint64(v.HighBits()), c)
	return x + v.HighBits()>>63 + int64(c2), decimal128.New(int64(hi), lo)
}

// mergeWide adds the wide sum (xs, ss) to (x, s).
func mergeWide(x int64, s decimal128.Num, xs int64, ss decimal128.Num) (int64, decimal128.Num) {
	lo, c := bits.Add64(s.LowBits(), ss.LowBits(), 0)
	hi, c2 := bits.Add64(uint64(s.HighBits()), uint64(ss.HighBits()), c)
	return x + xs + int64(c2), decimal128.New(int64(hi), lo)
}

// fits128 reports whether the wide sum (x, s) is the signed Decimal128 s.
func fits128(x int64, s decimal128.Num) bool { return x == s.HighBits()>>63 }

// wideBig is the wide sum (x, s) as a big.Int.
func wideBig(x int64, s decimal128.Num) *big.Int {
	n := new(big.Int).Lsh(big.NewInt(x), 128)
	u := new(big.Int).Lsh(new(big.Int).SetUint64(uint64(s.HighBits())), 64)
	u.Or(u, new(big.Int).SetUint64(s.LowBits()))
	return n.Add(n, u)
}

// wideSentinel marks, in a sum's encoded state, a sum past 128 bits: the
// Decimal128 -2^127, then the high word and the low 128 bits (encodeWide).
var wideSentinel = decimal128.New(-1<<63, 0)

// errSumRange is a numeric sum that a Decimal128 cannot hold.
func errSumRange() error {
	err := sqlerr.New(sqlerr.NumericOutOfRange, "numeric sum needs more than the 38 digits a numeric holds")
	err.Hint = "Cast the argument to numeric(38,N) with fewer decimal places N, or to double precision."
	return err
}

// bigPow10 is 10^k.
func bigPow10(k int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(k), nil) }

// maxNumeric is 10^38, the first magnitude a NUMERIC cannot hold.
var maxNumeric = bigPow10(types.MaxNumericPrecision)

// avgWide is sum/n (the wide sum held at scale ss, display scale ds) as
// avg's result of type out: for an unconstrained out rounded at
// PostgreSQL's select_div_scale, carrying that display scale. A scale past
// out.Scale is kept when the quotient's digits there are zeros; otherwise
// the average is rounded at out.Scale (documented). An average with more
// integer digits than out holds is 22003 with a hint.
func avgWide(sum *big.Int, ss, ds int32, n int64, out types.T) (types.Datum, error) {
	st, rs := out.Scale, out.Scale
	if out.Prec == 0 {
		rs = types.DivScaleBig(sum, ss, ds, decimal128.FromI64(n), 0, 0)
	}
	q := types.DivRound(new(big.Int).Set(sum), ss, big.NewInt(n), 0, rs)
	if rs > st {
		k := bigPow10(int64(rs - st))
		if new(big.Int).Rem(q, k).Sign() == 0 {
			q.Quo(q, k) // exact at st: carries rs, padded with zeros
		} else {
			rs = st
			q = types.DivRound(new(big.Int).Set(sum), ss, big.NewInt(n), 0, st)
		}
	} else if rs < st {
		q.Mul(q, bigPow10(int64(st-rs)))
	}
	if new(big.Int).Abs(q).Cmp(maxNumeric) >= 0 {
		digits := len(new(big.Int).Abs(q).Text(10)) - int(st)
		err := sqlerr.New(sqlerr.NumericOutOfRange, "avg needs %d digits before the decimal point, more than the %d its result holds at %d decimal places", digits, types.MaxNumericPrecision-st, st)
		if digits <= 22 {
			err.Hint = "Cast the argument to numeric(37,15) to hold averages of up to 22 digits before the decimal point."
		}
		return types.Null, err
	}
	d := types.Datum{D: decimal128.FromBigInt(q)}
	if out.Prec == 0 {
		d.DS = types.PackDScale(rs)
	}
	return d, nil
}

// oldAvgSum converts the sum of avg state written before avg kept its
// argument's scale in (state without wideSentinel), held at the scale
// avg's argument was then cast to (the quotient's: at least 20, at most
// 30), to in's scale. The values were cast up, so the division is exact.
func oldAvgSum(s decimal128.Num, in types.T) decimal128.Num {
	old := min(max(in.Scale, 20), 30)
	if old <= in.Scale {
		return s
	}
	r, _ := types.Rescale(s, old, in.Scale)
	return r
}
