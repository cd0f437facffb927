package expr

import (
	"strconv"

	"github.com/streamdb/streamdb/types"
)

// pg_size_pretty(bigint): a byte count in bytes, kB, MB, GB, TB or PB, as
// PostgreSQL 15 writes it (src/backend/utils/adt/dbsize.c).

// sizeUnit is one unit of pg_size_pretty: a size below limit (in this
// unit, absolute) is written in it; round halves it with rounding away
// from zero (the size was kept one bit larger for that).
type sizeUnit struct {
	name  string
	limit int64
	round bool
	bits  uint
}

var sizeUnits = []sizeUnit{
	{"bytes", 10 * 1024, false, 0},
	{"kB", 20*1024 - 1, true, 10},
	{"MB", 20*1024 - 1, true, 20},
	{"GB", 20*1024 - 1, true, 30},
	{"TB", 20*1024 - 1, true, 40},
	{"PB", 20*1024 - 1, true, 50},
}

// SizePretty is pg_size_pretty(size).
func SizePretty(size int64) string {
	return string(appendSizePretty(nil, size))
}

func appendSizePretty(dst []byte, size int64) []byte {
	for i, u := range sizeUnits {
		abs := size
		if abs < 0 {
			abs = -abs
		}
		if i == len(sizeUnits)-1 || abs < u.limit {
			if u.round {
				if size < 0 {
					size = (size - 1) / 2
				} else {
					size = (size + 1) / 2
				}
			}
			dst = strconv.AppendInt(dst, size, 10)
			dst = append(dst, ' ')
			return append(dst, u.name...)
		}
		next := sizeUnits[i+1]
		bits := next.bits - u.bits
		if next.round {
			bits--
		}
		if u.round {
			bits++
		}
		// Division, not a shift: negative sizes round as positive ones.
		size /= int64(1) << bits
	}
	return dst
}

// sizePrettyKernel is pg_size_pretty over an Int64 column.
func sizePrettyKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		sz := intColOf(args[0])
		return c.strMapNull(t, args, n, func(dst []byte, i int) ([]byte, bool, error) {
			return appendSizePretty(dst, sz.at(i)), false, nil
		})
	}
}
