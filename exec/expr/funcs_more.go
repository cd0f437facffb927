package expr

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// moreScalarKernel picks the kernels of more of PostgreSQL's everyday
// functions (sql/bind/funcs_more.go). Operand types, as the binder
// guarantees:
//
//	sqrt_numeric exp_numeric ln_numeric   Numeric → Numeric (numtrans.go)
//	log_numeric                           Numeric, Numeric → Numeric
//	sha224 sha256 sha384 sha512           Bytea → Bytea
//	encode                                Bytea, Text → Text
//	decode                                Text, Text → Bytea (bytea.go)
//	string_to_array                       Text, Text [, Text] → TextArray (not strict)
//	regexp_split_to_array                 Text, Text [, Text] → TextArray
//	overlay, overlay_bytea                Text (Bytea) ×2, Int64 [, Int64] → Text (Bytea)
func moreScalarKernel(e *Func) (k kernel, lo, hi int, ok bool) {
	lo, hi = 1, 1
	switch e.Name {
	case "sqrt_numeric", "exp_numeric", "ln_numeric":
		k = numTransKernel(e.Name, e.T)
	case "log_numeric":
		k, lo, hi = numTransKernel(e.Name, e.T), 2, 2
	case "sha224", "sha256", "sha384", "sha512":
		k = shaKernel(e.Name, e.T)
	case "encode":
		k, lo, hi = encodeKernel(e.T), 2, 2
	case "decode":
		k, lo, hi = decodeKernel(e.T), 2, 2
	case "string_to_array":
		k, lo, hi = stringToArrayKernel(e.T), 2, 3
	case "regexp_split_to_array":
		k, lo, hi = regexpSplitKernel(e.T), 2, 3
	case "overlay", "overlay_bytea":
		k, lo, hi = overlayKernel(e.Name == "overlay_bytea", e.T), 3, 4
	default:
		return nil, 0, 0, false
	}
	return k, lo, hi, true
}

func shaKernel(name string, t types.T) kernel {
	var sum func(dst []byte, b []byte) []byte
	switch name {
	case "sha224":
		sum = func(dst, b []byte) []byte { s := sha256.Sum224(b); return append(dst, s[:]...) }
	case "sha256":
		sum = func(dst, b []byte) []byte { s := sha256.Sum256(b); return append(dst, s[:]...) }
	case "sha384":
		sum = func(dst, b []byte) []byte { s := sha512.Sum384(b); return append(dst, s[:]...) }
	default:
		sum = func(dst, b []byte) []byte { s := sha512.Sum512(b); return append(dst, s[:]...) }
	}
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s := strColOf(args[0])
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			return sum(dst, []byte(s.at(i))), nil
		})
	}
}

// byteaFormat is the format argument of encode and decode, matched
// without regard to case as PostgreSQL does.
func byteaFormat(f string) (string, error) {
	switch l := strings.ToLower(f); l {
	case "hex", "base64", "escape":
		return l, nil
	}
	return "", sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized encoding: \"%s\"", f)
}

// encodeKernel is encode(bytea, format) → text.
func encodeKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		b, f := strColOf(args[0]), strColOf(args[1])
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			format, err := byteaFormat(f.at(i))
			if err != nil {
				return dst, err
			}
			v := b.at(i)
			switch format {
			case "hex":
				return hex.AppendEncode(dst, []byte(v)), nil
			case "base64":
				return types.AppendPGBase64(dst, v), nil
			}
			return types.AppendByteaEscape(dst, v), nil
		})
	}
}

// decodeKernel is decode(text, format) → bytea.
func decodeKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s, f := strColOf(args[0]), strColOf(args[1])
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			format, err := byteaFormat(f.at(i))
			if err != nil {
				return dst, err
			}
			v := s.at(i)
			switch format {
			case "hex":
				return types.AppendPGHexDecode(dst, v)
			case "base64":
				return types.AppendPGBase64Decode(dst, v)
			}
			return types.AppendByteaUnescape(dst, v)
		})
	}
}

// textListOut builds a text[] column row by row.
type textListOut struct {
	lb *array.ListBuilder
	vb *array.StringBuilder
}

func newTextListOut(c *Ctx, n int) textListOut {
	lb := array.NewListBuilder(c.mem(), arrow.BinaryTypes.String)
	lb.Reserve(n)
	return textListOut{lb: lb, vb: lb.ValueBuilder().(*array.StringBuilder)}
}

func (o textListOut) finish(t types.T) vec {
	defer o.lb.Release()
	return vec{arr: o.lb.NewArray(), t: t}
}

// allValid returns the validity bitmap of the rows where no argument is
// NULL (nil when none is) and the function that releases it.
func allValid(c *Ctx, n int, args []vec) ([]byte, func()) {
	in, _ := validity(c.mem(), n, args...)
	if in == nil {
		return nil, func() {}
	}
	return bufBytes(in), in.Release
}

// nullAt reports whether row i of v is NULL.
func nullAt(v vec, i int) bool {
	if v.scalar() {
		return v.d.Null
	}
	return v.arr.IsNull(i)
}

// stringToArrayKernel is string_to_array(s, delim [, null_str]) as
// PostgreSQL's text_to_array: NULL for a NULL s; an empty array for an
// empty s; one element per character for a NULL delim; the whole string
// for an empty delim; elements equal to null_str are NULL.
func stringToArrayKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s, d := strColOf(args[0]), strColOf(args[1])
		var ns strCol
		if len(args) > 2 {
			ns = strColOf(args[2])
		}
		o := newTextListOut(c, n)
		for i := 0; i < n; i++ {
			if nullAt(args[0], i) {
				o.lb.AppendNull()
				continue
			}
			o.lb.Append(true)
			hasNull := len(args) > 2 && !nullAt(args[2], i)
			nullStr := ""
			if hasNull {
				nullStr = ns.at(i)
			}
			splitText(s.at(i), d.at(i), nullAt(args[1], i), func(part string) {
				if hasNull && part == nullStr {
					o.vb.AppendNull()
				} else {
					o.vb.Append(part)
				}
			})
		}
		return o.finish(t), nil
	}
}

// splitText calls emit with each field of s split at delim (at each
// character when byChar), as PostgreSQL's split_text does.
func splitText(s, delim string, byChar bool, emit func(string)) {
	switch {
	case s == "":
	case byChar:
		for len(s) > 0 {
			_, w := utf8.DecodeRuneInString(s)
			emit(s[:w])
			s = s[w:]
		}
	case delim == "":
		emit(s)
	default:
		for {
			j := strings.Index(s, delim)
			if j < 0 {
				emit(s)
				return
			}
			emit(s[:j])
			s = s[j+len(delim):]
		}
	}
}

// regexpSplitKernel is regexp_split_to_array(s, pattern [, flags]).
func regexpSplitKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		rc, err := newSplitRegex(args)
		if err != nil {
			return vec{}, err
		}
		inb, release := allValid(c, n, args)
		defer release()
		s := strColOf(args[0])
		o := newTextListOut(c, n)
		for i := 0; i < n; i++ {
			if !isValid(inb, i) {
				o.lb.AppendNull()
				continue
			}
			o.lb.Append(true)
			if err := rc.split(i, s.at(i), func(p string) { o.vb.Append(p) }); err != nil {
				o.lb.Release()
				return vec{}, err
			}
		}
		return o.finish(t), nil
	}
}

// splitRegex is the pattern of regexp_split_to_array/_table.
type splitRegex struct {
	rc *regexCache
	fn string
}

func newSplitRegex(args []vec) (splitRegex, error) {
	var flags *vec
	if len(args) > 2 {
		flags = &args[2]
	}
	rc, err := newRegexCache("regexp_split_to_array", args[1], flags)
	if err == nil && rc.re != nil && rc.opts.global {
		err = errSplitGlobal()
	}
	return splitRegex{rc: rc, fn: "regexp_split_to_array"}, err
}

func errSplitGlobal() error {
	return sqlerr.New(sqlerr.InvalidParameterValue, "regexp_split_to_array() does not support the \"global\" option")
}

// split calls emit with the fields of v between the matches of row i's
// pattern, as PostgreSQL's regexp_split does: a zero-length match at the
// start or end of v, or right after the previous match, splits nothing.
func (r splitRegex) split(i int, v string, emit func(string)) error {
	re, err := r.rc.at(i)
	if err != nil {
		return err
	}
	if r.rc.opts.global {
		return errSplitGlobal()
	}
	prevEnd := 0
	for _, m := range re.FindAllStringIndex(v, -1) {
		if m[0] < len(v) && m[1] > prevEnd {
			emit(v[prevEnd:m[0]])
			prevEnd = m[1]
		}
	}
	emit(v[prevEnd:])
	return nil
}

// RegexpMatches is the rows of regexp_matches(s, pattern, flags): a text[]
// per match (every match with flag g, else the first), holding the
// capture groups (NULL for a group that took no part) or, without groups,
// the whole match. Matches are Go's: a zero-length match right after
// another match is not one (PostgreSQL reports it).
func RegexpMatches(s, pattern, flags string) ([]types.Datum, error) {
	re, o, err := compileRegex("regexp_matches", pattern, flags)
	if err != nil {
		return nil, err
	}
	limit := 1
	if o.global {
		limit = -1
	}
	var out []types.Datum
	for _, m := range re.FindAllStringSubmatchIndex(s, limit) {
		a := &types.Array{}
		if len(m) == 2 {
			a.Elems = []string{s[m[0]:m[1]]}
		}
		for g := 2; g < len(m); g += 2 {
			if m[g] < 0 {
				if a.Null == nil {
					a.Null = make([]bool, (len(m)-2)/2)
				}
				a.Null[len(a.Elems)] = true
				a.Elems = append(a.Elems, "")
				continue
			}
			a.Elems = append(a.Elems, s[m[g]:m[g+1]])
		}
		out = append(out, types.Datum{A: a})
	}
	return out, nil
}
