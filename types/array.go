package types

import (
	"encoding/binary"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamdb/streamdb/sqlerr"
)

// Array is the value of a text[]: a one-dimensional array with lower
// bound 1, as regexp_match returns. Null[i] marks element i NULL (Null
// may be nil when no element is).
type Array struct {
	Elems []string
	Null  []bool
}

// IsNull reports whether element i (0-based) is NULL.
func (a *Array) IsNull(i int) bool { return a.Null != nil && a.Null[i] }

// TextArrayAt returns row i (not NULL) of an array of t, each element as
// its type's output text. The list's elements are in the element type's
// Arrow layout (ArrayArrow); a List<String> (the layout before typed
// lists, or text[]) is read as the elements' text.
func TextArrayAt(l *array.List, i int, t T) *Array {
	start, end := l.ValueOffsets(i)
	out := &Array{Elems: make([]string, end-start)}
	vals := l.ListValues()
	elem := ArrayElem(t)
	str, _ := vals.(*array.String)
	var buf []byte
	for j := start; j < end; j++ {
		if vals.IsNull(int(j)) {
			if out.Null == nil {
				out.Null = make([]bool, end-start)
			}
			out.Null[j-start] = true
			continue
		}
		if str != nil {
			out.Elems[j-start] = str.Value(int(j))
			continue
		}
		buf = AppendText(buf[:0], DatumAt(vals, int(j), elem), elem)
		out.Elems[j-start] = string(buf)
	}
	return out
}

// appendTextArray appends a (elements as their output text, checked by
// checkArrayElems) to b, a builder of t's layout: each element is read
// back into its type's Arrow layout.
func appendTextArray(b ListAppender, a *Array, t T) {
	b.Append(true)
	vb := b.ValueBuilder()
	if sb, ok := vb.(*array.StringBuilder); ok {
		for i, s := range a.Elems {
			if a.IsNull(i) {
				sb.AppendNull()
			} else {
				sb.Append(s)
			}
		}
		return
	}
	elem := ArrayElem(t)
	for i, s := range a.Elems {
		if a.IsNull(i) {
			vb.AppendNull()
			continue
		}
		d, err := ParseText(s, elem)
		if err != nil { // not written by checkArrayElems: a bug upstream
			panic("types: array element " + quote(s) + " is not a " + elem.String() + ": " + err.Error())
		}
		AppendDatum(vb, d, elem)
	}
}

// AppendTextArray appends array_out's text: {a,b,NULL}, with an element
// double-quoted (and " and \ backslash-escaped) when it is empty, is the
// word NULL in any case, or holds a space, a quote, a backslash, a brace
// or a comma.
func AppendTextArray(buf []byte, a *Array) []byte {
	buf = append(buf, '{')
	for i, s := range a.Elems {
		if i > 0 {
			buf = append(buf, ',')
		}
		if a.IsNull(i) {
			buf = append(buf, "NULL"...)
			continue
		}
		if !needsArrayQuote(s) {
			buf = append(buf, s...)
			continue
		}
		buf = append(buf, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				buf = append(buf, '\\')
			}
			buf = append(buf, s[j])
		}
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

func needsArrayQuote(s string) bool {
	if s == "" || strings.EqualFold(s, "null") {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '{', '}', ',', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}

// ParseTextArray reads array_in's text form of a one-dimensional text[]
// ('{a,"b c",NULL}'); a multidimensional one ('{{1,2},{3,4}}') is 0A000,
// other forms fail with 22P02.
func ParseTextArray(s string) (*Array, error) {
	bad := func() error {
		return sqlerr.New(sqlerr.InvalidTextRep, "malformed array literal: %s", quote(s))
	}
	p := trimSpace(s)
	if len(p) < 2 || p[0] != '{' || p[len(p)-1] != '}' {
		return nil, bad()
	}
	p = p[1 : len(p)-1]
	if q := trimSpace(p); q != "" && q[0] == '{' {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "multidimensional arrays are not supported: %s", quote(s))
	}
	out := &Array{}
	if trimSpace(p) == "" {
		return out, nil
	}
	i := 0
	for {
		for i < len(p) && isSpace(p[i]) {
			i++
		}
		var elem []byte
		quoted := false
		if i < len(p) && p[i] == '"' {
			quoted = true
			i++
			for ; i < len(p) && p[i] != '"'; i++ {
				if p[i] == '\\' && i+1 < len(p) {
					i++
				}
				elem = append(elem, p[i])
			}
			if i == len(p) {
				return nil, bad()
			}
			i++
			for i < len(p) && isSpace(p[i]) {
				i++
			}
		} else {
			for ; i < len(p) && p[i] != ','; i++ {
				switch p[i] {
				case '{', '}', '"':
					return nil, bad()
				case '\\':
					if i+1 < len(p) {
						i++
					}
				}
				elem = append(elem, p[i])
			}
			elem = []byte(strings.TrimRight(string(elem), " \t\n\r\v\f"))
			if len(elem) == 0 {
				return nil, bad()
			}
		}
		null := !quoted && strings.EqualFold(string(elem), "null")
		if null && out.Null == nil {
			out.Null = make([]bool, len(out.Elems), len(out.Elems)+1)
		}
		if out.Null != nil {
			out.Null = append(out.Null, null)
		}
		if null {
			elem = nil
		}
		out.Elems = append(out.Elems, string(elem))
		if i == len(p) {
			return out, nil
		}
		if p[i] != ',' {
			return nil, bad()
		}
		i++
	}
}

// appendTextArrayBinary writes array_send's layout: ndim, has-nulls flag,
// element type, then per dimension its length and lower bound, then each
// element as a length (-1: NULL) and its bytes.
func appendTextArrayBinary(buf []byte, a *Array) []byte {
	if len(a.Elems) == 0 {
		buf = binary.BigEndian.AppendUint32(buf, 0)
		buf = binary.BigEndian.AppendUint32(buf, 0)
		return binary.BigEndian.AppendUint32(buf, OIDText)
	}
	hasNull := arrayHasNullFlag(a)
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint32(buf, hasNull)
	buf = binary.BigEndian.AppendUint32(buf, OIDText)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(a.Elems)))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	for i, s := range a.Elems {
		if a.IsNull(i) {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	return buf
}

// parseTextArrayBinary reads array_recv's layout of a one-dimensional
// text[] (elements typed text, varchar or name), as drivers send an array
// parameter in binary.
func parseTextArrayBinary(b []byte, t T) (Datum, error) {
	bad := func() (Datum, error) { return Null, errBinary(t) }
	elemT := ArrayElem(t)
	u32 := func() (uint32, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := binary.BigEndian.Uint32(b)
		b = b[4:]
		return v, true
	}
	ndim, ok1 := u32()
	_, ok2 := u32() // has-nulls flag: the lengths say which are NULL
	elem, ok3 := u32()
	if !ok1 || !ok2 || !ok3 {
		return bad()
	}
	switch {
	case elemT.Kind == Text && (elem == OIDText || elem == 1043 || elem == 19):
	case elemT.Kind != Text && elem == elemT.OID():
	default:
		return Null, sqlerr.New(sqlerr.DatatypeMismatch, "binary data has array element type %d (%s) instead of expected %d (%s)",
			elem, oidName(elem), elemT.OID(), elemT)
	}
	switch ndim {
	case 0:
		if len(b) != 0 {
			return bad()
		}
		return Datum{A: &Array{}}, nil
	case 1:
	default:
		return Null, sqlerr.New(sqlerr.FeatureNotSupported, "arrays of %d dimensions are not supported", ndim)
	}
	n, ok1 := u32()
	_, ok2 = u32() // lower bound
	if !ok1 || !ok2 || int64(n) > int64(len(b))/4 {
		return bad()
	}
	a := &Array{Elems: make([]string, n)}
	for i := range a.Elems {
		l, ok := u32()
		if !ok {
			return bad()
		}
		if l == 0xFFFFFFFF {
			if a.Null == nil {
				a.Null = make([]bool, n)
			}
			a.Null[i] = true
			continue
		}
		if int64(l) > int64(len(b)) {
			return bad()
		}
		if elemT.Kind != Text {
			d, err := ParseBinary(b[:l], elemT)
			if err != nil {
				return Null, err
			}
			a.Elems[i] = TextOf(d, elemT)
			b = b[l:]
			continue
		}
		if err := CheckText(b[:l]); err != nil {
			return Null, err
		}
		a.Elems[i] = string(b[:l])
		b = b[l:]
	}
	if len(b) != 0 {
		return bad()
	}
	return Datum{A: a}, nil
}

// oidName is the name of a type OID for messages ("unknown" if streamdb
// has no such type).
func oidName(oid uint32) string {
	if t, ok := FromOID(oid); ok {
		return t.String()
	}
	return "unknown"
}
