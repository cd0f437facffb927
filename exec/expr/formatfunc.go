package expr

import (
	"strings"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// format(fmt, args...) as PostgreSQL's text_format: %s (text, NULL as
// nothing), %I (quote_ident; NULL is 22004), %L (quote_literal; NULL as
// NULL) and %%, each with an optional argument position n$, a - flag
// and a width (digits, * or *n$) counted in characters. The arguments
// arrive as text (the binder applies their output functions).

func errFormat(msg string, a ...any) error {
	return sqlerr.New(sqlerr.InvalidParameterValue, msg, a...)
}

func formatKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		f := strColOf(args[0])
		cols := nullableStrColsOf(args[1:])
		return c.strMapNull(t, args[:1], n, func(dst []byte, i int) ([]byte, bool, error) {
			arg := func(k int) (string, bool) { return cols.at(k, i) }
			out, err := appendFormat(dst, f.at(i), len(cols.cols), arg)
			return out, false, err
		})
	}
}

// appendFormat appends format(f, args...) to dst; arg(k) is argument k
// (0-based) of nargs and whether it is NULL.
func appendFormat(dst []byte, f string, nargs int, arg func(k int) (string, bool)) ([]byte, error) {
	next := 0
	take := func(pos int) (string, bool, error) {
		if pos == 0 {
			pos = next + 1
		}
		if pos > nargs {
			return "", false, errFormat("too few arguments for format()")
		}
		next = pos
		s, isNull := arg(pos - 1)
		return s, isNull, nil
	}
	// number reads digits at f[k:]; ok is false when there are none.
	number := func(k int) (v, end int, ok bool, err error) {
		end = k
		for end < len(f) && f[end] >= '0' && f[end] <= '9' {
			if v > (1<<31-1-9)/10 {
				return 0, end, false, errFormat("number is out of range")
			}
			v = v*10 + int(f[end]-'0')
			end++
		}
		return v, end, end > k, nil
	}
	unterminated := errFormat("unterminated format() type specifier")
	for k := 0; k < len(f); k++ {
		if f[k] != '%' {
			dst = append(dst, f[k])
			continue
		}
		k++
		if k >= len(f) {
			return dst, unterminated
		}
		if f[k] == '%' {
			dst = append(dst, '%')
			continue
		}
		pos, width, left := 0, 0, false
		v, end, ok, err := number(k)
		if err != nil {
			return dst, err
		}
		if ok && end < len(f) && f[end] == '$' {
			if v == 0 {
				return dst, errFormat("format specifies argument 0, but arguments are numbered from 1")
			}
			pos, k = v, end+1
		}
		for k < len(f) && f[k] == '-' {
			left = true
			k++
		}
		switch {
		case k < len(f) && f[k] == '*':
			k++
			wpos := 0
			if v, end, ok, err := number(k); err != nil {
				return dst, err
			} else if ok {
				if end >= len(f) || f[end] != '$' {
					return dst, unterminated
				}
				if v == 0 {
					return dst, errFormat("format specifies argument 0, but arguments are numbered from 1")
				}
				wpos, k = v, end+1
			}
			s, isNull, err := take(wpos)
			if err != nil {
				return dst, err
			}
			if !isNull {
				w, err := parseInt32(s)
				if err != nil {
					return dst, err
				}
				if w < 0 {
					left, w = true, -w
				}
				width = w
			}
		default:
			v, end, ok, err := number(k)
			if err != nil {
				return dst, err
			}
			if ok {
				width, k = v, end
			}
		}
		if k >= len(f) {
			return dst, unterminated
		}
		typ := f[k]
		if typ != 's' && typ != 'I' && typ != 'L' {
			r, _ := utf8.DecodeRuneInString(f[k:])
			return dst, errFormat("unrecognized format() type specifier \"%c\"", r)
		}
		s, isNull, err := take(pos)
		if err != nil {
			return dst, err
		}
		switch {
		case typ == 'I' && isNull:
			return dst, sqlerr.New(sqlerr.NullValueNotAllowed, "null values cannot be formatted as an SQL identifier")
		case typ == 'I':
			s = QuoteIdent(s)
		case typ == 'L' && isNull:
			s = "NULL"
		case typ == 'L':
			s = quoteLiteral(s)
		}
		pad := width - utf8.RuneCountInString(s)
		if !left {
			for ; pad > 0; pad-- {
				dst = append(dst, ' ')
			}
		}
		dst = append(dst, s...)
		for ; pad > 0; pad-- {
			dst = append(dst, ' ')
		}
	}
	return dst, nil
}

// quoteLiteral is PostgreSQL's quote_literal: quotes doubled, and with a
// backslash the E” form with backslashes doubled.
func quoteLiteral(s string) string {
	q := strings.ReplaceAll(s, "'", "''")
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(q, `\`, `\\`) + "'"
	}
	return "'" + q + "'"
}

func parseInt32(s string) (int, error) {
	d, err := types.ParseText(s, types.TInt32)
	if err != nil {
		return 0, err
	}
	return int(d.I), nil
}
