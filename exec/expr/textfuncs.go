package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Text functions of the Nexmark queries: replace, split_part, to_char,
// regexp_match, regexp_replace and the text[] subscript. Each kernel reads
// its string columns through a strCol (a typed view, no interface call per
// row) and compiles a constant pattern or template once per batch.

// strCol reads row i of a text vec, column or scalar.
type strCol struct {
	arr *array.String
	s   string
}

func strColOf(v vec) strCol {
	if v.scalar() {
		return strCol{s: v.d.S}
	}
	return strCol{arr: v.arr.(*array.String)}
}

func (c strCol) at(i int) string {
	if c.arr == nil {
		return c.s
	}
	return c.arr.Value(i)
}

// intCol reads row i of an Int64 vec, column or scalar.
type intCol struct {
	vals []int64
	v    int64
}

func intColOf(v vec) intCol {
	if v.scalar() {
		return intCol{v: v.d.I}
	}
	return intCol{vals: int64s(v.arr)}
}

func (c intCol) at(i int) int64 {
	if c.vals == nil {
		return c.v
	}
	return c.vals[i]
}

// strMapNull is strMap for functions that may return NULL on non-NULL
// input: f reports null to make row i NULL.
func (c *Ctx) strMapNull(t types.T, args []vec, n int, f func(dst []byte, i int) ([]byte, bool, error)) (vec, error) {
	mem := c.mem()
	in, _ := validity(mem, n, args...)
	vbuf, valid := bitBuf(mem, n)
	inb := bufBytes(in)
	out := newStrOut(n, 0)
	nulls := 0
	for i := 0; i < n; i++ {
		if isValid(inb, i) {
			var null bool
			var err error
			if out.data, null, err = f(out.data, i); err != nil {
				if in != nil {
					in.Release()
				}
				vbuf.Release()
				return vec{}, err
			}
			if !null {
				valid[i>>3] |= 1 << (i & 7)
			} else {
				nulls++
			}
		} else {
			nulls++
		}
		out.end()
	}
	if in != nil {
		in.Release()
	}
	return vec{arr: out.finish(mem, t, vbuf, nulls), t: t}, nil
}

// ---- replace, split_part ----

// replaceKernel is replace(s, from, to): every occurrence of from is
// replaced; an empty from leaves s as it is.
func replaceKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s, from, to := strColOf(args[0]), strColOf(args[1]), strColOf(args[2])
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			v, old := s.at(i), from.at(i)
			if old == "" {
				return append(dst, v...), nil
			}
			repl := to.at(i)
			for {
				k := strings.Index(v, old)
				if k < 0 {
					return append(dst, v...), nil
				}
				dst = append(append(dst, v[:k]...), repl...)
				v = v[k+len(old):]
			}
		})
	}
}

// splitPartKernel is split_part(s, delim, n) as in PostgreSQL 15: field n
// (1-based) of s split at delim, counting from the end when n < 0; ” when
// there is no such field; n = 0 is an error. An empty delimiter makes s
// its only field.
func splitPartKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s, delim, field := strColOf(args[0]), strColOf(args[1]), intColOf(args[2])
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			v, d, k := s.at(i), delim.at(i), field.at(i)
			if k == 0 {
				return dst, sqlerr.New(sqlerr.InvalidParameterValue, "field position must not be zero")
			}
			if d == "" {
				if k == 1 || k == -1 {
					return append(dst, v...), nil
				}
				return dst, nil
			}
			if k > 0 {
				for ; k > 1; k-- {
					j := strings.Index(v, d)
					if j < 0 {
						return dst, nil
					}
					v = v[j+len(d):]
				}
				if j := strings.Index(v, d); j >= 0 {
					v = v[:j]
				}
				return append(dst, v...), nil
			}
			for ; k < -1; k++ {
				j := strings.LastIndex(v, d)
				if j < 0 {
					return dst, nil
				}
				v = v[:j]
			}
			if j := strings.LastIndex(v, d); j >= 0 {
				v = v[j+len(d):]
			}
			return append(dst, v...), nil
		})
	}
}

// ---- to_char ----

// toCharKernel is to_char(timestamp, template); infinite timestamps and an
// empty template give NULL.
func toCharKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		tmpl := strColOf(args[1])
		var f *types.CharFormat
		last := ""
		if args[1].scalar() {
			var err error
			if f, err = types.CompileCharFormat(tmpl.s); err != nil {
				return vec{}, err
			}
		}
		ts := intColOf(args[0])
		return c.strMapNull(t, args, n, func(dst []byte, i int) ([]byte, bool, error) {
			if !args[1].scalar() {
				if p := tmpl.at(i); f == nil || p != last {
					var err error
					if f, err = types.CompileCharFormat(p); err != nil {
						return dst, false, err
					}
					last = p
				}
			}
			if f.Empty() {
				return dst, true, nil // an empty template gives NULL, as in PostgreSQL
			}
			out, ok := f.AppendChar(dst, ts.at(i))
			return out, !ok, nil
		})
	}
}

// numFormats compiles number templates for a kernel: once for a constant
// template, again only when a column's template changes. Compiling waits
// for the first non-NULL row, as PostgreSQL (a strict function) never
// sees a template beside a NULL value.
type numFormats struct {
	tmpl strCol
	f    *types.NumFormat
	last string
}

func (c *numFormats) at(i int) (*types.NumFormat, error) {
	p := c.tmpl.at(i)
	if c.f == nil || p != c.last {
		f, err := types.CompileNumFormat(p)
		if err != nil {
			return nil, err
		}
		c.f, c.last = f, p
	}
	return c.f, nil
}

// toCharNumKernel is to_char(number, template) for an argument of type
// at (Int64, Float32, Float64 or Numeric); an empty template gives ”.
func toCharNumKernel(at, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		fs := numFormats{tmpl: strColOf(args[1])}
		a := args[0]
		var ints intCol
		if at.Kind == types.Int64 {
			ints = intColOf(a)
		}
		return c.strMapNull(t, args, n, func(dst []byte, i int) ([]byte, bool, error) {
			f, err := fs.at(i)
			if err != nil || f.Empty() {
				return dst, false, err
			}
			switch at.Kind {
			case types.Int64:
				dst, err = f.AppendInt(dst, ints.at(i))
			case types.Float32:
				dst, err = f.AppendFloat(dst, floatAt(a, i), 6)
			case types.Float64:
				dst, err = f.AppendFloat(dst, floatAt(a, i), 15)
			default:
				dst, err = f.AppendNumeric(dst, decAt(a, i), at.Scale)
			}
			return dst, false, err
		})
	}
}

// toNumberKernel is to_number(text, template); an empty template gives
// NULL.
func toNumberKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		fs := numFormats{tmpl: strColOf(args[1])}
		s := strColOf(args[0])
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			f, err := fs.at(i)
			if err != nil || f.Empty() {
				return types.Null, err
			}
			return f.ParseNumber(s.at(i))
		})
	}
}

// toDateKernel is to_date(text, template) (date) or to_timestamp(text,
// template) (timestamp with time zone, read in UTC).
func toDateKernel(date bool, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		tmpl := strColOf(args[1])
		s := strColOf(args[0])
		var f *types.CharFormat
		last := ""
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			if p := tmpl.at(i); f == nil || p != last {
				var err error
				if f, err = types.CompileCharFormat(p); err != nil {
					return types.Null, err
				}
				last = p
			}
			var v int64
			var err error
			if date {
				v, err = f.ParseDate(s.at(i))
			} else {
				v, err = f.ParseTimestamp(s.at(i))
			}
			return types.Int(v), err
		})
	}
}

// ---- regular expressions ----

// regexOpts are the flags of a PostgreSQL regular expression function.
type regexOpts struct {
	global bool
	// need is a literal (case-sensitive) that every match contains, or
	// "": a string without it cannot match, which a substring search
	// tells faster than the regexp engine (mustContain).
	need string
}

// matchesNone reports whether a string cannot match: it lacks the
// pattern's required literal.
func (o *regexOpts) matchesNone(v string) bool {
	return o.need != "" && !strings.Contains(v, o.need)
}

// mustContain returns the longest literal that every match of re contains
// ("" if none is known): a literal of a concatenation, of a capture group
// or of a repetition of at least one, taken case-sensitively only.
func mustContain(re *syntax.Regexp) string {
	best := ""
	keep := func(s string) {
		if len(s) > len(best) {
			best = s
		}
	}
	literal := func(r *syntax.Regexp) (string, bool) {
		if r.Op != syntax.OpLiteral || r.Flags&syntax.FoldCase != 0 {
			return "", false
		}
		return string(r.Rune), true
	}
	switch re.Op {
	case syntax.OpLiteral:
		if s, ok := literal(re); ok {
			keep(s)
		}
	case syntax.OpCapture:
		keep(mustContain(re.Sub[0]))
	case syntax.OpPlus:
		keep(mustContain(re.Sub[0]))
	case syntax.OpRepeat:
		if re.Min >= 1 {
			keep(mustContain(re.Sub[0]))
		}
	case syntax.OpConcat:
		run := ""
		for _, sub := range re.Sub {
			if s, ok := literal(sub); ok {
				run += s // adjacent literals are one literal
				keep(run)
				continue
			}
			run = ""
			keep(mustContain(sub))
		}
	}
	return best
}

// compileRegex compiles a PostgreSQL (ARE) pattern with Go's RE2 engine.
// PostgreSQL's default is "." matching newlines and ^ $ anchoring at the
// ends of the string only, which is Go's (?s). Constructs RE2 lacks
// (backreferences, lookaround) fail with 2201B. Overall matches are
// leftmost-longest, as PostgreSQL's are, unless the pattern asks for a
// non-greedy quantifier.
func compileRegex(fn, pat, flags string) (*regexp.Regexp, regexOpts, error) {
	var o regexOpts
	ci, dotNL, lineAnch, literal := false, true, false, false
	for _, f := range flags {
		switch f {
		case 'g':
			if fn == "regexp_match" {
				return nil, o, sqlerr.New(sqlerr.InvalidParameterValue, "regexp_match() does not support the \"global\" option")
			}
			o.global = true
		case 'i':
			ci = true
		case 'c':
			ci = false
		case 'n', 'm':
			dotNL, lineAnch = false, true
		case 's':
			dotNL, lineAnch = true, false
		case 'p':
			dotNL, lineAnch = false, false
		case 'w':
			dotNL, lineAnch = true, true
		case 'q':
			literal = true
		case 't':
		case 'x', 'b', 'e':
			return nil, o, sqlerr.New(sqlerr.FeatureNotSupported, "regular expression option \"%c\" is not supported", f)
		default:
			return nil, o, sqlerr.New(sqlerr.InvalidParameterValue, "invalid regular expression option: \"%c\"", f)
		}
	}
	if literal {
		pat = regexp.QuoteMeta(pat)
	}
	prefix := ""
	if ci {
		prefix += "i"
	}
	if dotNL {
		prefix += "s"
	}
	if lineAnch {
		prefix += "m"
	}
	if prefix != "" {
		pat = "(?" + prefix + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, o, sqlerr.New("2201B", "invalid regular expression: %s", msg)
	}
	if sy, err := syntax.Parse(pat, syntax.Perl); err == nil {
		if need := mustContain(sy.Simplify()); !strings.ContainsRune(need, utf8.RuneError) {
			o.need = need // (RE2 reads an invalid byte as U+FFFD: no prefilter then)
		}
	}
	if !hasLazyQuantifier(pat) {
		re.Longest()
	}
	return re, o, nil
}

// hasLazyQuantifier reports whether pat has *? +? ?? or }? outside a
// bracket expression.
func hasLazyQuantifier(pat string) bool {
	inBracket := false
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; {
		case c == '\\':
			i++
		case inBracket:
			if c == ']' {
				inBracket = false
			}
		case c == '[':
			inBracket = true
			if i+1 < len(pat) && pat[i+1] == ']' {
				i++
			}
		case (c == '*' || c == '+' || c == '?' || c == '}') && i+1 < len(pat) && pat[i+1] == '?':
			if c == '?' && i > 0 && pat[i-1] == '(' {
				continue // (?: (?i) ...
			}
			return true
		}
	}
	return false
}

// regexCache compiles the pattern (and flags) of each row, reusing the last
// one; a constant pattern is compiled once.
type regexCache struct {
	fn           string
	pat, flags   strCol
	hasFlags     bool
	re           *regexp.Regexp
	opts         regexOpts
	lastP, lastF string
}

func newRegexCache(fn string, pat vec, flags *vec) (*regexCache, error) {
	rc := &regexCache{fn: fn, pat: strColOf(pat)}
	constant := pat.scalar()
	if flags != nil {
		rc.flags, rc.hasFlags = strColOf(*flags), true
		constant = constant && flags.scalar()
	}
	if constant && !pat.d.Null && (flags == nil || !flags.d.Null) {
		return rc, rc.compile(rc.pat.s, rc.flags.s)
	}
	return rc, nil
}

func (rc *regexCache) compile(p, f string) error {
	re, o, err := compileRegex(rc.fn, p, f)
	if err != nil {
		return err
	}
	rc.re, rc.opts, rc.lastP, rc.lastF = re, o, p, f
	return nil
}

func (rc *regexCache) at(i int) (*regexp.Regexp, error) {
	if rc.re != nil && rc.pat.arr == nil && (!rc.hasFlags || rc.flags.arr == nil) {
		return rc.re, nil
	}
	p, f := rc.pat.at(i), ""
	if rc.hasFlags {
		f = rc.flags.at(i)
	}
	if rc.re == nil || p != rc.lastP || f != rc.lastF {
		if err := rc.compile(p, f); err != nil {
			return nil, err
		}
	}
	return rc.re, nil
}

// regexpMatchKernel is regexp_match(s, pattern [, flags]) → text[]: the
// capture groups of the first match (a group that did not take part is a
// NULL element), or the whole match if the pattern has no groups; NULL
// when nothing matches.
func regexpMatchKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		var flags *vec
		if len(args) > 2 {
			flags = &args[2]
		}
		rc, err := newRegexCache("regexp_match", args[1], flags)
		if err != nil {
			return vec{}, err
		}
		inb, release := allValid(c, n, args) // funcs_more.go
		defer release()
		s := strColOf(args[0])
		lb := array.NewListBuilder(c.mem(), arrow.BinaryTypes.String)
		defer lb.Release()
		lb.Reserve(n)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		var idx []int
		for i := 0; i < n; i++ {
			if !isValid(inb, i) {
				lb.AppendNull()
				continue
			}
			re, err := rc.at(i)
			if err != nil {
				return vec{}, err
			}
			v := s.at(i)
			if rc.opts.matchesNone(v) {
				lb.AppendNull()
				continue
			}
			idx = re.FindStringSubmatchIndex(v)
			if idx == nil {
				lb.AppendNull()
				continue
			}
			lb.Append(true)
			if len(idx) == 2 {
				vb.Append(v[idx[0]:idx[1]])
				continue
			}
			for g := 2; g < len(idx); g += 2 {
				if idx[g] < 0 {
					vb.AppendNull()
				} else {
					vb.Append(v[idx[g]:idx[g+1]])
				}
			}
		}
		return vec{arr: lb.NewArray(), t: t}, nil
	}
}

// regexpReplaceKernel is regexp_replace(s, pattern, replacement [, flags]):
// the first match (every match with flag g) replaced; in the replacement
// \1 to \9 stand for groups, \& for the whole match and \\ for a backslash.
func regexpReplaceKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		var flags *vec
		if len(args) > 3 {
			flags = &args[3]
		}
		rc, err := newRegexCache("regexp_replace", args[1], flags)
		if err != nil {
			return vec{}, err
		}
		s, repl := strColOf(args[0]), strColOf(args[2])
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			re, err := rc.at(i)
			if err != nil {
				return dst, err
			}
			v := s.at(i)
			if rc.opts.matchesNone(v) {
				return append(dst, v...), nil
			}
			limit := 1
			if rc.opts.global {
				limit = -1
			}
			at := 0
			for _, m := range re.FindAllStringSubmatchIndex(v, limit) {
				dst = append(dst, v[at:m[0]]...)
				dst = appendReplacement(dst, repl.at(i), v, m)
				at = m[1]
			}
			return append(dst, v[at:]...), nil
		})
	}
}

func appendReplacement(dst []byte, repl, src string, m []int) []byte {
	for j := 0; j < len(repl); j++ {
		ch := repl[j]
		if ch != '\\' || j+1 == len(repl) {
			dst = append(dst, ch)
			continue
		}
		switch next := repl[j+1]; {
		case next >= '1' && next <= '9':
			if g := int(next - '0'); 2*g+1 < len(m) && m[2*g] >= 0 {
				dst = append(dst, src[m[2*g]:m[2*g+1]]...)
			}
			j++
		case next == '&':
			dst = append(dst, src[m[0]:m[1]]...)
			j++
		case next == '\\':
			dst = append(dst, '\\')
			j++
		default:
			dst = append(dst, '\\')
		}
	}
	return dst
}

// ---- text[] ----

// subscriptKernel is a[k]: element k (1-based), of the element type t, or
// NULL when k is out of range, the element is NULL, or a or k is NULL. It
// gathers the elements from the list's values, typed.
func subscriptKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		lst := args[0].column(mem, n).(*array.List)
		defer lst.Release()
		offs := lst.Offsets()[lst.Data().Offset():]
		vals := lst.ListValues()
		in, _ := validity(mem, n, args...)
		if in != nil {
			defer in.Release()
		}
		inb := bufBytes(in)
		k := intColOf(args[1])
		which, pos := make([]int32, n), make([]int32, n)
		for i := 0; i < n; i++ {
			if isValid(inb, i) {
				start, end := int64(offs[i]), int64(offs[i+1])
				if p := k.at(i); p >= 1 && p <= end-start {
					pos[i] = int32(start + p - 1)
					continue
				}
			}
			which[i] = -1
		}
		return vec{arr: gather(mem, t.Arrow(), []arrow.Array{vals}, which, pos), t: t}, nil
	}
}

// broadcastList makes n copies of an array datum of t.
func broadcastList(mem memory.Allocator, d types.Datum, t types.T, n int) arrow.Array {
	lb := types.NewBuilder(mem, t)
	defer lb.Release()
	for i := 0; i < n; i++ {
		types.AppendDatum(lb, d, t)
	}
	return lb.NewArray()
}

// trimKernel is PostgreSQL's btrim, ltrim or rtrim (name) of (s, chars):
// s without the leading and/or trailing characters (code points, not a
// substring) that occur in chars. TRIM([BOTH|LEADING|TRAILING] [chars]
// FROM s) binds to these.
func trimKernel(name string, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s, chars := strColOf(args[0]), strColOf(args[1])
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			v, set := s.at(i), chars.at(i)
			switch name {
			case "ltrim":
				v = strings.TrimLeft(v, set)
			case "rtrim":
				v = strings.TrimRight(v, set)
			default:
				v = strings.Trim(v, set)
			}
			return append(dst, v...), nil
		})
	}
}
