package expr

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Comparison kernels: the result is a Boolean column whose validity is the
// AND of the operands' validity; values are packed straight into the bitmap.
// Floats order as in PostgreSQL: NaN equals NaN and sorts above every number.

type cmpOp uint8

const (
	opEQ cmpOp = iota
	opNE
	opLT
	opLE
	opGT
	opGE
)

func cmpOpOf(name string) (cmpOp, bool) {
	switch name {
	case "=":
		return opEQ, true
	case "<>":
		return opNE, true
	case "<":
		return opLT, true
	case "<=":
		return opLE, true
	case ">":
		return opGT, true
	case ">=":
		return opGE, true
	}
	return 0, false
}

// flip returns the operator that gives the same answer with the operands swapped.
func (o cmpOp) flip() cmpOp {
	switch o {
	case opLT:
		return opGT
	case opLE:
		return opGE
	case opGT:
		return opLT
	case opGE:
		return opLE
	}
	return o
}

// test applies o to a three-way comparison result.
func (o cmpOp) test(c int) bool {
	switch o {
	case opEQ:
		return c == 0
	case opNE:
		return c != 0
	case opLT:
		return c < 0
	case opLE:
		return c <= 0
	case opGT:
		return c > 0
	}
	return c >= 0
}

func cmpKernel(op cmpOp) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) { return c.compare(op, args[0], args[1], n) }
}

func (c *Ctx) compare(op cmpOp, a, b vec, n int) (vec, error) {
	if (a.scalar() && a.d.Null) || (b.scalar() && b.d.Null) {
		return scalarVec(types.Null, types.TBool), nil
	}
	if a.scalar() {
		a, b = b, a
		op = op.flip()
	}
	if a.t.Physical() != b.t.Physical() {
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s %s %s", a.t, opName(op), b.t)
	}
	mem := c.mem()
	valid, nulls := validity(mem, n, a, b)
	buf, out := bitBuf(mem, n)
	switch a.t.Physical() {
	case types.PhysInt64:
		if b.scalar() {
			cmpVS(op, int64s(a.arr)[:n], b.d.I, out)
		} else {
			cmpVV(op, int64s(a.arr)[:n], int64s(b.arr), out)
		}
	case types.PhysFloat64:
		if b.scalar() {
			cmpVS(op, float64s(a.arr)[:n], b.d.F, out)
		} else {
			cmpVV(op, float64s(a.arr)[:n], float64s(b.arr), out)
		}
	case types.PhysString:
		cmpStrings(op, a, b, n, out)
	case types.PhysUUID:
		cmpUUIDs(op, a, b, n, out)
	case types.PhysBool:
		cmpRows(op, n, out, func(i int) int { return int(boolAt(a, i)) - int(boolAt(b, i)) })
	case types.PhysDecimal:
		sa, sb := a.t.Scale, b.t.Scale
		if b.scalar() && sa == sb {
			av, y := decs(a.arr), b.d.D
			cmpRows(op, n, out, func(i int) int { return av[i].Cmp(y) })
		} else {
			cmpRows(op, n, out, func(i int) int { return decCmp(decAt(a, i), sa, decAt(b, i), sb) })
		}
	case types.PhysInterval:
		cmpRows(op, n, out, func(i int) int { return intervalCmp(ivAt(a, i), ivAt(b, i)) })
	case types.PhysList:
		if types.ArrayElem(a.t) != types.ArrayElem(b.t) {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s %s %s", a.t, opName(op), b.t)
		}
		cmpRows(op, n, out, func(i int) int { return types.CompareArrays(listAt(a, i), listAt(b, i), a.t) })
	case types.PhysStruct:
		// The binder gives both sides one record type (record_eq and
		// record_cmp compare field by field, NULL fields equal).
		cmpRows(op, n, out, func(i int) int {
			x, y := datumOf(a, i), datumOf(b, i)
			if x.Null || y.Null {
				return 0 // a NULL row: masked by the validity
			}
			return types.CompareDatum(x, y, a.t)
		})
	default:
		buf.Release()
		if valid != nil {
			valid.Release()
		}
		return vec{}, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s %s %s", a.t, opName(op), b.t)
	}
	return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
}

func opName(op cmpOp) string {
	return [...]string{"=", "<>", "<", "<=", ">", ">="}[op]
}

type ordered interface{ ~int64 | ~float64 }

// lt and eq order NaN above all numbers and equal to itself; for int64 the
// NaN tests fold away.
func lt[T ordered](x, y T) bool { return x < y || (y != y && x == x) }
func eq[T ordered](x, y T) bool { return x == y || (x != x && y != y) }

func cmpVV[T ordered](op cmpOp, a, b []T, out []byte) {
	b = b[:len(a)]
	switch op {
	case opEQ:
		for i := range a {
			out[i>>3] |= b2u(eq(a[i], b[i])) << (i & 7)
		}
	case opNE:
		for i := range a {
			out[i>>3] |= b2u(!eq(a[i], b[i])) << (i & 7)
		}
	case opLT:
		for i := range a {
			out[i>>3] |= b2u(lt(a[i], b[i])) << (i & 7)
		}
	case opLE:
		for i := range a {
			out[i>>3] |= b2u(!lt(b[i], a[i])) << (i & 7)
		}
	case opGT:
		for i := range a {
			out[i>>3] |= b2u(lt(b[i], a[i])) << (i & 7)
		}
	case opGE:
		for i := range a {
			out[i>>3] |= b2u(!lt(a[i], b[i])) << (i & 7)
		}
	}
}

func cmpVS[T ordered](op cmpOp, a []T, c T, out []byte) {
	switch op {
	case opEQ:
		for i, x := range a {
			out[i>>3] |= b2u(eq(x, c)) << (i & 7)
		}
	case opNE:
		for i, x := range a {
			out[i>>3] |= b2u(!eq(x, c)) << (i & 7)
		}
	case opLT:
		for i, x := range a {
			out[i>>3] |= b2u(lt(x, c)) << (i & 7)
		}
	case opLE:
		for i, x := range a {
			out[i>>3] |= b2u(!lt(c, x)) << (i & 7)
		}
	case opGT:
		for i, x := range a {
			out[i>>3] |= b2u(lt(c, x)) << (i & 7)
		}
	case opGE:
		for i, x := range a {
			out[i>>3] |= b2u(!lt(x, c)) << (i & 7)
		}
	}
}

// cmpRows is the per-row path for types without a typed loop.
func cmpRows(op cmpOp, n int, out []byte, cmp func(i int) int) {
	for i := 0; i < n; i++ {
		out[i>>3] |= b2u(op.test(cmp(i))) << (i & 7)
	}
}

// cmpStrings compares bytewise (the C collation).
func cmpStrings(op cmpOp, a, b vec, n int, out []byte) {
	as := a.arr.(*array.String)
	if b.scalar() {
		c := b.d.S
		switch op {
		case opEQ, opNE:
			want := op == opEQ
			for i := 0; i < n; i++ {
				out[i>>3] |= b2u((as.Value(i) == c) == want) << (i & 7)
			}
		default:
			cmpRows(op, n, out, func(i int) int { return strCmp(as.Value(i), c) })
		}
		return
	}
	bs := b.arr.(*array.String)
	cmpRows(op, n, out, func(i int) int { return strCmp(as.Value(i), bs.Value(i)) })
}

// cmpUUIDs compares uuid columns (or a column with a constant) by their
// 16 bytes, as PostgreSQL's uuid_cmp (memcmp).
func cmpUUIDs(op cmpOp, a, b vec, n int, out []byte) {
	as := a.arr.(*array.FixedSizeBinary)
	if b.scalar() {
		c := types.UUIDBytes(b.d.S)
		switch op {
		case opEQ, opNE:
			want := op == opEQ
			for i := 0; i < n; i++ {
				out[i>>3] |= b2u(([16]byte(as.Value(i)) == c) == want) << (i & 7)
			}
		default:
			cmpRows(op, n, out, func(i int) int { return bytes.Compare(as.Value(i), c[:]) })
		}
		return
	}
	bs := b.arr.(*array.FixedSizeBinary)
	cmpRows(op, n, out, func(i int) int { return bytes.Compare(as.Value(i), bs.Value(i)) })
}

func strCmp(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func boolAt(v vec, i int) byte {
	if v.scalar() {
		return b2u(v.d.I != 0)
	}
	return b2u(v.arr.(*array.Boolean).Value(i))
}

func ivAt(v vec, i int) arrow.MonthDayNanoInterval {
	if v.scalar() {
		return v.d.IV
	}
	return intervals(v.arr)[i]
}

// decCmp compares x at scale sx with y at scale sy.
func decCmp(x decimal128.Num, sx int32, y decimal128.Num, sy int32) int {
	if sx == sy {
		return x.Cmp(y)
	}
	bx, by := x.BigInt(), y.BigInt()
	if sx < sy {
		bx.Mul(bx, pow10(sy-sx))
	} else {
		by.Mul(by, pow10(sx-sy))
	}
	return bx.Cmp(by)
}

// intervalCmp orders intervals as PostgreSQL does: by their span with a
// month counted as 30 days.
func intervalCmp(x, y arrow.MonthDayNanoInterval) int {
	return types.IntervalSpan(x).Cmp(types.IntervalSpan(y))
}

// listAt is row i of an array vector (not NULL).
func listAt(v vec, i int) *types.Array {
	if v.scalar() {
		return v.d.A
	}
	return types.TextArrayAt(v.arr.(*array.List), i, v.t)
}
