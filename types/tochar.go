package types

import (
	"strconv"
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
)

// to_char(timestamp, template), as PostgreSQL's formatting.c does it for
// the patterns listed in charKeywords. A template is compiled once
// (CompileCharFormat) and applied to many values (AppendChar).

type charPat uint8

const (
	cpLiteral charPat = iota
	cpAD              // AD BC: era
	cpADDots          // A.D. B.C.
	cpAM              // AM PM: meridiem
	cpAMDots          // A.M. P.M.
	cpCC
	cpDay   // full day name, padded to 9
	cpDDD   // day of year
	cpDD    // day of month
	cpDy    // abbreviated day name
	cpD     // day of week, Sunday = 1
	cpHH24  //
	cpHH12  // HH and HH12
	cpID    // ISO day of week, Monday = 1
	cpIW    // ISO week
	cpIYYY  // ISO year
	cpJ     // Julian day
	cpMI    //
	cpMM    //
	cpMonth // full month name, padded to 9
	cpMon   // abbreviated month name
	cpMS    // milliseconds
	cpQ     // quarter
	cpRM    // month in Roman numerals
	cpSSSS  // seconds past midnight
	cpSS    //
	cpTZ    // time zone: empty for timestamp without time zone
	cpUS    // microseconds
	cpWW    // week of year
	cpW     // week of month
	cpYCommaYYY
	cpYYYY
	cpYYY
	cpYY
	cpY
)

// charKeywords in matching order: at each position the first keyword that
// is a prefix wins (so longer ones come first). Matching is
// case-sensitive; the case of a name pattern sets the case of its output.
var charKeywords = []struct {
	kw  string
	pat charPat
}{
	{"A.D.", cpADDots}, {"A.M.", cpAMDots}, {"AD", cpAD}, {"AM", cpAM},
	{"B.C.", cpADDots}, {"BC", cpAD}, {"CC", cpCC},
	{"DAY", cpDay}, {"DDD", cpDDD}, {"DD", cpDD}, {"DY", cpDy}, {"Day", cpDay}, {"Dy", cpDy}, {"D", cpD},
	{"HH24", cpHH24}, {"HH12", cpHH12}, {"HH", cpHH12},
	{"ID", cpID}, {"IW", cpIW}, {"IYYY", cpIYYY}, {"J", cpJ},
	{"MI", cpMI}, {"MM", cpMM}, {"MONTH", cpMonth}, {"MON", cpMon}, {"MS", cpMS}, {"Month", cpMonth}, {"Mon", cpMon},
	{"P.M.", cpAMDots}, {"PM", cpAM}, {"Q", cpQ}, {"RM", cpRM},
	{"SSSSS", cpSSSS}, {"SSSS", cpSSSS}, {"SS", cpSS}, {"TZ", cpTZ}, {"US", cpUS},
	{"WW", cpWW}, {"W", cpW},
	{"Y,YYY", cpYCommaYYY}, {"YYYY", cpYYYY}, {"YYY", cpYYY}, {"YY", cpYY}, {"Y", cpY},
	{"a.d.", cpADDots}, {"a.m.", cpAMDots}, {"ad", cpAD}, {"am", cpAM},
	{"b.c.", cpADDots}, {"bc", cpAD}, {"cc", cpCC},
	{"day", cpDay}, {"ddd", cpDDD}, {"dd", cpDD}, {"dy", cpDy}, {"d", cpD},
	{"hh24", cpHH24}, {"hh12", cpHH12}, {"hh", cpHH12},
	{"id", cpID}, {"iw", cpIW}, {"iyyy", cpIYYY}, {"j", cpJ},
	{"mi", cpMI}, {"mm", cpMM}, {"month", cpMonth}, {"mon", cpMon}, {"ms", cpMS},
	{"p.m.", cpAMDots}, {"pm", cpAM}, {"q", cpQ}, {"rm", cpRM},
	{"sssss", cpSSSS}, {"ssss", cpSSSS}, {"ss", cpSS}, {"tz", cpTZ}, {"us", cpUS},
	{"ww", cpWW}, {"w", cpW},
	{"y,yyy", cpYCommaYYY}, {"yyyy", cpYYYY}, {"yyy", cpYYY}, {"yy", cpYY}, {"y", cpY},
}

// Letter case of a name pattern's output.
const (
	caseUpper = iota // MONTH
	caseTitle        // Month
	caseLower        // month
)

type charNode struct {
	pat    charPat
	kw     string // the keyword as written
	lit    string // cpLiteral
	quoted bool   // cpLiteral: from double-quoted text
	fm     bool   // FM prefix: no padding
	th     int    // TH suffix: 1 upper, 2 lower ordinal suffix
	lcas   int    // letter case of names
}

// CharFormat is a compiled to_char template.
type CharFormat struct {
	nodes []charNode
	empty bool
	fx    bool // an FX prefix (fixed format, for to_timestamp) appeared
	// The nodes to_date reads by (todate.go), made on first use.
	fc     []fcNode
	fcErr  error
	fcDone bool
}

// Empty reports whether the template was empty (to_char then returns NULL).
func (f *CharFormat) Empty() bool { return f.empty }

// CompileCharFormat parses a to_char template.
func CompileCharFormat(tmpl string) (*CharFormat, error) {
	f := &CharFormat{empty: tmpl == ""}
	var lit []byte
	litQuoted := false
	flush := func() {
		if len(lit) > 0 {
			f.nodes = append(f.nodes, charNode{pat: cpLiteral, lit: string(lit), quoted: litQuoted})
			lit = lit[:0]
		}
	}
	for i := 0; i < len(tmpl); {
		fm := false
		for {
			if strings.HasPrefix(tmpl[i:], "FM") || strings.HasPrefix(tmpl[i:], "fm") {
				fm, i = true, i+2
				continue
			}
			if strings.HasPrefix(tmpl[i:], "FX") || strings.HasPrefix(tmpl[i:], "fx") {
				i += 2 // fixed format: only matters for to_timestamp
				f.fx = true
				continue
			}
			break
		}
		if i >= len(tmpl) {
			break
		}
		matched := false
		for _, k := range charKeywords {
			if !strings.HasPrefix(tmpl[i:], k.kw) {
				continue
			}
			flush()
			n := charNode{pat: k.pat, fm: fm, kw: k.kw}
			switch {
			case k.kw[0] >= 'a' && k.kw[0] <= 'z':
				n.lcas = caseLower
			case len(k.kw) > 1 && k.kw[1] >= 'a' && k.kw[1] <= 'z':
				n.lcas = caseTitle
			}
			i += len(k.kw)
			switch {
			case strings.HasPrefix(tmpl[i:], "TH"):
				n.th, i = 1, i+2
			case strings.HasPrefix(tmpl[i:], "th"):
				n.th, i = 2, i+2
			}
			f.nodes = append(f.nodes, n)
			matched = true
			break
		}
		if matched {
			continue
		}
		switch c := tmpl[i]; {
		case c == '"':
			// Quoted text is copied; a backslash in it escapes the next byte.
			if !litQuoted {
				flush()
				litQuoted = true
			}
			i++
			for i < len(tmpl) && tmpl[i] != '"' {
				if tmpl[i] == '\\' && i+1 < len(tmpl) {
					i++
				}
				lit = append(lit, tmpl[i])
				i++
			}
			i++
		case c == '\\' && i+1 < len(tmpl) && tmpl[i+1] == '"':
			if litQuoted {
				flush()
				litQuoted = false
			}
			lit = append(lit, '"')
			i += 2
		default:
			if litQuoted {
				flush()
				litQuoted = false
			}
			lit = append(lit, c)
			i++
		}
	}
	flush()
	return f, nil
}

var (
	monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
	dayNames   = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	romanMonth = [...]string{"I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"}
)

// AppendChar appends to_char(ts, f) (ts in microseconds since 1970). ok is
// false for an infinite timestamp, where to_char returns NULL.
func (f *CharFormat) AppendChar(buf []byte, ts int64) (out []byte, ok bool) {
	if isInfiniteTS(ts) {
		return buf, false
	}
	days := floorDiv64(ts, usPerDay)
	tod := ts - days*usPerDay
	y, m, d := civilFromDays(days)
	hour, min, sec := tod/usPerHour, tod/usPerMin%60, tod/usPerSec%60
	frac := tod % usPerSec
	yday := days - daysFromCivil(y, 1, 1) + 1
	// BC years print as positive numbers (1 BC is astronomical year 0).
	year := y
	if year <= 0 {
		year = 1 - year
	}
	for _, n := range f.nodes {
		num := func(v int64, width int) {
			start := len(buf)
			if n.fm {
				width = 0
			}
			s := strconv.FormatInt(v, 10)
			neg := v < 0
			if neg {
				s = s[1:]
				buf = append(buf, '-')
			}
			for k := len(s); k < width; k++ {
				buf = append(buf, '0')
			}
			buf = append(buf, s...)
			if n.th != 0 {
				buf = append(buf, ordinal(buf[start:], n.th == 1)...)
			}
		}
		name := func(s string, pad int) {
			switch n.lcas {
			case caseUpper:
				s = strings.ToUpper(s)
			case caseLower:
				s = strings.ToLower(s)
			}
			buf = append(buf, s...)
			if !n.fm {
				for k := len(s); k < pad; k++ {
					buf = append(buf, ' ')
				}
			}
		}
		switch n.pat {
		case cpLiteral:
			buf = append(buf, n.lit...)
		case cpAD, cpADDots:
			s := "AD"
			if y <= 0 {
				s = "BC"
			}
			if n.pat == cpADDots {
				s = s[:1] + "." + s[1:] + "."
			}
			if n.lcas == caseLower {
				s = strings.ToLower(s)
			}
			buf = append(buf, s...)
		case cpAM, cpAMDots:
			s := "AM"
			if hour >= 12 {
				s = "PM"
			}
			if n.pat == cpAMDots {
				s = s[:1] + "." + s[1:] + "."
			}
			if n.lcas == caseLower {
				s = strings.ToLower(s)
			}
			buf = append(buf, s...)
		case cpCC:
			cc := (y + 99) / 100
			if y <= 0 {
				cc = -((99 - (y - 1)) / 100)
			}
			num(cc, 2)
		case cpDay:
			name(dayNames[dow(days)], 9)
		case cpDy:
			name(dayNames[dow(days)][:3], 0)
		case cpDDD:
			num(yday, 3)
		case cpDD:
			num(int64(d), 2)
		case cpD:
			num(dow(days)+1, 0)
		case cpHH24:
			num(hour, 2)
		case cpHH12:
			h := hour % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case cpID:
			num((dow(days)+6)%7+1, 0)
		case cpIW:
			_, w := isoWeek(days)
			num(w, 2)
		case cpIYYY:
			iy, _ := isoWeek(days)
			num(iy, 4)
		case cpJ:
			num(days+2440588, 0)
		case cpMI:
			num(min, 2)
		case cpMM:
			num(int64(m), 2)
		case cpMonth:
			name(monthNames[m-1], 9)
		case cpMon:
			name(monthNames[m-1][:3], 0)
		case cpMS:
			num(frac/1000, 3)
		case cpQ:
			num(int64((m-1)/3+1), 0)
		case cpRM:
			s := romanMonth[m-1]
			if n.lcas == caseLower {
				s = strings.ToLower(s)
			}
			buf = append(buf, s...)
			if !n.fm {
				for k := len(s); k < 4; k++ {
					buf = append(buf, ' ')
				}
			}
		case cpSSSS:
			num(tod/usPerSec, 0)
		case cpSS:
			num(sec, 2)
		case cpTZ:
		case cpUS:
			num(frac, 6)
		case cpWW:
			num((yday-1)/7+1, 2)
		case cpW:
			num(int64((d-1)/7+1), 0)
		case cpYCommaYYY:
			s := strconv.FormatInt(year/1000, 10) + "," + pad3(year%1000)
			buf = append(buf, s...)
			if n.th != 0 {
				buf = append(buf, ordinal([]byte(s), n.th == 1)...)
			}
		case cpYYYY:
			num(year, 4)
		case cpYYY:
			num(year%1000, 3)
		case cpYY:
			num(year%100, 2)
		case cpY:
			num(year%10, 1)
		}
	}
	return buf, true
}

func pad3(v int64) string {
	s := strconv.FormatInt(v, 10)
	return strings.Repeat("0", max(0, 3-len(s))) + s
}

// ordinal is the English ordinal suffix of the number written in digits.
func ordinal(digits []byte, upper bool) string {
	s := "th"
	if n := len(digits); n > 0 {
		last := digits[n-1]
		teen := n > 1 && digits[n-2] == '1'
		switch {
		case teen:
		case last == '1':
			s = "st"
		case last == '2':
			s = "nd"
		case last == '3':
			s = "rd"
		}
	}
	if upper {
		return strings.ToUpper(s)
	}
	return s
}

// ErrToCharType is the refusal of to_char on intervals, which streamdb
// does not implement.
func ErrToCharType(t T) error {
	return sqlerr.New(sqlerr.UndefinedFunction, "function to_char(%s, text) is not supported: to_char takes a timestamp, a date or a number", t)
}
