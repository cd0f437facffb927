package types

import (
	"time"

	"github.com/streamdb/streamdb/sqlerr"
)

// timetz (time with time zone, oid 1266) is a time of day and a UTC
// offset. PostgreSQL stores the microseconds and the zone in seconds west
// of UTC, and orders by the UTC-equivalent time (time + zone), then by the
// zone, so two values are equal only when both parts are. streamdb packs
// the pair into one Arrow Int64 whose integer order is that order:
//
//	(time + zone·10⁶) · 2¹⁷ + (zone + 2¹⁶)
//
// The UTC-equivalent time lies within ±(24:00 + 15:59:59) (under 2³⁸ µs)
// and the biased zone within 0..2¹⁷, so the value fits an int64 and
// ordering, equality, hashing, GROUP BY, joins, min/max and state are the
// integers', as for time.

const (
	tzZoneBits = 17
	tzZoneBias = 1 << 16
	// tzDispLimit is PostgreSQL's TZDISP_LIMIT: a zone is within ±15:59:59.
	tzDispLimit = 16 * 3600
)

// PackTimeTZ returns the stored form of a time of day (microseconds since
// midnight) at zone (seconds west of UTC, as PostgreSQL keeps it).
func PackTimeTZ(us, zoneWest int64) int64 {
	return (us+zoneWest*usPerSec)<<tzZoneBits + (zoneWest + tzZoneBias)
}

// UnpackTimeTZ returns the time of day and the zone (seconds west of UTC)
// of a stored timetz.
func UnpackTimeTZ(v int64) (us, zoneWest int64) {
	zoneWest = v&(1<<tzZoneBits-1) - tzZoneBias
	return v>>tzZoneBits - zoneWest*usPerSec, zoneWest
}

// parseTimeTZ reads timetz_in's forms: time's (timeofday.go) with a zone
// (+05, -03:30, +0530, Z, UTC, a region name at the date written or
// today's); none is the session's TimeZone, UTC.
func parseTimeTZ(s string) (Datum, error) {
	const typ = "time with time zone"
	us, z, days, err := parseTimeOfDay(s, typ)
	if err != nil {
		return Null, err
	}
	east, err := zoneOffset(z, days, us, s, typ)
	if err != nil {
		return Null, err
	}
	return Int(PackTimeTZ(us, -east)), nil
}

// daysToday is the current date in UTC, in days since 1970-01-01.
func daysToday() int64 { return floorDiv64(time.Now().Unix(), 86400) }

// appendTimeTZ appends timetz_out's HH:MM:SS[.ffffff]±HH[:MM[:SS]].
func appendTimeTZ(buf []byte, v int64) []byte {
	us, west := UnpackTimeTZ(v)
	buf = appendTime(buf, us)
	return appendZoneOffset(buf, -west)
}

// appendZoneOffset appends PostgreSQL's EncodeTimezone of an offset east
// of UTC in seconds: +HH, +HH:MM or +HH:MM:SS, as few fields as needed.
func appendZoneOffset(buf []byte, east int64) []byte {
	sign := byte('+')
	if east < 0 {
		sign, east = '-', -east
	}
	buf = append(buf, sign)
	buf = append0(buf, east/3600, 2)
	if m, sec := east/60%60, east%60; m != 0 || sec != 0 {
		buf = append(buf, ':')
		buf = append0(buf, m, 2)
		if sec != 0 {
			buf = append(buf, ':')
			buf = append0(buf, sec, 2)
		}
	}
	return buf
}

// parseTimeTZBinary reads timetz_recv's int64 microseconds and int32 zone
// (seconds west), checking both ranges as it does.
func parseTimeTZBinary(us, west int64) (Datum, error) {
	if us < 0 || us > usPerDayTime {
		return Null, sqlerr.New(sqlerr.DatetimeFieldOverflow, "time out of range")
	}
	if west <= -tzDispLimit || west >= tzDispLimit {
		return Null, sqlerr.New("22009", "time zone displacement out of range")
	}
	return Int(PackTimeTZ(us, west)), nil
}
