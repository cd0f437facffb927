package types

import (
	"math"
	"strconv"
	"strings"
)

// time (time without time zone, oid 1083) is microseconds since midnight
// in an Arrow Int64 column, 0 to 24:00:00 inclusive, as PostgreSQL stores
// it; ordering, keys and state are those of integers.

// usPerDayTime is 24:00:00, the largest time.
const usPerDayTime = 24 * 3600 * 1000000

// parseTime reads time_in's ISO forms: HH:MM[:SS[.frac]], an optional AM
// or PM, an optional zone (ignored, as PostgreSQL ignores it for time
// without time zone), a leading ISO date (ignored), or 'allballs'.
// Compact forms (040506) and named months are 22007.
func parseTime(s string) (int64, error) {
	v, _, _, err := parseTimeOfDay(s, "time without time zone")
	return v, err
}

// parseTimeOfDay reads parseTime's forms for type typ: the microseconds
// since midnight, the zone written (if any) and the date written before
// it (days since 1970-01-01; today's without one: a region name's
// offset depends on the date, and PostgreSQL takes the current one).
func parseTimeOfDay(s, typ string) (us int64, z dtZone, days int64, err error) {
	t := trimSpace(s)
	if strings.EqualFold(t, "allballs") {
		return 0, dtZone{set: true}, 0, nil // 00:00:00 UTC
	}
	if i := strings.IndexByte(t, ':'); i > 0 && strings.IndexByte(t[:i], '-') > 0 {
		days, usec, z, e := parseDateTime(t)
		if e != dtOK {
			return 0, z, 0, dtError(e, s, typ)
		}
		return usec, z, days, nil
	}
	p := dtScanner{s: t}
	hour, _, ok := p.digits(2)
	if !ok || !p.eat(':') {
		return 0, z, 0, dtError(dtSyntax, s, typ)
	}
	min, _, ok := p.digits(2)
	if !ok {
		return 0, z, 0, dtError(dtSyntax, s, typ)
	}
	var sec, fsec int64
	if p.eat(':') {
		if sec, _, ok = p.digits(2); !ok {
			return 0, z, 0, dtError(dtSyntax, s, typ)
		}
		if p.eat('.') {
			start := p.i
			for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				p.i++
			}
			if p.i > start {
				frac, _ := strconv.ParseFloat("0."+p.s[start:p.i], 64)
				fsec = int64(math.RoundToEven(frac * usPerSec))
			}
		}
	}
	p.spaces()
	if rest := strings.ToLower(p.s[p.i:]); strings.HasPrefix(rest, "am") || strings.HasPrefix(rest, "pm") {
		if hour > 12 {
			return 0, z, 0, dtError(dtRange, s, typ)
		}
		if hour == 12 {
			hour = 0
		}
		if rest[0] == 'p' {
			hour += 12
		}
		p.i += 2
		p.spaces()
	}
	z, e := p.zone()
	if e != dtOK {
		return 0, z, 0, dtError(e, s, typ)
	}
	p.spaces()
	if p.i != len(p.s) {
		return 0, z, 0, dtError(dtSyntax, s, typ)
	}
	if hour > 24 || min > 59 || sec > 60 {
		return 0, z, 0, dtError(dtRange, s, typ)
	}
	v := hour*usPerHour + min*usPerMin + sec*usPerSec + fsec
	if v > usPerDayTime {
		return 0, z, 0, dtError(dtRange, s, typ)
	}
	return v, z, daysToday(), nil
}

// appendTime appends time_out's HH:MM:SS[.ffffff] (trailing zeros trimmed).
func appendTime(buf []byte, us int64) []byte {
	buf = append0(buf, us/usPerHour, 2)
	buf = append(buf, ':')
	buf = append0(buf, us/usPerMin%60, 2)
	buf = append(buf, ':')
	return appendSecFrac(buf, us/usPerSec%60, us%usPerSec)
}
