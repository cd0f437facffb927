package expr

import (
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// ---- string output ----

// strOut accumulates a String column in Go memory; finish copies it into
// allocator buffers.
type strOut struct {
	offs []int32
	data []byte
}

func newStrOut(n, hint int) *strOut {
	s := &strOut{offs: make([]int32, 1, n+1), data: make([]byte, 0, hint)}
	return s
}

// end closes the current row (its bytes are whatever was appended since).
func (s *strOut) end() { s.offs = append(s.offs, int32(len(s.data))) }

func (s *strOut) finish(mem memory.Allocator, t types.T, valid *memory.Buffer, nulls int) arrow.Array {
	n := len(s.offs) - 1
	offBuf, offs := fixedBuf[int32](mem, n+1)
	copy(offs, s.offs)
	dataBuf := newBuf(mem, len(s.data))
	copy(dataBuf.Bytes(), s.data)
	return finish(t.Arrow(), n, valid, nulls, offBuf, dataBuf)
}

func strAt(v vec, i int) string {
	if v.scalar() {
		return v.d.S
	}
	return v.arr.(*array.String).Value(i)
}

// strMap applies f to each valid row of a one-argument string function.
func (c *Ctx) strMap(t types.T, args []vec, n int, f func(dst []byte, i int) ([]byte, error)) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, args...)
	vb := bufBytes(valid)
	hint := 0
	if a := args[0]; !a.scalar() {
		hint = len(a.arr.(*array.String).ValueBytes())
	}
	out := newStrOut(n, hint)
	for i := 0; i < n; i++ {
		if isValid(vb, i) {
			var err error
			if out.data, err = f(out.data, i); err != nil {
				if valid != nil {
					valid.Release()
				}
				return vec{}, err
			}
		}
		out.end()
	}
	return vec{arr: out.finish(mem, t, valid, nulls), t: t}, nil
}

func lowerKernel(upper bool, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			return appendCase(dst, strAt(args[0], i), upper), nil
		})
	}
}

// appendCase appends s lower- or upper-cased, without allocating for ASCII.
func appendCase(dst []byte, s string, upper bool) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			if upper {
				return append(dst, strings.ToUpper(s)...)
			}
			return append(dst, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if upper && 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		} else if !upper && 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		dst = append(dst, ch)
	}
	return dst
}

func concatOpKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			return append(append(dst, strAt(args[0], i)...), strAt(args[1], i)...), nil
		})
	}
}

// concatKernel is concat(...): NULL arguments are skipped, never NULL.
func concatKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		out := newStrOut(n, 0)
		for i := 0; i < n; i++ {
			for _, a := range args {
				d := datumOf(a, i)
				if d.Null {
					continue
				}
				out.data = types.AppendText(out.data, d, a.t)
			}
			out.end()
		}
		return vec{arr: out.finish(c.mem(), t, nil, 0), t: t}, nil
	}
}

func lengthKernel(c *Ctx, args []vec, n int) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, args[0])
	buf, out := fixedBuf[int64](mem, n)
	s := args[0].arr.(*array.String)
	for i := range out {
		out[i] = int64(utf8.RuneCountInString(s.Value(i)))
	}
	return vec{arr: finish(arrow.PrimitiveTypes.Int64, n, valid, nulls, buf), t: types.TInt64}, nil
}

// octetLengthKernel is octet_length (and length of bytea): bytes, not characters.
func octetLengthKernel(c *Ctx, args []vec, n int) (vec, error) {
	mem := c.mem()
	valid, nulls := validity(mem, n, args[0])
	buf, out := fixedBuf[int64](mem, n)
	s := args[0].arr.(*array.String)
	for i := range out {
		out[i] = int64(len(s.Value(i)))
	}
	return vec{arr: finish(arrow.PrimitiveTypes.Int64, n, valid, nulls, buf), t: types.TInt64}, nil
}

// substrKernel is substr(s, start [, count]) with 1-based character
// positions; start may be before the string and count must not be negative.
func substrKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			s := strAt(args[0], i)
			start := intAt(args[1], i)
			end := int64(1 << 62)
			if len(args) > 2 {
				cnt := intAt(args[2], i)
				if cnt < 0 {
					return nil, sqlerr.New("22011", "negative substring length not allowed")
				}
				if start < 1<<62-cnt {
					end = start + cnt
				}
			}
			start = max(start, 1)
			if end <= start {
				return dst, nil
			}
			// Walk runes: positions are 1-based.
			pos, from, to := int64(1), len(s), len(s)
			for bi := range s {
				if pos == start {
					from = bi
				}
				if pos == end {
					to = bi
					break
				}
				pos++
			}
			if from > to {
				return dst, nil
			}
			return append(dst, s[from:to]...), nil
		})
	}
}

// ---- LIKE ----

// likePattern is a compiled LIKE pattern. Common shapes (exact, prefix%,
// %suffix, %infix%) are matched with strings functions; others with a
// backtracking matcher over tokens.
type likePattern struct {
	kind  likeKind
	lit   string      // for the simple kinds
	toks  []likeToken // for likeGeneral
	lower bool        // ILIKE: the value is lower-cased before matching
}

type likeKind uint8

const (
	likeExact likeKind = iota
	likePrefix
	likeSuffix
	likeContains
	likeAll // "%"
	likeGeneral
)

type likeToken struct {
	kind byte // 'l' literal byte, '_' one character, '%' any run
	b    byte
}

func compileLike(p string, ci bool) (*likePattern, error) {
	if ci {
		p = strings.ToLower(p)
	}
	var toks []likeToken
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; ch {
		case '\\':
			i++
			if i == len(p) {
				return nil, sqlerr.New("22025", "LIKE pattern must not end with escape character")
			}
			toks = append(toks, likeToken{'l', p[i]})
		case '%':
			if len(toks) == 0 || toks[len(toks)-1].kind != '%' {
				toks = append(toks, likeToken{kind: '%'})
			}
		case '_':
			toks = append(toks, likeToken{kind: '_'})
		default:
			toks = append(toks, likeToken{'l', ch})
		}
	}
	m := &likePattern{lower: ci, toks: toks, kind: likeGeneral}
	// Classify: literals with at most a leading and a trailing %.
	lead := len(toks) > 0 && toks[0].kind == '%'
	trail := len(toks) > 1 && toks[len(toks)-1].kind == '%'
	inner := toks
	if lead {
		inner = inner[1:]
	}
	if trail {
		inner = inner[:len(inner)-1]
	}
	simple := true
	lit := make([]byte, 0, len(inner))
	for _, t := range inner {
		if t.kind != 'l' {
			simple = false
			break
		}
		lit = append(lit, t.b)
	}
	if simple {
		m.lit = string(lit)
		switch {
		case lead && len(toks) == 1:
			m.kind = likeAll
		case lead && trail:
			m.kind = likeContains
		case lead:
			m.kind = likeSuffix
		case trail:
			m.kind = likePrefix
		default:
			m.kind = likeExact
		}
	}
	return m, nil
}

func (m *likePattern) match(s string) bool {
	switch m.kind {
	case likeExact:
		return s == m.lit
	case likePrefix:
		return strings.HasPrefix(s, m.lit)
	case likeSuffix:
		return strings.HasSuffix(s, m.lit)
	case likeContains:
		return strings.Contains(s, m.lit)
	case likeAll:
		return true
	}
	return globMatch(m.toks, s)
}

// globMatch is the classic single-backtrack wildcard matcher: on a mismatch
// it retries from the last %, which is enough for % and _ patterns.
func globMatch(toks []likeToken, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(toks) {
			switch t := toks[p]; t.kind {
			case 'l':
				if s[i] == t.b {
					p++
					i++
					continue
				}
			case '_':
				_, size := utf8.DecodeRuneInString(s[i:])
				p++
				i += size
				continue
			case '%':
				starP, starI = p, i
				p++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		_, size := utf8.DecodeRuneInString(s[starI:])
		starI += size
		p, i = starP+1, starI
	}
	for p < len(toks) && toks[p].kind == '%' {
		p++
	}
	return p == len(toks)
}

func likeKernel(ci bool) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a, pv := args[0], args[1]
		if pv.scalar() && pv.d.Null || a.scalar() && a.d.Null {
			return scalarVec(types.Null, types.TBool), nil
		}
		mem := c.mem()
		var m *likePattern
		if pv.scalar() { // compiled once per batch
			var err error
			if m, err = compileLike(pv.d.S, ci); err != nil {
				return vec{}, err
			}
		}
		valid, nulls := validity(mem, n, a, pv)
		vb := bufBytes(valid)
		buf, out := bitBuf(mem, n)
		var low []byte
		lastPat := ""
		for i := 0; i < n; i++ {
			if !isValid(vb, i) {
				continue
			}
			if !pv.scalar() {
				if p := strAt(pv, i); m == nil || p != lastPat {
					var err error
					if m, err = compileLike(p, ci); err != nil {
						buf.Release()
						if valid != nil {
							valid.Release()
						}
						return vec{}, err
					}
					lastPat = p
				}
			}
			s := strAt(a, i)
			if ci {
				low = appendCase(low[:0], s, false)
				s = unsafeString(low)
			}
			if m.match(s) {
				out[i>>3] |= 1 << (i & 7)
			}
		}
		return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
	}
}

// varcharAssignKernel stores text in a VARCHAR(n) column as PostgreSQL's
// assignment cast does (INSERT ... SELECT): a value longer than n
// characters fails with 22001 unless the excess is all spaces, which are
// cut. (An explicit cast, Cast to VARCHAR(n), truncates instead.)
func varcharAssignKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		limit := int(t.Prec)
		if !a.scalar() {
			s := a.arr.(*array.String)
			fits := true
			for i := 0; i < n && fits; i++ {
				v := s.Value(i)
				fits = len(v) <= limit || s.IsNull(i) || utf8.RuneCountInString(v) <= limit
				fits = fits && !(t.Pad && strings.HasSuffix(v, " "))
			}
			if fits {
				a.arr.Retain()
				return vec{arr: a.arr, t: t}, nil
			}
		}
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			d, err := types.AssignDatum(types.Str(strAt(a, i)), types.TText, t)
			if err != nil {
				return dst, err
			}
			return append(dst, d.S...), nil
		})
	}
}
