package types

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamdb/streamdb/sqlerr"
)

// Binary I/O in PostgreSQL's send/recv formats (all big-endian):
//
//	boolean     1 byte, 0 or 1
//	int2/4/8    2/4/8 bytes
//	float4/8    IEEE 754, 4/8 bytes
//	numeric     int16 ndigits, int16 weight, uint16 sign, int16 dscale, ndigits × int16 base-10000 digits
//	text        the bytes
//	timestamp   int64 microseconds since 2000-01-01 00:00:00
//	date        int32 days since 2000-01-01
//	interval    int64 microseconds, int32 days, int32 months
//	json        the text
//	jsonb       a version byte (1), then the text
//	uuid        the 16 bytes
//	bytea       the bytes
//	time        int64 microseconds since midnight
//	timetz      int64 microseconds since midnight, int32 zone in seconds west of UTC

// pgEpochDays is 2000-01-01, PostgreSQL's epoch, in days since 1970-01-01.
const pgEpochDays = 10957

const pgEpochMicros = pgEpochDays * usPerDay

// numeric sign words
const (
	numericPos = 0x0000
	numericNeg = 0x4000
	numericNaN = 0xC000
)

// AppendBinary appends d's PostgreSQL binary (send) representation. d must not be NULL.
func AppendBinary(buf []byte, d Datum, t T) []byte {
	switch t.Kind {
	case Bool:
		if d.I != 0 {
			return append(buf, 1)
		}
		return append(buf, 0)
	case Int16:
		return binary.BigEndian.AppendUint16(buf, uint16(d.I))
	case Int32:
		return binary.BigEndian.AppendUint32(buf, uint32(d.I))
	case Int64, Time:
		return binary.BigEndian.AppendUint64(buf, uint64(d.I))
	case TimeTZ:
		us, west := UnpackTimeTZ(d.I)
		buf = binary.BigEndian.AppendUint64(buf, uint64(us))
		return binary.BigEndian.AppendUint32(buf, uint32(int32(west)))
	case Float32:
		if d.F != d.F { // PostgreSQL's NaN: the quiet NaN with no payload
			return binary.BigEndian.AppendUint32(buf, 0x7fc00000)
		}
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(d.F)))
	case Float64:
		if d.F != d.F {
			return binary.BigEndian.AppendUint64(buf, 0x7ff8000000000000)
		}
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(d.F))
	case Numeric:
		return appendNumericBinary(buf, d, t)
	case Timestamp:
		v := d.I
		if !isInfiniteTS(v) {
			v -= pgEpochMicros
		}
		return binary.BigEndian.AppendUint64(buf, uint64(v))
	case Date:
		v := d.I
		switch {
		case v >= DateInfinity:
			v = math.MaxInt32
		case v <= DateNegInfinity:
			v = math.MinInt32
		default:
			v -= pgEpochDays
		}
		return binary.BigEndian.AppendUint32(buf, uint32(int32(v)))
	case Interval:
		buf = binary.BigEndian.AppendUint64(buf, uint64(d.IV.Nanoseconds/1000))
		buf = binary.BigEndian.AppendUint32(buf, uint32(d.IV.Days))
		return binary.BigEndian.AppendUint32(buf, uint32(d.IV.Months))
	case TextArray:
		if t.Prec != 0 {
			return appendElemArrayBinary(buf, d.A, t)
		}
		return appendTextArrayBinary(buf, d.A)
	case Record:
		return appendRecordBinary(buf, d, t)
	case UUID:
		return appendUUIDBinary(buf, d.S)
	case JSONB:
		return AppendJSONBOut(append(buf, 1), d.S) // jsonb_send: version 1, then the text
	case Text:
		if t.Pad { // bpcharsend is textsend of the padded value
			return AppendPadded(buf, d.S, t)
		}
	}
	return append(buf, d.S...)
}

// appendNumericBinary writes numeric_send's layout. The display scale is
// t.Scale for NUMERIC(p,s) and the value's own (DScaleOf) for unconstrained
// NUMERIC, matching AppendText.
func appendNumericBinary(buf []byte, d Datum, t T) []byte {
	scale := t.Scale
	n := d.D
	dscale := max(scale, 0)
	if t.Prec == 0 {
		// A display scale past the storage scale sends the digits held
		// (the rest are zeros) with the larger dscale.
		dscale = DScaleOf(d, t)
		if dscale < scale {
			n, _ = Rescale(n, scale, dscale)
			scale = dscale
		}
	}
	m, neg := magOf(n)
	sign := uint16(numericPos)
	if neg {
		sign = numericNeg
	}
	if m.isZero() {
		buf = binary.BigEndian.AppendUint16(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, numericPos)
		return binary.BigEndian.AppendUint16(buf, uint16(dscale))
	}
	// Lay the decimal digits out so the point falls on a 4-digit boundary.
	var tmp [96]byte
	digits := appendDigits(tmp[:0], m)
	if scale < 0 {
		for i := int32(0); i < -scale; i++ {
			digits = append(digits, '0')
		}
		scale = 0
	}
	for len(digits) < int(scale)+1 { // at least one integer digit
		digits = append([]byte{'0'}, digits...)
	}
	for (len(digits)-int(scale))%4 != 0 {
		digits = append([]byte{'0'}, digits...)
	}
	for int(scale)%4 != 0 {
		digits = append(digits, '0')
		scale++
	}
	var groups [24]uint16
	ng := len(digits) / 4
	for g := 0; g < ng; g++ {
		v := uint16(0)
		for _, c := range digits[4*g : 4*g+4] {
			v = v*10 + uint16(c-'0')
		}
		groups[g] = v
	}
	weight := (len(digits)-int(scale))/4 - 1
	first, last := 0, ng
	for first < last && groups[first] == 0 {
		first++
		weight--
	}
	for last > first && groups[last-1] == 0 {
		last--
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(last-first))
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(weight)))
	buf = binary.BigEndian.AppendUint16(buf, sign)
	buf = binary.BigEndian.AppendUint16(buf, uint16(dscale))
	for _, g := range groups[first:last] {
		buf = binary.BigEndian.AppendUint16(buf, g)
	}
	return buf
}

func errBinary(t T) error {
	return sqlerr.New("22P03", "incorrect binary data format for type %s", t)
}

// ParseBinary decodes PostgreSQL's binary (recv) representation of a value of type t.
func ParseBinary(b []byte, t T) (Datum, error) {
	want := -1
	switch t.Kind {
	case Bool:
		want = 1
	case Int16:
		want = 2
	case Int32, Float32, Date:
		want = 4
	case Int64, Float64, Timestamp, Time:
		want = 8
	case TimeTZ:
		want = 12
	case Interval:
		want = 16
	}
	if want >= 0 && len(b) != want {
		return Null, errBinary(t)
	}
	switch t.Kind {
	case Bool:
		return Boolean(b[0] != 0), nil
	case Int16:
		return Int(int64(int16(binary.BigEndian.Uint16(b)))), nil
	case Int32:
		return Int(int64(int32(binary.BigEndian.Uint32(b)))), nil
	case Int64:
		return Int(int64(binary.BigEndian.Uint64(b))), nil
	case TimeTZ:
		return parseTimeTZBinary(int64(binary.BigEndian.Uint64(b)), int64(int32(binary.BigEndian.Uint32(b[8:]))))
	case Time: // time_recv checks the range
		v := int64(binary.BigEndian.Uint64(b))
		if v < 0 || v > usPerDayTime {
			return Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "time out of range")
		}
		return Int(v), nil
	case Float32:
		return Float(float64(math.Float32frombits(binary.BigEndian.Uint32(b)))), nil
	case Float64:
		return Float(math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case Numeric:
		return parseNumericBinary(b, t)
	case Timestamp:
		v := int64(binary.BigEndian.Uint64(b))
		if isInfiniteTS(v) {
			return Int(v), nil
		}
		if v > math.MaxInt64-pgEpochMicros-1 {
			return Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range")
		}
		return Int(v + pgEpochMicros), nil
	case Date:
		v := int64(int32(binary.BigEndian.Uint32(b)))
		switch v {
		case math.MaxInt32:
			return Int(DateInfinity), nil
		case math.MinInt32:
			return Int(DateNegInfinity), nil
		}
		return Int(v + pgEpochDays), nil
	case Interval:
		usec := int64(binary.BigEndian.Uint64(b))
		if usec > math.MaxInt64/1000 || usec < math.MinInt64/1000 {
			return Null, errIntervalRange()
		}
		return Datum{IV: arrow.MonthDayNanoInterval{
			Nanoseconds: usec * 1000,
			Days:        int32(binary.BigEndian.Uint32(b[8:])),
			Months:      int32(binary.BigEndian.Uint32(b[12:])),
		}}, nil
	}
	if t.Kind == TextArray {
		return parseTextArrayBinary(b, t)
	}
	if t.Kind == Record {
		return Null, errRecordInput()
	}
	if t.Kind == UUID {
		return parseUUIDBinary(b)
	}
	if t.Kind == Bytea {
		return Str(string(b)), nil
	}
	if t.Kind == JSONB {
		if len(b) == 0 || b[0] != 1 {
			return Null, sqlerr.New("22P03", "unsupported jsonb version number %d", int(append(b, 0)[0]))
		}
		b = b[1:]
	}
	if err := CheckText(b); err != nil {
		return Null, err
	}
	if t.Kind == JSON || t.Kind == JSONB {
		return parseJSONDatum(string(b), t)
	}
	if err := CheckText(b); err != nil {
		return Null, err
	}
	s, err := fitVarchar(string(b), t, false)
	return Str(s), err
}

func parseNumericBinary(b []byte, t T) (Datum, error) {
	if len(b) < 8 {
		return Null, errBinary(t)
	}
	ndigits := int(int16(binary.BigEndian.Uint16(b)))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	if ndigits < 0 || len(b) != 8+2*ndigits {
		return Null, errBinary(t)
	}
	switch sign {
	case numericPos, numericNeg:
	case numericNaN:
		return Null, sqlerr.New(sqlerr.FeatureNotSupported, "numeric NaN is not supported")
	default:
		return Null, sqlerr.New("22P03", "invalid sign in external \"numeric\" value")
	}
	if ds := int32(int16(binary.BigEndian.Uint16(b[6:]))); t.Prec == 0 && ds > t.Scale {
		// More places than unconstrained numeric holds: 22003, never
		// rounded, as text input (parseNumeric).
		text := "numeric value"
		if ds <= MaxNumericPrecision {
			if d, err := parseNumericBinary(b, T{Kind: Numeric, Prec: MaxNumericPrecision, Scale: ds}); err == nil {
				text = NumericString(d.D, ds)
			}
		}
		return Null, ErrNumericDigits(text, ds, t.Scale)
	}
	// Accumulate digit × 10000^(weight-i) at t.Scale, rounding the first dropped digit.
	var m u128
	roundUp := false
	for i := 0; i < ndigits; i++ {
		dg := binary.BigEndian.Uint16(b[8+2*i:])
		if dg >= 10000 {
			return Null, sqlerr.New("22P03", "invalid digit in external \"numeric\" value")
		}
		// Decimal digits of this group sit at exponents 4(weight-i)+3 … 4(weight-i).
		for k := 3; k >= 0; k-- {
			c := uint64(dg/[4]uint16{1, 10, 100, 1000}[k]) % 10
			pos := 4*(weight-i) + k // decimal exponent of this digit
			switch {
			case pos >= -int(t.Scale):
				var of bool
				if m, of = m.mulAdd(10, c); of || !m.less(maxMag) {
					return Null, errNumericOverflow()
				}
			case pos == -int(t.Scale)-1:
				roundUp = c >= 5
			}
		}
	}
	// Digits below the last group down to the target scale are zeros.
	lowest := 4 * (weight - ndigits + 1)
	if ndigits == 0 {
		lowest = 0
	}
	if shift := lowest + int(t.Scale); shift > 0 && !m.isZero() {
		var ok bool
		if m, ok = m.mulPow10(shift); !ok {
			return Null, errNumericOverflow()
		}
	}
	if roundUp {
		m, _ = m.mulAdd(1, 1)
	}
	n := numOf(m, sign == numericNeg)
	if err := NumericFit(n, t); err != nil {
		return Null, err
	}
	if ds := int32(int16(binary.BigEndian.Uint16(b[6:]))); t.Prec == 0 && ds >= 0 && ds <= t.Scale {
		return Datum{D: n, DS: PackDScale(ds)}, nil
	}
	return Datum{D: n}, nil
}
