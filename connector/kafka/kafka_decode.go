package kafka

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Decoding Kafka messages straight into Arrow builders: one msgScanner per
// reader finds the byte spans of the source's columns in a message (the
// members of a JSON object by name, or the fields of a CSV line), and
// appendSpan converts a span into its column's builder. Nothing is
// allocated per message on the common paths (integers, floats, booleans,
// text without a length limit, numbers in timestamp columns, metadata);
// other types are parsed through their text syntax.

// span is a value's bytes in a message: [from, to), or, if esc, bytes
// that need unescaping (a JSON string with backslashes, a CSV field with
// doubled quotes). kind: 0 absent, 's' a JSON string (the bytes between
// the quotes) or CSV field, 'n' a JSON number, 'b' true/false, 'z' null,
// 'o' an object or array (its whole text).
type span struct {
	from, to int
	kind     byte
	esc      bool
}

// msgScanner is a split's reusable message scanner.
type msgScanner struct {
	index   map[string]int // JSON member name -> payload column
	spans   []span         // per payload column
	scratch []byte         // unescaped bytes
	key     []byte         // an escaped member name, unescaped
}

func newMsgScanner(c *kafka) *msgScanner {
	s := &msgScanner{index: map[string]int{}, spans: make([]span, c.payload)}
	k := 0
	for _, col := range c.cols {
		if col.meta == "" {
			s.index[col.name] = k
			k++
		}
	}
	return s
}

func errJSON(msg string, at int) error {
	return sqlerr.New(sqlerr.InvalidTextRep, "malformed json message: %s at byte %d", msg, at)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanJSON finds the spans of the payload columns among the top-level
// members of the JSON object b (a later duplicate member wins; members
// that are no column are checked and skipped).
func (s *msgScanner) scanJSON(b []byte) error {
	clear(s.spans)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errJSON("not an object", i)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return errJSON("a member name must be a string", i)
			}
			from, to, esc, err := scanString(b, i)
			if err != nil {
				return err
			}
			name := b[from:to]
			if esc {
				if s.key, err = unescapeJSON(s.key[:0], name); err != nil {
					return err
				}
				name = s.key
			}
			col, want := s.index[string(name)]
			i = skipSpace(b, to+1)
			if i >= len(b) || b[i] != ':' {
				return errJSON("':' expected", i)
			}
			i = skipSpace(b, i+1)
			sp, next, err := scanValue(b, i, 0)
			if err != nil {
				return err
			}
			if want {
				s.spans[col] = sp
			}
			i = skipSpace(b, next)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return errJSON("',' or '}' expected", i)
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return errJSON("data after the object", i)
	}
	return nil
}

// scanString scans the JSON string whose quote is at b[i]: its contents
// are b[from:to] (to is the closing quote); esc if it has escapes.
func scanString(b []byte, i int) (from, to int, esc bool, err error) {
	from = i + 1
	for j := from; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return from, j, esc, nil
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return 0, 0, false, errJSON("control character in a string", j)
		}
	}
	return 0, 0, false, errJSON("unterminated string", i)
}

// maxDepth bounds the nesting of objects and arrays a message may have.
const maxDepth = 1000

// scanValue checks the JSON value at b[i] and returns its span and the
// index after it.
func scanValue(b []byte, i, depth int) (span, int, error) {
	if i >= len(b) {
		return span{}, i, errJSON("value expected", i)
	}
	switch c := b[i]; {
	case c == '"':
		from, to, esc, err := scanString(b, i)
		return span{from: from, to: to, kind: 's', esc: esc}, to + 1, err
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return span{}, i, errJSON("nested too deep", i)
		}
		end, err := skipComposite(b, i, depth+1)
		return span{from: i, to: end, kind: 'o'}, end, err
	case c == 't':
		return literal(b, i, "true", 'b')
	case c == 'f':
		return literal(b, i, "false", 'b')
	case c == 'n':
		return literal(b, i, "null", 'z')
	case c == '-' || (c >= '0' && c <= '9'):
		end, err := scanNumber(b, i)
		return span{from: i, to: end, kind: 'n'}, end, err
	}
	return span{}, i, errJSON("invalid character", i)
}

func literal(b []byte, i int, lit string, kind byte) (span, int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return span{}, i, errJSON("invalid literal", i)
	}
	return span{from: i, to: i + len(lit), kind: kind}, i + len(lit), nil
}

// scanNumber checks a JSON number: -?(0|[1-9]digits)(.digits)?([eE][+-]?digits)?
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return i, errJSON("invalid number", start)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, errJSON("invalid number", start)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, errJSON("invalid number", start)
		}
	}
	return i, nil
}

// skipComposite checks the object or array at b[i] and returns the index
// after it.
func skipComposite(b []byte, i, depth int) (int, error) {
	obj := b[i] == '{'
	close := byte(']')
	if obj {
		close = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == close {
		return i + 1, nil
	}
	for {
		if obj {
			if i >= len(b) || b[i] != '"' {
				return i, errJSON("a member name must be a string", i)
			}
			_, to, _, err := scanString(b, i)
			if err != nil {
				return i, err
			}
			i = skipSpace(b, to+1)
			if i >= len(b) || b[i] != ':' {
				return i, errJSON("':' expected", i)
			}
			i = skipSpace(b, i+1)
		}
		_, next, err := scanValue(b, i, depth)
		if err != nil {
			return i, err
		}
		i = skipSpace(b, next)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == close {
			return i + 1, nil
		}
		return i, errJSON("',' or a closing bracket expected", i)
	}
}

// unescapeJSON appends the unescaped contents of a JSON string to dst.
func unescapeJSON(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(s) {
			return dst, errJSON("bad escape", i)
		}
		switch s[i] {
		case '"', '\\', '/':
			dst = append(dst, s[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return dst, errJSON("bad \\u escape", i)
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2, ok = hex4(s, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, errJSON("bad escape", i)
		}
	}
	return dst, nil
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func errCSV(format string, args ...any) error {
	return sqlerr.New(sqlerr.BadCopyFileFormat, format, args...)
}

// scanCSV finds the fields of the message's first CSV record (RFC 4180:
// quoted fields may hold commas, newlines and doubled quotes; a quote in
// an unquoted field is an error) and checks there are want of them.
func (s *msgScanner) scanCSV(b []byte, want int) error {
	n := 0
	i := 0
	put := func(sp span) {
		if n < len(s.spans) {
			s.spans[n] = sp
		}
		n++
	}
	for {
		if i < len(b) && b[i] == '"' {
			from, esc := i+1, false
			j := from
			for {
				if j >= len(b) {
					return errCSV("malformed csv: extraneous or missing \" in quoted-field")
				}
				if b[j] == '"' {
					if j+1 < len(b) && b[j+1] == '"' {
						esc = true
						j += 2
						continue
					}
					break
				}
				j++
			}
			put(span{from: from, to: j, kind: 's', esc: esc})
			i = j + 1
			if i < len(b) && b[i] != ',' && b[i] != '\n' && b[i] != '\r' {
				return errCSV("malformed csv: extraneous or missing \" in quoted-field")
			}
		} else {
			j := i
			for j < len(b) && b[j] != ',' && b[j] != '\n' && b[j] != '\r' {
				if b[j] == '"' {
					return errCSV("malformed csv: bare \" in non-quoted-field")
				}
				j++
			}
			put(span{from: i, to: j, kind: 's'})
			i = j
		}
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		break // the end of the message or of its first line
	}
	if n == 1 && len(b) == 0 {
		n = 0 // an empty message has no fields
	}
	if n != want {
		return errCSV("csv message has %d fields, the source %d", n, want)
	}
	return nil
}

// text returns a span's bytes, unescaped into the scratch buffer if needed.
func (s *msgScanner) text(b []byte, sp span, csv bool) ([]byte, error) {
	raw := b[sp.from:sp.to]
	if !sp.esc {
		return raw, nil
	}
	s.scratch = s.scratch[:0]
	if !csv {
		return unescapeJSON(s.scratch, raw)
	}
	for i := 0; i < len(raw); i++ {
		s.scratch = append(s.scratch, raw[i])
		if raw[i] == '"' {
			i++ // the doubled quote
		}
	}
	return s.scratch, nil
}

// appendSpan appends the value of span sp of message b to builder bl of
// type t. JSON: a string or a number in t's text syntax, true/false a
// boolean, null or absent NULL, an object or array its JSON text in a
// text column, a number in a timestamp column epoch milliseconds, any
// value but null its JSON in a json or jsonb column. CSV: a
// field in t's text syntax, empty NULL.
func (s *msgScanner) appendSpan(bl array.Builder, t types.T, b []byte, sp span, csv bool) error {
	if sp.kind == 0 || sp.kind == 'z' || (csv && sp.from == sp.to) {
		bl.AppendNull()
		return nil
	}
	if !csv && (t.Kind == types.JSON || t.Kind == types.JSONB) {
		// The member's JSON itself (a string with its quotes): the
		// column's input function canonicalises jsonb.
		raw := b[sp.from:sp.to]
		if sp.kind == 's' {
			raw = b[sp.from-1 : sp.to+1]
		}
		if err := types.CheckText(raw); err != nil {
			return err
		}
		d, err := types.ParseText(string(raw), t)
		if err != nil {
			return err
		}
		types.AppendDatum(bl, d, t)
		return nil
	}
	if !csv {
		switch sp.kind {
		case 'o':
			if t.Kind != types.Text {
				what := "object"
				if b[sp.from] == '[' {
					what = "array"
				}
				return sqlerr.New(sqlerr.InvalidTextRep, "a JSON %s cannot be %s", what, t)
			}
		case 'b':
			if t.Kind != types.Bool && t.Kind != types.Text {
				return sqlerr.New(sqlerr.InvalidTextRep, "a JSON boolean cannot be %s", t)
			}
		case 'n':
			if t.Kind == types.Timestamp {
				ms, ok := parseInt(b[sp.from:sp.to])
				if !ok {
					return sqlerr.New(sqlerr.InvalidTextRep, "invalid timestamp %s", b[sp.from:sp.to])
				}
				bl.(*array.Int64Builder).Append(ms * 1000)
				return nil
			}
		}
	}
	v, err := s.text(b, sp, csv)
	if err != nil {
		return err
	}
	// Fast paths, no allocation.
	switch t.Kind {
	case types.Int64:
		if n, ok := parseInt(v); ok {
			bl.(*array.Int64Builder).Append(n)
			return nil
		}
	case types.Int32, types.Int16:
		if n, ok := parseInt(v); ok && inRange(n, t.Kind) {
			bl.(*array.Int64Builder).Append(n)
			return nil
		}
	case types.Float64:
		if !plainNumber(v) {
			break
		}
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			bl.(*array.Float64Builder).Append(f)
			return nil
		}
	case types.Bool:
		switch string(v) {
		case "true":
			bl.(*array.BooleanBuilder).Append(true)
			return nil
		case "false":
			bl.(*array.BooleanBuilder).Append(false)
			return nil
		}
	case types.Text:
		// Text from a message is held to the rules of text from a client
		// (valid UTF-8, no NUL: 22021), so a bad message is a bad row
		// under job.error_policy, not a stored value PostgreSQL refuses.
		if err := types.CheckText(v); err != nil {
			return err
		}
		if t.Prec == 0 {
			bl.(*array.StringBuilder).BinaryBuilder.Append(v)
			return nil
		}
	}
	// The text syntax's parser reads a view of the bytes, not a copy: the
	// datum goes into the builder (which copies) before the bytes change,
	// and errors format their own copy of the text.
	if len(v) == 0 {
		v = []byte{}
	}
	d, err := types.ParseText(unsafe.String(unsafe.SliceData(v), len(v)), t)
	if err != nil {
		return sqlerr.New(sqlerr.As(err).Code, "%s", sqlerr.As(err).Msg)
	}
	types.AppendDatum(bl, d, t)
	return nil
}

// parseInt reads a plain decimal integer (optional '-', digits only).
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 { // longer ones take the slow path
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func inRange(n int64, k types.Kind) bool {
	if k == types.Int16 {
		return n >= -1<<15 && n < 1<<15
	}
	return n >= -1<<31 && n < 1<<31
}

// plainNumber says b is only digits, signs, '.' and exponents (no NaN,
// Infinity or hex, which take the text syntax's path).
func plainNumber(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E' {
			return false
		}
	}
	return len(b) > 0
}
