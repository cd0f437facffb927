package types

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
)

// Casts between streamdb's types, following PostgreSQL's pg_cast: numbers
// convert among themselves (with rounding and range checks), every type
// converts to and from text by its I/O functions, timestamp and date
// convert to each other, and boolean converts only to and from integer.

// CanCast reports whether PostgreSQL allows an explicit cast from from to to.
func CanCast(from, to T) bool {
	if from.Kind == JSON || from.Kind == JSONB || to.Kind == JSON || to.Kind == JSONB {
		return canCastJSON(from, to)
	}
	switch {
	case from.Kind == to.Kind,
		from.Kind == Unknown, from.Kind == Text, to.Kind == Text,
		from.IsNumeric() && to.IsNumeric():
		return true
	}
	switch from.Kind {
	case Timestamp:
		return to.Kind == Date || to.Kind == Time || to.Kind == TimeTZ && from.TZ
	case Time:
		return to.Kind == Interval || to.Kind == TimeTZ
	case TimeTZ:
		return to.Kind == Time
	case Interval:
		return to.Kind == Time
	case Date:
		return to.Kind == Timestamp
	case Bool:
		return to.Kind == Int32
	case Int32:
		return to.Kind == Bool
	}
	return false
}

// CastDatum converts d from type from to type to as an explicit cast
// (x::to) does. The one difference from AssignDatum: an over-long string
// cast to VARCHAR(n) is truncated, as in PostgreSQL.
func CastDatum(d Datum, from, to T) (Datum, error) { return castDatum(d, from, to, true) }

// AssignDatum converts d for storage in a column of type to, as
// PostgreSQL's assignment casts (INSERT, UPDATE) do: like CastDatum, but an
// over-long string for VARCHAR(n) fails with 22001.
func AssignDatum(d Datum, from, to T) (Datum, error) { return castDatum(d, from, to, false) }

func errCannotCast(from, to T) error {
	return sqlerr.New("42846", "cannot cast type %s to %s", from, to)
}

func errIntRange(k Kind) error {
	name := "bigint"
	switch k {
	case Int16:
		name = "smallint"
	case Int32:
		name = "integer"
	}
	return sqlerr.New(sqlerr.NumericOutOfRange, "%s out of range", name)
}

func checkIntRange(v int64, k Kind) (Datum, error) {
	lo, hi := intRange(k)
	if v < lo || v > hi {
		return Null, errIntRange(k)
	}
	return Int(v), nil
}

func castDatum(d Datum, from, to T, explicit bool) (Datum, error) {
	if d.Null {
		return Null, nil
	}
	if (from.Kind == JSON || from.Kind == JSONB || to.Kind == JSON || to.Kind == JSONB) && from != to {
		return castJSON(d, from, to, explicit)
	}
	if from.Kind == Record && to.Kind == Record && from != to {
		return castRecord(d, from, to, explicit)
	}
	if to.Kind == Text {
		s := d.S
		switch from.Kind {
		case Text, Unknown:
		case Bool: // booltext spells the words out, unlike boolout
			s = "false"
			if d.I != 0 {
				s = "true"
			}
		default:
			s = TextOf(d, from)
		}
		s, err := fitVarchar(s, to, explicit)
		return Str(s), err
	}
	if from.Kind == Text || from.Kind == Unknown {
		return ParseText(d.S, to)
	}
	switch {
	case from.IsInteger():
		r, err := castFromInt(d.I, from, to)
		if to.Kind == Numeric && to.Prec == 0 && err == nil {
			r.DS = PackDScale(0)
		}
		return r, err
	case from.IsFloat():
		return castFromFloat(d.F, from, to)
	case from.Kind == Numeric:
		r, err := castFromNumeric(d.D, from, to)
		if to.Kind == Numeric && to.Prec == 0 && err == nil {
			r.DS = PackDScale(min(DScaleOf(d, from), to.Scale))
		}
		return r, err
	}
	switch {
	case from.Kind == TextArray && to.Kind == TextArray && to.Prec != from.Prec && to.Prec != 0:
		return checkArrayElems(d.A, to) // text[] to int2[]
	case from.Kind == to.Kind:
		return d, nil
	case from.Kind == Bool && to.Kind == Int32:
		return Int(d.I), nil
	case from.Kind == Timestamp && to.Kind == Date:
		switch d.I {
		case TimestampInfinity:
			return Int(DateInfinity), nil
		case TimestampNegInfinity:
			return Int(DateNegInfinity), nil
		}
		return Int(floorDiv64(d.I, usPerDay)), nil
	case from.Kind == Timestamp && to.Kind == Time:
		if isInfiniteTS(d.I) {
			return Null, nil // timestamp_time: an infinite timestamp has no time
		}
		return Int(d.I - floorDiv64(d.I, usPerDay)*usPerDay), nil
	case from.Kind == Timestamp && to.Kind == TimeTZ: // timestamptz_timetz at the session's zone, UTC
		if isInfiniteTS(d.I) {
			return Null, nil
		}
		return Int(PackTimeTZ(d.I-floorDiv64(d.I, usPerDay)*usPerDay, 0)), nil
	case from.Kind == Time && to.Kind == TimeTZ: // time_timetz: the session's zone, UTC
		return Int(PackTimeTZ(d.I, 0)), nil
	case from.Kind == TimeTZ && to.Kind == Time: // timetz_time: the local time, its zone dropped
		us, _ := UnpackTimeTZ(d.I)
		return Int(us), nil
	case from.Kind == Time && to.Kind == Interval:
		return Datum{IV: arrow.MonthDayNanoInterval{Nanoseconds: d.I * 1000}}, nil
	case from.Kind == Interval && to.Kind == Time: // the time part, modulo a day
		us := d.IV.Nanoseconds / 1000 % usPerDay
		if us < 0 {
			us += usPerDay
		}
		return Int(us), nil
	case from.Kind == Date && to.Kind == Timestamp:
		switch {
		case d.I >= DateInfinity:
			return Int(TimestampInfinity), nil
		case d.I <= DateNegInfinity:
			return Int(TimestampNegInfinity), nil
		case d.I > math.MaxInt64/usPerDay-1 || d.I < math.MinInt64/usPerDay+1:
			return Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range for timestamp")
		}
		return Int(d.I * usPerDay), nil
	}
	return Null, errCannotCast(from, to)
}

func castFromInt(v int64, from, to T) (Datum, error) {
	switch to.Kind {
	case Int16, Int32, Int64:
		return checkIntRange(v, to.Kind)
	case Float32:
		return Float(float64(float32(v))), nil
	case Float64:
		return Float(float64(v)), nil
	case Numeric:
		n, err := numericFromScaled(decimal128.FromI64(v), 0, to)
		return Datum{D: n}, err
	case Bool:
		if from.Kind == Int32 {
			return Boolean(v != 0), nil
		}
	}
	return Null, errCannotCast(from, to)
}

func castFromFloat(f float64, from, to T) (Datum, error) {
	switch to.Kind {
	case Int16, Int32, Int64:
		r := math.RoundToEven(f) // rint
		lo, hi := intRange(to.Kind)
		// hi+1 is a power of two, so it is exact as a float64.
		if math.IsNaN(r) || r < float64(lo) || r >= float64(hi)+1 {
			return Null, errIntRange(to.Kind)
		}
		return Int(int64(r)), nil
	case Float32:
		if from.Kind == Float32 || math.IsNaN(f) || math.IsInf(f, 0) {
			return Float(f), nil
		}
		r := float32(f)
		if math.IsInf(float64(r), 0) {
			return Null, sqlerr.New(sqlerr.NumericOutOfRange, "value out of range: overflow")
		}
		if r == 0 && f != 0 {
			return Null, sqlerr.New(sqlerr.NumericOutOfRange, "value out of range: underflow")
		}
		return Float(float64(r)), nil
	case Float64:
		return Float(f), nil
	case Numeric:
		if math.IsNaN(f) {
			return Null, sqlerr.New(sqlerr.FeatureNotSupported, "numeric NaN is not supported")
		}
		if math.IsInf(f, 0) {
			return Null, sqlerr.New(sqlerr.FeatureNotSupported, "cannot convert infinity to numeric")
		}
		// PostgreSQL goes through the text form with DBL_DIG (FLT_DIG for real) digits.
		var tmp [32]byte
		var s []byte
		if from.Kind == Float32 {
			s = strconv.AppendFloat(tmp[:0], f, 'g', 6, 32)
		} else {
			s = strconv.AppendFloat(tmp[:0], f, 'g', 15, 64)
		}
		n, err := parseNumeric(string(s), to) // 22003 past an unconstrained scale
		return Datum{D: n}, err
	}
	return Null, errCannotCast(from, to)
}

func castFromNumeric(n decimal128.Num, from, to T) (Datum, error) {
	switch to.Kind {
	case Int16, Int32, Int64:
		r, _ := Rescale(n, from.Scale, 0) // rounds half away from zero; cannot overflow
		if !fitsInt64(r) {
			return Null, errIntRange(to.Kind)
		}
		return checkIntRange(int64(r.LowBits()), to.Kind)
	case Float32:
		var tmp [48]byte
		f, _ := strconv.ParseFloat(string(AppendNumeric(tmp[:0], n, from.Scale)), 32)
		return Float(f), nil
	case Float64:
		return Float(numericToFloat(n, from.Scale)), nil
	case Numeric:
		r, err := numericFromScaled(n, from.Scale, to)
		return Datum{D: r}, err
	}
	return Null, errCannotCast(from, to)
}

// fitsInt64 reports whether the 128-bit n is within int64.
func fitsInt64(n decimal128.Num) bool {
	lo := n.LowBits()
	if int64(lo) < 0 {
		return n.HighBits() == -1
	}
	return n.HighBits() == 0
}

// CommonType is the type two values are converted to when they meet in a
// UNION, CASE, IN list or comparison, following PostgreSQL's resolution:
// numbers promote along smallint < integer < bigint < numeric < real <
// double precision; an untyped literal takes the other side's type (two
// untyped become text); date and timestamp meet as timestamp. Type
// modifiers survive only when both sides agree. ok is false when the types
// do not mix.
func CommonType(a, b T) (T, bool) {
	switch {
	case a.Kind == Unknown && b.Kind == Unknown:
		return TText, true
	case a.Kind == Unknown:
		return b, true
	case b.Kind == Unknown:
		return a, true
	case a == b:
		return a, true
	case a.Kind == TextArray && b.Kind == TextArray && ArrayElem(a).Kind == Numeric && ArrayElem(b).Kind == Numeric:
		// numeric(p,s)[] and numeric[]: numeric[], as arrays have no typmod.
		return ArrayExprOf(T{Kind: Numeric, Scale: max(a.Scale, b.Scale)}), true
	}
	if a.IsNumeric() && b.IsNumeric() {
		w := a
		if numericRank(b.Kind) > numericRank(a.Kind) {
			w = b
		}
		if w.Kind == Numeric {
			return TNumeric, true
		}
		return T{Kind: w.Kind}, true
	}
	switch {
	case a.Kind == Text && b.Kind == Text:
		return TText, true
	case (a.Kind == Date || a.Kind == Timestamp) && (b.Kind == Date || b.Kind == Timestamp):
		if a.TZ || b.TZ {
			return TTimestampTZ, true // PostgreSQL prefers timestamptz
		}
		return TTimestamp, true
	case a.Kind == Time && b.Kind == TimeTZ || a.Kind == TimeTZ && b.Kind == Time:
		return TTimeTZ, true // time casts implicitly to timetz
	}
	return T{}, false
}

func numericRank(k Kind) int {
	switch k {
	case Int16:
		return 1
	case Int32:
		return 2
	case Int64:
		return 3
	case Numeric:
		return 4
	case Float32:
		return 5
	case Float64:
		return 6
	}
	return 0
}

// ErrNumericDigits is the error of a cast to unconstrained numeric of
// text, or of a floating-point value whose PostgreSQL digits (text: DBL_DIG
// or FLT_DIG significant digits), with ds decimal places, past the st the
// numeric is held at. PostgreSQL keeps them; rounding at st would lose them silently
// (docs/decisions/2026-12-07-numeric-avg-distinct-float-digits-window-casts.md).
func ErrNumericDigits(text string, ds, st int32) error {
	err := sqlerr.New(sqlerr.NumericOutOfRange, "%s cast to numeric needs %d decimal places, more than the %d numeric holds", text, ds, st)
	if ds <= MaxNumericPrecision {
		err.Hint = fmt.Sprintf("Cast to numeric(38,%d) to keep every digit.", ds)
	}
	return err
}
