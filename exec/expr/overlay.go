package expr

import (
	"math"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// overlayKernel is overlay(s, t, start [, count]) (Text or Bytea s and t,
// Int64 start and count) as PostgreSQL's textoverlay and byteaoverlay:
// substring(s, 1, start - 1) || t || substring(s, start + count), count
// defaulting to t's length; positions count characters of text and bytes
// of bytea. A start below 1 makes the first substring's length negative:
// 22011, as in PostgreSQL.
func overlayKernel(bytes bool, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		s, r, sp := strColOf(args[0]), strColOf(args[1]), intColOf(args[2])
		var sl intCol
		if len(args) > 3 {
			sl = intColOf(args[3])
		}
		length := func(v string) int64 {
			if bytes {
				return int64(len(v))
			}
			return int64(utf8.RuneCountInString(v))
		}
		// offset is the byte offset of 1-based position p of v (clamped).
		offset := func(v string, p int64) int {
			if p <= 1 {
				return 0
			}
			if bytes {
				return int(min(p-1, int64(len(v))))
			}
			k := int64(1)
			for off := range v {
				if k == p {
					return off
				}
				k++
			}
			return len(v)
		}
		return c.strMap(t, args, n, func(dst []byte, i int) ([]byte, error) {
			v, ins, start := s.at(i), r.at(i), sp.at(i)
			count := length(ins)
			if len(args) > 3 {
				count = sl.at(i)
			}
			if count > 0 && start > math.MaxInt32-count || count < 0 && start < math.MinInt32-count {
				return dst, sqlerr.New(sqlerr.NumericOutOfRange, "integer out of range")
			}
			if start < 1 {
				return dst, sqlerr.New("22011", "negative substring length not allowed")
			}
			dst = append(dst, v[:offset(v, start)]...)
			dst = append(dst, ins...)
			return append(dst, v[offset(v, start+count):]...), nil
		})
	}
}
