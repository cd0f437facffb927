package types

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
)

// Calendar arithmetic on the proleptic Gregorian calendar, which is what
// PostgreSQL uses. Years are astronomical (1 BC is year 0).

// daysFromCivil returns days since 1970-01-01 (H. Hinnant's algorithm).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv64(y, 400)
	yoe := y - era*400
	mp := int64(m + 9)
	if m > 2 {
		mp = int64(m - 3)
	}
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv64(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func floorDiv64(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// dow returns the day of the week of a day number, 0 = Sunday.
func dow(days int64) int64 { return days + 4 - floorDiv64(days+4, 7)*7 }

// isoWeek returns the ISO 8601 year and week of a day number.
func isoWeek(days int64) (year, week int64) {
	isodow := (dow(days)+6)%7 + 1
	thursday := days - isodow + 4
	y, _, _ := civilFromDays(thursday)
	return y, (thursday-daysFromCivil(y, 1, 1))/7 + 1
}

func isInfiniteTS(ts int64) bool { return ts == TimestampInfinity || ts == TimestampNegInfinity }

// IntervalMicros is the interval's length with PostgreSQL's comparison
// rules (a month is 30 days, a day 24 hours), in microseconds. It can
// overflow for intervals beyond about ±290,000 years.
func IntervalMicros(iv arrow.MonthDayNanoInterval) int64 {
	return (int64(iv.Months)*30+int64(iv.Days))*usPerDay + iv.Nanoseconds/1000
}

// AddInterval returns ts + iv as PostgreSQL's timestamp + interval does:
// months first on the calendar (clamping the day to the month's last day),
// then days, then the time part. Infinite timestamps are returned unchanged.
func AddInterval(ts int64, iv arrow.MonthDayNanoInterval) int64 {
	if isInfiniteTS(ts) {
		return ts
	}
	if iv.Months != 0 {
		days := floorDiv64(ts, usPerDay)
		tod := ts - days*usPerDay
		y, m, d := civilFromDays(days)
		mi := y*12 + int64(m-1) + int64(iv.Months)
		y, m = floorDiv64(mi, 12), int(mi-floorDiv64(mi, 12)*12)+1
		d = min(d, daysIn(y, m))
		ts = daysFromCivil(y, m, d)*usPerDay + tod
	}
	return ts + int64(iv.Days)*usPerDay + iv.Nanoseconds/1000
}

// SubTimestamps returns a - b as PostgreSQL's timestamp - timestamp does:
// whole 24-hour periods become days, the rest time, both with one sign.
func SubTimestamps(a, b int64) arrow.MonthDayNanoInterval {
	d := a - b
	days := d / usPerDay // truncation, like PostgreSQL's TMODULO
	usec := d - days*usPerDay
	return arrow.MonthDayNanoInterval{Days: int32(days), Nanoseconds: usec * 1000}
}

func errUnitNotRecognized(unit string, t T) error {
	return sqlerr.New(sqlerr.InvalidParameterValue, "unit %s not recognized for type %s", quote(strings.ToLower(unit)), t)
}

func errUnitNotSupported(unit string, t T) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "unit %s not supported for type %s", quote(strings.ToLower(unit)), t)
}

// DateTrunc is date_trunc(unit, timestamp) on microseconds since 1970.
func DateTrunc(unit string, ts int64) (int64, error) {
	u, ok := lookupUnit(unit)
	if !ok || u == unitAgo || u == unitIgnore {
		return 0, errUnitNotRecognized(unit, TTimestamp)
	}
	if isInfiniteTS(ts) {
		if u >= unitTimezone {
			return 0, errUnitNotSupported(unit, TTimestamp)
		}
		return ts, nil
	}
	days := floorDiv64(ts, usPerDay)
	tod := ts - days*usPerDay
	switch u {
	case unitMicrosecond:
		return ts, nil
	case unitMillisecond:
		return days*usPerDay + tod/1000*1000, nil
	case unitSecond:
		return days*usPerDay + tod/usPerSec*usPerSec, nil
	case unitMinute:
		return days*usPerDay + tod/usPerMin*usPerMin, nil
	case unitHour:
		return days*usPerDay + tod/usPerHour*usPerHour, nil
	case unitDay:
		return days * usPerDay, nil
	case unitWeek:
		return (days - (dow(days)+6)%7) * usPerDay, nil
	}
	y, m, _ := civilFromDays(days)
	switch u {
	case unitMonth:
	case unitQuarter:
		m = 3*((m-1)/3) + 1
	case unitYear:
		m = 1
	case unitDecade:
		if y > 0 {
			y = y / 10 * 10
		} else {
			y = -((8 - (y - 1)) / 10) * 10
		}
		m = 1
	case unitCentury:
		if y > 0 {
			y = (y+99)/100*100 - 99
		} else {
			y = -((99-(y-1))/100)*100 + 1
		}
		m = 1
	case unitMillennium:
		if y > 0 {
			y = (y+999)/1000*1000 - 999
		} else {
			y = -((999-(y-1))/1000)*1000 + 1
		}
		m = 1
	default:
		return 0, errUnitNotSupported(unit, TTimestamp)
	}
	return daysFromCivil(y, m, 1) * usPerDay, nil
}

// lookupField resolves an extract field name.
func lookupField(field string) (dtUnit, bool) {
	if u, ok := lookupUnit(field); ok && u != unitAgo && u != unitIgnore {
		return u, true
	}
	u, ok := fieldNames[strings.ToLower(field)]
	return u, ok
}

// CheckExtract reports the error extract(field FROM x) gives for a value
// of type from, if any (22023 unknown field, 0A000 field not supported).
func CheckExtract(field string, from T) error {
	u, ok := lookupField(field)
	if !ok {
		return errUnitNotRecognized(field, from)
	}
	supported := false
	switch from.Kind {
	case Timestamp:
		supported = u < unitTimezone && u != unitJulian
	case Date:
		switch u {
		case unitDay, unitWeek, unitMonth, unitQuarter, unitYear, unitDecade, unitCentury,
			unitMillennium, unitEpoch, unitDow, unitIsodow, unitDoy, unitIsoyear, unitJulian:
			supported = true
		}
	case Interval:
		supported = u <= unitMillennium && u != unitWeek || u == unitEpoch
	default:
		return sqlerr.New(sqlerr.UndefinedFunction, "function extract(unknown, %s) does not exist", from)
	}
	if !supported {
		return errUnitNotSupported(field, from)
	}
	return nil
}

// ExtractType is the result type of extract(field FROM from): NUMERIC with
// the scale PostgreSQL 14+ gives that field (second and epoch 6,
// milliseconds 3, others 0). It is reported as NUMERIC(38,s) so the value
// prints with exactly PostgreSQL's digits.
func ExtractType(field string, from T) T {
	u, _ := lookupField(field)
	switch u {
	case unitSecond:
		return NumericOf(MaxNumericPrecision, 6)
	case unitMillisecond:
		return NumericOf(MaxNumericPrecision, 3)
	case unitEpoch:
		if from.Kind == Date {
			return NumericOf(MaxNumericPrecision, 0)
		}
		return NumericOf(MaxNumericPrecision, 6)
	}
	return NumericOf(MaxNumericPrecision, 0)
}

// Extract is extract(field FROM v) for v of type t (TIMESTAMP, DATE or
// INTERVAL); the result is at ExtractType(field, t).Scale. Julian day of a
// timestamp (a fractional day) is not supported. Infinite inputs give NULL.
func Extract(field string, v Datum, t T) (Datum, error) {
	if err := CheckExtract(field, t); err != nil {
		return Null, err
	}
	if v.Null {
		return Null, nil
	}
	u, _ := lookupField(field)
	num := func(x int64) (Datum, error) { return Datum{D: decimal128.FromI64(x)}, nil }
	if t.Kind == Interval {
		return extractInterval(u, v.IV)
	}
	var days, tod int64
	if t.Kind == Date {
		if v.I >= DateInfinity || v.I <= DateNegInfinity {
			return Null, nil
		}
		days = v.I
	} else {
		if isInfiniteTS(v.I) {
			return Null, nil
		}
		days = floorDiv64(v.I, usPerDay)
		tod = v.I - days*usPerDay
	}
	y, m, d := civilFromDays(days)
	switch u {
	case unitMicrosecond, unitMillisecond, unitSecond:
		return num(tod % usPerMin) // the scale tells them apart
	case unitMinute:
		return num(tod / usPerMin % 60)
	case unitHour:
		return num(tod / usPerHour)
	case unitDay:
		return num(int64(d))
	case unitMonth:
		return num(int64(m))
	case unitQuarter:
		return num(int64((m-1)/3 + 1))
	case unitWeek:
		_, w := isoWeek(days)
		return num(w)
	case unitYear:
		if y > 0 {
			return num(y)
		}
		return num(y - 1)
	case unitDecade:
		if y >= 0 {
			return num(y / 10)
		}
		return num(-((8 - (y - 1)) / 10))
	case unitCentury:
		if y > 0 {
			return num((y + 99) / 100)
		}
		return num(-((99 - (y - 1)) / 100))
	case unitMillennium:
		if y > 0 {
			return num((y + 999) / 1000)
		}
		return num(-((999 - (y - 1)) / 1000))
	case unitEpoch:
		if t.Kind == Date {
			return num(days * 86400)
		}
		return num(v.I)
	case unitDow:
		return num(dow(days))
	case unitIsodow:
		return num((dow(days)+6)%7 + 1)
	case unitDoy:
		return num(days - daysFromCivil(y, 1, 1) + 1)
	case unitIsoyear:
		iy, _ := isoWeek(days)
		if iy <= 0 {
			iy--
		}
		return num(iy)
	case unitJulian:
		return num(days + 2440588) // Julian day number of 1970-01-01
	}
	return Null, errUnitNotSupported(field, t)
}

func extractInterval(u dtUnit, iv arrow.MonthDayNanoInterval) (Datum, error) {
	num := func(x int64) (Datum, error) { return Datum{D: decimal128.FromI64(x)}, nil }
	usec := iv.Nanoseconds / 1000
	year, mon := int64(iv.Months/12), int64(iv.Months%12)
	switch u {
	case unitMicrosecond, unitMillisecond, unitSecond:
		return num(usec % usPerMin)
	case unitMinute:
		return num(usec / usPerMin % 60)
	case unitHour:
		return num(usec / usPerHour)
	case unitDay:
		return num(int64(iv.Days))
	case unitMonth:
		return num(mon)
	case unitQuarter:
		return num(mon/3 + 1)
	case unitYear:
		return num(year)
	case unitDecade:
		return num(year / 10)
	case unitCentury:
		return num(year / 100)
	case unitMillennium:
		return num(year / 1000)
	case unitEpoch:
		// A year is 365.25 days and a month 30, as in PostgreSQL (times 4 to stay integral).
		secs := (1461*year + 120*mon + 4*int64(iv.Days)) * (86400 / 4)
		d := decimal128.FromI64(secs).Mul(decimal128.FromI64(usPerSec)).Add(decimal128.FromI64(usec))
		return Datum{D: d}, nil
	}
	return Null, errUnitNotSupported("", TInterval)
}
