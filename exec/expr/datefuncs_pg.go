package expr

import (
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// PostgreSQL's date/time constructors and interval functions: make_date,
// make_timestamp, make_interval, to_timestamp(double precision), age,
// justify_hours, justify_days, justify_interval, isfinite and
// clock_timestamp. Dates are days and timestamps microseconds since
// 1970-01-01 (the session time zone is UTC).

func errDateField(y, m, d int64) error {
	return sqlerr.New(sqlerr.DatetimeFieldOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
}

// civilDays validates a date as make_date does (a negative year is BC;
// there is no year 0) and returns its day number.
func civilDays(y, m, d int64) (int64, error) {
	astro := y
	if y < 0 {
		astro = y + 1
	}
	if y == 0 || m < 1 || m > 12 || d < 1 || d > int64(types.DaysInMonth(astro, int(m))) {
		return 0, errDateField(y, m, d)
	}
	// PostgreSQL's dates run from 4714-11-24 BC to 5874897-12-31.
	if astro < -4713 || astro > 5874897 {
		return 0, sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range: %d-%02d-%02d", y, m, d)
	}
	return types.DaysFromCivil(astro, int(m), int(d)), nil
}

func makeDateKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		y, m, d := intColOf(args[0]), intColOf(args[1]), intColOf(args[2])
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			days, err := civilDays(y.at(i), m.at(i), d.at(i))
			return types.Int(days), err
		})
	}
}

// makeTimestampKernel is make_timestamp(year, month, day, hour, min, sec).
func makeTimestampKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		y, mo, d, h, mi := intColOf(args[0]), intColOf(args[1]), intColOf(args[2]), intColOf(args[3]), intColOf(args[4])
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			year, month, day := y.at(i), mo.at(i), d.at(i)
			days, err := civilDays(year, month, day)
			if err != nil {
				return types.Null, err
			}
			hour, min, sec := h.at(i), mi.at(i), floatAt(args[5], i)
			if hour < 0 || min < 0 || min > 59 || !(sec >= 0) || sec > 60 || hour > 24 || hour == 24 && (min > 0 || sec > 0) {
				return types.Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "time field value out of range: %d:%02d:%02g", hour, min, sec)
			}
			us := ((hour*60+min)*60)*1_000_000 + int64(math.RoundToEven(sec*1e6))
			return types.Int(days*types.UsPerDay + us), nil
		})
	}
}

// makeIntervalKernel is make_interval(years, months, weeks, days, hours,
// mins, secs) with the arguments given (the binder fills in zeros).
func makeIntervalKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		cols := make([]intCol, 6)
		for j := range cols {
			cols[j] = intColOf(args[j])
		}
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			secs := floatAt(args[6], i)
			months := cols[0].at(i)*12 + cols[1].at(i)
			days := cols[2].at(i)*7 + cols[3].at(i)
			us := float64(cols[4].at(i)*3600+cols[5].at(i)*60)*1e6 + math.RoundToEven(secs*1e6)
			if math.IsNaN(secs) || math.IsInf(secs, 0) || months != int64(int32(months)) || days != int64(int32(days)) ||
				math.Abs(us) >= 1<<63/1000 {
				return types.Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "interval out of range")
			}
			return types.Datum{IV: arrow.MonthDayNanoInterval{Months: int32(months), Days: int32(days), Nanoseconds: int64(us) * 1000}}, nil
		})
	}
}

// toTimestampKernel is to_timestamp(double precision): Unix seconds to a
// timestamptz, as PostgreSQL's float8_timestamptz rounds them.
func toTimestampKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			x := floatAt(args[0], i)
			switch {
			case math.IsNaN(x):
				return types.Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp cannot be NaN")
			case math.IsInf(x, 1):
				return types.Int(types.TimestampInfinity), nil
			case math.IsInf(x, -1):
				return types.Int(types.TimestampNegInfinity), nil
			}
			const unixJD, endJD = 2440588, 109203528
			if x < -86400*float64(unixJD) || x >= 86400*float64(endJD-unixJD) {
				return types.Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range: \"%g\"", x)
			}
			const pgEpoch = 946684800 // 2000-01-01 in Unix seconds
			us := math.RoundToEven((x - pgEpoch) * 1e6)
			return types.Int(int64(us) + pgEpoch*1_000_000), nil
		})
	}
}

// tsFields splits a timestamp into PostgreSQL's struct tm fields.
type tsFields struct{ year, mon, mday, hour, min, sec, usec int64 }

func fieldsOf(ts int64) tsFields {
	days := ts / types.UsPerDay
	tod := ts - days*types.UsPerDay
	if tod < 0 {
		days--
		tod += types.UsPerDay
	}
	y, m, d := types.CivilFromDays(days)
	return tsFields{year: y, mon: int64(m), mday: int64(d), hour: tod / 3_600_000_000, min: tod / 60_000_000 % 60,
		sec: tod / 1_000_000 % 60, usec: tod % 1_000_000}
}

// age is PostgreSQL's timestamp_age: a - b in years, months and days as
// on the calendar, then the time of day.
func age(a, b int64) (arrow.MonthDayNanoInterval, error) {
	if a == types.TimestampInfinity || a == types.TimestampNegInfinity || b == types.TimestampInfinity || b == types.TimestampNegInfinity {
		return arrow.MonthDayNanoInterval{}, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range")
	}
	t1, t2 := fieldsOf(a), fieldsOf(b)
	r := tsFields{t1.year - t2.year, t1.mon - t2.mon, t1.mday - t2.mday, t1.hour - t2.hour, t1.min - t2.min, t1.sec - t2.sec, t1.usec - t2.usec}
	neg := a < b
	flip := func() {
		r = tsFields{-r.year, -r.mon, -r.mday, -r.hour, -r.min, -r.sec, -r.usec}
	}
	if neg {
		flip()
	}
	for r.usec < 0 {
		r.usec += 1_000_000
		r.sec--
	}
	for r.sec < 0 {
		r.sec += 60
		r.min--
	}
	for r.min < 0 {
		r.min += 60
		r.hour--
	}
	for r.hour < 0 {
		r.hour += 24
		r.mday--
	}
	for r.mday < 0 {
		ref := t2
		if neg {
			ref = t1
		}
		r.mday += int64(types.DaysInMonth(ref.year, int(ref.mon)))
		r.mon--
	}
	for r.mon < 0 {
		r.mon += 12
		r.year--
	}
	if neg {
		flip()
	}
	us := ((r.hour*60+r.min)*60+r.sec)*1_000_000 + r.usec
	return arrow.MonthDayNanoInterval{Months: int32(r.year*12 + r.mon), Days: int32(r.mday), Nanoseconds: us * 1000}, nil
}

func ageKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a, b := intColOf(args[0]), intColOf(args[1])
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			iv, err := age(a.at(i), b.at(i))
			return types.Datum{IV: iv}, err
		})
	}
}

// justify is justify_hours (hours), justify_days (days) or both
// (justify_interval), as PostgreSQL 15's.
func justify(v arrow.MonthDayNanoInterval, hours, days bool) (arrow.MonthDayNanoInterval, error) {
	month, day, us := int64(v.Months), int64(v.Days), v.Nanoseconds/1000
	if hours {
		whole := us / types.UsPerDay
		us -= whole * types.UsPerDay
		day += whole
	}
	if days {
		whole := day / 30
		day -= whole * 30
		month += whole
		if month > 0 && (day < 0 || hours && day == 0 && us < 0) {
			day += 30
			month--
		} else if month < 0 && (day > 0 || hours && day == 0 && us > 0) {
			day -= 30
			month++
		}
	}
	if hours {
		if day > 0 && us < 0 {
			us += types.UsPerDay
			day--
		} else if day < 0 && us > 0 {
			us -= types.UsPerDay
			day++
		}
	}
	if day != int64(int32(day)) || month != int64(int32(month)) {
		return v, sqlerr.New(sqlerr.DatetimeFieldOverflow, "interval out of range")
	}
	return arrow.MonthDayNanoInterval{Months: int32(month), Days: int32(day), Nanoseconds: us * 1000}, nil
}

func justifyKernel(name string, t types.T) kernel {
	hours := name != "justify_days"
	days := name != "justify_hours"
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			iv, err := justify(ivAt(args[0], i), hours, days)
			return types.Datum{IV: iv}, err
		})
	}
}

// isfiniteKernel is isfinite(timestamp) and isfinite(date): false for
// ±infinity (intervals are always finite in PostgreSQL 15).
func isfiniteKernel(at types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		valid, nulls := validity(mem, n, args...)
		buf, out := bitBuf(mem, n)
		if at.Kind == types.Interval {
			for i := range out {
				out[i] = 0xff
			}
			return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
		}
		x := intColOf(args[0])
		for i := 0; i < n; i++ {
			v := x.at(i)
			fin := true
			switch at.Kind {
			case types.Date:
				fin = v < types.DateInfinity && v > types.DateNegInfinity
			case types.Timestamp:
				fin = v != types.TimestampInfinity && v != types.TimestampNegInfinity
			}
			if fin {
				out[i>>3] |= 1 << (i & 7)
			}
		}
		return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
	}
}

// clockTimestampKernel is clock_timestamp(): the time of the call.
func clockTimestampKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return scalarVec(types.Int(time.Now().UnixMicro()), t), nil
	}
}
