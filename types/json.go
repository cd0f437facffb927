package types

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
)

// JSON and JSONB values (kinds JSON and JSONB, arrow String).
//
// A json column holds its input text as written (PostgreSQL's json keeps
// it verbatim, once validated). A jsonb column holds the value in a binary
// layout (jsonb.go) that operators read without parsing; its text is
// exactly what PostgreSQL 15's jsonb_out prints for it: object keys
// sorted by length, then bytewise, the last of duplicate keys kept,
// ", " and ": " as separators, strings with escapes resolved and re-escaped
// as escape_json does, numbers as numeric_out prints them (so 1.0 stays 1.0
// and 1e2 becomes 100). Equal encodings are equal jsonb values, so
// hashing, grouping and joining work on the bytes; the reverse fails only
// for numbers of different scales (1.0 and 1), which = on jsonb treats as
// equal (JSONBEqual) and GROUP BY keeps apart (docs/decisions).

// JSONKind is the type of one JSON value.
type JSONKind uint8

// The JSON value types, in PostgreSQL's jsonb_typeof names.
const (
	JNull JSONKind = iota
	JString
	JNumber
	JBool
	JArray
	JObject
)

// TypeName is jsonb_typeof's name for k.
func (k JSONKind) TypeName() string {
	return [...]string{"null", "string", "number", "boolean", "array", "object"}[k]
}

// JSONValue is a parsed JSON value.
type JSONValue struct {
	Kind JSONKind
	// Str is a string's decoded text or a number's canonical numeric text.
	Str  string
	Bool bool
	// Elems are an array's elements or an object's values (beside Keys).
	Elems []*JSONValue
	// Keys are an object's keys: sorted and unique for jsonb, as written for json.
	Keys []string
	// Raw is the value's text as written (json only).
	Raw string
}

// Field returns the value of object key k, or nil. For jsonb the keys are
// unique; for json the last one wins, as json's -> returns.
func (v *JSONValue) Field(k string) *JSONValue {
	if v.Kind != JObject {
		return nil
	}
	for i := len(v.Keys) - 1; i >= 0; i-- {
		if v.Keys[i] == k {
			return v.Elems[i]
		}
	}
	return nil
}

// Index returns array element i (negative: from the end), or nil.
func (v *JSONValue) Index(i int64) *JSONValue {
	if v.Kind != JArray {
		return nil
	}
	if i < 0 {
		i += int64(len(v.Elems))
	}
	if i < 0 || i >= int64(len(v.Elems)) {
		return nil
	}
	return v.Elems[i]
}

// maxJSONDepth bounds nesting, as PostgreSQL's stack depth check does.
const maxJSONDepth = 6400

// jsonLexer is the scanning both JSON parsers share: the tree builder
// (jsonParser, ParseJSON) and the direct jsonb encoder (JSONBParser).
type jsonLexer struct {
	src   string
	pos   int
	jsonb bool // resolve \u0000 as an error, sort keys
	depth int
}

// jsonParser builds a value tree (ParseJSON).
type jsonParser struct{ jsonLexer }

func errJSON(detail string) error {
	return &sqlerr.Error{Code: sqlerr.InvalidTextRep, Msg: "invalid input syntax for type json", Detail: detail}
}

// ParseJSON parses s as PostgreSQL's json input does. For jsonb, object
// keys are sorted and deduplicated (the last value kept) and \u0000 is
// refused (22P05); for json, each value keeps its Raw text.
func ParseJSON(s string, jsonb bool) (*JSONValue, error) {
	p := &jsonParser{jsonLexer{src: s, jsonb: jsonb}}
	p.space()
	if p.pos == len(s) {
		return nil, errJSON("The input string ended unexpectedly.")
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(s) {
		return nil, errJSON("Expected end of input, but found " + strconv.Quote(p.token()) + ".")
	}
	return v, nil
}

func (p *jsonLexer) space() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// token is the text of the bad token at pos, for messages.
func (p *jsonLexer) token() string {
	end := p.pos
	for end < len(p.src) && isJSONIdent(p.src[end]) {
		end++
	}
	if end == p.pos && end < len(p.src) {
		_, n := utf8.DecodeRuneInString(p.src[end:])
		end += n
	}
	return p.src[p.pos:end]
}

func isJSONIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

func (p *jsonParser) value() (*JSONValue, error) {
	if p.pos >= len(p.src) {
		return nil, errJSON("The input string ended unexpectedly.")
	}
	start := p.pos
	var v *JSONValue
	var err error
	switch c := p.src[p.pos]; {
	case c == '{':
		v, err = p.object()
	case c == '[':
		v, err = p.array()
	case c == '"':
		var s string
		s, err = p.str()
		v = &JSONValue{Kind: JString, Str: s}
	case c == '-' || c >= '0' && c <= '9':
		v, err = p.number()
	default:
		tok := p.token()
		switch tok {
		case "true", "false":
			v = &JSONValue{Kind: JBool, Bool: tok == "true"}
		case "null":
			v = &JSONValue{Kind: JNull}
		default:
			return nil, errJSON("Token " + strconv.Quote(tok) + " is invalid.")
		}
		p.pos += len(tok)
	}
	if err != nil {
		return nil, err
	}
	if !p.jsonb {
		v.Raw = p.src[start:p.pos]
	}
	return v, nil
}

func (p *jsonLexer) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return &sqlerr.Error{Code: "54001", Msg: "stack depth limit exceeded"}
	}
	return nil
}

func (p *jsonParser) array() (*JSONValue, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++
	v := &JSONValue{Kind: JArray}
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.space()
		e, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Elems = append(v.Elems, e)
		if done, err := p.sep(']'); done || err != nil {
			return v, err
		}
	}
}

func (p *jsonParser) object() (*JSONValue, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++
	v := &JSONValue{Kind: JObject}
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		if err := p.keyStart(); err != nil {
			return nil, err
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if err := p.colon(); err != nil {
			return nil, err
		}
		e, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Keys = append(v.Keys, k)
		v.Elems = append(v.Elems, e)
		if done, err := p.sep('}'); err != nil {
			return nil, err
		} else if done {
			if p.jsonb {
				SortJSONKeys(v)
			}
			return v, nil
		}
	}
}

// keyStart checks that an object key (its opening quote) is at pos,
// after any white space.
func (p *jsonLexer) keyStart() error {
	p.space()
	if p.pos >= len(p.src) {
		return errJSON("The input string ended unexpectedly.")
	}
	if p.src[p.pos] != '"' {
		return errJSON("Expected string, but found " + strconv.Quote(p.token()) + ".")
	}
	return nil
}

// colon reads the colon after an object key and the white space around it.
func (p *jsonLexer) colon() error {
	p.space()
	if p.pos >= len(p.src) {
		return errJSON("The input string ended unexpectedly.")
	}
	if p.src[p.pos] != ':' {
		return errJSON("Expected \":\", but found " + strconv.Quote(p.token()) + ".")
	}
	p.pos++
	p.space()
	return nil
}

// sep reads what follows a container's element: a comma (more follow) or
// the closing byte (done).
func (p *jsonLexer) sep(close byte) (done bool, err error) {
	p.space()
	if p.pos >= len(p.src) {
		return false, errJSON("The input string ended unexpectedly.")
	}
	switch p.src[p.pos] {
	case ',':
		p.pos++
		return false, nil
	case close:
		p.pos++
		return true, nil
	}
	return false, errJSON("Expected \",\" or \"" + string(close) + "\", but found " + strconv.Quote(p.token()) + ".")
}

// SortJSONKeys puts an object's keys in jsonb's order (length, then
// bytes) and keeps the last value of a duplicated key.
func SortJSONKeys(v *JSONValue) {
	idx := make([]int, len(v.Keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return jsonKeyLess(v.Keys[idx[a]], v.Keys[idx[b]]) })
	keys := make([]string, 0, len(idx))
	elems := make([]*JSONValue, 0, len(idx))
	for n, i := range idx {
		if n+1 < len(idx) && v.Keys[idx[n+1]] == v.Keys[i] {
			continue // a later duplicate follows: it wins
		}
		keys = append(keys, v.Keys[i])
		elems = append(elems, v.Elems[i])
	}
	v.Keys, v.Elems = keys, elems
}

func jsonKeyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// str reads the string at pos (its opening quote): a substring of the
// input when it holds no escape.
func (p *jsonLexer) str() (string, error) {
	start := p.pos + 1
	for i := start; i < len(p.src); i++ {
		c := p.src[i]
		if c == '"' {
			p.pos = i + 1
			return p.src[start:i], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	b, err := p.appendStr(nil)
	return string(b), err
}

// appendStr appends the decoded string at pos (its opening quote) to b.
func (p *jsonLexer) appendStr(b []byte) ([]byte, error) {
	p.pos++ // opening quote
	start := p.pos
	for {
		if p.pos >= len(p.src) {
			return b, errJSON("The input string ended unexpectedly.")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			b = append(b, p.src[start:p.pos]...)
			p.pos++
			return b, nil
		case c < 0x20:
			return b, errJSON("Character with value 0x" + strconv.FormatInt(int64(c)+0x100, 16)[1:] + " must be escaped.")
		case c == '\\':
			b = append(b, p.src[start:p.pos]...)
			if p.pos+1 >= len(p.src) {
				return b, errJSON("The input string ended unexpectedly.")
			}
			e := p.src[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return b, err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 {
						return b, errJSON("Unicode low surrogate must follow a high surrogate.")
					}
					if !strings.HasPrefix(p.src[p.pos:], `\u`) {
						return b, errJSON("Unicode low surrogate must follow a high surrogate.")
					}
					p.pos += 2
					lo, err := p.hex4()
					if err != nil {
						return b, err
					}
					if lo < 0xDC00 || lo > 0xDFFF {
						return b, errJSON("Unicode low surrogate must follow a high surrogate.")
					}
					r = utf16.DecodeRune(r, lo)
				}
				if r == 0 {
					if p.jsonb {
						return b, &sqlerr.Error{Code: "22P05", Msg: "unsupported Unicode escape sequence", Detail: "\\u0000 cannot be converted to text."}
					}
					b = append(b, `\u0000`...) // json keeps its text; only jsonb resolves escapes
				} else {
					b = utf8.AppendRune(b, r)
				}
			default:
				return b, errJSON("Escape sequence \"\\" + string(e) + "\" is invalid.")
			}
			start = p.pos
		default:
			p.pos++
		}
	}
}

func (p *jsonLexer) hex4() (rune, error) {
	if p.pos+4 > len(p.src) {
		return 0, errJSON("\"\\u\" must be followed by four hexadecimal digits.")
	}
	var r rune
	for _, c := range []byte(p.src[p.pos : p.pos+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, errJSON("\"\\u\" must be followed by four hexadecimal digits.")
		}
		r = r<<4 | rune(c)
	}
	p.pos += 4
	return r, nil
}

func (p *jsonParser) number() (*JSONValue, error) {
	tok, err := p.numToken()
	if err != nil {
		return nil, err
	}
	c, err := canonNumber(tok)
	if err != nil {
		if p.jsonb {
			return nil, err
		}
		c = tok // json checks only the grammar, as PostgreSQL's json_in
	}
	return &JSONValue{Kind: JNumber, Str: c}, nil
}

// numToken reads the number at pos and returns its text.
func (p *jsonLexer) numToken() (string, error) {
	s := p.src
	i := p.pos
	if s[i] == '-' {
		i++
	}
	bad := func() (string, error) {
		end := i
		for end < len(s) && isJSONIdent(s[end]) || end < len(s) && (s[end] == '.' || s[end] == '-' || s[end] == '+') {
			end++
		}
		return "", errJSON("Token " + strconv.Quote(s[p.pos:max(end, p.pos+1)]) + " is invalid.")
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return bad()
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return bad()
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return bad()
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && isJSONIdent(s[i]) {
		return bad()
	}
	tok := s[p.pos:i]
	p.pos = i
	return tok, nil
}

// canonNumber is numeric_out(numeric_in(tok)) for a valid JSON number:
// the value with max(0, fraction digits - exponent) fraction digits, no
// exponent, no sign on zero.
func canonNumber(tok string) (string, error) {
	if strings.IndexAny(tok, "eE-") < 0 {
		return tok, nil // the common case: already canonical
	}
	b, err := appendCanonNumber(nil, tok)
	return string(b), err
}

// PostgreSQL 15's numeric range, as numeric_in checks it: an exponent
// below INT_MAX/2 in size, at most 16383 fraction digits (the display
// scale's 14 bits), the first significant digit below 10^131072 (a
// base-10000 weight that fits an int16).
const (
	numericMaxExp   = 1<<30 - 1 // INT_MAX / 2
	numericMaxScale = 16383
	numericMaxPow   = 131072
)

func errNumericRange() error {
	return sqlerr.New(sqlerr.NumericOutOfRange, "value overflows numeric format")
}

// appendCanonNumber appends canonNumber's text of tok to b.
func appendCanonNumber(b []byte, tok string) ([]byte, error) {
	neg := false
	if tok[0] == '-' {
		neg, tok = true, tok[1:]
	}
	mant, exp := tok, 0
	if k := strings.IndexAny(tok, "eE"); k >= 0 {
		mant = tok[:k]
		e, err := strconv.Atoi(tok[k+1:])
		if err != nil || e >= numericMaxExp || e <= -numericMaxExp {
			return b, errNumericRange()
		}
		exp = e
	}
	if exp == 0 && !neg {
		return append(b, mant...), nil
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	ilen := len(intPart)
	digit := func(k int) byte { // digit k of intPart+frac, 0 past either end
		switch {
		case k < 0 || k >= ilen+len(frac):
			return '0'
		case k < ilen:
			return intPart[k]
		}
		return frac[k-ilen]
	}
	point := ilen + exp // digits before the decimal point
	scale := max(0, len(frac)-exp)
	first := strings.IndexFunc(mant, func(r rune) bool { return r >= '1' && r <= '9' }) // the first significant digit
	if scale > numericMaxScale {
		return b, errNumericRange()
	}
	if first < 0 { // zero: no digit before the point but one 0
		point = 0
	} else {
		if first > ilen {
			first-- // the point
		}
		if point-1-first >= numericMaxPow {
			return b, errNumericRange()
		}
	}
	start := len(b)
	if neg {
		b = append(b, '-')
	}
	nonzero := false
	lead := true // no digit written yet: skip leading zeros
	for k := 0; k < point; k++ {
		d := digit(k)
		if lead && d == '0' {
			continue
		}
		lead = false
		nonzero = nonzero || d != '0'
		b = append(b, d)
	}
	if lead {
		b = append(b, '0')
	}
	if scale > 0 {
		b = append(b, '.')
		for k := 0; k < scale; k++ {
			d := digit(point + k)
			nonzero = nonzero || d != '0'
			b = append(b, d)
		}
	}
	if neg && !nonzero { // no sign on zero
		b = append(b[:start], b[start+1:]...)
	}
	return b, nil
}

// AppendJSONB appends v's canonical (jsonb_out) text.
func AppendJSONB(buf []byte, v *JSONValue) []byte {
	switch v.Kind {
	case JNull:
		return append(buf, "null"...)
	case JBool:
		if v.Bool {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case JNumber:
		return append(buf, v.Str...)
	case JString:
		return AppendJSONString(buf, v.Str)
	case JArray:
		buf = append(buf, '[')
		for i, e := range v.Elems {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = AppendJSONB(buf, e)
		}
		return append(buf, ']')
	}
	buf = append(buf, '{')
	for i, k := range v.Keys {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = AppendJSONString(buf, k)
		buf = append(buf, ": "...)
		buf = AppendJSONB(buf, v.Elems[i])
	}
	return append(buf, '}')
}

// AppendJSONString appends s quoted as PostgreSQL's escape_json does.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			buf = append(buf, `\"`...)
		case '\\':
			buf = append(buf, `\\`...)
		case '\b':
			buf = append(buf, `\b`...)
		case '\f':
			buf = append(buf, `\f`...)
		case '\n':
			buf = append(buf, `\n`...)
		case '\r':
			buf = append(buf, `\r`...)
		case '\t':
			buf = append(buf, `\t`...)
		default:
			if c < 0x20 {
				buf = append(buf, `\u00`...)
				buf = append(buf, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, '"')
}

// JSONBText returns v's canonical text.
func JSONBText(v *JSONValue) string { return string(AppendJSONB(nil, v)) }

// CanonJSONB parses s and returns its canonical jsonb text.
func CanonJSONB(s string) (string, error) {
	v, err := ParseJSON(s, true)
	if err != nil {
		return "", err
	}
	return JSONBText(v), nil
}

// JSONText is ->>'s text of v: a string's value, NULL for null (ok
// false), the canonical text otherwise (json: as written).
func JSONText(v *JSONValue, jsonb bool) (string, bool) {
	switch v.Kind {
	case JNull:
		return "", false
	case JString:
		return v.Str, true
	}
	if !jsonb {
		return v.Raw, true
	}
	return JSONBText(v), true
}

// parseJSONDatum is the input function of json and jsonb.
func parseJSONDatum(s string, t T) (Datum, error) {
	if t.Kind == JSON {
		if err := ValidateJSON(s); err != nil {
			return Null, err
		}
		return Str(s), nil
	}
	c, err := EncodeJSONB(s)
	return Str(c), err
}

// JSONBOf converts d of type t to a jsonb value as to_jsonb does.
func JSONBOf(d Datum, t T) (*JSONValue, error) {
	if d.Null {
		return &JSONValue{Kind: JNull}, nil
	}
	switch {
	case t.Kind == JSONB:
		return DecodeJSONB(d.S), nil
	case t.Kind == JSON:
		return ParseJSON(d.S, true)
	case t.Kind == Bool:
		return &JSONValue{Kind: JBool, Bool: d.I != 0}, nil
	case t.IsNumeric():
		s := TextOf(d, t)
		switch s {
		case "NaN", "Infinity", "-Infinity":
			return &JSONValue{Kind: JString, Str: s}, nil
		}
		c, err := canonNumber(s)
		if err != nil {
			return nil, err
		}
		return &JSONValue{Kind: JNumber, Str: c}, nil
	case t.Kind == Timestamp || t.Kind == Date:
		s := TextOf(d, t)
		if t.Kind == Timestamp && len(s) > 10 && s[10] == ' ' && !isInfiniteTS(d.I) {
			s = s[:10] + "T" + s[11:]
			if t.TZ && strings.HasSuffix(s, "+00") {
				s += ":00"
			}
		}
		return &JSONValue{Kind: JString, Str: s}, nil
	case t.Kind == TextArray:
		out := &JSONValue{Kind: JArray}
		et := ArrayElem(t)
		for i, e := range d.A.Elems {
			if d.A.IsNull(i) {
				out.Elems = append(out.Elems, &JSONValue{Kind: JNull})
				continue
			}
			ed, err := ParseText(e, et)
			if err != nil {
				return nil, err
			}
			ev, err := JSONBOf(ed, et)
			if err != nil {
				return nil, err
			}
			out.Elems = append(out.Elems, ev)
		}
		return out, nil
	case t.Kind == Record:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "to_jsonb of a record is not supported")
	}
	return &JSONValue{Kind: JString, Str: TextOf(d, t)}, nil
}

// castJSON converts between json/jsonb and other types (d not NULL):
// from text by the input function, to text by the output, jsonb to
// numbers and boolean when it holds one (22023 otherwise).
func castJSON(d Datum, from, to T, explicit bool) (Datum, error) {
	switch {
	case from.Kind == Text || from.Kind == Unknown:
		return parseJSONDatum(d.S, to)
	case to.Kind == Text:
		s := d.S
		if from.Kind == JSONB {
			s = JSONBOut(s)
		}
		s, err := fitVarchar(s, to, explicit)
		return Str(s), err
	case from.Kind == JSON && to.Kind == JSONB:
		c, err := EncodeJSONB(d.S)
		return Str(c), err
	case from.Kind == JSONB && to.Kind == JSON:
		return Str(JSONBOut(d.S)), nil
	case from.Kind == to.Kind:
		return d, nil
	case from.Kind == JSONB && (to.IsNumeric() || to.Kind == Bool):
		b := jbBytes(d.S)
		kind := JNumber
		if to.Kind == Bool {
			kind = JBool
		}
		if k := jbKind(b); k != kind {
			return Null, sqlerr.New(sqlerr.InvalidParameterValue, "cannot cast jsonb %s to type %s", k.TypeName(), to.String())
		}
		if kind == JBool {
			return Boolean(b[0] == jbTrue), nil
		}
		if to.IsFloat() {
			return ParseText(b[1:], to)
		}
		n, err := ParseText(b[1:], TNumeric)
		if err != nil {
			return Null, err
		}
		return CastDatum(n, TNumeric, to)
	}
	return Null, errCannotCast(from, to)
}

// canCastJSON is CanCast for pairs with a json type.
func canCastJSON(from, to T) bool {
	switch {
	case from.Kind == Text || from.Kind == Unknown || to.Kind == Text:
		return true
	case (from.Kind == JSON || from.Kind == JSONB) && (to.Kind == JSON || to.Kind == JSONB):
		return true
	case from.Kind == JSONB && (to.IsNumeric() || to.Kind == Bool):
		return true
	}
	return false
}

// JSONRows lists the rows of a jsonb set-returning function over the
// jsonb datum s: jsonb_array_elements[_text] give the elements (jsonb,
// or text as ->> gives it), jsonb_each[_text] (key, value) records.
func JSONRows(fn, s string) ([]Datum, error) {
	b := jbBytes(s)
	text := strings.HasSuffix(fn, "_text")
	val := func(e string) Datum {
		if !text {
			return Str(e)
		}
		if t, ok := JSONBAsText(e); ok {
			return Str(t)
		}
		return Null
	}
	if strings.HasPrefix(fn, "jsonb_each") {
		if b[0] != jbObject {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "cannot call %s on a non-object", fn)
		}
		out := make([]Datum, jbCount(b))
		for i := range out {
			out[i] = Datum{R: &RecordValue{Fields: []Datum{Str(jbKey(b, i)), val(jbValue(b, i))}}}
		}
		return out, nil
	}
	switch b[0] {
	case jbArray:
	case jbObject:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "cannot extract elements from an object")
	default:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "cannot extract elements from a scalar")
	}
	out := make([]Datum, jbCount(b))
	for i := range out {
		out[i] = val(jbElem(b, i))
	}
	return out, nil
}
