package types

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// NanosPerDay is the length of the day an interval's days count.
const NanosPerDay = 86400 * 1e9

// CanonInterval returns the representative of v's equality class:
// PostgreSQL's = on intervals compares their span, a month counting 30
// days and a day 24 hours, so '1 day' = '24:00:00' and '1 mon' = '30 days'.
// The representative has every field of the span's sign, |days| < 30 and
// |nanoseconds| < 1 day (the form justify_interval gives), so two intervals
// are equal exactly when their representatives are identical, and a value
// already in that form is its own. ok is false when the months would not
// fit in 32 bits (spans PostgreSQL itself cannot justify); v is returned.
func CanonInterval(v arrow.MonthDayNanoInterval) (c arrow.MonthDayNanoInterval, ok bool) {
	days := int64(v.Months)*30 + int64(v.Days) + v.Nanoseconds/NanosPerDay
	ns := v.Nanoseconds % NanosPerDay
	switch {
	case days > 0 && ns < 0:
		days--
		ns += NanosPerDay
	case days < 0 && ns > 0:
		days++
		ns -= NanosPerDay
	}
	months := days / 30
	if months != int64(int32(months)) {
		return v, false
	}
	return arrow.MonthDayNanoInterval{Months: int32(months), Days: int32(days % 30), Nanoseconds: ns}, true
}

// IsCanonInterval reports whether v is its own representative.
func IsCanonInterval(v arrow.MonthDayNanoInterval) bool {
	c, _ := CanonInterval(v)
	return c == v
}

// IntervalSpan is v's exact length in nanoseconds with 30-day months, by
// which PostgreSQL orders and compares intervals (a float64 would lose the
// microseconds of spans past about 285 years).
func IntervalSpan(v arrow.MonthDayNanoInterval) decimal128.Num {
	days := int64(v.Months)*30 + int64(v.Days)
	return decimal128.FromI64(days).Mul(decimal128.FromI64(NanosPerDay)).Add(decimal128.FromI64(v.Nanoseconds))
}
