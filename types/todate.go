package types

import (
	"strings"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
)

// to_date(text, template) and to_timestamp(text, template), as PostgreSQL
// 15's formatting.c reads a string (DCH_from_char, do_to_timestamp) for
// the patterns YYYY YYY YY Y MM DD DDD HH HH12 HH24 MI SS MS US AM PM A.M.
// P.M. Month Mon Day Dy, with FM and TH and PostgreSQL's leniency about
// spaces and separators. The template is the one to_char compiles
// (CompileCharFormat). Other patterns, and the FX prefix, are refused with
// 0A000 naming them when the input reaches them (PostgreSQL stops at the
// end of the input); TZ is refused as PostgreSQL 15 refuses it.

// fromCharDigit are the patterns that read digits (PostgreSQL's is_digit).
var fromCharDigit = map[charPat]bool{
	cpYYYY: true, cpYYY: true, cpYY: true, cpY: true, cpMM: true, cpDD: true, cpDDD: true,
	cpHH24: true, cpHH12: true, cpMI: true, cpSS: true, cpMS: true, cpUS: true,
	cpCC: true, cpD: true, cpID: true, cpIW: true, cpIYYY: true, cpJ: true, cpQ: true, cpSSSS: true,
	cpWW: true, cpW: true, cpYCommaYYY: true,
}

// tmFromChar is PostgreSQL's TmFromChar: the fields read, 0 when absent.
type tmFromChar struct {
	year, mm, dd, ddd, hh, mi, ss, ms, us, d int
	pm                                       int
	clock12                                  bool
}

func errDatetimeFormat(format string, a ...any) error {
	return sqlerr.New(sqlerr.InvalidDatetimeFormat, format, a...)
}

// node kinds of a split template
const (
	fcAction = iota
	fcSeparator
	fcSpace
	fcChar
)

type fcNode struct {
	kind int
	n    *charNode // fcAction
	ch   string    // others: one character
}

func isSeparatorChar(c byte) bool {
	return c > 0x20 && c < 0x7f && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9')
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// fromCharNodes splits f into PostgreSQL's format nodes; FX, which
// changes how the whole input is read, is refused.
func (f *CharFormat) fromCharNodes() ([]fcNode, error) {
	if f.fx {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, `to_date/to_timestamp template pattern "FX" is not supported`)
	}
	var out []fcNode
	for i := range f.nodes {
		n := &f.nodes[i]
		if n.pat != cpLiteral {
			out = append(out, fcNode{kind: fcAction, n: n})
			continue
		}
		for j := 0; j < len(n.lit); {
			_, w := utf8.DecodeRuneInString(n.lit[j:])
			c := n.lit[j]
			k := fcChar
			switch {
			case n.quoted:
			case isSeparatorChar(c):
				k = fcSeparator
			case isSpaceByte(c):
				k = fcSpace
			}
			out = append(out, fcNode{kind: k, ch: n.lit[j : j+w]})
			j += w
		}
	}
	return out, nil
}

var (
	ampmShort = []string{"am", "pm", "AM", "PM"}
	ampmLong  = []string{"a.m.", "p.m.", "A.M.", "P.M."}
)

// ParseTimestamp is to_timestamp(s, f): microseconds since 1970 of the
// wall time s names by the template, read in the session's zone (UTC).
func (f *CharFormat) ParseTimestamp(s string) (int64, error) {
	days, tod, err := f.parse(s)
	if err != nil {
		return 0, err
	}
	if days >= daysFromCivil(294277, 1, 1) {
		return 0, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range")
	}
	return days*usPerDay + tod, nil
}

// ParseDate is to_date(s, f): days since 1970.
func (f *CharFormat) ParseDate(s string) (int64, error) {
	days, _, err := f.parse(s)
	if err != nil {
		return 0, err
	}
	if days > daysFromCivil(5874897, 12, 31) {
		return 0, sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range: %q", s)
	}
	return days, nil
}

// parse is DCH_from_char and do_to_timestamp: the day (since 1970) and
// the time of day (microseconds) s names.
func (f *CharFormat) parse(s string) (days, tod int64, err error) {
	if !f.fcDone {
		f.fc, f.fcErr = f.fromCharNodes()
		f.fcDone = true
	}
	if f.fcErr != nil {
		return 0, 0, f.fcErr
	}
	nodes := f.fc
	var tm tmFromChar
	p := 0
	extraSkip := 0
	setInt := func(dest *int, v int, n *charNode) error {
		if *dest != 0 && *dest != v {
			return errDatetimeFormat("conflicting values for %q field in formatting string", n.kw)
		}
		*dest = v
		return nil
	}
	nextSeparator := func(k int) bool { // is_next_separator
		if nodes[k].n.th != 0 {
			return true
		}
		if k+1 >= len(nodes) {
			return true
		}
		nx := nodes[k+1]
		if nx.kind == fcAction {
			return !fromCharDigit[nx.n.pat]
		}
		return !(len(nx.ch) == 1 && nx.ch[0] >= '0' && nx.ch[0] <= '9')
	}
	// parseInt is from_char_parse_int_len: it returns the characters used.
	parseInt := func(dest *int, width int, k int) (int, error) {
		n := nodes[k].n
		init := p
		for p < len(s) && isSpaceByte(s[p]) {
			p++
		}
		copyEnd := min(len(s), p+width)
		cp := s[p:copyEnd]
		var v int64
		if n.fm || nextSeparator(k) {
			// as many digits as there are
			var end int
			if v, end = strtol(s, init); end > init {
				p = end
			} else {
				p = init
			}
		} else {
			if len(cp) < width {
				return 0, errDatetimeFormat("source string too short for %q formatting field", n.kw)
			}
			var used int
			v, used = strtol(cp, 0)
			if used > 0 && used < width {
				return 0, errDatetimeFormat("invalid value %q for %q", cp, n.kw)
			}
			p += used
		}
		if p == init {
			return 0, errDatetimeFormat("invalid value %q for %q", cp, n.kw)
		}
		if v < -1<<31 || v > 1<<31-1 {
			return 0, sqlerr.New(sqlerr.DatetimeFieldOverflow, "value for %q in source string is out of range", n.kw)
		}
		if dest != nil {
			if err := setInt(dest, int(v), n); err != nil {
				return 0, err
			}
		}
		return p - init, nil
	}
	// seqSearch is from_char_seq_search: the first name that the input
	// starts with, compared without case.
	seqSearch := func(names []string, abbrev bool, n *charNode) (int, error) {
		for i, name := range names {
			if abbrev {
				name = name[:3]
			}
			if len(s)-p >= len(name) && strings.EqualFold(s[p:p+len(name)], name) {
				p += len(name)
				return i, nil
			}
		}
		return 0, errDatetimeFormat("invalid value %q for %q", s[p:min(len(s), p+len(n.kw))], n.kw)
	}
	skipTH := func(n *charNode) {
		if n.th != 0 {
			for range 2 {
				if p < len(s) {
					_, w := utf8.DecodeRuneInString(s[p:])
					p += w
				}
			}
		}
	}
	for k := 0; k < len(nodes) && p < len(s); k++ {
		nd := nodes[k]
		if nd.kind == fcAction || k == 0 {
			for p < len(s) && isSpaceByte(s[p]) {
				p++
				extraSkip++
			}
		}
		switch nd.kind {
		case fcSeparator, fcSpace:
			extraSkip--
			if p < len(s) && (isSpaceByte(s[p]) || isSeparatorChar(s[p])) {
				p++
				extraSkip++
			}
			continue
		case fcChar:
			if extraSkip > 0 {
				extraSkip--
			} else if p < len(s) {
				_, w := utf8.DecodeRuneInString(s[p:])
				p += w
			}
			continue
		}
		n := nd.n
		var err error
		var l int
		switch n.pat {
		case cpAM, cpAMDots:
			names := ampmShort
			if n.pat == cpAMDots {
				names = ampmLong
			}
			var v int
			if v, err = seqSearch(names, false, n); err == nil {
				err = setInt(&tm.pm, v%2, n)
				tm.clock12 = true
			}
		case cpHH12, cpHH24:
			if _, err = parseInt(&tm.hh, 2, k); err == nil {
				tm.clock12 = tm.clock12 || n.pat == cpHH12
				skipTH(n)
			}
		case cpMI, cpSS, cpMM, cpDD, cpDDD:
			dest := &tm.mi
			switch n.pat {
			case cpSS:
				dest = &tm.ss
			case cpMM:
				dest = &tm.mm
			case cpDD:
				dest = &tm.dd
			case cpDDD:
				dest = &tm.ddd
			}
			if _, err = parseInt(dest, len(n.kw), k); err == nil {
				skipTH(n)
			}
		case cpMS:
			if l, err = parseInt(&tm.ms, 3, k); err == nil {
				tm.ms *= [...]int{1, 100, 10, 1}[min(l, 3)]
				skipTH(n)
			}
		case cpUS:
			if l, err = parseInt(&tm.us, 6, k); err == nil {
				tm.us *= [...]int{1, 100000, 10000, 1000, 100, 10, 1}[min(l, 6)]
				skipTH(n)
			}
		case cpMonth, cpMon, cpDay, cpDy:
			names, dest := monthNames[:], &tm.mm
			if n.pat == cpDay || n.pat == cpDy {
				names, dest = dayNames[:], &tm.d
			}
			var v int
			if v, err = seqSearch(names, n.pat == cpMon || n.pat == cpDy, n); err == nil {
				err = setInt(dest, v+1, n)
			}
		case cpYYYY:
			if _, err = parseInt(&tm.year, 4, k); err == nil {
				skipTH(n)
			}
		case cpYYY, cpYY, cpY:
			if l, err = parseInt(&tm.year, len(n.kw), k); err == nil && l < 4 {
				tm.year = adjustPartialYear(tm.year)
			}
		case cpTZ:
			// Refused where PostgreSQL 15 refuses it: when the input
			// reaches it (a template may outrun its input).
			err = sqlerr.New(sqlerr.FeatureNotSupported, "formatting field %q is only supported in to_char", n.kw)
		default:
			err = sqlerr.New(sqlerr.FeatureNotSupported, "to_date/to_timestamp template pattern %q is not supported", n.kw)
		}
		if err != nil {
			return 0, 0, err
		}
		extraSkip = 0
		for p < len(s) && isSpaceByte(s[p]) {
			p++
			extraSkip++
		}
	}
	return tm.timestamp(s)
}

// strtol is C's strtol(s[q:], &end, 10): white space, a sign, digits;
// end is q when there is no digit. A value past 2^40 stays there (it is
// out of range for every field).
func strtol(s string, q int) (v int64, end int) {
	start := q
	for q < len(s) && isSpaceByte(s[q]) {
		q++
	}
	neg := false
	if q < len(s) && (s[q] == '+' || s[q] == '-') {
		neg = s[q] == '-'
		q++
	}
	ds := q
	for q < len(s) && s[q] >= '0' && s[q] <= '9' {
		if v < 1<<40 {
			v = v*10 + int64(s[q]-'0')
		}
		q++
	}
	if q == ds {
		return 0, start
	}
	if neg {
		v = -v
	}
	return v, q
}

// adjustPartialYear is adjust_partial_year_to_2020.
func adjustPartialYear(y int) int {
	switch {
	case y < 70:
		return y + 2000
	case y < 100:
		return y + 1900
	case y < 520:
		return y + 2000
	case y < 1000:
		return y + 1000
	}
	return y
}

// timestamp is do_to_timestamp's assembly of the fields, with its range
// checks (22008, 22007).
func (tm *tmFromChar) timestamp(src string) (days, tod int64, err error) {
	year, mon, mday := 0, 1, 1
	hour, min, sec := tm.hh, tm.mi, tm.ss
	if tm.clock12 {
		if hour < 1 || hour > 12 {
			return 0, 0, errDatetimeFormat("hour \"%d\" is invalid for the 12-hour clock", hour)
		}
		if tm.pm != 0 && hour < 12 {
			hour += 12
		} else if tm.pm == 0 && hour == 12 {
			hour = 0
		}
	}
	haveYear := tm.year != 0
	if haveYear {
		year = tm.year
		if year < 0 {
			year++
		}
	}
	if tm.dd != 0 {
		mday = tm.dd
	}
	if tm.mm != 0 {
		mon = tm.mm
	}
	haveMon, haveDay := haveYear || tm.mm != 0, haveYear || tm.dd != 0
	if tm.ddd != 0 && (mon <= 1 || mday <= 1) {
		if year == 0 {
			return 0, 0, errDatetimeFormat("cannot calculate day of year without year information")
		}
		leap := isLeap(int64(year))
		i, before := 1, 0
		for ; i <= 12; i++ {
			dm := daysIn(int64(year), i)
			if i == 2 && leap {
				dm = 29
			}
			if tm.ddd <= before+dm {
				break
			}
			before += dm
		}
		if i > 12 { // past the year's last day: PostgreSQL's table stops at 13
			i = 13
		}
		if mon <= 1 {
			mon = i
		}
		if mday <= 1 {
			mday = tm.ddd - before
		}
		haveMon, haveDay = true, true
	}
	overflow := func() error {
		return sqlerr.New(sqlerr.DatetimeFieldOverflow, "date/time field value out of range: %q", src)
	}
	if haveMon && (mon < 1 || mon > 12) {
		return 0, 0, overflow()
	}
	if haveDay && (mday < 1 || mday > 31) {
		return 0, 0, overflow()
	}
	if haveYear && haveMon && haveDay && mday > daysIn(int64(year), mon) {
		return 0, 0, overflow()
	}
	fsec := int64(tm.ms)*1000 + int64(tm.us)
	if hour < 0 || hour >= 24 || min < 0 || min >= 60 || sec < 0 || sec >= 60 || fsec < 0 || fsec >= 1_000_000 {
		return 0, 0, overflow()
	}
	if mon < 1 || mon > 12 {
		mon = 1 // not reached: the checks above cover a given month
	}
	if year > 5874897 {
		return 0, 0, sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range: %q", src)
	}
	days = daysFromCivil(int64(year), mon, 1) + int64(mday) - 1
	// PostgreSQL's Julian-day routines start at 4714-11-24 BC.
	if days < -2440588 {
		return 0, 0, sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range: %q", src)
	}
	return days, int64(hour)*usPerHour + int64(min)*usPerMin + int64(sec)*usPerSec + fsec, nil
}
