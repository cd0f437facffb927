package types

import (
	"encoding/binary"
	"slices"
	"strconv"
	"sync"
	"unsafe"
)

// JSONBParser is jsonb's input function straight into the binary layout
// (jsonb.go), with no value tree between: it is what ParseJSON followed by
// AppendJSONBBinary make, bytes and errors alike (jsonbparse_test.go holds
// the differential test), with one pass over the text and no allocation
// once its scratch has grown to the largest value.
//
// Values are written in place as they are read. A container's children
// are written first; when it closes, its count is known and its header (the
// count and the end offsets) is slid in before them; an object's pairs are
// then put in jsonb's key order (shorter first, then bytewise, the last of
// a duplicated key kept) through one scratch copy of the object.
//
// A JSONBParser is for one goroutine; its zero value is ready to use.
type JSONBParser struct {
	jsonLexer
	out   []byte
	offs  []uint32 // the element end offsets of the open arrays, innermost last
	pairs []jbPair // the pairs of the open objects, innermost last
	tmp   []byte   // an object's pairs as read, while it is reordered
	res   []byte   // the output of Validate and EncodeJSONB
}

// jbPair is an object pair as read: its key at out[k:v] and its value at
// out[v:end].
type jbPair struct{ k, v, end int }

// Append appends the jsonb encoding of the JSON text src to dst. On error
// dst's bytes are kept and the appended ones are garbage past len(dst).
// The result never refers to src.
func (p *JSONBParser) Append(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return p.AppendString(dst, "")
	}
	return p.AppendString(dst, unsafe.String(&src[0], len(src)))
}

// AppendString is Append of a string.
func (p *JSONBParser) AppendString(dst []byte, src string) ([]byte, error) {
	return p.appendValue(dst, src, true)
}

// Validate reports whether src is valid json input (the json type's input
// function: \u0000 allowed, numbers of any size), with ParseJSON's errors.
func (p *JSONBParser) Validate(src string) error {
	b, err := p.appendValue(p.res[:0], src, false)
	p.keep(b)
	return err
}

func (p *JSONBParser) appendValue(dst []byte, src string, jsonb bool) ([]byte, error) {
	p.jsonLexer = jsonLexer{src: src, jsonb: jsonb}
	p.out, p.offs, p.pairs = dst, p.offs[:0], p.pairs[:0]
	err := p.top()
	dst, p.out = p.out, nil
	return dst, err
}

func (p *JSONBParser) top() error {
	p.space()
	if p.pos == len(p.src) {
		return errJSON("The input string ended unexpectedly.")
	}
	if err := p.value(); err != nil {
		return err
	}
	p.space()
	if p.pos < len(p.src) {
		return errJSON("Expected end of input, but found " + strconv.Quote(p.token()) + ".")
	}
	return nil
}

func (p *JSONBParser) value() error {
	if p.pos >= len(p.src) {
		return errJSON("The input string ended unexpectedly.")
	}
	var err error
	switch c := p.src[p.pos]; {
	case c == '{':
		err = p.object()
	case c == '[':
		err = p.array()
	case c == '"':
		p.out, err = p.appendStr(append(p.out, jbString))
	case c == '-' || c >= '0' && c <= '9':
		var tok string
		if tok, err = p.numToken(); err == nil && p.jsonb { // json checks only the grammar, as PostgreSQL's json_in
			p.out, err = appendCanonNumber(append(p.out, jbNumber), tok)
		}
	default:
		tok := p.token()
		switch tok {
		case "true":
			p.out = append(p.out, jbTrue)
		case "false":
			p.out = append(p.out, jbFalse)
		case "null":
			p.out = append(p.out, jbNull)
		default:
			return errJSON("Token " + strconv.Quote(tok) + " is invalid.")
		}
		p.pos += len(tok)
	}
	return err
}

func (p *JSONBParser) array() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++
	start, base := len(p.out), len(p.offs)
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.depth--
		p.out = append(p.out, jbArray, 0, 0, 0, 0)
		return nil
	}
	for {
		p.space()
		if err := p.value(); err != nil {
			return err
		}
		p.offs = append(p.offs, uint32(len(p.out)-start))
		if done, err := p.sep(']'); err != nil {
			return err
		} else if done {
			p.depth--
			p.closeArray(start, p.offs[base:])
			p.offs = p.offs[:base]
			return nil
		}
	}
}

// closeArray slides the header of the array whose elements, ending at
// offs, were written from start.
func (p *JSONBParser) closeArray(start int, offs []uint32) {
	n := len(offs)
	hdr := 5 + 4*n
	end := len(p.out)
	p.out = slices.Grow(p.out, hdr)[:end+hdr]
	copy(p.out[start+hdr:], p.out[start:end])
	b := p.out[start:]
	b[0] = jbArray
	binary.LittleEndian.PutUint32(b[1:], uint32(n))
	for i, o := range offs {
		binary.LittleEndian.PutUint32(b[5+4*i:], o)
	}
}

func (p *JSONBParser) object() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++
	start, base := len(p.out), len(p.pairs)
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.depth--
		p.out = append(p.out, jbObject, 0, 0, 0, 0)
		return nil
	}
	for {
		if err := p.keyStart(); err != nil {
			return err
		}
		k := len(p.out)
		var err error
		if p.out, err = p.appendStr(p.out); err != nil {
			return err
		}
		v := len(p.out)
		if err := p.colon(); err != nil {
			return err
		}
		if err := p.value(); err != nil {
			return err
		}
		p.pairs = append(p.pairs, jbPair{k, v, len(p.out)})
		if done, err := p.sep('}'); err != nil {
			return err
		} else if done {
			p.depth--
			p.closeObject(start, p.pairs[base:])
			p.pairs = p.pairs[:base]
			return nil
		}
	}
}

// closeObject rewrites the object whose pairs (as read) were written from
// start in the binary layout: keys sorted and unique, the last of a
// duplicated key kept.
func (p *JSONBParser) closeObject(start int, pairs []jbPair) {
	p.tmp = append(p.tmp[:0], p.out[start:]...)
	tmp := p.tmp
	for i := range pairs { // offsets into tmp
		pairs[i].k -= start
		pairs[i].v -= start
		pairs[i].end -= start
	}
	key := func(q jbPair) string { return unsafe.String(unsafe.SliceData(tmp[q.k:]), q.v-q.k) }
	less := func(a, b jbPair) int {
		ka, kb := key(a), key(b)
		switch {
		case jsonKeyLess(ka, kb):
			return -1
		case jsonKeyLess(kb, ka):
			return 1
		}
		return 0
	}
	if !slices.IsSortedFunc(pairs, less) {
		if len(pairs) <= 12 { // insertion sort: stable, and no call through a func value
			for i := 1; i < len(pairs); i++ {
				for j := i; j > 0 && less(pairs[j], pairs[j-1]) < 0; j-- {
					pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
				}
			}
		} else {
			slices.SortStableFunc(pairs, less)
		}
	}
	n := 0 // the kept pairs: a pair followed by one of the same key is dropped
	for i, q := range pairs {
		if i+1 < len(pairs) && key(pairs[i+1]) == key(q) {
			continue
		}
		pairs[n] = q
		n++
	}
	pairs = pairs[:n]
	out := append(p.out[:start], jbObject, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(out[start+1:], uint32(n))
	hdr := len(out)
	out = slices.Grow(out, 8*n)[:hdr+8*n]
	keys := len(out)
	for i, q := range pairs {
		out = append(out, tmp[q.k:q.v]...)
		binary.LittleEndian.PutUint32(out[hdr+4*i:], uint32(len(out)-keys))
	}
	vals := len(out)
	for i, q := range pairs {
		out = append(out, tmp[q.v:q.end]...)
		binary.LittleEndian.PutUint32(out[hdr+4*n+4*i:], uint32(len(out)-vals))
	}
	p.out = out
}

// jsonbParsers are the parsers of the input functions' callers that bring
// none (EncodeJSONB, ParseText).
var jsonbParsers = sync.Pool{New: func() any { return new(JSONBParser) }}

// EncodeJSONB parses JSON text s and returns its jsonb datum.
func EncodeJSONB(s string) (string, error) {
	d, err := ParseTextBytes(unsafe.Slice(unsafe.StringData(s), len(s)), TJSONB)
	return d.S, err
}

// ValidateJSON is the json type's input check of s (ParseJSON(s, false)'s
// errors, with no tree made).
func ValidateJSON(s string) error {
	p := jsonbParsers.Get().(*JSONBParser)
	err := p.Validate(s)
	jsonbParsers.Put(p)
	return err
}

// keep keeps b as the output scratch, and the other scratch, unless they
// grew past what is worth holding on to (a pooled parser).
func (p *JSONBParser) keep(b []byte) {
	if cap(b) > 1<<20 {
		b = nil
	}
	p.res = b[:0]
	if cap(p.tmp) > 1<<20 {
		p.tmp = nil
	}
	if cap(p.offs) > 1<<16 || cap(p.pairs) > 1<<16 {
		p.offs, p.pairs = nil, nil
	}
}
