package types

// The JSON parser before JSONBParser (main at 64c566f, types/json.go),
// kept verbatim but for its names as the differential tests' oracle: a
// value tree, then AppendJSONBBinary.

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
)

type oldJSONParser struct {
	src   string
	pos   int
	jsonb bool // resolve \u0000 as an error, sort keys
	depth int
}

// oldParseJSON parses s as PostgreSQL's json input does. For jsonb, object
// keys are sorted and deduplicated (the last value kept) and \u0000 is
// refused (22P05); for json, each value keeps its Raw text.
func oldParseJSON(s string, jsonb bool) (*JSONValue, error) {
	p := &oldJSONParser{src: s, jsonb: jsonb}
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

func (p *oldJSONParser) space() {
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
func (p *oldJSONParser) token() string {
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

func (p *oldJSONParser) value() (*JSONValue, error) {
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

func (p *oldJSONParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return &sqlerr.Error{Code: "54001", Msg: "stack depth limit exceeded"}
	}
	return nil
}

func (p *oldJSONParser) array() (*JSONValue, error) {
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
		p.space()
		if p.pos >= len(p.src) {
			return nil, errJSON("The input string ended unexpectedly.")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return nil, errJSON("Expected \",\" or \"]\", but found " + strconv.Quote(p.token()) + ".")
		}
	}
}

func (p *oldJSONParser) object() (*JSONValue, error) {
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
		p.space()
		if p.pos >= len(p.src) {
			return nil, errJSON("The input string ended unexpectedly.")
		}
		if p.src[p.pos] != '"' {
			return nil, errJSON("Expected string, but found " + strconv.Quote(p.token()) + ".")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.src) {
			return nil, errJSON("The input string ended unexpectedly.")
		}
		if p.src[p.pos] != ':' {
			return nil, errJSON("Expected \":\", but found " + strconv.Quote(p.token()) + ".")
		}
		p.pos++
		p.space()
		e, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Keys = append(v.Keys, k)
		v.Elems = append(v.Elems, e)
		p.space()
		if p.pos >= len(p.src) {
			return nil, errJSON("The input string ended unexpectedly.")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if p.jsonb {
				oldSortJSONKeys(v)
			}
			return v, nil
		default:
			return nil, errJSON("Expected \",\" or \"}\", but found " + strconv.Quote(p.token()) + ".")
		}
	}
}

// oldSortJSONKeys puts an object's keys in jsonb's order (length, then
// bytes) and keeps the last value of a duplicated key.
func oldSortJSONKeys(v *JSONValue) {
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

func (p *oldJSONParser) str() (string, error) {
	p.pos++ // opening quote
	var b []byte
	start := p.pos
	for {
		if p.pos >= len(p.src) {
			return "", errJSON("The input string ended unexpectedly.")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			s := p.src[start:p.pos]
			if b != nil {
				s = string(append(b, s...))
			}
			p.pos++
			return s, nil
		case c < 0x20:
			return "", errJSON("Character with value 0x" + strconv.FormatInt(int64(c)+0x100, 16)[1:] + " must be escaped.")
		case c == '\\':
			b = append(b, p.src[start:p.pos]...)
			if p.pos+1 >= len(p.src) {
				return "", errJSON("The input string ended unexpectedly.")
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
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 {
						return "", errJSON("Unicode low surrogate must follow a high surrogate.")
					}
					if !strings.HasPrefix(p.src[p.pos:], `\u`) {
						return "", errJSON("Unicode low surrogate must follow a high surrogate.")
					}
					p.pos += 2
					lo, err := p.hex4()
					if err != nil {
						return "", err
					}
					if lo < 0xDC00 || lo > 0xDFFF {
						return "", errJSON("Unicode low surrogate must follow a high surrogate.")
					}
					r = utf16.DecodeRune(r, lo)
				}
				if r == 0 {
					if p.jsonb {
						return "", &sqlerr.Error{Code: "22P05", Msg: "unsupported Unicode escape sequence", Detail: "\\u0000 cannot be converted to text."}
					}
					b = append(b, `\u0000`...) // json keeps its text; only jsonb resolves escapes
				} else {
					b = utf8.AppendRune(b, r)
				}
			default:
				return "", errJSON("Escape sequence \"\\" + string(e) + "\" is invalid.")
			}
			start = p.pos
		default:
			p.pos++
		}
	}
}

func (p *oldJSONParser) hex4() (rune, error) {
	if p.pos+4 > len(p.src) {
		return 0, errJSON("\"\\u\" must be followed by four hexadecimal digits.")
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+4], 16, 32)
	if err != nil {
		return 0, errJSON("\"\\u\" must be followed by four hexadecimal digits.")
	}
	p.pos += 4
	return rune(v), nil
}

func (p *oldJSONParser) number() (*JSONValue, error) {
	s := p.src
	i := p.pos
	if s[i] == '-' {
		i++
	}
	bad := func() (*JSONValue, error) {
		end := i
		for end < len(s) && isJSONIdent(s[end]) || end < len(s) && (s[end] == '.' || s[end] == '-' || s[end] == '+') {
			end++
		}
		return nil, errJSON("Token " + strconv.Quote(s[p.pos:max(end, p.pos+1)]) + " is invalid.")
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
	c, err := oldCanonNumber(tok)
	if err != nil {
		return nil, err
	}
	return &JSONValue{Kind: JNumber, Str: c}, nil
}

// oldCanonNumber is numeric_out(numeric_in(tok)) for a valid JSON number:
// the value with max(0, fraction digits - exponent) fraction digits, no
// exponent, no sign on zero.
func oldCanonNumber(tok string) (string, error) {
	neg := false
	if tok[0] == '-' {
		neg, tok = true, tok[1:]
	}
	mant, exp := tok, 0
	if k := strings.IndexAny(tok, "eE"); k >= 0 {
		mant = tok[:k]
		e, err := strconv.Atoi(tok[k+1:])
		if err != nil || e > 1000 || e < -1000 {
			return "", sqlerr.New(sqlerr.NumericOutOfRange, "value overflows numeric format")
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if exp == 0 && !neg {
		return mant, nil // the common case: already canonical
	}
	digits := intPart + frac
	point := len(intPart) + exp // digits before the decimal point
	scale := max(0, len(frac)-exp)
	var b strings.Builder
	if point <= 0 {
		b.WriteByte('0')
	} else {
		ip := digits
		if point < len(digits) {
			ip = digits[:point]
		}
		for k := len(digits); k < point; k++ {
			ip += "0"
		}
		ip = strings.TrimLeft(ip, "0")
		if ip == "" {
			ip = "0"
		}
		b.WriteString(ip)
	}
	if scale > 0 {
		b.WriteByte('.')
		for k := 0; k < scale; k++ {
			idx := point + k
			if idx >= 0 && idx < len(digits) {
				b.WriteByte(digits[idx])
			} else {
				b.WriteByte('0')
			}
		}
	}
	out := b.String()
	if neg && strings.Trim(out, "0.") != "" {
		out = "-" + out
	}
	return out, nil
}
