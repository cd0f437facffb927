package expr

import (
	"github.com/streamdb/streamdb/types"
)

// PostgreSQL's bitwise operators on smallint, integer and bigint (int2and,
// int4shl, ...): "&", "|", "#" (xor) and "bitnot" (prefix ~) on two
// operands of the result's type, "<<" and ">>" on the left operand's type
// and an integer shift count. Values are int64 whatever the width; the
// shifts wrap as PostgreSQL's C code does on its usual hardware: the count
// is taken modulo 32 for smallint and integer (the operand is promoted to
// int) and 64 for bigint, and the result is truncated to the width.

// bitKernel is the kernel of the binary operator op with result type t.
func bitKernel(op string, t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a, b := args[0], args[1]
		if (a.scalar() && a.d.Null) || (b.scalar() && b.d.Null) {
			return scalarVec(types.Null, t), nil
		}
		mem := c.mem()
		valid, nulls := validity(mem, n, a, b)
		buf, out := fixedBuf[int64](mem, n)
		switch op {
		case "&":
			for i := range out {
				out[i] = intAt(a, i) & intAt(b, i)
			}
		case "|":
			for i := range out {
				out[i] = intAt(a, i) | intAt(b, i)
			}
		case "#":
			for i := range out {
				out[i] = intAt(a, i) ^ intAt(b, i)
			}
		case "<<", ">>":
			left := op == "<<"
			for i := range out {
				out[i] = shift(t.Kind, left, intAt(a, i), intAt(b, i))
			}
		}
		return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
	}
}

// shift is x << s (left) or x >> s of the integer kind k.
func shift(k types.Kind, left bool, x, s int64) int64 {
	if k == types.Int64 {
		if left {
			return x << (uint64(s) & 63)
		}
		return x >> (uint64(s) & 63)
	}
	v := int32(x)
	if left {
		v <<= uint64(s) & 31
	} else {
		v >>= uint64(s) & 31
	}
	if k == types.Int16 {
		return int64(int16(v))
	}
	return int64(v)
}

// bitNotKernel is prefix ~ with result type t.
func bitNotKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		if a.scalar() && a.d.Null {
			return scalarVec(types.Null, t), nil
		}
		mem := c.mem()
		valid, nulls := validity(mem, n, a)
		buf, out := fixedBuf[int64](mem, n)
		for i := range out {
			out[i] = ^intAt(a, i)
		}
		return vec{arr: finish(t.Arrow(), n, valid, nulls, buf), t: t}, nil
	}
}
