package types

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
)

// to_char(number, template) and to_number(text, template), as PostgreSQL
// 15's formatting.c does them (NUMDesc_prepare, NUM_processor): a template
// is compiled once (CompileNumFormat) and applied to many values. The
// locale is C's: D is '.', G is ',', S writes '+' or '-'. The patterns L
// (currency), V (shift) and EEEE (scientific) are refused with 0A000.

type numKey uint8

const (
	nkLit numKey = iota
	nkComma
	nkDec
	nk0
	nk9
	nkB
	nkC
	nkD
	nkE
	nkFM
	nkG
	nkL
	nkMI
	nkPL
	nkPR
	nkRN
	nkRNLower
	nkSG
	nkSP
	nkS
	nkTH
	nkTHLower
	nkV
)

// numKeywords in PostgreSQL's matching order: the first that is a prefix
// wins. Matching is case-sensitive.
var numKeywords = []struct {
	kw  string
	key numKey
}{
	{",", nkComma}, {".", nkDec}, {"0", nk0}, {"9", nk9},
	{"B", nkB}, {"C", nkC}, {"D", nkD}, {"EEEE", nkE}, {"FM", nkFM}, {"G", nkG}, {"L", nkL},
	{"MI", nkMI}, {"PL", nkPL}, {"PR", nkPR}, {"RN", nkRN}, {"SG", nkSG}, {"SP", nkSP}, {"S", nkS},
	{"TH", nkTH}, {"V", nkV},
	{"b", nkB}, {"c", nkC}, {"d", nkD}, {"eeee", nkE}, {"fm", nkFM}, {"g", nkG}, {"l", nkL},
	{"mi", nkMI}, {"pl", nkPL}, {"pr", nkPR}, {"rn", nkRNLower}, {"sg", nkSG}, {"sp", nkSP}, {"s", nkS},
	{"th", nkTHLower}, {"v", nkV},
}

// Flags of a number template (NUM_F_* in formatting.c).
const (
	nfDecimal = 1 << iota
	nfZero
	nfBlank
	nfFillMode
	nfLSign
	nfBracket
	nfMinus
	nfPlus
	nfRoman
)

// Position of the S pattern's sign.
const (
	lsignNone = iota
	lsignPre
	lsignPost
)

type numNode struct {
	key numKey
	lit string // nkLit: one character
}

// numDesc is PostgreSQL's NUMDesc: what the template's patterns add up to.
type numDesc struct {
	pre, post   int // digit positions before and after the decimal point
	lsign       int
	preLsignNum int
	flag        int
	zeroStart   int
	zeroEnd     int
}

func (d *numDesc) is(f int) bool { return d.flag&f != 0 }

// NumFormat is a compiled number template.
type NumFormat struct {
	nodes []numNode
	desc  numDesc
	empty bool
}

// Empty reports whether the template was empty: to_char returns ” and
// to_number NULL.
func (f *NumFormat) Empty() bool { return f.empty }

func numSyntax(msg string) error { return sqlerr.New(sqlerr.SyntaxError, "%s", msg) }

// CompileNumFormat parses a number template, with PostgreSQL's errors
// (42601) for patterns that cannot go together.
func CompileNumFormat(tmpl string) (*NumFormat, error) {
	f := &NumFormat{empty: tmpl == ""}
	d := &f.desc
	for i := 0; i < len(tmpl); {
		matched := false
		for _, k := range numKeywords {
			if !strings.HasPrefix(tmpl[i:], k.kw) {
				continue
			}
			if err := d.prepare(k.key, k.kw); err != nil {
				return nil, err
			}
			f.nodes = append(f.nodes, numNode{key: k.key})
			i += len(k.kw)
			matched = true
			break
		}
		if matched {
			continue
		}
		if tmpl[i] == '"' {
			// Quoted text is literal; a backslash in it quotes the next character.
			i++
			for i < len(tmpl) {
				if tmpl[i] == '"' {
					i++
					break
				}
				if tmpl[i] == '\\' && i+1 < len(tmpl) {
					i++
				}
				_, w := utf8.DecodeRuneInString(tmpl[i:])
				f.nodes = append(f.nodes, numNode{lit: tmpl[i : i+w]})
				i += w
			}
			continue
		}
		if tmpl[i] == '\\' && i+1 < len(tmpl) && tmpl[i+1] == '"' {
			i++
		}
		_, w := utf8.DecodeRuneInString(tmpl[i:])
		f.nodes = append(f.nodes, numNode{lit: tmpl[i : i+w]})
		i += w
	}
	return f, nil
}

// prepare is NUMDesc_prepare: it adds pattern k to the description.
func (d *numDesc) prepare(k numKey, kw string) error {
	switch k {
	case nkL, nkV, nkE:
		return sqlerr.New(sqlerr.FeatureNotSupported, "number template pattern %q is not supported", kw)
	case nk9:
		if d.is(nfBracket) {
			return numSyntax(`"9" must be ahead of "PR"`)
		}
		if d.is(nfDecimal) {
			d.post++
		} else {
			d.pre++
		}
	case nk0:
		if d.is(nfBracket) {
			return numSyntax(`"0" must be ahead of "PR"`)
		}
		if !d.is(nfZero) && !d.is(nfDecimal) {
			d.flag |= nfZero
			d.zeroStart = d.pre + 1
		}
		if !d.is(nfDecimal) {
			d.pre++
		} else {
			d.post++
		}
		d.zeroEnd = d.pre + d.post
	case nkB:
		if d.pre == 0 && d.post == 0 && !d.is(nfZero) {
			d.flag |= nfBlank
		}
	case nkD, nkDec:
		if d.is(nfDecimal) {
			return numSyntax("multiple decimal points")
		}
		d.flag |= nfDecimal
	case nkFM:
		d.flag |= nfFillMode
	case nkS:
		if d.is(nfLSign) {
			return numSyntax(`cannot use "S" twice`)
		}
		if d.is(nfPlus) || d.is(nfMinus) || d.is(nfBracket) {
			return numSyntax(`cannot use "S" and "PL"/"MI"/"SG"/"PR" together`)
		}
		if !d.is(nfDecimal) {
			d.lsign, d.preLsignNum = lsignPre, d.pre
			d.flag |= nfLSign
		} else if d.lsign == lsignNone {
			d.lsign = lsignPost
			d.flag |= nfLSign
		}
	case nkMI:
		if d.is(nfLSign) {
			return numSyntax(`cannot use "S" and "MI" together`)
		}
		d.flag |= nfMinus
	case nkPL:
		if d.is(nfLSign) {
			return numSyntax(`cannot use "S" and "PL" together`)
		}
		d.flag |= nfPlus
	case nkSG:
		if d.is(nfLSign) {
			return numSyntax(`cannot use "S" and "SG" together`)
		}
		d.flag |= nfMinus | nfPlus
	case nkPR:
		if d.is(nfLSign) || d.is(nfPlus) || d.is(nfMinus) {
			return numSyntax(`cannot use "PR" and "S"/"PL"/"MI"/"SG" together`)
		}
		d.flag |= nfBracket
	case nkRN, nkRNLower:
		d.flag |= nfRoman
	}
	return nil
}

// ---- to_char ----

// overflowFill is the '#' picture of a value with more integer digits
// than the template holds.
func (f *NumFormat) overflowFill(post int) string {
	b := []byte(strings.Repeat("#", f.desc.pre+post+1))
	b[f.desc.pre] = '.'
	return string(b)
}

// AppendInt appends to_char(v, f) of an integer (int4 or int8).
func (f *NumFormat) AppendInt(buf []byte, v int64) ([]byte, error) {
	if f.desc.is(nfRoman) {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return buf, errIntRange(Int32) // PostgreSQL 15 converts with int84
		}
		return f.appendRoman(buf, v), nil
	}
	digits := strconv.FormatInt(v, 10)
	sign := byte('+')
	if v < 0 {
		sign, digits = '-', digits[1:]
	}
	num := digits
	if f.desc.post > 0 {
		num = digits + "." + strings.Repeat("0", f.desc.post)
	}
	return f.finish(buf, num, len(digits), sign, f.desc.post)
}

// AppendFloat appends to_char(v, f) of a floating-point value: at most
// dig significant digits (DBL_DIG 15 for double precision, FLT_DIG 6 for
// real), as printf writes them.
func (f *NumFormat) AppendFloat(buf []byte, v float64, dig int) ([]byte, error) {
	if f.desc.is(nfRoman) {
		r := math.RoundToEven(v)
		n := int64(math.MinInt32) // out of range: C's conversion gives INT_MIN
		if !math.IsNaN(r) && r >= math.MinInt32 && r <= math.MaxInt32 {
			n = int64(r)
		}
		return f.appendRoman(buf, n), nil
	}
	post := f.desc.post
	preLen := len(cFixed(math.Abs(v), 0))
	if preLen >= dig {
		post = 0
	} else if preLen+post > dig {
		post = dig - preLen
	}
	num := cFixed(v, post)
	sign := byte('+')
	if num[0] == '-' {
		sign, num = '-', num[1:]
	}
	preLen = len(num)
	if k := strings.IndexByte(num, '.'); k >= 0 {
		preLen = k
	}
	return f.finish(buf, num, preLen, sign, post)
}

// cFixed is printf("%.*f", prec, v) as PostgreSQL's own snprintf writes
// it (NaN, Infinity).
func cFixed(v float64, prec int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// AppendNumeric appends to_char(n, f) of a numeric held at scale: the
// value rounded half away from zero to the template's fraction digits.
func (f *NumFormat) AppendNumeric(buf []byte, n decimal128.Num, scale int32) ([]byte, error) {
	if f.desc.is(nfRoman) {
		// PostgreSQL 15: round to an integer, then numeric_int4.
		r := roundBig(n.BigInt(), int(scale))
		if !r.IsInt64() || r.Int64() < math.MinInt32 || r.Int64() > math.MaxInt32 {
			return buf, errIntRange(Int32)
		}
		return f.appendRoman(buf, r.Int64()), nil
	}
	post := f.desc.post
	v := n.BigInt()
	if s := int(scale); post < s {
		v = roundBig(v, s-post)
	} else if post > s {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(post-s)), nil))
	}
	sign := byte('+')
	if v.Sign() < 0 {
		sign = '-'
		v.Neg(v)
	}
	digits := v.String()
	if len(digits) <= post {
		digits = strings.Repeat("0", post-len(digits)+1) + digits
	}
	preLen := len(digits) - post
	num := digits
	if post > 0 {
		num = digits[:preLen] + "." + digits[preLen:]
	}
	return f.finish(buf, num, preLen, sign, post)
}

// roundBig rounds v (scale s) half away from zero to an integer.
func roundBig(v *big.Int, s int) *big.Int {
	if s <= 0 {
		return v
	}
	d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)
	q, m := new(big.Int).QuoRem(v, d, new(big.Int))
	if m.Abs(m).Lsh(m, 1).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(int64(v.Sign())))
	}
	return q
}

// finish pads or overflows the digit string num (preLen digits before
// its point) to the template, whose fraction digits are post here, and
// runs the template over it.
func (f *NumFormat) finish(buf []byte, num string, preLen int, sign byte, post int) ([]byte, error) {
	outPre := 0
	if preLen < f.desc.pre {
		outPre = f.desc.pre - preLen
	} else if preLen > f.desc.pre {
		num = f.overflowFill(post)
	}
	return f.toChar(buf, num, outPre, sign, post)
}

var (
	romanHundreds = [...]string{"C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"}
	romanTens     = [...]string{"X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"}
	romanOnes     = [...]string{"I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"}
)

// intToRoman is int_to_roman: 1..3999, else 15 '#'.
func intToRoman(n int64) string {
	if n < 1 || n > 3999 {
		return strings.Repeat("#", 15)
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("M", int(n/1000)))
	if h := n / 100 % 10; h > 0 {
		b.WriteString(romanHundreds[h-1])
	}
	if t := n / 10 % 10; t > 0 {
		b.WriteString(romanTens[t-1])
	}
	if o := n % 10; o > 0 {
		b.WriteString(romanOnes[o-1])
	}
	return b.String()
}

// appendRoman runs a template with RN: the other number patterns write
// nothing (or a blank), as PostgreSQL's "Roman correction" makes them.
func (f *NumFormat) appendRoman(buf []byte, n int64) []byte {
	start := len(buf)
	roman := intToRoman(n)
	fill := f.desc.is(nfFillMode)
	for _, nd := range f.nodes {
		switch nd.key {
		case nkLit:
			buf = append(buf, nd.lit...)
		case nkRN, nkRNLower:
			s := roman
			if nd.key == nkRNLower {
				s = strings.ToLower(s)
			}
			if !fill {
				buf = append(buf, strings.Repeat(" ", max(0, 15-len(s)))...)
			}
			buf = append(buf, s...)
		case nkComma, nkG, nkMI, nkPL:
			if !fill {
				buf = append(buf, ' ')
			}
		case nkSG:
			buf = append(buf, 0) // the sign is NUL: the C string ends here
		}
	}
	return cutNUL(buf, start)
}

// cutNUL ends the output at its first NUL byte, where PostgreSQL's C
// string ends.
func cutNUL(buf []byte, start int) []byte {
	for i := start; i < len(buf); i++ {
		if buf[i] == 0 {
			return buf[:i]
		}
	}
	return buf
}

// toChar is NUM_processor's to_char direction over the digit string num.
func (f *NumFormat) toChar(buf []byte, num string, outPre int, sign byte, post int) ([]byte, error) {
	start := len(buf)
	d := f.desc // a copy: the processor adjusts it
	d.post = post
	if d.zeroStart > 0 {
		d.zeroStart--
	}
	fill := d.is(nfFillMode)
	var signWrote bool
	if d.is(nfPlus) || d.is(nfMinus) {
		signWrote = !(d.is(nfPlus) && !d.is(nfMinus))
	} else {
		if sign != '-' && fill {
			d.flag &^= nfBracket
		}
		signWrote = sign == '+' && fill && !d.is(nfLSign)
		if d.lsign == lsignPre && d.pre == d.preLsignNum {
			d.lsign = lsignPost
		}
	}
	numCount := d.post + d.pre - 1
	lastRel := -1 // index in num of the last relevant fraction digit
	if fill && d.is(nfDecimal) {
		if p := strings.IndexByte(num, '.'); p >= 0 {
			lastRel = p
			for i := p + 1; i < len(num); i++ {
				if num[i] != '0' {
					lastRel = i
				}
			}
			if d.zeroEnd > outPre {
				lz := min(len(num)-1, d.zeroEnd-outPre)
				if lastRel < lz {
					lastRel = lz
				}
			}
		}
	}
	if !signWrote && outPre == 0 {
		numCount++
	}
	at := func(i int) byte {
		if i < len(num) {
			return num[i]
		}
		return 0
	}
	relIsDot := func() bool { return lastRel >= 0 && num[lastRel] == '.' }
	numIn := false
	numCurr, np := 0, 0
	predecSpace := func() bool {
		return !d.is(nfZero) && np == 0 && at(0) == '0' && d.post != 0
	}
	writeSign := func() {
		if sign == '-' {
			buf = append(buf, '-')
		} else {
			buf = append(buf, '+')
		}
	}
	numpart := func(k numKey) {
		numIn = false
		if !signWrote && (numCurr >= outPre || (d.is(nfZero) && d.zeroStart == numCurr)) &&
			(!predecSpace() || relIsDot()) {
			switch {
			case d.is(nfLSign):
				if d.lsign == lsignPre {
					writeSign()
					signWrote = true
				}
			case d.is(nfBracket):
				if sign == '+' {
					buf = append(buf, ' ')
				} else {
					buf = append(buf, '<')
				}
				signWrote = true
			case sign == '+':
				if !fill {
					buf = append(buf, ' ')
				}
				signWrote = true
			case sign == '-':
				buf = append(buf, '-')
				signWrote = true
			}
		}
		switch {
		case numCurr < outPre && (d.zeroStart > numCurr || !d.is(nfZero)):
			if !fill {
				buf = append(buf, ' ')
			}
		case d.is(nfZero) && numCurr < outPre && d.zeroStart <= numCurr:
			buf = append(buf, '0')
			numIn = true
		default:
			if at(np) == '.' {
				if !relIsDot() || fill {
					buf = append(buf, '.')
				}
			} else {
				switch {
				case lastRel >= 0 && np > lastRel && k != nk0:
				case predecSpace():
					if !fill {
						buf = append(buf, ' ')
					} else if relIsDot() {
						buf = append(buf, '0')
					}
				default:
					buf = append(buf, at(np))
					numIn = true
				}
			}
			if np < len(num) {
				np++
			}
		}
		end := numCount
		if outPre > 0 {
			end++
		}
		if d.is(nfDecimal) {
			end++
		}
		if lastRel >= 0 && lastRel == np {
			end = numCurr
		}
		if numCurr+1 == end {
			if signWrote && d.is(nfBracket) {
				if sign == '+' {
					buf = append(buf, ' ')
				} else {
					buf = append(buf, '>')
				}
			} else if d.is(nfLSign) && d.lsign == lsignPost {
				writeSign()
			}
		}
		numCurr++
	}
	for _, nd := range f.nodes {
		switch nd.key {
		case nkLit:
			buf = append(buf, nd.lit...)
		case nk9, nk0, nkDec, nkD:
			numpart(nd.key)
		case nkComma, nkG:
			if numIn {
				buf = append(buf, ',')
			} else if !fill {
				buf = append(buf, ' ')
			}
		case nkTH, nkTHLower:
			if num[0] == '#' || sign == '-' || d.is(nfDecimal) {
				continue
			}
			if c := num[len(num)-1]; c < '0' || c > '9' {
				return buf, sqlerr.New(sqlerr.InvalidTextRep, "%q is not a number", num)
			}
			buf = append(buf, ordinal([]byte(num), nd.key == nkTH)...)
		case nkMI:
			if sign == '-' {
				buf = append(buf, '-')
			} else if !fill {
				buf = append(buf, ' ')
			}
		case nkPL:
			if sign == '+' {
				buf = append(buf, '+')
			} else if !fill {
				buf = append(buf, ' ')
			}
		case nkSG:
			buf = append(buf, sign)
		}
	}
	return cutNUL(buf, start), nil
}

// ---- to_number ----

// ParseNumber is to_number(s, f): the number the template reads from s,
// as unconstrained NUMERIC (scale UnconstrainedScale) with its display
// scale, PostgreSQL 15's NUM_processor in its reading direction.
func (f *NumFormat) ParseNumber(s string) (Datum, error) {
	d := &f.desc
	if d.is(nfRoman) {
		return Null, sqlerr.New(sqlerr.FeatureNotSupported, `"RN" not supported for input`)
	}
	number := []byte{' '} // number[0] is the sign
	p := 0
	readPre, readPost, readDec := 0, 0, false
	over := func() bool { return p >= len(s) }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	eat := func(n int) { // NUM_eat_non_data_chars
		for ; n > 0 && !over(); n-- {
			if strings.IndexByte("0123456789.,+-", s[p]) >= 0 {
				return
			}
			_, w := utf8.DecodeRuneInString(s[p:])
			p += w
		}
	}
	numpart := func(k numKey) {
		if over() {
			return
		}
		if s[p] == ' ' {
			p++
		}
		if over() {
			return
		}
		if number[0] == ' ' && (k == nk0 || k == nk9) && readPre+readPost == 0 {
			if s[p] == '-' || (!d.is(nfLSign) && d.is(nfBracket) && s[p] == '<') {
				number[0] = '-'
				p++
			} else if s[p] == '+' {
				number[0] = '+'
				p++
			}
		}
		if over() {
			return
		}
		isread := false
		if isDigit(s[p]) {
			if readDec && readPost == d.post {
				return
			}
			number = append(number, s[p])
			if readDec {
				readPost++
			} else {
				readPre++
			}
			isread = true
		} else if d.is(nfDecimal) && !readDec && s[p] == '.' {
			number = append(number, '.')
			readDec, isread = true, true
		}
		if over() {
			return
		}
		if number[0] == ' ' && readPre+readPost > 0 {
			if d.is(nfLSign) && isread && p+1 < len(s) && !isDigit(s[p+1]) {
				if c := s[p+1]; c == '-' || c == '+' {
					p++
					number[0] = c
				}
			} else if !isread && !d.is(nfLSign) && (d.is(nfPlus) || d.is(nfMinus)) {
				if c := s[p]; c == '-' || c == '+' {
					number[0] = c
				}
			}
		}
	}
	fill := d.is(nfFillMode)
	for _, nd := range f.nodes {
		if over() {
			break
		}
		switch nd.key {
		case nkLit:
			_, w := utf8.DecodeRuneInString(s[p:])
			p += w
			continue
		case nk9, nk0, nkDec, nkD:
			numpart(nd.key)
		case nkComma, nkG:
			if fill || s[p] != ',' {
				continue
			}
		case nkTH, nkTHLower:
			if d.is(nfDecimal) {
				continue
			}
			eat(2)
			continue
		case nkMI, nkPL, nkSG:
			c := s[p]
			switch {
			case c == '-' && nd.key != nkPL, c == '+' && nd.key != nkMI:
				number[0] = c
			default:
				eat(1)
				continue
			}
		default:
			continue
		}
		p++
	}
	if number[len(number)-1] == '.' {
		number = number[:len(number)-1]
	}
	str := string(number)
	if len(strings.TrimLeft(str, " +-")) == 0 {
		return Null, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type numeric: %q", str)
	}
	// numeric_in with typmod (pre + post, post): more integer digits than
	// the template has positions overflow.
	intDigits := strings.TrimLeft(str[1:], "0")
	if k := strings.IndexByte(intDigits, '.'); k >= 0 {
		intDigits = intDigits[:k]
	}
	if len(intDigits) > d.pre {
		return Null, sqlerr.New(sqlerr.NumericOutOfRange, "numeric field overflow")
	}
	if readPost > UnconstrainedScale {
		return Null, sqlerr.New(sqlerr.FeatureNotSupported,
			"to_number with more than %d fraction digits is not supported", UnconstrainedScale)
	}
	n, err := NumericFromString(str, UnconstrainedScale)
	if err != nil {
		return Null, err
	}
	return WithDScale(Datum{D: n}, int32(readPost)), nil
}
