package expr

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/types"
)

// pg_size_pretty(bigint) and pg_size_pretty(numeric): a byte count in
// bytes, kB, MB, GB, TB or PB, as PostgreSQL 15 writes it
// (src/backend/utils/adt/dbsize.c). The numeric form keeps a fraction of
// bytes (123.45 bytes); larger units are whole, the size truncated by each
// division and half-rounded away from zero at the end, as the bigint form.

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

// SizePrettyNumeric is pg_size_pretty(size) of a numeric size at type t.
func SizePrettyNumeric(size decimal128.Num, t types.T) string {
	return string(appendSizePrettyNumeric(nil, size, t))
}

// appendSizePrettyNumeric is PostgreSQL's pg_size_pretty_numeric: while
// the size is at its scale (in bytes), a unit's limit is compared with its
// whole part (|x| < limit exactly when trunc(|x|) < limit, for an integer
// limit), which cannot overflow as limit × 10^scale could.
func appendSizePrettyNumeric(dst []byte, size decimal128.Num, t types.T) []byte {
	scale := t.Scale
	for i, u := range sizeUnits {
		whole := size.Abs()
		if scale > 0 {
			whole, _ = whole.Div(decimal128.GetScaleMultiplier(int(scale)))
		}
		if i == len(sizeUnits)-1 || whole.Less(decimal128.FromI64(u.limit)) {
			if scale > 0 { // still in bytes: the value as numeric prints it
				dst = types.AppendText(dst, types.Datum{D: size}, t)
				return append(append(dst, ' '), u.name...)
			}
			if u.round {
				if size.Sign() >= 0 {
					size = size.Add(decimal128.FromI64(1))
				} else {
					size = size.Sub(decimal128.FromI64(1))
				}
				size, _ = size.Div(decimal128.FromI64(2))
			}
			dst = append(dst, size.ToString(0)...)
			return append(append(dst, ' '), u.name...)
		}
		next := sizeUnits[i+1]
		bits := next.bits - u.bits
		if next.round {
			bits--
		}
		if u.round {
			bits++
		}
		// Truncating division (numeric_div_trunc) to a whole number.
		div := decimal128.FromI64(int64(1) << bits)
		if scale > 0 {
			div = div.Mul(decimal128.GetScaleMultiplier(int(scale)))
			scale = 0
		}
		size, _ = size.Div(div)
	}
	return dst
}

// sizePrettyNumericKernel is pg_size_pretty over a Numeric column.
func sizePrettyNumericKernel(t, argT types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		sizes, _ := args[0].arr.(*array.Decimal128)
		return c.strMapNull(t, args, n, func(dst []byte, i int) ([]byte, bool, error) {
			v := args[0].d.D
			if sizes != nil {
				v = sizes.Value(i)
			}
			return appendSizePrettyNumeric(dst, v, argT), false, nil
		})
	}
}
