package types

import (
	"encoding/binary"
	"strings"
)

// The binary jsonb layout (docs/decisions/2026-12-07-jsonb-binary.md).
//
// A jsonb datum (Datum.S, a value of the kind's Arrow String column) is one
// encoded value: a tag byte, then the payload.
//
//	null, false, true   the tag alone
//	number              tag, numeric_out's text of the value (1.0 stays 1.0)
//	string              tag, the string's bytes (escapes resolved)
//	array               tag, n (u32), n end offsets (u32), the n elements
//	object              tag, n (u32), n key end offsets, n value end offsets,
//	                    the n keys (bytes), the n values
//
// Integers are little-endian; an end offset counts from the start of its
// area (elements, keys or values), so element i spans [end(i-1), end(i)):
// index access is O(1), and an object's keys, which are unique and sorted as
// PostgreSQL's jsonb sorts them (shorter first, then bytewise), are found by
// binary search. Children are encoded values themselves, so an element or a
// field is a substring of its container: -> returns it without copying, and
// nothing on the access path allocates. Equal values with numbers of equal
// scale have equal bytes (hashing and keys work on the bytes).
//
// The text form (jsonb_out) is made only for output: AppendText, TextOf,
// casts to text and json, the binary wire format, COPY TO.
//
// A datum whose first byte is a printable character is the canonical text
// of the format before this one (state written by an older version):
// jbBytes re-encodes it, so such state still reads.

const (
	jbNull byte = iota
	jbFalse
	jbTrue
	jbNumber
	jbString
	jbArray
	jbObject
)

// jbKind is the JSON type of the encoded value b.
func jbKind(b string) JSONKind {
	if len(b) == 0 {
		return JNull
	}
	return [...]JSONKind{JNull, JBool, JBool, JNumber, JString, JArray, JObject}[b[0]]
}

// jbRank orders the types as jsonb's btree does: null < string < number <
// boolean < array < object.
func jbRank(b string) int {
	return [...]int{0, 3, 3, 2, 1, 4, 5}[b[0]]
}

func jbU32(b string, i int) int {
	return int(uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24)
}

// jbCount is the number of elements or pairs of an array or object.
func jbCount(b string) int { return jbU32(b, 1) }

// jbElem is element i of the array b.
func jbElem(b string, i int) string {
	n := jbCount(b)
	data := 5 + 4*n
	start := 0
	if i > 0 {
		start = jbU32(b, 5+4*(i-1))
	}
	return b[data+start : data+jbU32(b, 5+4*i)]
}

// jbKey is key i of the object b.
func jbKey(b string, i int) string {
	n := jbCount(b)
	keys := 5 + 8*n
	start := 0
	if i > 0 {
		start = jbU32(b, 5+4*(i-1))
	}
	return b[keys+start : keys+jbU32(b, 5+4*i)]
}

// jbValue is the value of pair i of the object b.
func jbValue(b string, i int) string {
	n := jbCount(b)
	vals := 5 + 8*n + jbU32(b, 5+4*(n-1))
	start := 0
	if i > 0 {
		start = jbU32(b, 5+4*n+4*(i-1))
	}
	return b[vals+start : vals+jbU32(b, 5+4*n+4*i)]
}

// jbField finds key k in the object b by binary search.
func jbField(b, k string) (string, bool) {
	if len(b) == 0 || b[0] != jbObject {
		return "", false
	}
	lo, hi := 0, jbCount(b)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		km := jbKey(b, m)
		if km == k {
			return jbValue(b, m), true
		}
		if jsonKeyLess(km, k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return "", false
}

// jbIndex is element i of the array b (negative: from the end). A scalar
// is a one-element array here, as PostgreSQL stores it ('"a"'::jsonb -> 0).
func jbIndex(b string, i int64) (string, bool) {
	switch b[0] {
	case jbObject:
		return "", false
	case jbArray:
	default:
		if i == 0 || i == -1 {
			return b, true
		}
		return "", false
	}
	n := int64(jbCount(b))
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return "", false
	}
	return jbElem(b, int(i)), true
}

// jbBytes returns the encoded form of a stored jsonb datum s: s itself, or
// s re-encoded when it is the canonical text of the earlier format.
func jbBytes(s string) string {
	if len(s) > 0 && s[0] <= jbObject {
		return s
	}
	if len(s) == 0 {
		return string([]byte{jbNull})
	}
	e, err := EncodeJSONB(s)
	if err != nil {
		return string([]byte{jbNull})
	}
	return e
}

// JSONBDatum is the jsonb datum of the parsed value v (object keys sorted).
func JSONBDatum(v *JSONValue) Datum { return Str(string(AppendJSONBBinary(nil, v))) }

// AppendJSONBBinary appends v in the binary layout. v's object keys must be
// sorted and unique (ParseJSON with jsonb, SortJSONKeys).
func AppendJSONBBinary(buf []byte, v *JSONValue) []byte {
	switch v.Kind {
	case JNull:
		return append(buf, jbNull)
	case JBool:
		if v.Bool {
			return append(buf, jbTrue)
		}
		return append(buf, jbFalse)
	case JNumber:
		return append(append(buf, jbNumber), v.Str...)
	case JString:
		return append(append(buf, jbString), v.Str...)
	case JArray:
		n := len(v.Elems)
		buf = binary.LittleEndian.AppendUint32(append(buf, jbArray), uint32(n))
		offs := len(buf)
		buf = appendZeros(buf, 4*n)
		data := len(buf)
		for i, e := range v.Elems {
			buf = AppendJSONBBinary(buf, e)
			binary.LittleEndian.PutUint32(buf[offs+4*i:], uint32(len(buf)-data))
		}
		return buf
	}
	n := len(v.Keys)
	buf = binary.LittleEndian.AppendUint32(append(buf, jbObject), uint32(n))
	offs := len(buf)
	buf = appendZeros(buf, 8*n)
	keys := len(buf)
	for i, k := range v.Keys {
		buf = append(buf, k...)
		binary.LittleEndian.PutUint32(buf[offs+4*i:], uint32(len(buf)-keys))
	}
	vals := len(buf)
	for i, e := range v.Elems {
		buf = AppendJSONBBinary(buf, e)
		binary.LittleEndian.PutUint32(buf[offs+4*n+4*i:], uint32(len(buf)-vals))
	}
	return buf
}

func appendZeros(buf []byte, n int) []byte {
	for ; n > 0; n-- {
		buf = append(buf, 0)
	}
	return buf
}

// AppendJSONBOut appends the jsonb datum s's text (jsonb_out).
func AppendJSONBOut(buf []byte, s string) []byte { return appendJB(buf, jbBytes(s)) }

// JSONBOut is the jsonb datum s's text (jsonb_out).
func JSONBOut(s string) string { return string(AppendJSONBOut(nil, s)) }

func appendJB(buf []byte, b string) []byte {
	switch b[0] {
	case jbNull:
		return append(buf, "null"...)
	case jbFalse:
		return append(buf, "false"...)
	case jbTrue:
		return append(buf, "true"...)
	case jbNumber:
		return append(buf, b[1:]...)
	case jbString:
		return AppendJSONString(buf, b[1:])
	case jbArray:
		buf = append(buf, '[')
		for i, n := 0, jbCount(b); i < n; i++ {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = appendJB(buf, jbElem(b, i))
		}
		return append(buf, ']')
	}
	buf = append(buf, '{')
	for i, n := 0, jbCount(b); i < n; i++ {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = AppendJSONString(buf, jbKey(b, i))
		buf = append(buf, ": "...)
		buf = appendJB(buf, jbValue(b, i))
	}
	return append(buf, '}')
}

// DecodeJSONB builds the value tree of the jsonb datum s.
func DecodeJSONB(s string) *JSONValue { return decodeJB(jbBytes(s)) }

func decodeJB(b string) *JSONValue {
	switch b[0] {
	case jbNull:
		return &JSONValue{Kind: JNull}
	case jbFalse, jbTrue:
		return &JSONValue{Kind: JBool, Bool: b[0] == jbTrue}
	case jbNumber:
		return &JSONValue{Kind: JNumber, Str: b[1:]}
	case jbString:
		return &JSONValue{Kind: JString, Str: b[1:]}
	}
	n := jbCount(b)
	v := &JSONValue{Kind: JArray, Elems: make([]*JSONValue, n)}
	if b[0] == jbObject {
		v.Kind = JObject
		v.Keys = make([]string, n)
		for i := range n {
			v.Keys[i] = jbKey(b, i)
			v.Elems[i] = decodeJB(jbValue(b, i))
		}
		return v
	}
	for i := range n {
		v.Elems[i] = decodeJB(jbElem(b, i))
	}
	return v
}

// JSONBTypeof is jsonb_typeof of the jsonb datum s.
func JSONBTypeof(s string) string { return jbKind(jbBytes(s)).TypeName() }

// JSONBArrayLen is the number of elements of the jsonb datum s, ok false
// when it is not an array; obj tells an object from a scalar then.
func JSONBArrayLen(s string) (n int, ok, obj bool) {
	b := jbBytes(s)
	switch b[0] {
	case jbArray:
		return jbCount(b), true, false
	case jbObject:
		return 0, false, true
	}
	return 0, false, false
}

// JSONBGet is s -> k: the value of key k of the object s (ok false when s
// is not an object or lacks k), a substring of s.
func JSONBGet(s, k string) (string, bool) { return jbField(jbBytes(s), k) }

// JSONBIndex is s -> i: element i of the array s (negative: from the end).
func JSONBIndex(s string, i int64) (string, bool) { return jbIndex(jbBytes(s), i) }

// JSONBPath is s #> path: nil path elements give ok false; an array step
// takes an integer, an object step a key, a scalar none.
func JSONBPath(s string, path []string, nulls func(int) bool) (string, bool) {
	b := jbBytes(s)
	for j, p := range path {
		if nulls(j) {
			return "", false
		}
		var ok bool
		switch b[0] {
		case jbArray:
			idx, err := parseIntStrict(strings.TrimSpace(p))
			if err != nil {
				return "", false
			}
			b, ok = jbIndex(b, idx)
		case jbObject:
			b, ok = jbField(b, p)
		}
		if !ok {
			return "", false
		}
	}
	return b, true
}

func parseIntStrict(s string) (int64, error) {
	var n int64
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" || len(s) > 10 {
		return 0, errJSON("")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errJSON("")
		}
		n = n*10 + int64(s[i]-'0')
	}
	if n > 1<<31-1 {
		return 0, errJSON("")
	}
	if neg {
		n = -n
	}
	return n, nil
}

// JSONBAsText is ->>'s text of the jsonb value s: a string's contents (a
// substring of s), a number's or boolean's text, NULL (ok false) for null,
// a container's jsonb_out text.
func JSONBAsText(s string) (string, bool) {
	b := jbBytes(s)
	switch b[0] {
	case jbNull:
		return "", false
	case jbFalse:
		return "false", true
	case jbTrue:
		return "true", true
	case jbNumber, jbString:
		return b[1:], true
	}
	return string(appendJB(nil, b)), true
}

// JSONBCompare orders two jsonb datums as PostgreSQL's jsonb btree
// (compareJsonbContainers): by type (null < string < number < boolean <
// array < object), arrays by length then elements, objects by pair count
// then key 1, value 1, key 2 ... in storage order, numbers by value,
// strings bytewise (the C collation).
//
// A top-level scalar is, as PostgreSQL stores it, a one-element "raw
// scalar" array: against an array it orders by element count first (so
// 1 > [] but 1 < [1, 2]), then below the array.
func JSONBCompare(a, b string) int {
	if a == b {
		return 0
	}
	a, b = jbBytes(a), jbBytes(b)
	if sa, sb := a[0] < jbArray, b[0] < jbArray; sa != sb && (a[0] == jbArray || b[0] == jbArray) {
		n, m := 1, 1
		if sa {
			m = jbCount(b)
		} else {
			n = jbCount(a)
		}
		if n != m {
			return cmpInt(n, m)
		}
		if sa {
			return -1
		}
		return 1
	}
	return jbCompare(a, b)
}

func jbCompare(a, b string) int {
	ra, rb := jbRank(a), jbRank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch a[0] {
	case jbNull:
		return 0
	case jbFalse, jbTrue:
		return cmpInt(int(a[0]), int(b[0]))
	case jbNumber:
		return numTextCmp(a[1:], b[1:])
	case jbString:
		return strings.Compare(a[1:], b[1:])
	}
	n, m := jbCount(a), jbCount(b)
	if n != m {
		return cmpInt(n, m)
	}
	for i := range n {
		var c int
		if a[0] == jbArray {
			c = jbCompare(jbElem(a, i), jbElem(b, i))
		} else if c = strings.Compare(jbKey(a, i), jbKey(b, i)); c == 0 {
			c = jbCompare(jbValue(a, i), jbValue(b, i))
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// numTextCmp compares two numbers in numeric_out's text (no exponent, no
// leading zeros but a lone 0, no sign on zero) by value.
func numTextCmp(a, b string) int {
	na, nb := a[0] == '-', b[0] == '-'
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	if na {
		return -absTextCmp(a[1:], b[1:])
	}
	return absTextCmp(a, b)
}

func absTextCmp(a, b string) int {
	ai, af, _ := strings.Cut(a, ".")
	bi, bf, _ := strings.Cut(b, ".")
	if len(ai) != len(bi) {
		return cmpInt(len(ai), len(bi))
	}
	if c := strings.Compare(ai, bi); c != 0 {
		return c
	}
	return strings.Compare(strings.TrimRight(af, "0"), strings.TrimRight(bf, "0"))
}

// JSONBEqual is jsonb's =: JSONBCompare is 0 (1.0 = 1).
func JSONBEqual(a, b string) bool { return a == b || JSONBCompare(a, b) == 0 }

// JSONBContains is a @> b (PostgreSQL's JsonbDeepContains): an object
// contains one whose every key it has with a contained value, an array
// one whose every element matches one of its own, a scalar an equal
// scalar; a top-level array contains a scalar it holds.
func JSONBContains(a, b string) bool {
	a, b = jbBytes(a), jbBytes(b)
	if a[0] == jbArray && b[0] != jbArray && b[0] != jbObject {
		return jbArrayHas(a, b)
	}
	return jbContains(a, b)
}

func jbContains(a, b string) bool {
	ka, kb := jbKind(a), jbKind(b)
	if ka != kb {
		return false
	}
	switch ka {
	case JObject:
		for i, n := 0, jbCount(b); i < n; i++ {
			av, ok := jbField(a, jbKey(b, i))
			if !ok || !jbContains(av, jbValue(b, i)) {
				return false
			}
		}
		return true
	case JArray:
		for i, n := 0, jbCount(b); i < n; i++ {
			if !jbArrayHas(a, jbElem(b, i)) {
				return false
			}
		}
		return true
	}
	return a == b || jbCompare(a, b) == 0
}

// jbArrayHas: some element of the array a contains be.
func jbArrayHas(a, be string) bool {
	for i, n := 0, jbCount(a); i < n; i++ {
		if jbContains(jbElem(a, i), be) {
			return true
		}
	}
	return false
}

// JSONBExists is jsonb's ?: k is a key of the object, a string element of
// the array, or the string itself.
func JSONBExists(s, k string) bool {
	b := jbBytes(s)
	switch b[0] {
	case jbObject:
		_, ok := jbField(b, k)
		return ok
	case jbArray:
		for i, n := 0, jbCount(b); i < n; i++ {
			if e := jbElem(b, i); e[0] == jbString && e[1:] == k {
				return true
			}
		}
		return false
	case jbString:
		return b[1:] == k
	}
	return false
}
