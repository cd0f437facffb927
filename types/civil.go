package types

// Exported calendar helpers for the date/time functions of exec/expr
// (make_date, make_timestamp, age): the proleptic Gregorian calendar of
// datetime.go, years astronomical (1 BC is year 0).

// DaysFromCivil returns the day number (days since 1970-01-01) of y-m-d.
func DaysFromCivil(y int64, m, d int) int64 { return daysFromCivil(y, m, d) }

// CivilFromDays is the inverse of DaysFromCivil.
func CivilFromDays(days int64) (y int64, m, d int) { return civilFromDays(days) }

// DaysInMonth is the number of days of month m of year y.
func DaysInMonth(y int64, m int) int { return daysIn(y, m) }

// UsPerDay is the number of microseconds in a day.
const UsPerDay = usPerDay
