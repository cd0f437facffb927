package types

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
)

// oldJSONB is the jsonb input function before JSONBParser: the tree, then
// its encoding.
func oldJSONB(s string) ([]byte, error) {
	v, err := oldParseJSON(s, true)
	if err != nil {
		return nil, err
	}
	return AppendJSONBBinary(nil, v), nil
}

// sameErr reports whether two input errors are the same to a client:
// SQLSTATE, message and detail.
func sameErr(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	var ea, eb *sqlerr.Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return a.Error() == b.Error()
	}
	return ea.Code == eb.Code && ea.Msg == eb.Msg && ea.Detail == eb.Detail
}

// checkJSONB checks that p (reused across calls, as COPY reuses it) makes
// the old parser's bytes and errors of s, for jsonb and for json.
//
// The old parser refused exponents past ±1000, which PostgreSQL 15 takes
// (TestCanonNumberRange): texts with an exponent of four digits or more are
// only checked for agreeing with EncodeJSONB.
func checkJSONB(t *testing.T, p *JSONBParser, s string) {
	t.Helper()
	if bigExpRE.MatchString(s) {
		got, err := p.AppendString(nil, s)
		if e, err2 := EncodeJSONB(s); !sameErr(err, err2) || err == nil && e != string(got) {
			t.Fatalf("%q: EncodeJSONB %q, %v; JSONBParser %q, %v", s, e, err2, got, err)
		}
		return
	}
	want, werr := oldJSONB(s)
	prefix := []byte("prefix")
	got, err := p.Append(slices.Clip(prefix), []byte(s))
	if !sameErr(err, werr) {
		t.Fatalf("%q: error %v, old parser %v", s, err, werr)
	}
	if !bytes.Equal(got[:len(prefix)], prefix) {
		t.Fatalf("%q: the bytes before dst's end changed: %q", s, got[:len(prefix)])
	}
	if err == nil && !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("%q:\n got %q\nwant %q", s, got[len(prefix):], want)
	}
	if e, err := EncodeJSONB(s); !sameErr(err, werr) || err == nil && e != string(want) {
		t.Fatalf("%q: EncodeJSONB %q, %v; old parser %q, %v", s, e, err, want, werr)
	}
	_, werr = oldParseJSON(s, false)
	if err := ValidateJSON(s); !sameErr(err, werr) {
		t.Fatalf("%q: json input error %v, old parser %v", s, err, werr)
	}
}

// jsonGen writes random JSON texts of the shapes clients send, with the
// corners of the grammar: every escape, surrogate pairs and lone halves,
// \u0000, duplicate keys (also spelled with escapes), keys out of order,
// numbers of every spelling, all four whitespace bytes.
type jsonGen struct {
	r *rand.Rand
	b []byte
}

var genKeys = []string{"", "a", "b", "ab", "ba", "id", "user", "type", "items", "a\\u0062", "\\u00e9", "é", "k\\n", "zz", "aaa", "\\ud83d\\ude00"}

var genNumbers = []string{"0", "-0", "0.0", "-0.0", "1", "-1", "10", "1.50", "-1.50", "1e2", "1E+2", "1e-2", "1.5e-3",
	"-1.5E3", "0e0", "0.000e5", "123456789012345678901234567890", "1e1000", "-1e-1000", "1e1001", "2.5e-1001",
	"1e0", "1.0e0", "-0e-3", "12.3400e1", "9.99", "0.5", "100e-2", "7e00001"}

var genStrings = []string{"", "x", "hello world", `a\"b`, `a\\b`, `\/`, `\b\f\n\r\t`, `\u0041`, `\u00e9t\u00e9`, `\u20AC`,
	`\ud83d\ude00`, `\uD83D\uDE00x`, "é€😀", `\u0000`, `a\u0000b`, `\ud800`, `\udc00`, `\ud800\u0041`, `\ud800x`,
	`\u12`, `\u12G4`, `\x`, "tab\tin", `\u001f`, "new\nline", `\\\"`}

var genSpace = []string{"", "", "", " ", "  ", "\t", "\n", "\r\n", " \t\n\r "}

func (g *jsonGen) space() { g.b = append(g.b, genSpace[g.r.IntN(len(genSpace))]...) }

func (g *jsonGen) value(depth int) {
	g.space()
	k := g.r.IntN(10)
	if depth >= 4 {
		k = g.r.IntN(6)
	}
	switch k {
	case 0:
		g.b = append(g.b, []string{"null", "true", "false"}[g.r.IntN(3)]...)
	case 1, 2:
		g.b = append(g.b, genNumbers[g.r.IntN(len(genNumbers))]...)
	case 3, 4, 5:
		g.b = append(g.b, '"')
		g.b = append(g.b, genStrings[g.r.IntN(len(genStrings))]...)
		g.b = append(g.b, '"')
	case 6, 7:
		g.b = append(g.b, '[')
		for i, n := 0, g.r.IntN(5); i < n; i++ {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.value(depth + 1)
		}
		g.space()
		g.b = append(g.b, ']')
	default:
		g.b = append(g.b, '{')
		for i, n := 0, g.r.IntN(20); i < n; i++ {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.space()
			g.b = append(g.b, '"')
			g.b = append(g.b, genKeys[g.r.IntN(len(genKeys))]...)
			g.b = append(g.b, '"')
			g.space()
			g.b = append(g.b, ':')
			g.value(depth + 1)
		}
		g.space()
		g.b = append(g.b, '}')
	}
	g.space()
}

// text is one generated JSON text; one in four is damaged (a byte
// dropped, one put in, or the text cut), for the errors.
func (g *jsonGen) text() string {
	g.b = g.b[:0]
	g.value(0)
	if len(g.b) > 0 && g.r.IntN(4) == 0 {
		i := g.r.IntN(len(g.b))
		switch g.r.IntN(3) {
		case 0:
			g.b = append(g.b[:i], g.b[i+1:]...)
		case 1:
			g.b = slices.Insert(g.b, i, `{}[],:"\ex0-.e+`[g.r.IntN(15)])
		default:
			g.b = g.b[:i]
		}
	}
	return string(g.b)
}

// TestJSONBParserDifferential: JSONBParser makes exactly the old parser's
// bytes and errors over generated JSON, for jsonb and json, with one
// parser reused throughout.
func TestJSONBParserDifferential(t *testing.T) {
	n := 50000
	if testing.Short() {
		n = 10000
	}
	g := &jsonGen{r: rand.New(rand.NewPCG(1, 2))}
	var p JSONBParser
	bad := 0
	for range n {
		s := g.text()
		if _, err := oldJSONB(s); err != nil {
			bad++
		}
		checkJSONB(t, &p, s)
	}
	if bad < n/10 || bad > n*9/10 {
		t.Fatalf("%d of %d texts are invalid: the generator does not cover both", bad, n)
	}
	for _, s := range []string{"", " ", "{", "[", `"`, "[1,]", `{"a"}`, `{"a":}`, `{"a" 1}`, "01", "1.", ".5", "-", "+1", "1e", "tru",
		"nul", "[1 2]", `{"a":1 "b":2}`, "1 2", `"\u00"`, `{"a":1,"a":2,"a":3}`, `{"b":1,"a":2,"b":3}`, `{"a":{"a":1,"a":[]},"a":{}}`,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)} {
		checkJSONB(t, &p, s)
	}
	// Objects past the insertion sort's reach, keys in every order.
	for range 200 {
		var b strings.Builder
		b.WriteByte('{')
		for i, n := 0, 10+g.r.IntN(60); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"k` + strings.Repeat("x", g.r.IntN(3)) + string(rune('a'+g.r.IntN(26))) + `":` + genNumbers[g.r.IntN(len(genNumbers)-8)])
		}
		b.WriteByte('}')
		checkJSONB(t, &p, b.String())
	}
}

// TestCanonNumber: canonNumber is the old canonNumber over every number
// shape of the generator and the grammar's corners.
func TestCanonNumber(t *testing.T) {
	toks := slices.Clone(genNumbers)
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b []byte
		if r.IntN(2) == 0 {
			b = append(b, '-')
		}
		if r.IntN(3) == 0 {
			b = append(b, '0')
		} else {
			b = append(b, byte('1'+r.IntN(9)))
			for n := r.IntN(6); n > 0; n-- {
				b = append(b, byte('0'+r.IntN(10)))
			}
		}
		if r.IntN(2) == 0 {
			b = append(b, '.')
			for n := 1 + r.IntN(6); n > 0; n-- {
				b = append(b, byte('0'+r.IntN(3)))
			}
		}
		if r.IntN(2) == 0 {
			b = append(b, "eE"[r.IntN(2)])
			if r.IntN(2) == 0 {
				b = append(b, "+-"[r.IntN(2)])
			}
			b = append(b, byte('0'+r.IntN(10)))
			if r.IntN(2) == 0 {
				b = append(b, byte('0'+r.IntN(10)))
			}
		}
		toks = append(toks, string(b))
	}
	for _, tok := range toks {
		if bigExpRE.MatchString(tok) {
			continue // TestCanonNumberRange
		}
		got, err := canonNumber(tok)
		want, werr := oldCanonNumber(tok)
		if got != want || !sameErr(err, werr) {
			t.Fatalf("canonNumber(%q) = %q, %v; old %q, %v", tok, got, err, want, werr)
		}
	}
}

// TestCanonNumberRange: jsonb numbers meet numeric's range as in
// PostgreSQL 15 (checked against it; TestJSONBPG compares the same cases
// through the wire): exponents of any size up to INT_MAX/2, at most 16383
// fraction digits, the first significant digit below 10^131072.
func TestCanonNumberRange(t *testing.T) {
	for _, c := range []struct {
		tok    string
		length int // of the text, -1: 22003
		prefix string
	}{
		{"1e1001", 1002, "1000"}, {"1e131071", 131072, "1000"}, {"1e131072", -1, ""}, {"1e-16383", 16385, "0.000"},
		{"1e-16384", -1, ""}, {"0e-16384", -1, ""}, {"-0e-16384", -1, ""}, {"0e999999", 1, "0"}, {"0.5e-16383", -1, ""},
		{"10e131070", 131072, "1000"}, {"0.1e131072", 131072, "1000"}, {"1e2147483646", -1, ""}, {"1e1073741823", -1, ""},
		{"1e1073741824", -1, ""}, {"0e1073741822", 1, "0"}, {"1.5e-16382", 16385, "0.000"}, {"-0e-16383", 16385, "0.000"},
		{"1e99999999999999999999", -1, ""}, {"-1e1001", 1003, "-1000"},
	} {
		got, err := canonNumber(c.tok)
		if c.length < 0 {
			var e *sqlerr.Error
			if !errors.As(err, &e) || e.Code != sqlerr.NumericOutOfRange || e.Msg != "value overflows numeric format" {
				t.Errorf("%s: %d chars, %v; want 22003", c.tok, len(got), err)
			}
			continue
		}
		if err != nil || len(got) != c.length || !strings.HasPrefix(got, c.prefix) {
			t.Errorf("%s: %d chars %.10q, %v; want %d chars %q...", c.tok, len(got), got, err, c.length, c.prefix)
		}
	}
	if err := ValidateJSON("[1e131072, 0e-16384, 1e99999999999999999999]"); err != nil {
		t.Errorf("json checks only the grammar: %v", err)
	}
}

// TestJSONBParserEncodingJSON checks JSONBParser against an oracle that
// shares no code with it: encoding/json's decoding (a map keeps the last of
// duplicate keys), keys put in jsonb's order, numbers printed by math/big
// with the scale numeric keeps. Texts encoding/json reads differently (lone
// surrogates, invalid UTF-8, \u0000, numbers past numeric's range) are left out.
func TestJSONBParserEncodingJSON(t *testing.T) {
	g := &jsonGen{r: rand.New(rand.NewPCG(7, 8))}
	var p JSONBParser
	checked := 0
	for range 50000 {
		s := g.text()
		if !json.Valid([]byte(s)) || !utf8.ValidString(s) || strings.Contains(s, `\u0000`) || surrogateRE.MatchString(s) || bigExpRE.MatchString(s) {
			continue
		}
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want := string(appendEncodingJSONCanon(t, nil, v))
		got, err := p.AppendString(nil, s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if out := JSONBOut(string(got)); out != want {
			t.Fatalf("%q:\n got %s\nwant %s", s, out, want)
		}
		checked++
	}
	if checked < 10000 {
		t.Fatalf("only %d texts checked", checked)
	}
}

// surrogateRE finds a \u escape of a surrogate half.
var surrogateRE = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// bigExpRE finds an exponent of four digits or more.
var bigExpRE = regexp.MustCompile(`[eE][+-]?[0-9]{4}`)

// numberRE finds a JSON number's fraction digits and exponent.
var numberRE = regexp.MustCompile(`^-?[0-9]+(?:\.([0-9]+))?(?:[eE]\+?(-?[0-9]+))?$`)

// appendEncodingJSONCanon appends jsonb_out's text of v, a value
// encoding/json decoded with UseNumber.
func appendEncodingJSONCanon(t *testing.T, b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case json.Number:
		r, ok := new(big.Rat).SetString(string(v))
		if !ok {
			t.Fatalf("number %s", v)
		}
		m := numberRE.FindStringSubmatch(string(v))
		exp, _ := strconv.Atoi(m[2])
		return append(b, r.FloatString(max(0, len(m[1])-exp))...) // numeric keeps the scale written
	case string:
		return AppendJSONString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendEncodingJSONCanon(t, b, e)
		}
		return append(b, ']')
	}
	m := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = AppendJSONString(b, k)
		b = append(b, ": "...)
		b = appendEncodingJSONCanon(t, b, m[k])
	}
	return append(b, '}')
}

// FuzzJSONBParser: JSONBParser against the old parser on any input.
//
//	go test ./types/ -run '^$' -fuzz FuzzJSONBParser -fuzztime 60s
func FuzzJSONBParser(f *testing.F) {
	g := &jsonGen{r: rand.New(rand.NewPCG(5, 6))}
	for range 50 {
		f.Add(g.text())
	}
	var p JSONBParser
	f.Fuzz(func(t *testing.T, s string) { checkJSONB(t, &p, s) })
}

// TestJSONBParserAllocs: a reused parser appending to a buffer with room
// allocates nothing per value.
func TestJSONBParserAllocs(t *testing.T) {
	src := []byte(`{"type": "view", "user": {"id": 12, "name": "a \"b\" \u00e9", "tags": ["x", "y"]}, "amount": 1.50, "tax": 5e-2, "items": [{"sku": "A", "qty": 2}], "ok": true, "ref": null}`)
	var p JSONBParser
	buf, err := p.Append(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { buf, _ = p.Append(buf[:0], src) }); n != 0 {
		t.Fatalf("%v allocations per value", n)
	}
}
