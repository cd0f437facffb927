package types

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone names resolve on hosts without /usr/share/zoneinfo
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamdb/streamdb/sqlerr"
)

// Text I/O: PostgreSQL's input syntax (typinput) and output format
// (typoutput, DateStyle ISO, IntervalStyle postgres, extra_float_digits 1).
//
// Deviations: unconstrained NUMERIC is stored at scale 16, so its output
// trims trailing fraction zeros instead of keeping the input's own scale
// (PostgreSQL prints 1.50::numeric as 1.50, streamdb as 1.5). Intervals hold
// whole microseconds, as PostgreSQL's do. 'now', 'today' and friends are not
// accepted as timestamp input. A zone after a date/time (an offset, UTC,
// a tz database region) is applied for timestamp with time zone and
// ignored for timestamp without, as PostgreSQL does; zone abbreviations
// (CET, PST) are refused (zoneOffset).

// Special timestamp and date values, with PostgreSQL's representation of
// infinity (the extremes of the stored integer).
const (
	TimestampInfinity    = math.MaxInt64
	TimestampNegInfinity = math.MinInt64
	DateInfinity         = math.MaxInt32
	DateNegInfinity      = math.MinInt32
)

// ParseText parses s in PostgreSQL's input syntax for t. Unknown yields
// the text itself.
func ParseText(s string, t T) (Datum, error) {
	switch t.Kind {
	case Bool:
		b, ok := parseBool(s)
		if !ok {
			return Null, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type boolean: %s", quote(s))
		}
		return Boolean(b), nil
	case Int16, Int32, Int64:
		v, err := parseInt(s, t)
		return Int(v), err
	case Float32, Float64:
		f, err := parseFloat(s, t)
		return Float(f), err
	case Numeric:
		n, err := parseNumeric(s, t)
		if t.Prec == 0 && err == nil {
			if ds, ok := TextDScale(s); ok { // at most t.Scale (parseNumeric)
				return Datum{D: n, DS: PackDScale(ds)}, nil
			}
		}
		return Datum{D: n}, err
	case Text:
		v, err := fitVarchar(s, t, false)
		return Str(v), err
	case Timestamp:
		v, err := parseTimestamp(s, t)
		return Int(v), err
	case Date:
		v, err := parseDate(s)
		return Int(v), err
	case Interval:
		iv, err := parseInterval(s)
		return Datum{IV: iv}, err
	case TextArray:
		a, err := ParseTextArray(s)
		if err != nil || t.Prec == 0 {
			return Datum{A: a}, err
		}
		return checkArrayElems(a, t)
	case Record:
		return parseRecordText(s, t)
	case JSON, JSONB:
		return parseJSONDatum(s, t)
	case UUID:
		return parseUUID(s)
	case Bytea:
		return parseBytea(s)
	case Time:
		v, err := parseTime(s)
		return Int(v), err
	case TimeTZ:
		return parseTimeTZ(s)
	}
	return Str(s), nil
}

// ParseTextBytes is ParseText of b's text. For the types whose values
// never keep their input (booleans, numbers, dates and times, intervals,
// jsonb) it reads b in place, with no string made of it: b must not change
// while the call runs, and may change after it. Other types copy b.
func ParseTextBytes(b []byte, t T) (Datum, error) {
	switch t.Kind {
	case JSONB:
		p := jsonbParsers.Get().(*JSONBParser)
		e, err := p.Append(p.res[:0], b)
		d := Null
		if err == nil {
			d = Str(string(e))
		}
		p.keep(e)
		jsonbParsers.Put(p)
		return d, err
	case Bool, Int16, Int32, Int64, Float32, Float64, Numeric, Timestamp, Date, Time, TimeTZ, Interval:
		if len(b) > 0 {
			return ParseText(unsafe.String(&b[0], len(b)), t)
		}
	}
	return ParseText(string(b), t)
}

// AppendText appends d's PostgreSQL text output. d must not be NULL.
func AppendText(buf []byte, d Datum, t T) []byte {
	switch t.Kind {
	case Bool:
		if d.I != 0 {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case Int16, Int32, Int64:
		return strconv.AppendInt(buf, d.I, 10)
	case Float32:
		return appendFloat(buf, d.F, 32)
	case Float64:
		return appendFloat(buf, d.F, 64)
	case Numeric:
		if t.Prec > 0 {
			return AppendNumeric(buf, d.D, t.Scale)
		}
		return AppendNumericDS(buf, d.D, t.Scale, DScaleOf(d, t))
	case Timestamp:
		return appendTimestamp(buf, d.I, t.TZ)
	case Date:
		return appendDate(buf, d.I)
	case Interval:
		return appendInterval(buf, d.IV)
	case TextArray:
		return AppendTextArray(buf, d.A)
	case Record:
		return appendRecordText(buf, d, t)
	case Bytea:
		return appendByteaHex(buf, d.S)
	case Time:
		return appendTime(buf, d.I)
	case JSONB:
		return AppendJSONBOut(buf, d.S)
	case TimeTZ:
		return appendTimeTZ(buf, d.I)
	case Text:
		if t.Pad {
			return AppendPadded(buf, d.S, t)
		}
	}
	return append(buf, d.S...)
}

// AppendPadded appends s, a CHARACTER(n) value as stored (without
// trailing spaces), blank-padded to n characters: its output form.
func AppendPadded(buf []byte, s string, t T) []byte {
	buf = append(buf, s...)
	k := len(s)
	if k < int(t.Prec) {
		k = utf8.RuneCountInString(s)
	}
	for ; k < int(t.Prec); k++ {
		buf = append(buf, ' ')
	}
	return buf
}

// TextOf returns d's PostgreSQL text output.
func TextOf(d Datum, t T) string {
	if t.Kind == Text && !t.Pad || t.Kind == Unknown || t.Kind == JSON || t.Kind == UUID {
		return d.S
	}
	var tmp [64]byte
	return string(AppendText(tmp[:0], d, t))
}

func quote(s string) string { return "\"" + s + "\"" }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

func eqFoldASCII(a, b string) bool { return len(a) == len(b) && strings.EqualFold(a, b) }

// parseBool accepts PostgreSQL's boolean spellings: any unambiguous prefix
// of true/false/yes/no, on/off (two letters at least), 1/0.
func parseBool(s string) (bool, bool) {
	v := strings.ToLower(trimSpace(s))
	if v == "" {
		return false, false
	}
	prefixOf := func(word string, minLen int) bool {
		return len(v) >= minLen && len(v) <= len(word) && word[:len(v)] == v
	}
	switch {
	case prefixOf("true", 1), prefixOf("yes", 1), prefixOf("on", 2), v == "1":
		return true, true
	case prefixOf("false", 1), prefixOf("no", 1), prefixOf("off", 2), v == "0":
		return false, true
	}
	return false, false
}

// intRange returns the bounds of an integer kind.
func intRange(k Kind) (lo, hi int64) {
	switch k {
	case Int16:
		return math.MinInt16, math.MaxInt16
	case Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func parseInt(s string, t T) (int64, error) {
	v := trimSpace(s)
	i := 0
	neg := false
	if i < len(v) && (v[i] == '+' || v[i] == '-') {
		neg = v[i] == '-'
		i++
	}
	if i == len(v) {
		return 0, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type %s: %s", t, quote(s))
	}
	var mag uint64
	overflow := false
	for ; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type %s: %s", t, quote(s))
		}
		if mag > (math.MaxUint64-9)/10 {
			overflow = true
			continue
		}
		mag = mag*10 + uint64(c-'0')
	}
	lo, hi := intRange(t.Kind)
	var r int64
	switch {
	case overflow:
	case neg && mag <= uint64(-(lo+1))+1:
		r = -int64(mag-1) - 1
	case !neg && mag <= uint64(hi):
		r = int64(mag)
	default:
		overflow = true
	}
	if overflow || r < lo || r > hi {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, "value %s is out of range for type %s", quote(s), t)
	}
	return r, nil
}

func parseFloat(s string, t T) (float64, error) {
	v := trimSpace(s)
	bitSize := 64
	if t.Kind == Float32 {
		bitSize = 32
	}
	f, err := strconv.ParseFloat(v, bitSize)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, sqlerr.New(sqlerr.NumericOutOfRange, "%s is out of range for type %s", quote(s), t)
		}
		return 0, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type %s: %s", t, quote(s))
	}
	if strings.IndexByte(v, '_') >= 0 { // Go-only syntax: digit separators
		return 0, sqlerr.New(sqlerr.InvalidTextRep, "invalid input syntax for type %s: %s", t, quote(s))
	}
	if f == 0 && hasNonZeroMantissa(v) {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, "%s is out of range for type %s", quote(s), t)
	}
	return f, nil
}

// hasNonZeroMantissa reports whether a decimal float literal has a nonzero digit before its exponent.
func hasNonZeroMantissa(v string) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

func parseFloatBytes(b []byte) (float64, error) { return strconv.ParseFloat(string(b), 64) }

// appendFloat prints f as PostgreSQL 12+ does by default: the shortest
// digits that round-trip, in fixed notation when the decimal exponent is in
// [-4, 15) for double (and [-4, 6) for real), else as d.ddde+XX.
func appendFloat(buf []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(buf, "-0"...)
		}
		return append(buf, '0')
	}
	var tmp [32]byte
	e := shortestFloat(tmp[:0], f, bitSize)
	if f < 0 {
		buf = append(buf, '-')
		e = e[1:]
	}
	// e is d[.ddd]e±XX; split it into digits and the decimal exponent.
	var digits [24]byte
	nd := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[nd] = e[i]
			nd++
		}
	}
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	d := digits[:nd]
	hiExp := 15
	if bitSize == 32 {
		hiExp = 6
	}
	switch {
	case exp < -4 || exp >= hiExp:
		return append(buf, e...)
	case exp < 0:
		buf = append(buf, '0', '.')
		for j := -1; j > exp; j-- {
			buf = append(buf, '0')
		}
		return append(buf, d...)
	case nd <= exp+1:
		buf = append(buf, d...)
		for j := nd; j <= exp; j++ {
			buf = append(buf, '0')
		}
		return buf
	}
	buf = append(buf, d[:exp+1]...)
	buf = append(buf, '.')
	return append(buf, d[exp+1:]...)
}

// shortestFloat appends f in Go's shortest 'e' form, except that, like
// PostgreSQL's Ryu (built without STRICTLY_SHORTEST), it never picks a
// decimal lying exactly halfway between f and a neighbour: it then takes
// the shortest correctly rounded form strictly inside the interval.
func shortestFloat(buf []byte, f float64, bitSize int) []byte {
	e := strconv.AppendFloat(buf, f, 'e', -1, bitSize)
	// Halfway points have a short decimal form only when the float's
	// spacing is at least 1/2 (see the package tests), i.e. for large magnitudes.
	limit := float64(1 << 51)
	if bitSize == 32 {
		limit = 1 << 21
	}
	if math.Abs(f) < limit || !isFloatTie(e, f, bitSize) {
		return e
	}
	maxDigits := 17
	if bitSize == 32 {
		maxDigits = 9
	}
	for p := countDigits(e) + 1; p <= maxDigits; p++ {
		c := strconv.AppendFloat(buf[:0], f, 'e', p-1, bitSize)
		if back, err := strconv.ParseFloat(string(c), bitSize); err == nil && back == f && !isFloatTie(c, f, bitSize) {
			return c
		}
	}
	return strconv.AppendFloat(buf[:0], f, 'e', maxDigits-1, bitSize)
}

func countDigits(e []byte) int {
	n := 0
	for _, c := range e {
		if c == 'e' {
			break
		}
		if c >= '0' && c <= '9' {
			n++
		}
	}
	return n
}

// isFloatTie reports whether the decimal s is exactly the midpoint between
// f and one of its neighbours at the given precision.
func isFloatTie(s []byte, f float64, bitSize int) bool {
	dec, ok := new(big.Rat).SetString(string(s))
	if !ok {
		return false
	}
	for _, dir := range []float64{math.Inf(1), math.Inf(-1)} {
		var next float64
		if bitSize == 32 {
			next = float64(math.Nextafter32(float32(f), float32(dir)))
		} else {
			next = math.Nextafter(f, dir)
		}
		if math.IsInf(next, 0) {
			continue
		}
		mid := new(big.Rat).SetFloat64(f)
		mid.Add(mid, new(big.Rat).SetFloat64(next))
		mid.Quo(mid, big.NewRat(2, 1))
		if mid.Cmp(dec) == 0 {
			return true
		}
	}
	return false
}

// fitVarchar applies VARCHAR(n)'s length limit. Input (and assignment)
// rejects longer values unless the excess is all spaces; an explicit cast
// truncates. CHARACTER(n) (t.Pad) keeps its values without trailing
// spaces (they are padding, restored on output).
func fitVarchar(s string, t T, explicit bool) (string, error) {
	if t.Pad {
		s = strings.TrimRight(s, " ")
	}
	if t.Prec <= 0 || len(s) <= int(t.Prec) {
		return s, nil
	}
	n := 0
	for i := range s {
		if n == int(t.Prec) {
			if explicit || strings.TrimLeft(s[i:], " ") == "" {
				if t.Pad {
					return strings.TrimRight(s[:i], " "), nil
				}
				return s[:i], nil
			}
			return "", sqlerr.New(sqlerr.StringDataRightTrunc, "value too long for type %s", t)
		}
		n++
	}
	return s, nil
}

// --- timestamps and dates ---

const (
	usPerSec  = 1000000
	usPerMin  = 60 * usPerSec
	usPerHour = 60 * usPerMin
	usPerDay  = 24 * usPerHour
)

// dtScanner reads the ISO date/time forms PostgreSQL accepts.
type dtScanner struct {
	s string
	i int
}

func (p *dtScanner) digits(maxLen int) (int64, int, bool) {
	start := p.i
	var v int64
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' && p.i-start < maxLen {
		v = v*10 + int64(p.s[p.i]-'0')
		p.i++
	}
	return v, p.i - start, p.i > start
}

func (p *dtScanner) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *dtScanner) spaces() bool {
	start := p.i
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
	return p.i > start
}

// dtZone is the time zone a date/time input names: a numeric offset
// (+02, -05:30, +0530, Z) or a name (UTC, Europe/Paris), which
// zoneOffset resolves at the local time it qualifies.
type dtZone struct {
	set  bool
	off  int64  // seconds east of UTC, when name is ""
	name string // as written
}

// zone reads the zone after a date/time, if any; BC and AD are no zones.
func (p *dtScanner) zone() (z dtZone, e dtErr) {
	if p.i >= len(p.s) {
		return z, dtOK
	}
	switch c := p.s[p.i]; {
	case c == '+' || c == '-':
		p.i++
		v, n, ok := p.digits(4)
		if !ok {
			return z, dtSyntax
		}
		h, m, sec := v, int64(0), int64(0)
		if n > 2 {
			h, m = v/100, v%100
		}
		if p.eat(':') {
			if n > 2 {
				return z, dtSyntax
			}
			m, _, _ = p.digits(2) // +02: is +02, as in PostgreSQL
			if p.eat(':') {
				if sec, _, ok = p.digits(2); !ok {
					return z, dtSyntax
				}
			}
		}
		if h > 15 || m > 59 || sec > 59 {
			return z, dtZoneRange
		}
		z.set, z.off = true, h*3600+m*60+sec
		if c == '-' {
			z.off = -z.off
		}
		return z, dtOK
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := p.i
		for p.i < len(p.s) && !isSpace(p.s[p.i]) {
			p.i++
		}
		word := p.s[start:p.i]
		if l := strings.ToLower(word); l == "bc" || l == "ad" {
			p.i = start // the era, read by the caller
			return z, dtOK
		}
		z.set, z.name = true, word
		return z, dtOK
	}
	return z, dtOK
}

type dtErr uint8

const (
	dtOK dtErr = iota
	dtSyntax
	dtRange
	dtZoneRange // a numeric offset past 15:59:59
)

// parseDateTime parses 'Y-M-D[( |T)H:M[:S[.frac]]][ zone][ BC|AD]' into days
// since 1970-01-01 and microseconds into the day, and the zone written, if
// any (timestamptz applies it, timestamp and date ignore it).
func parseDateTime(s string) (days, usec int64, z dtZone, e dtErr) {
	if days, usec, ok := plainDateTime(s); ok {
		return days, usec, z, dtOK
	}
	return scanDateTime(s)
}

// scanDateTime is parseDateTime for every form it reads.
func scanDateTime(s string) (days, usec int64, z dtZone, e dtErr) {
	p := dtScanner{s: trimSpace(s)}
	year, n, ok := p.digits(9)
	var month, day int64
	if ok && n == 8 && (p.i == len(p.s) || p.s[p.i] == ' ' || p.s[p.i] == 'T' || p.s[p.i] == 't') {
		// YYYYMMDD, as PostgreSQL reads eight digits alone.
		year, month, day = year/10000, year/100%100, year%100
	} else {
		if !ok || n < 1 || !p.eat('-') {
			return 0, 0, z, dtSyntax
		}
		if month, _, ok = p.digits(2); !ok || !p.eat('-') {
			return 0, 0, z, dtSyntax
		}
		if day, _, ok = p.digits(2); !ok {
			return 0, 0, z, dtSyntax
		}
	}
	var hour, min, sec, fsec int64
	sep := p.eat('T') || p.eat('t')
	sp := p.spaces()
	if p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		if !sep && !sp {
			return 0, 0, z, dtSyntax
		}
		hour, _, _ = p.digits(2)
		if !p.eat(':') {
			return 0, 0, z, dtSyntax
		}
		if min, _, ok = p.digits(2); !ok {
			return 0, 0, z, dtSyntax
		}
		if p.eat(':') {
			if sec, _, ok = p.digits(2); !ok {
				return 0, 0, z, dtSyntax
			}
			if p.eat('.') {
				start := p.i
				for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
					p.i++
				}
				if p.i > start {
					// PostgreSQL reads the fraction as a double and rounds to even.
					frac, _ := strconv.ParseFloat("0."+p.s[start:p.i], 64)
					fsec = int64(math.RoundToEven(frac * usPerSec))
				}
			}
		}
	} else if sep {
		return 0, 0, z, dtSyntax
	}
	p.spaces()
	if z, e = p.zone(); e != dtOK {
		return 0, 0, z, e
	}
	p.spaces()
	bc := false
	if rest := p.s[p.i:]; rest != "" {
		switch strings.ToLower(rest) {
		case "bc":
			bc = true
		case "ad":
		default:
			return 0, 0, z, dtSyntax
		}
	}
	if year == 0 || month < 1 || month > 12 || day < 1 || day > int64(daysIn(yearOf(year, bc), int(month))) {
		return 0, 0, z, dtRange
	}
	if hour > 24 || min > 59 || sec > 60 || (hour == 24 && (min > 0 || sec > 0 || fsec > 0)) {
		return 0, 0, z, dtRange
	}
	days = daysFromCivil(yearOf(year, bc), int(month), int(day))
	usec = hour*usPerHour + min*usPerMin + sec*usPerSec + fsec
	return days, usec, z, dtOK
}

// plainDateTime reads the form dates and timestamps are usually written
// in, YYYY-MM-DD or YYYY-MM-DD HH:MM:SS[.ffffff] with no zone, as
// parseDateTime would (a 1-6 digit fraction read as a double and rounded
// is its digits as an integer), with none of its scanning; ok is false for
// anything else, a year before 1 or a field out of its usual range, which
// parseDateTime then reads.
func plainDateTime(s string) (days, usec int64, ok bool) {
	n := len(s)
	if n != 10 && (n < 19 || n == 20 || n > 26) || s[4] != '-' || s[7] != '-' {
		return 0, 0, false
	}
	d2 := func(i int) int64 {
		a, b := s[i]-'0', s[i+1]-'0'
		if a > 9 || b > 9 {
			return -1
		}
		return int64(a)*10 + int64(b)
	}
	hi, lo, month, day := d2(0), d2(2), d2(5), d2(8)
	if hi < 0 || lo < 0 || month < 1 || month > 12 || day < 1 {
		return 0, 0, false
	}
	year := hi*100 + lo
	if year == 0 || day > int64(daysIn(year, int(month))) {
		return 0, 0, false
	}
	days = daysFromCivil(year, int(month), int(day))
	if n == 10 {
		return days, 0, true
	}
	hour, min, sec := d2(11), d2(14), d2(17)
	if s[10] != ' ' || s[13] != ':' || s[16] != ':' || hour < 0 || hour > 23 || min < 0 || min > 59 || sec < 0 || sec > 59 {
		return 0, 0, false
	}
	usec = hour*usPerHour + min*usPerMin + sec*usPerSec
	if n > 19 {
		if s[19] != '.' {
			return 0, 0, false
		}
		var f int64
		for i := 20; i < 26; i++ {
			f *= 10
			if i < n {
				c := s[i] - '0'
				if c > 9 {
					return 0, 0, false
				}
				f += int64(c)
			}
		}
		usec += f
	}
	return days, usec, true
}

// yearOf maps a year as written (with its era) to the astronomical year (1 BC is 0).
func yearOf(y int64, bc bool) int64 {
	if bc {
		return 1 - y
	}
	return y
}

func specialDateTime(s string) (int8, bool) {
	v := trimSpace(s)
	if v == "" || v[0] >= '0' && v[0] <= '9' { // a date: no word to lower-case
		return 0, false
	}
	switch strings.ToLower(v) {
	case "infinity", "+infinity":
		return 1, true
	case "-infinity":
		return -1, true
	case "epoch":
		return 0, true
	}
	return 0, false
}

func dtError(e dtErr, s, typ string) error {
	switch e {
	case dtRange:
		return sqlerr.New(sqlerr.DatetimeFieldOverflow, "date/time field value out of range: %s", quote(s))
	case dtZoneRange:
		return sqlerr.New("22009", "time zone displacement out of range: %s", quote(s))
	}
	return sqlerr.New(sqlerr.InvalidDatetimeFormat, "invalid input syntax for type %s: %s", typ, quote(s))
}

// parseTimestamp parses timestamp input; for timestamptz (t.TZ) the zone
// written is applied (none: the session's, UTC), for timestamp it is
// ignored, as PostgreSQL does.
func parseTimestamp(s string, t T) (int64, error) {
	if sp, ok := specialDateTime(s); ok {
		switch sp {
		case 1:
			return TimestampInfinity, nil
		case -1:
			return TimestampNegInfinity, nil
		}
		return 0, nil
	}
	typ := "timestamp"
	if t.TZ {
		typ = "timestamp with time zone"
	}
	days, usec, z, e := parseDateTime(s)
	if e != dtOK {
		return 0, dtError(e, s, typ)
	}
	if days > math.MaxInt64/usPerDay-1 || days < math.MinInt64/usPerDay+1 {
		return 0, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range: %s", quote(s))
	}
	off, err := zoneOffset(z, days, usec, s, typ)
	if err != nil || !t.TZ {
		return days*usPerDay + usec, err
	}
	return days*usPerDay + usec - off*usPerSec, nil
}

func parseDate(s string) (int64, error) {
	if sp, ok := specialDateTime(s); ok {
		switch sp {
		case 1:
			return DateInfinity, nil
		case -1:
			return DateNegInfinity, nil
		}
		return 0, nil
	}
	days, usec, z, e := parseDateTime(s)
	if e != dtOK {
		return 0, dtError(e, s, "date")
	}
	if _, err := zoneOffset(z, days, usec, s, "date"); err != nil {
		return 0, err
	}
	return days, nil
}

func append0(buf []byte, v int64, width int) []byte {
	var tmp [20]byte
	d := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(d); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, d...)
}

func appendYMD(buf []byte, days int64) ([]byte, bool) {
	y, m, d := civilFromDays(days)
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	buf = append0(buf, y, 4)
	buf = append(buf, '-')
	buf = append0(buf, int64(m), 2)
	buf = append(buf, '-')
	buf = append0(buf, int64(d), 2)
	return buf, bc
}

func appendDate(buf []byte, days int64) []byte {
	switch {
	case days >= DateInfinity:
		return append(buf, "infinity"...)
	case days <= DateNegInfinity:
		return append(buf, "-infinity"...)
	}
	buf, bc := appendYMD(buf, days)
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

// appendTimestamp formats ts; tz adds timestamptz's offset, +00 (the
// session's TimeZone is UTC).
func appendTimestamp(buf []byte, ts int64, tz bool) []byte {
	switch ts {
	case TimestampInfinity:
		return append(buf, "infinity"...)
	case TimestampNegInfinity:
		return append(buf, "-infinity"...)
	}
	days := floorDiv64(ts, usPerDay)
	t := ts - days*usPerDay
	buf, bc := appendYMD(buf, days)
	buf = append(buf, ' ')
	buf = append0(buf, t/usPerHour, 2)
	buf = append(buf, ':')
	buf = append0(buf, t/usPerMin%60, 2)
	buf = append(buf, ':')
	buf = appendSecFrac(buf, t/usPerSec%60, t%usPerSec)
	if tz {
		buf = append(buf, "+00"...)
	}
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

// appendSecFrac appends SS and, when fsec (microseconds) is nonzero, the
// fraction with trailing zeros trimmed.
func appendSecFrac(buf []byte, sec, fsec int64) []byte {
	buf = append0(buf, sec, 2)
	if fsec == 0 {
		return buf
	}
	buf = append(buf, '.')
	width := 6
	for fsec%10 == 0 {
		fsec /= 10
		width--
	}
	return append0(buf, fsec, width)
}

// --- intervals ---

func appendInterval(buf []byte, iv arrow.MonthDayNanoInterval) []byte {
	year := int64(iv.Months / 12)
	mon := int64(iv.Months % 12)
	day := int64(iv.Days)
	usec := iv.Nanoseconds / 1000
	isZero, isBefore := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !isZero {
			buf = append(buf, ' ')
		}
		if isBefore && v > 0 {
			buf = append(buf, '+')
		}
		buf = strconv.AppendInt(buf, v, 10)
		buf = append(buf, ' ')
		buf = append(buf, unit...)
		if v != 1 {
			buf = append(buf, 's')
		}
		isBefore = v < 0
		isZero = false
	}
	part(year, "year")
	part(mon, "mon")
	part(day, "day")
	if isZero || usec != 0 {
		if !isZero {
			buf = append(buf, ' ')
		}
		switch {
		case usec < 0:
			buf = append(buf, '-')
		case isBefore:
			buf = append(buf, '+')
		}
		a := uint64(usec)
		if usec < 0 {
			a = -a
		}
		buf = append0(buf, int64(a/usPerHour), 2)
		buf = append(buf, ':')
		buf = append0(buf, int64(a/usPerMin%60), 2)
		buf = append(buf, ':')
		buf = appendSecFrac(buf, int64(a/usPerSec%60), int64(a%usPerSec))
	}
	return buf
}

// interval units, as PostgreSQL's DecodeUnits knows them (tokens are
// lower-cased and cut to 10 characters before lookup).
type dtUnit uint8

const (
	unitNone dtUnit = iota
	unitMicrosecond
	unitMillisecond
	unitSecond
	unitMinute
	unitHour
	unitDay
	unitWeek
	unitMonth
	unitQuarter
	unitYear
	unitDecade
	unitCentury
	unitMillennium
	// fields only extract/date_trunc know
	unitEpoch
	unitDow
	unitIsodow
	unitDoy
	unitIsoyear
	unitJulian
	unitTimezone
	unitTimezoneHour
	unitTimezoneMinute
	unitAgo
	unitIgnore
)

var unitNames = map[string]dtUnit{
	"@": unitIgnore, "ago": unitAgo,
	"c": unitCentury, "cent": unitCentury, "centuries": unitCentury, "century": unitCentury,
	"d": unitDay, "day": unitDay, "days": unitDay,
	"dec": unitDecade, "decade": unitDecade, "decades": unitDecade, "decs": unitDecade,
	"h": unitHour, "hour": unitHour, "hours": unitHour, "hr": unitHour, "hrs": unitHour,
	"m": unitMinute, "min": unitMinute, "mins": unitMinute, "minute": unitMinute, "minutes": unitMinute,
	"microsecon": unitMicrosecond, "us": unitMicrosecond, "usec": unitMicrosecond,
	"usecs": unitMicrosecond, "useconds": unitMicrosecond,
	"mil": unitMillennium, "millennia": unitMillennium, "millennium": unitMillennium, "mils": unitMillennium,
	"millisecon": unitMillisecond, "ms": unitMillisecond, "msec": unitMillisecond,
	"msecs": unitMillisecond, "mseconds": unitMillisecond,
	"mon": unitMonth, "mons": unitMonth, "month": unitMonth, "months": unitMonth,
	"qtr": unitQuarter, "quarter": unitQuarter,
	"s": unitSecond, "sec": unitSecond, "second": unitSecond, "seconds": unitSecond, "secs": unitSecond,
	"w": unitWeek, "week": unitWeek, "weeks": unitWeek,
	"y": unitYear, "year": unitYear, "years": unitYear, "yr": unitYear, "yrs": unitYear,
	"timezone": unitTimezone, "timezone_h": unitTimezoneHour, "timezone_m": unitTimezoneMinute,
}

// fieldNames are the extract fields that are not interval units.
var fieldNames = map[string]dtUnit{
	"epoch": unitEpoch, "dow": unitDow, "isodow": unitIsodow, "doy": unitDoy,
	"isoyear": unitIsoyear, "julian": unitJulian, "j": unitJulian, "jd": unitJulian,
}

// lookupUnit finds a unit name the way PostgreSQL does.
func lookupUnit(s string) (dtUnit, bool) {
	l := strings.ToLower(s)
	if len(l) > 10 {
		l = l[:10]
	}
	u, ok := unitNames[l]
	return u, ok
}

// interval field masks, to reject a field given twice ("1 day 1 day").
const (
	fmMicro uint32 = 1 << iota
	fmMilli
	fmSecond
	fmMinute
	fmHour
	fmDay
	fmWeek
	fmMonth
	fmQuarter
	fmYear
	fmDecade
	fmCentury
	fmMillennium
	fmAllSecs = fmMicro | fmMilli | fmSecond
	fmTime    = fmAllSecs | fmMinute | fmHour
)

// ivAcc accumulates an interval being parsed.
type ivAcc struct {
	months, days, usec int64
}

// addFracUsec is PostgreSQL's AdjustFractMicroseconds.
func (a *ivAcc) addFracUsec(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	frac *= float64(scale)
	us := int64(frac)
	a.usec += us + int64(math.RoundToEven(frac-float64(us)))
}

// addFracDays is PostgreSQL's AdjustFractDays.
func (a *ivAcc) addFracDays(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	frac *= float64(scale)
	d := int64(frac)
	a.days += d
	a.addFracUsec(frac-float64(d), usPerDay)
}

// add applies val+fval of unit u, returning the field mask it sets.
func (a *ivAcc) add(u dtUnit, val int64, fval float64) (uint32, bool) {
	switch u {
	case unitMicrosecond:
		a.usec += val
		a.addFracUsec(fval, 1)
		return fmMicro, true
	case unitMillisecond:
		a.usec += val * 1000
		a.addFracUsec(fval, 1000)
		return fmMilli, true
	case unitSecond:
		a.usec += val * usPerSec
		a.addFracUsec(fval, usPerSec)
		if fval != 0 {
			return fmAllSecs, true
		}
		return fmSecond, true
	case unitMinute:
		a.usec += val * usPerMin
		a.addFracUsec(fval, usPerMin)
		return fmMinute, true
	case unitHour:
		a.usec += val * usPerHour
		a.addFracUsec(fval, usPerHour)
		return fmHour, true
	case unitDay:
		a.days += val
		a.addFracUsec(fval, usPerDay)
		return fmDay, true
	case unitWeek:
		a.days += val * 7
		a.addFracDays(fval, 7)
		return fmWeek, true
	case unitMonth:
		a.months += val
		a.addFracDays(fval, 30)
		return fmMonth, true
	case unitYear:
		a.months += val*12 + int64(math.RoundToEven(fval*12))
		return fmYear, true
	case unitDecade:
		a.months += val*120 + int64(math.RoundToEven(fval*120))
		return fmDecade, true
	case unitCentury:
		a.months += val*1200 + int64(math.RoundToEven(fval*1200))
		return fmCentury, true
	case unitMillennium:
		a.months += val*12000 + int64(math.RoundToEven(fval*12000))
		return fmMillennium, true
	}
	return 0, false
}

func (a *ivAcc) result() (arrow.MonthDayNanoInterval, bool) {
	if a.months != int64(int32(a.months)) || a.days != int64(int32(a.days)) ||
		a.usec > math.MaxInt64/1000 || a.usec < math.MinInt64/1000 {
		return arrow.MonthDayNanoInterval{}, false
	}
	return arrow.MonthDayNanoInterval{Months: int32(a.months), Days: int32(a.days), Nanoseconds: a.usec * 1000}, true
}

// splitNumber splits a signed decimal number into its integer part and
// fraction (with the number's sign), as PostgreSQL's DecodeInterval does.
func splitNumber(tok string) (int64, float64, bool) {
	neg := tok != "" && tok[0] == '-'
	body := tok
	if tok != "" && (tok[0] == '-' || tok[0] == '+') {
		body = tok[1:]
	}
	intPart, frac := body, ""
	if dot := strings.IndexByte(body, '.'); dot >= 0 {
		intPart, frac = body[:dot], body[dot:]
	}
	if intPart == "" && (frac == "" || frac == ".") {
		return 0, 0, false
	}
	var v int64
	if intPart != "" {
		u, err := strconv.ParseUint(intPart, 10, 63)
		if err != nil {
			return 0, 0, false
		}
		v = int64(u)
	}
	var f float64
	if len(frac) > 1 {
		var err error
		if f, err = strconv.ParseFloat("0"+frac, 64); err != nil {
			return 0, 0, false
		}
	}
	if neg {
		v, f = -v, -f
	}
	return v, f, true
}

// parseIntervalTime reads [h]h:mm[:ss[.frac]] or mm:ss.frac into microseconds.
func parseIntervalTime(tok string) (int64, bool) {
	parts := strings.Split(tok, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	if len(parts) == 2 && strings.IndexByte(parts[1], '.') >= 0 {
		parts = []string{"0", parts[0], parts[1]}
	}
	h, err1 := strconv.ParseUint(parts[0], 10, 40)
	m, err2 := strconv.ParseUint(parts[1], 10, 8)
	if err1 != nil || err2 != nil || m > 59 {
		return 0, false
	}
	var usec int64
	if len(parts) == 3 {
		sec, frac, ok := splitNumber(parts[2])
		if !ok || sec < 0 || sec > 60 || strings.HasPrefix(parts[2], "+") {
			return 0, false
		}
		usec = sec*usPerSec + int64(math.RoundToEven(frac*usPerSec))
	}
	return int64(h)*usPerHour + int64(m)*usPerMin + usec, true
}

// tokenizeInterval splits on spaces and between a number and the unit that follows it ("10s").
func tokenizeInterval(s string) []string {
	var toks []string
	for _, f := range strings.Fields(s) {
		for f != "" {
			if f[0] == '@' {
				toks = append(toks, "@")
				f = f[1:]
				continue
			}
			i := 0
			if f[0] == '+' || f[0] == '-' {
				i++
			}
			numeric := i < len(f) && (f[i] >= '0' && f[i] <= '9' || f[i] == '.')
			for i < len(f) {
				c := f[i]
				isNum := c >= '0' && c <= '9' || c == '.' || c == ':'
				if isNum != numeric {
					break
				}
				i++
			}
			if i == 0 {
				i = len(f)
			}
			toks = append(toks, f[:i])
			f = f[i:]
		}
	}
	return toks
}

func errInterval(s string) error {
	return sqlerr.New(sqlerr.InvalidDatetimeFormat, "invalid input syntax for type interval: %s", quote(s))
}

func errIntervalRange() error {
	return sqlerr.New(sqlerr.DatetimeFieldOverflow, "interval out of range")
}

// parseInterval implements PostgreSQL's interval input for the postgres
// style ('1 year 2 mons 3 days 04:05:06', '5 minutes', '-1 hours', '@ 1
// hour ago', '10s') and ISO 8601 designators ('P1Y2M3DT4H5M6S').
func parseInterval(s string) (arrow.MonthDayNanoInterval, error) {
	v := trimSpace(s)
	if len(v) > 1 && (v[0] == 'P' || v[0] == 'p') {
		return parseISOInterval(s, v[1:])
	}
	toks := tokenizeInterval(v)
	if len(toks) == 0 {
		return arrow.MonthDayNanoInterval{}, errInterval(s)
	}
	var acc ivAcc
	var fmask uint32
	ago := false
	unit := unitNone
	// Like PostgreSQL, read right to left so a unit applies to the number before it.
	for i := len(toks) - 1; i >= 0; i-- {
		tok := toks[i]
		c := tok[0]
		switch {
		case strings.IndexByte(tok, ':') >= 0:
			body := tok
			if c == '+' || c == '-' {
				body = tok[1:]
			}
			us, ok := parseIntervalTime(body)
			if !ok {
				return arrow.MonthDayNanoInterval{}, errInterval(s)
			}
			if fmask&fmTime != 0 {
				return arrow.MonthDayNanoInterval{}, errInterval(s)
			}
			fmask |= fmTime
			if c == '-' {
				us = -us
			}
			acc.usec += us
			unit = unitDay // '1 02:03' is one day and a time
		case c >= '0' && c <= '9' || c == '.' || c == '+' || c == '-':
			val, fval, ok := splitNumber(tok)
			if !ok {
				return arrow.MonthDayNanoInterval{}, errInterval(s)
			}
			if unit == unitNone {
				unit = unitSecond
			}
			m, ok := acc.add(unit, val, fval)
			if !ok || fmask&m != 0 {
				return arrow.MonthDayNanoInterval{}, errInterval(s)
			}
			fmask |= m
		default:
			u, ok := lookupUnit(tok)
			switch {
			case !ok:
				return arrow.MonthDayNanoInterval{}, errInterval(s)
			case u == unitAgo:
				ago = true
			case u == unitIgnore:
			default:
				unit = u
			}
		}
	}
	if fmask == 0 {
		return arrow.MonthDayNanoInterval{}, errInterval(s)
	}
	if ago {
		acc.months, acc.days, acc.usec = -acc.months, -acc.days, -acc.usec
	}
	iv, ok := acc.result()
	if !ok {
		return iv, errIntervalRange()
	}
	return iv, nil
}

// parseISOInterval reads the part after 'P' of an ISO 8601 duration.
func parseISOInterval(s, v string) (arrow.MonthDayNanoInterval, error) {
	var acc ivAcc
	inTime := false
	seen := false
	for v != "" {
		if v[0] == 'T' || v[0] == 't' {
			if inTime {
				return arrow.MonthDayNanoInterval{}, errInterval(s)
			}
			inTime = true
			v = v[1:]
			continue
		}
		i := 0
		for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.' || v[i] == '-' || v[i] == '+') {
			i++
		}
		if i == 0 || i == len(v) {
			return arrow.MonthDayNanoInterval{}, errInterval(s)
		}
		val, fval, ok := splitNumber(v[:i])
		if !ok {
			return arrow.MonthDayNanoInterval{}, errInterval(s)
		}
		var u dtUnit
		switch d := v[i] | 0x20; {
		case !inTime && d == 'y':
			u = unitYear
		case !inTime && d == 'm':
			u = unitMonth
		case !inTime && d == 'w':
			u = unitWeek
		case !inTime && d == 'd':
			u = unitDay
		case inTime && d == 'h':
			u = unitHour
		case inTime && d == 'm':
			u = unitMinute
		case inTime && d == 's':
			u = unitSecond
		default:
			return arrow.MonthDayNanoInterval{}, errInterval(s)
		}
		acc.add(u, val, fval)
		seen = true
		v = v[i+1:]
	}
	if !seen {
		return arrow.MonthDayNanoInterval{}, errInterval(s)
	}
	iv, ok := acc.result()
	if !ok {
		return iv, errIntervalRange()
	}
	return iv, nil
}

// zoneOffset returns the offset in seconds east of UTC of the zone z at
// the local date and time it qualifies (days, usec): a numeric offset as
// written; UTC, GMT, Z and their kin 0; a region name of the tz database
// (Europe/Paris, matched without regard to case, as PostgreSQL does) its
// offset then, daylight saving included. A region PostgreSQL does not know
// either is 22023, as there; an abbreviation (CET, PST) is refused with
// 22007, since PostgreSQL's abbreviations are fixed offsets that differ
// from the tz database's zones of the same name.
func zoneOffset(z dtZone, days, usec int64, s, typ string) (int64, error) {
	if !z.set || z.name == "" {
		return z.off, nil
	}
	switch strings.ToLower(z.name) {
	case "z", "utc", "gmt", "ut", "uct", "zulu", "etc/utc", "etc/gmt", "etc/uct", "etc/zulu", "universal", "etc/universal":
		return 0, nil
	}
	if !strings.Contains(z.name, "/") {
		return 0, &sqlerr.Error{Code: sqlerr.InvalidDatetimeFormat,
			Msg:    fmt.Sprintf("invalid input syntax for type %s: %s", typ, quote(s)),
			Detail: fmt.Sprintf("The time zone abbreviation %q is not supported.", z.name),
			Hint:   "Write a numeric offset (+02, -05:30) or a region name (Europe/Paris)."}
	}
	loc, ok := loadZone(z.name)
	if !ok {
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "time zone %q not recognized", strings.ToLower(z.name))
	}
	// The local time as if it were UTC, and the offsets in effect a day
	// before and after it: around a transition, one or both (or neither)
	// of them turn it into an instant whose offset is that offset.
	local := days*86400 + usec/usPerSec
	at := func(unix int64) int64 { _, off := time.Unix(unix, 0).In(loc).Zone(); return int64(off) }
	before, after := at(local-86400), at(local+86400)
	okBefore, okAfter := at(local-before) == before, at(local-after) == after
	switch {
	case okBefore && okAfter:
		// Ambiguous (a fall-back transition): PostgreSQL takes the later
		// offset's reading, as does a single offset.
		return after, nil
	case okAfter:
		return after, nil
	}
	// Valid before only, or a nonexistent local time (a spring-forward
	// gap), which PostgreSQL reads with the offset before the transition.
	return before, nil
}

// zones caches loadZone's locations by name as written.
var zones sync.Map

// loadZone finds a tz database zone by name, as written or in the
// database's capitalization (europe/paris is Europe/Paris).
func loadZone(name string) (*time.Location, bool) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), true
	}
	name = strings.Clone(name) // kept by the cache and the location: never the caller's bytes (ParseTextBytes)
	b := []byte(strings.ToLower(name))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '/' || c == '_' || c == '-'
	}
	canon := strings.NewReplacer("Gmt", "GMT", "Utc", "UTC", "Uct", "UCT").Replace(string(b))
	for _, n := range []string{name, canon} {
		if loc, err := time.LoadLocation(n); err == nil {
			zones.Store(name, loc)
			return loc, true
		}
	}
	return nil, false
}
