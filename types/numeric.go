package types

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
)

// NUMERIC values are decimal128.Num integers scaled by 10^scale. The
// helpers here work on the 128-bit magnitude directly (u128) so that the
// common paths (parse, print, rescale) do not allocate.

// MaxNumericPrecision is the number of decimal digits a decimal128 holds.
const MaxNumericPrecision = 38

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

var pow10u64 = [20]uint64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// maxMag is 10^38, the first magnitude a NUMERIC cannot hold.
var maxMag = u128{hi: 0x4b3b4ca85a86c47a, lo: 0x098a224000000000}

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }
func (a u128) isZero() bool     { return a.hi == 0 && a.lo == 0 }

// mulAdd returns a*m + c and whether it overflowed 128 bits.
func (a u128) mulAdd(m, c uint64) (u128, bool) {
	hh, hl := bits.Mul64(a.hi, m)
	lh, ll := bits.Mul64(a.lo, m)
	lo, carry := bits.Add64(ll, c, 0)
	hi, c2 := bits.Add64(hl, lh, carry)
	return u128{hi, lo}, hh != 0 || c2 != 0
}

// divmod returns a/d and a%d.
func (a u128) divmod(d uint64) (u128, uint64) {
	qh, r := a.hi/d, a.hi%d
	ql, r := bits.Div64(r, a.lo, d)
	return u128{qh, ql}, r
}

// mulPow10 returns a*10^k; ok is false if the result reaches 10^38.
func (a u128) mulPow10(k int) (u128, bool) {
	for k > 0 {
		step := min(k, 19)
		var of bool
		a, of = a.mulAdd(pow10u64[step], 0)
		if of || !a.less(maxMag) {
			return a, false
		}
		k -= step
	}
	return a, a.less(maxMag)
}

// divPow10Round returns a/10^k rounded half away from zero (a is a magnitude).
func (a u128) divPow10Round(k int) u128 {
	switch {
	case k <= 0:
		return a
	case k > 39:
		return u128{}
	case k <= 19:
		q, r := a.divmod(pow10u64[k])
		if r >= 5*pow10u64[k-1] {
			q, _ = q.mulAdd(1, 1)
		}
		return q
	}
	// Two steps: the dropped low 19 digits only matter through the high remainder.
	q1, _ := a.divmod(pow10u64[19])
	rest := k - 19
	if rest > 19 { // k is 39: a < 10^38 rounds to zero
		return u128{}
	}
	q, r := q1.divmod(pow10u64[rest])
	if r >= 5*pow10u64[rest-1] {
		q, _ = q.mulAdd(1, 1)
	}
	return q
}

func magOf(n decimal128.Num) (u128, bool) {
	neg := n.Sign() < 0
	if neg {
		n = n.Negate()
	}
	return u128{uint64(n.HighBits()), n.LowBits()}, neg
}

func numOf(m u128, neg bool) decimal128.Num {
	n := decimal128.New(int64(m.hi), m.lo)
	if neg {
		n = n.Negate()
	}
	return n
}

// appendDigits appends the decimal digits of m (at least one digit).
func appendDigits(buf []byte, m u128) []byte {
	var tmp [40]byte
	i := len(tmp)
	for m.hi != 0 {
		var r uint64
		m, r = m.divmod(pow10u64[19])
		for j := 0; j < 19; j++ {
			i--
			tmp[i] = byte('0' + r%10)
			r /= 10
		}
	}
	v := m.lo
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(buf, tmp[i:]...)
}

func errNumericSyntax(s string) error {
	return sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type numeric: %s", quote(s))
}

func errNumericOverflow() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, "value overflows numeric format")
}

// NumericFromString parses PostgreSQL numeric input ("  -12.50", "1e3",
// ".5") into a decimal at the given scale, rounding half away from zero.
// Magnitudes of 10^38 (unscaled) or more fail with 22003.
func NumericFromString(s string, scale int32) (decimal128.Num, error) {
	str := trimSpace(s)
	i := 0
	neg := false
	if i < len(str) && (str[i] == '+' || str[i] == '-') {
		neg = str[i] == '-'
		i++
	}
	// Locate the digits: mantissa is str[digStart:digEnd] with at most one '.'.
	digStart := i
	intDigits, fracDigits := 0, 0
	seenDot := false
	for ; i < len(str); i++ {
		c := str[i]
		if c >= '0' && c <= '9' {
			if seenDot {
				fracDigits++
			} else {
				intDigits++
			}
			continue
		}
		if c == '.' && !seenDot {
			seenDot = true
			continue
		}
		break
	}
	digEnd := i
	if intDigits+fracDigits == 0 {
		if eqFoldASCII(str[digStart:], "nan") {
			return decimal128.Num{}, sqlerr.New(sqlerr.FeatureNotSupported, "numeric NaN is not supported")
		}
		return decimal128.Num{}, errNumericSyntax(s)
	}
	exp := 0
	if i < len(str) && (str[i] == 'e' || str[i] == 'E') {
		i++
		eneg := false
		if i < len(str) && (str[i] == '+' || str[i] == '-') {
			eneg = str[i] == '-'
			i++
		}
		if i == len(str) {
			return decimal128.Num{}, errNumericSyntax(s)
		}
		for ; i < len(str); i++ {
			c := str[i]
			if c < '0' || c > '9' {
				return decimal128.Num{}, errNumericSyntax(s)
			}
			if exp < 100000 {
				exp = exp*10 + int(c-'0')
			}
		}
		if exp > 1000 { // PostgreSQL's own limit on the exponent
			return decimal128.Num{}, errNumericSyntax(s)
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(str) {
		return decimal128.Num{}, errNumericSyntax(s)
	}
	// value = mantissa digits * 10^(exp - fracDigits); unscaled = digits * 10^shift.
	shift := exp - fracDigits + int(scale)
	keep := intDigits + fracDigits // digits that survive before rounding
	if shift < 0 {
		keep += shift
	}
	var m u128
	n := 0
	roundUp := false
	if keep < 0 { // every digit is below half a unit of the last place
		digEnd = digStart
	}
	for j := digStart; j < digEnd; j++ {
		c := str[j]
		if c == '.' {
			continue
		}
		if n == keep {
			roundUp = c >= '5'
			break
		}
		n++
		if m.isZero() && c == '0' {
			continue
		}
		var of bool
		m, of = m.mulAdd(10, uint64(c-'0'))
		if of || !m.less(maxMag) {
			return decimal128.Num{}, errNumericOverflow()
		}
	}
	if roundUp {
		m, _ = m.mulAdd(1, 1)
	}
	if shift > 0 && !m.isZero() {
		var ok bool
		if m, ok = m.mulPow10(shift); !ok {
			return decimal128.Num{}, errNumericOverflow()
		}
	}
	if !m.less(maxMag) {
		return decimal128.Num{}, errNumericOverflow()
	}
	return numOf(m, neg), nil
}

// AppendNumeric appends n (unscaled, at scale) in PostgreSQL's plain notation
// with exactly scale fraction digits.
func AppendNumeric(buf []byte, n decimal128.Num, scale int32) []byte {
	m, neg := magOf(n)
	var tmp [48]byte
	digits := appendDigits(tmp[:0], m)
	if neg && !m.isZero() {
		buf = append(buf, '-')
	}
	if scale <= 0 {
		buf = append(buf, digits...)
		if !m.isZero() {
			for i := int32(0); i < -scale; i++ {
				buf = append(buf, '0')
			}
		}
		return buf
	}
	s := int(scale)
	if len(digits) <= s {
		buf = append(buf, '0', '.')
		for i := len(digits); i < s; i++ {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	at := len(digits) - s
	buf = append(buf, digits[:at]...)
	buf = append(buf, '.')
	return append(buf, digits[at:]...)
}

// NumericString formats n at scale with exactly scale fraction digits.
func NumericString(n decimal128.Num, scale int32) string {
	return string(AppendNumeric(nil, n, scale))
}

// DisplayScale is the smallest scale (down to 0) at which n, stored at
// scale, prints without losing digits: the scale left after trimming
// trailing fraction zeros. It stands in for PostgreSQL's per-value dscale,
// which unconstrained NUMERIC storage does not keep.
func DisplayScale(n decimal128.Num, scale int32) int32 {
	m, _ := magOf(n)
	if m.isZero() {
		return 0
	}
	for scale > 0 {
		q, r := m.divmod(10)
		if r != 0 {
			break
		}
		m = q
		scale--
	}
	return scale
}

// Rescale converts n from scale from to scale to, rounding half away from
// zero when digits are dropped; 22003 if the result needs more than 38 digits.
func Rescale(n decimal128.Num, from, to int32) (decimal128.Num, error) {
	if from == to {
		return n, nil
	}
	m, neg := magOf(n)
	if to > from {
		if m.isZero() {
			return n, nil
		}
		r, ok := m.mulPow10(int(to - from))
		if !ok {
			return decimal128.Num{}, errNumericOverflow()
		}
		return numOf(r, neg), nil
	}
	return numOf(m.divPow10Round(int(from-to)), neg), nil
}

// NumericFit checks n (at t.Scale) against a constrained NUMERIC(p,s)'s
// precision, with PostgreSQL's error. Unconstrained types always fit.
func NumericFit(n decimal128.Num, t T) error {
	if t.Prec <= 0 || t.Prec >= MaxNumericPrecision {
		return nil
	}
	m, _ := magOf(n)
	lim, _ := u128{lo: 1}.mulPow10(int(t.Prec))
	if m.less(lim) {
		return nil
	}
	return errFieldOverflow(t)
}

// errFieldOverflow is PostgreSQL's error for a value too wide for NUMERIC(p,s).
func errFieldOverflow(t T) error {
	intDigits := t.Prec - t.Scale
	limit := "1"
	if intDigits > 0 {
		limit = "10^" + itoa(int64(intDigits))
	}
	return &sqlerr.Error{
		Code: sqlerr.NumericOutOfRange,
		Msg:  "numeric field overflow",
		Detail: "A field with precision " + itoa(int64(t.Prec)) + ", scale " + itoa(int64(t.Scale)) +
			" must round to an absolute value less than " + limit + ".",
	}
}

// parseNumeric reads s as a value of NUMERIC type t. Unconstrained
// numeric (t.Prec 0) is held at t.Scale places: text with more decimal
// places is 22003 with a hint to cast to numeric(38,N), never rounded, as
// PostgreSQL keeps every digit
// (docs/decisions/2026-12-07-numeric-avg-distinct-float-digits-window-casts.md).
func parseNumeric(s string, t T) (decimal128.Num, error) {
	if t.Prec == 0 {
		if ds, ok := TextDScale(s); ok && ds > t.Scale {
			return decimal128.Num{}, ErrNumericDigits(trimSpace(s), ds, t.Scale)
		}
	}
	n, err := NumericFromString(s, t.Scale)
	if err != nil {
		if t.Prec > 0 && sqlerr.Code(err) == sqlerr.NumericOutOfRange {
			err = errFieldOverflow(t)
		}
		return n, err
	}
	return n, NumericFit(n, t)
}

// numericFromScaled returns n at from scale converted for storage as t
// (rescaled and precision checked).
func numericFromScaled(n decimal128.Num, from int32, t T) (decimal128.Num, error) {
	r, err := Rescale(n, from, t.Scale)
	if err != nil {
		if t.Prec > 0 {
			err = errFieldOverflow(t)
		}
		return r, err
	}
	return r, NumericFit(r, t)
}

// weightAndFirst returns PostgreSQL's base-10000 weight and first
// base-10000 digit of n at scale (0, 0 for zero).
func weightAndFirst(n decimal128.Num, scale int32) (weight int, first int) {
	m, _ := magOf(n)
	if m.isZero() {
		return 0, 0
	}
	var tmp [48]byte
	return weightOfDigits(appendDigits(tmp[:0], m), scale)
}

// weightOfDigits is weightAndFirst of the magnitude whose decimal digits
// (no leading zeros) are d, at scale.
func weightOfDigits(d []byte, scale int32) (weight int, first int) {
	e := len(d) - 1 - int(scale) // decimal exponent of the leading digit
	weight = floorDiv(e, 4)
	k := e - 4*weight + 1 // how many leading decimal digits form the first base-10000 digit
	for i := 0; i < k; i++ {
		first *= 10
		if i < len(d) {
			first += int(d[i] - '0')
		}
	}
	return weight, first
}

// DivScale is PostgreSQL's select_div_scale: the result scale of a / b for
// NUMERIC operands a (display scale sa) and b (display scale sb).
//
//	qweight = weight(a) - weight(b), minus 1 if firstdigit(a) <= firstdigit(b)
//	scale   = max(16 - 4*qweight, sa, sb), clamped to [0, 1000]
//
// where weight and firstdigit are of the base-10000 representation. For
// unconstrained operands pass DisplayScale, since stored values have lost
// PostgreSQL's dscale (so 1.50/3 uses scale 1 where PostgreSQL used 2).
func DivScale(a decimal128.Num, sa int32, b decimal128.Num, sb int32) int32 {
	return DivScaleDS(a, sa, sa, b, sb, sb)
}

// DivScaleDS is DivScale for a held at scale sa with display scale dsa and
// b held at sb with display scale dsb.
func DivScaleDS(a decimal128.Num, sa, dsa int32, b decimal128.Num, sb, dsb int32) int32 {
	w1, f1 := weightAndFirst(a, sa)
	w2, f2 := weightAndFirst(b, sb)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rs := int32(16 - qweight*4)
	rs = max(rs, dsa, dsb, 0)
	return min(rs, 1000)
}

// DivScaleBig is DivScaleDS for a dividend a held at scale sa too wide
// for a Decimal128 (a sum of many values), display scale dsa.
func DivScaleBig(a *big.Int, sa, dsa int32, b decimal128.Num, sb, dsb int32) int32 {
	w1, f1 := 0, 0
	if a.Sign() != 0 {
		w1, f1 = weightOfDigits([]byte(new(big.Int).Abs(a).Text(10)), sa)
	}
	w2, f2 := weightAndFirst(b, sb)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	return min(max(int32(16-qweight*4), dsa, dsb, 0), 1000)
}

// DivRound returns num/den (num at scale ns, den at scale ds, den not
// zero) at scale rs, rounded half away from zero. It uses num and den as
// its scratch: the caller passes values it no longer needs.
func DivRound(num *big.Int, ns int32, den *big.Int, ds int32, rs int32) *big.Int {
	// num/10^ns / (den/10^ds) * 10^rs = num * 10^(ds+rs-ns) / den
	if k := int64(ds) + int64(rs) - int64(ns); k >= 0 {
		num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(k), nil))
	} else {
		den.Mul(den, new(big.Int).Exp(big.NewInt(10), big.NewInt(-k), nil))
	}
	neg := (num.Sign() < 0) != (den.Sign() < 0)
	num.Abs(num)
	den.Abs(den)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return q
}

// NumericDiv returns a/b (a at scale sa, b at sb) at scale rs, rounded half
// away from zero: 22012 for a zero divisor, 22003 past 38 digits.
func NumericDiv(a decimal128.Num, sa int32, b decimal128.Num, sb int32, rs int32) (decimal128.Num, error) {
	if b.Sign() == 0 {
		return decimal128.Num{}, sqlerr.New(sqlerr.DivisionByZero, "division by zero")
	}
	q := DivRound(a.BigInt(), sa, b.BigInt(), sb, rs)
	neg := q.Sign() < 0
	q.Abs(q)
	if q.BitLen() > 127 {
		return decimal128.Num{}, errNumericOverflow()
	}
	m := u128{hi: new(big.Int).Rsh(q, 64).Uint64(), lo: q.Uint64()}
	if !m.less(maxMag) {
		return decimal128.Num{}, errNumericOverflow()
	}
	return numOf(m, neg), nil
}

// NumericDivHeld is a/b (a at scale sa, b at sb) rounded at PostgreSQL's
// result scale rs (DivScaleDS) and held at scale st, the quotient's
// storage scale. When rs > st the rounded quotient is held exactly only if
// its digits past st are zeros (1/400000 = 0.0000025 at rs 24); it then
// carries display scale rs and prints PostgreSQL's digits. Otherwise a
// Decimal128 at st cannot hold PostgreSQL's value, and the result is
// 22003 rather than a value rounded short of PostgreSQL's digits.
func NumericDivHeld(a decimal128.Num, sa int32, b decimal128.Num, sb int32, rs, st int32) (decimal128.Num, error) {
	q, err := numericDivHeld(a, sa, b, sb, rs, st)
	var se *sqlerr.Error
	if errors.As(err, &se) && se.Code == sqlerr.NumericOutOfRange && se.Hint == "" {
		// Too many integer digits for the places the quotient is held at:
		// count them (a*10^sb / b*10^sa, truncated).
		num := new(big.Int).Mul(a.BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sb)), nil))
		den := new(big.Int).Mul(b.BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sa)), nil))
		n := num.Quo(num, den)
		se = sqlerr.New(sqlerr.NumericOutOfRange, "numeric quotient needs %d digits before the decimal point, more than the %d it holds at %d decimal places", len(n.Abs(n).Text(10)), MaxNumericPrecision-st, st)
		se.Hint = "Cast an operand to double precision for an approximate quotient."
		return q, se
	}
	return q, err
}

func numericDivHeld(a decimal128.Num, sa int32, b decimal128.Num, sb int32, rs, st int32) (decimal128.Num, error) {
	if rs <= st {
		q, err := NumericDiv(a, sa, b, sb, rs)
		if err != nil {
			return q, err
		}
		return Rescale(q, rs, st)
	}
	q, err := NumericDiv(a, sa, b, sb, rs)
	if err == nil && !zerosPast(q, rs-st) {
		err = sqlerr.New(sqlerr.NumericOutOfRange, "numeric quotient needs %d decimal places, more than the %d this expression holds", rs, st)
		err.(*sqlerr.Error).Hint = fmt.Sprintf("Cast an operand to numeric(38,%d) to hold the quotient at %d decimal places.", min(rs, MaxNumericPrecision), min(rs, MaxNumericPrecision))
	}
	if err != nil {
		return decimal128.Num{}, err
	}
	return Rescale(q, rs, st)
}

// ProductExact reports whether a*b (a at scale sa, b at sb) is held
// exactly at scale st: its digits past st are zeros. (For a display scale
// past the storage scale, as the sum of the operands' display scales.)
func ProductExact(a decimal128.Num, sa int32, b decimal128.Num, sb int32, st int32) bool {
	k := int64(sa) + int64(sb) - int64(st)
	if k <= 0 {
		return true
	}
	p := new(big.Int).Mul(a.BigInt(), b.BigInt())
	return p.Rem(p, new(big.Int).Exp(big.NewInt(10), big.NewInt(k), nil)).Sign() == 0
}

// ErrProductScale is the error of a product whose PostgreSQL result scale
// rs (the operands' display scales dx + dy) is past st, the scale the
// product is held at, with nonzero digits there: a Decimal128 at st cannot
// hold PostgreSQL's value. The hint's casts make the operands' scales
// static, so the product is held at dx + dy places.
func ErrProductScale(rs, st, dx, dy int32) error {
	err := sqlerr.New(sqlerr.NumericOutOfRange, "numeric product needs %d decimal places, more than the %d this expression holds", rs, st)
	if rs <= maxHeldScale {
		err.Hint = fmt.Sprintf("Cast the operands to numeric(38,%d) and numeric(38,%d) to hold the product at %d decimal places.", dx, dy, rs)
	}
	return err
}

// maxHeldScale is the most decimal places an expression of a static
// scale holds (sql/bind maxStaticScale).
const maxHeldScale = 30

// zerosPast reports whether the last k digits of n are zeros.
func zerosPast(n decimal128.Num, k int32) bool {
	m, _ := magOf(n)
	for k > 0 && !m.isZero() {
		step := min(k, 19)
		var r uint64
		if m, r = m.divmod(pow10u64[step]); r != 0 {
			return false
		}
		k -= step
	}
	return true
}

// AppendNumericDS appends n, held at scale st (>= 0), with exactly ds
// fraction digits: rounded when ds < st, zeros appended when ds > st (a
// display scale past the storage scale, whose digits there are zeros).
func AppendNumericDS(buf []byte, n decimal128.Num, st, ds int32) []byte {
	if ds <= st {
		n, _ = Rescale(n, st, ds) // exact unless a carried scale is below the storage's digits
		return AppendNumeric(buf, n, ds)
	}
	buf = AppendNumeric(buf, n, st)
	if st <= 0 {
		buf = append(buf, '.')
	}
	for i := max(st, 0); i < ds; i++ {
		buf = append(buf, '0')
	}
	return buf
}

// numericToFloat converts n at scale to the nearest float64, as
// PostgreSQL does by printing and re-reading.
func numericToFloat(n decimal128.Num, scale int32) float64 {
	m, neg := magOf(n)
	if m.hi == 0 && m.lo < 1<<53 && scale >= 0 && scale <= 22 {
		// Both operands are exact, so the one division rounds correctly.
		f := float64(m.lo) / math.Pow10(int(scale))
		if neg {
			f = -f
		}
		return f
	}
	var tmp [64]byte
	f, _ := parseFloatBytes(AppendNumeric(tmp[:0], n, scale))
	return f
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
