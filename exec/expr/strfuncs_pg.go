package expr

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// PostgreSQL's everyday text functions: lpad, rpad, left, right, repeat,
// reverse, translate, initcap, md5, ascii, chr, starts_with, strpos
// (and position), concat_ws, format, to_hex and bit_length. Lengths and
// positions count characters, not bytes, as PostgreSQL's in UTF-8. Each
// kernel reads its columns through strCol/intCol and appends the rows'
// bytes to one buffer (strMapNull), no allocation per row.

// maxTextBytes is the largest result a text function builds (PostgreSQL's
// 1 GB allocation limit); a longer one is 54000.
const maxTextBytes = 1<<30 - 1

func errLengthTooLarge() error {
	return sqlerr.New(sqlerr.ProgramLimitExceeded, "requested length too large")
}

// textKernel builds a kernel over strMapNull.
func textKernel(t types.T, f func(args []vec) func(dst []byte, i int) ([]byte, error)) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		g := f(args)
		return c.strMapNull(t, args, n, func(dst []byte, i int) ([]byte, bool, error) {
			out, err := g(dst, i)
			return out, false, err
		})
	}
}

// prefixChars returns the first k characters of s (all of s when shorter).
func prefixChars(s string, k int64) string {
	if k <= 0 {
		return ""
	}
	for i := range s {
		if k == 0 {
			return s[:i]
		}
		k--
	}
	return s
}

// padKernel is lpad(s, len, fill) and rpad: s cut or padded to len
// characters with fill repeated; an empty fill does not pad.
func padKernel(left bool, t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		s, ln, fill := strColOf(args[0]), intColOf(args[1]), strColOf(args[2])
		return func(dst []byte, i int) ([]byte, error) {
			v, l, f := s.at(i), ln.at(i), fill.at(i)
			l = max(l, 0)
			if l > maxTextBytes/4 {
				return dst, errLengthTooLarge()
			}
			v = prefixChars(v, l)
			pad := l - int64(utf8.RuneCountInString(v))
			if f == "" {
				pad = 0
			}
			if !left {
				dst = append(dst, v...)
			}
			for j := 0; pad > 0; pad-- {
				_, w := utf8.DecodeRuneInString(f[j:])
				dst = append(dst, f[j:j+w]...)
				if j += w; j >= len(f) {
					j = 0
				}
			}
			if left {
				dst = append(dst, v...)
			}
			return dst, nil
		}
	})
}

// leftRightKernel is left(s, n) and right(s, n): the first (last) n
// characters, or with n < 0 all but the last (first) -n.
func leftRightKernel(right bool, t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		s, k := strColOf(args[0]), intColOf(args[1])
		return func(dst []byte, i int) ([]byte, error) {
			v, n := s.at(i), k.at(i)
			chars := int64(utf8.RuneCountInString(v))
			if n < 0 {
				n = max(chars+n, 0)
			}
			if !right {
				return append(dst, prefixChars(v, n)...), nil
			}
			skip := max(chars-n, 0)
			return append(dst, v[len(prefixChars(v, skip)):]...), nil
		}
	})
}

func repeatKernel(t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		s, k := strColOf(args[0]), intColOf(args[1])
		return func(dst []byte, i int) ([]byte, error) {
			v, n := s.at(i), k.at(i)
			if n <= 0 || v == "" {
				return dst, nil
			}
			if n > maxTextBytes/int64(len(v)) {
				return dst, errLengthTooLarge()
			}
			for ; n > 0; n-- {
				dst = append(dst, v...)
			}
			return dst, nil
		}
	})
}

func reverseKernel(t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		s := strColOf(args[0])
		return func(dst []byte, i int) ([]byte, error) {
			v := s.at(i)
			for len(v) > 0 {
				_, w := utf8.DecodeLastRuneInString(v)
				dst = append(dst, v[len(v)-w:]...)
				v = v[:len(v)-w]
			}
			return dst, nil
		}
	})
}

// translateKernel is translate(s, from, to): each character of s found in
// from becomes the character at the same place in to, or is dropped when
// to is shorter.
func translateKernel(t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		s, from, to := strColOf(args[0]), strColOf(args[1]), strColOf(args[2])
		return func(dst []byte, i int) ([]byte, error) {
			f, tt := from.at(i), to.at(i)
			for _, r := range s.at(i) {
				k := 0
				found := false
				for _, fr := range f {
					if fr == r {
						found = true
						break
					}
					k++
				}
				if !found {
					dst = utf8.AppendRune(dst, r)
					continue
				}
				for _, tr := range tt {
					if k == 0 {
						dst = utf8.AppendRune(dst, tr)
						break
					}
					k--
				}
			}
			return dst, nil
		}
	})
}

// initcapKernel is initcap(s): the first letter of each run of letters
// and digits upper case, the others lower case.
func initcapKernel(t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		s := strColOf(args[0])
		return func(dst []byte, i int) ([]byte, error) {
			inWord := false
			for _, r := range s.at(i) {
				if inWord {
					dst = utf8.AppendRune(dst, unicode.ToLower(r))
				} else {
					dst = utf8.AppendRune(dst, unicode.ToUpper(r))
				}
				inWord = unicode.IsLetter(r) || unicode.IsDigit(r)
			}
			return dst, nil
		}
	})
}

func md5Kernel(t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		s := strColOf(args[0])
		return func(dst []byte, i int) ([]byte, error) {
			sum := md5.Sum([]byte(s.at(i)))
			return hex.AppendEncode(dst, sum[:]), nil
		}
	})
}

// chrKernel is chr(integer): the character of that code point.
func chrKernel(t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		x := intColOf(args[0])
		return func(dst []byte, i int) ([]byte, error) {
			v := x.at(i)
			switch {
			case v < 0:
				return dst, sqlerr.New(sqlerr.InvalidParameterValue, "character number must be positive")
			case v == 0:
				return dst, sqlerr.New(sqlerr.ProgramLimitExceeded, "null character not permitted")
			case v > 0x10ffff:
				return dst, sqlerr.New(sqlerr.ProgramLimitExceeded, "requested character too large for encoding: %d", v)
			case v >= 0xd800 && v <= 0xdfff:
				return dst, sqlerr.New(sqlerr.ProgramLimitExceeded, "requested character not valid for encoding: %d", v)
			}
			return utf8.AppendRune(dst, rune(v)), nil
		}
	})
}

// toHexKernel is to_hex(bigint) (bits 64) and to_hex(integer) (bits 32):
// the two's complement digits of a negative value.
func toHexKernel(bits int, t types.T) kernel {
	return textKernel(t, func(args []vec) func([]byte, int) ([]byte, error) {
		x := intColOf(args[0])
		return func(dst []byte, i int) ([]byte, error) {
			v := uint64(x.at(i))
			if bits == 32 {
				v = uint64(uint32(v))
			}
			return strconv.AppendUint(dst, v, 16), nil
		}
	})
}

// intOfText computes an integer per row of text columns.
func (c *Ctx) intOfText(t types.T, args []vec, n int, f func(i int) int64) vec {
	mem := c.mem()
	valid, nulls := validity(mem, n, args...)
	vb := bufBytes(valid)
	buf, out := fixedBuf[int64](mem, n)
	for i := range out {
		out[i] = 0
		if isValid(vb, i) {
			out[i] = f(i)
		}
	}
	return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}
}

func asciiKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s := strColOf(args[0])
		return c.intOfText(t, args, n, func(i int) int64 {
			v := s.at(i)
			if v == "" {
				return 0
			}
			r, _ := utf8.DecodeRuneInString(v)
			return int64(r)
		}), nil
	}
}

func bitLengthKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s := strColOf(args[0])
		return c.intOfText(t, args, n, func(i int) int64 { return int64(len(s.at(i))) * 8 }), nil
	}
}

// strposKernel is strpos(s, sub): the character position of the first
// sub in s, 0 when there is none (1 for an empty sub).
func strposKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s, sub := strColOf(args[0]), strColOf(args[1])
		return c.intOfText(t, args, n, func(i int) int64 {
			v := s.at(i)
			k := strings.Index(v, sub.at(i))
			if k < 0 {
				return 0
			}
			return int64(utf8.RuneCountInString(v[:k])) + 1
		}), nil
	}
}

func startsWithKernel(c *Ctx, args []vec, n int) (vec, error) {
	mem := c.mem()
	s, p := strColOf(args[0]), strColOf(args[1])
	valid, nulls := validity(mem, n, args...)
	vb := bufBytes(valid)
	buf, out := bitBuf(mem, n)
	for i := 0; i < n; i++ {
		if isValid(vb, i) && strings.HasPrefix(s.at(i), p.at(i)) {
			out[i>>3] |= 1 << (i & 7)
		}
	}
	return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
}

// concatWSKernel is concat_ws(sep, ...): NULL when sep is; else the
// non-NULL arguments (already text) joined by sep.
func concatWSKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		valid, nulls := validity(mem, n, args[0])
		vb := bufBytes(valid)
		sep := strColOf(args[0])
		cols := nullableStrColsOf(args[1:])
		out := newStrOut(n, 0)
		for i := 0; i < n; i++ {
			if isValid(vb, i) {
				first := true
				for j := range cols.cols {
					s, null := cols.at(j, i)
					if null {
						continue
					}
					if !first {
						out.data = append(out.data, sep.at(i)...)
					}
					first = false
					out.data = append(out.data, s...)
				}
			}
			out.end()
		}
		return vec{arr: out.finish(mem, t, valid, nulls), t: t}, nil
	}
}

// nullableStrCols reads text arguments that may be NULL row by row
// (concat_ws and format skip or print NULLs rather than return NULL).
type nullableStrCols struct {
	cols  []strCol
	valid [][]byte // nil: no NULL in the column
	null  []bool   // a NULL scalar
}

func nullableStrColsOf(args []vec) nullableStrCols {
	c := nullableStrCols{cols: make([]strCol, len(args)), valid: make([][]byte, len(args)), null: make([]bool, len(args))}
	for j, a := range args {
		c.cols[j] = strColOf(a)
		if a.scalar() {
			c.null[j] = a.d.Null
		} else {
			c.valid[j] = validBits(a.arr)
		}
	}
	return c
}

// at is argument j of row i and whether it is NULL.
func (c nullableStrCols) at(j, i int) (string, bool) {
	if c.null[j] || c.valid[j] != nil && !isValid(c.valid[j], i) {
		return "", true
	}
	return c.cols[j].at(i), false
}
