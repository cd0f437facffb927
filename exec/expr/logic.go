package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/streamdb/streamdb/types"
)

// Three-valued logic over bitmaps, a byte (eight rows) at a time. With
// validity V and value X per operand:
//
//	a AND b: valid where both are valid or either is a valid false; value Xa&Xb
//	a OR b:  valid where both are valid or either is a valid true;  value (Va&Xa)|(Vb&Xb)
//
// Garbage values under NULL slots never leak: every term that reads Xa is
// masked by Va or only matters where the result is valid.

func (c *Ctx) logic(or bool, a, b vec, n int) vec {
	mem := c.mem()
	a.t, b.t = types.TBool, types.TBool // an untyped NULL operand is a boolean NULL
	aa, ba := a.column(mem, n), b.column(mem, n)
	defer aa.Release()
	defer ba.Release()
	nb := nbytes(n)
	vbuf, vout := bitBuf(mem, n)
	xbuf, xout := bitBuf(mem, n)
	if n == 0 {
		// An empty batch: a column of no rows may have no value buffer
		// to read (a constant operand over an empty input crashed here).
		return vec{arr: finish(arrow.FixedWidthTypes.Boolean, 0, vbuf, 0, xbuf), t: types.TBool}
	}
	va, vb := validBits(aa), validBits(ba)
	xa, xb := logicBits(aa, nb), logicBits(ba, nb)
	if aa.DataType().ID() == arrow.NULL {
		va = xa // all NULL: no validity bitmap, no values
	}
	if ba.DataType().ID() == arrow.NULL {
		vb = xb
	}
	for i := 0; i < nb; i++ {
		VA, VB := byte(0xff), byte(0xff)
		if va != nil {
			VA = va[i]
		}
		if vb != nil {
			VB = vb[i]
		}
		A, B := xa[i], xb[i]
		if or {
			vout[i] = VA&VB | VA&A | VB&B
			xout[i] = VA&A | VB&B
		} else {
			vout[i] = VA&VB | VA&^A | VB&^B
			xout[i] = A & B
		}
	}
	nulls := n - bitutil.CountSetBits(vout, 0, n)
	return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, vbuf, nulls, xbuf), t: types.TBool}
}

// logicBits is a boolean column's value bits; a column of no type (all
// NULL, arrow's Null array) has no value buffer: zeros.
func logicBits(a arrow.Array, nb int) []byte {
	if bufs := a.Data().Buffers(); a.DataType().ID() == arrow.NULL || len(bufs) < 2 || bufs[1] == nil {
		return make([]byte, nb)
	}
	return boolBits(a)
}

func logicKernel(or bool) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) { return c.logic(or, args[0], args[1], n), nil }
}

// notKernel inverts values and keeps the validity.
func notKernel(c *Ctx, args []vec, n int) (vec, error) {
	a := args[0]
	if a.scalar() {
		if a.d.Null {
			return a, nil
		}
		return scalarVec(types.Boolean(a.d.I == 0), types.TBool), nil
	}
	mem := c.mem()
	valid, nulls := validity(mem, n, a)
	buf, out := bitBuf(mem, n)
	bitutil.InvertBitmap(boolBits(a.arr), 0, n, out, 0)
	return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, valid, nulls, buf), t: types.TBool}, nil
}

// isKernel implements the never-NULL predicates is_null, is_not_null,
// is_true, is_false, is_not_true and is_not_false.
func isKernel(name string) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		a := args[0]
		if a.scalar() {
			return scalarVec(types.Boolean(isTest(name, !a.d.Null, a.d.I != 0)), types.TBool), nil
		}
		mem := c.mem()
		buf, out := bitBuf(mem, n)
		nb := len(out)
		va := validBits(a.arr)
		var xa []byte
		if a.t.Physical() == types.PhysBool {
			xa = boolBits(a.arr)
		}
		for i := 0; i < nb; i++ {
			V := byte(0xff)
			if va != nil {
				V = va[i]
			}
			var X byte
			if xa != nil {
				X = xa[i]
			}
			switch name {
			case "is_null":
				out[i] = ^V
			case "is_not_null":
				out[i] = V
			case "is_true":
				out[i] = V & X
			case "is_false":
				out[i] = V &^ X
			case "is_not_true":
				out[i] = ^(V & X)
			case "is_not_false":
				out[i] = ^(V &^ X)
			}
		}
		return vec{arr: finish(arrow.FixedWidthTypes.Boolean, n, nil, 0, buf), t: types.TBool}, nil
	}
}

func isTest(name string, valid, x bool) bool {
	switch name {
	case "is_null":
		return !valid
	case "is_not_null":
		return valid
	case "is_true":
		return valid && x
	case "is_false":
		return valid && !x
	case "is_not_true":
		return !(valid && x)
	}
	return !(valid && !x) // is_not_false
}

// selection returns the rows of a Boolean column that are true (NULL counts
// as false), or all == true when every row is.
func selection(a arrow.Array, n int) (sel []int32, all bool) {
	x := boolBits(a)
	v := validBits(a)
	var tmp []byte
	if v != nil {
		tmp = make([]byte, len(x))
		nb := nbytes(n)
		for i := 0; i < nb; i++ {
			tmp[i] = x[i] & v[i]
		}
		x = tmp
	}
	cnt := bitutil.CountSetBits(x, 0, n)
	if cnt == n {
		return nil, true
	}
	sel = make([]int32, 0, cnt)
	for i := 0; i < n; {
		if i&7 == 0 && i+8 <= n {
			switch x[i>>3] {
			case 0:
				i += 8
				continue
			case 0xff:
				for k := int32(i); k < int32(i+8); k++ {
					sel = append(sel, k)
				}
				i += 8
				continue
			}
		}
		if x[i>>3]&(1<<(i&7)) != 0 {
			sel = append(sel, int32(i))
		}
		i++
	}
	return sel, false
}

// evalIn folds E = item over the list with three-valued OR, so that no
// match with a NULL in the list gives NULL as in PostgreSQL.
func (c *Ctx) evalIn(e *InList, b *batch) (vec, error) {
	args, err := c.evalArgs(append([]Expr{e.E}, e.List...), b)
	if err != nil {
		return vec{}, err
	}
	defer releaseAll(args)
	k := func(c *Ctx, args []vec, n int) (vec, error) {
		acc := scalarVec(types.Boolean(false), types.TBool)
		for _, item := range args[1:] {
			eqv, err := c.compare(opEQ, args[0], item, n)
			if err != nil {
				acc.release()
				return vec{}, err
			}
			next := c.logic(true, acc, eqv, n)
			acc.release()
			eqv.release()
			acc = next
		}
		if e.Not {
			defer acc.release()
			return notKernel(c, []vec{acc}, n)
		}
		return acc, nil
	}
	return c.apply(k, args, types.TBool, b.n)
}

// mayFail reports whether evaluating e can raise an error (division,
// overflow, casts, bad arguments), so that AND/OR must not evaluate it on
// rows its left operand already decides.
func mayFail(e Expr) bool {
	switch e := e.(type) {
	case *Cast:
		return true
	case *Func:
		switch e.Name {
		case "=", "<>", "<", "<=", ">", ">=", "and", "or", "not", "is_null", "is_not_null",
			"is_true", "is_false", "is_not_true", "is_not_false", "||", "lower", "upper",
			"length", "concat", "coalesce", "nullif", "now":
		default:
			return true
		}
		for _, a := range e.Args {
			if mayFail(a) {
				return true
			}
		}
	case *Case:
		for _, w := range e.Whens {
			if mayFail(w.Cond) || mayFail(w.Then) {
				return true
			}
		}
		return e.Else != nil && mayFail(e.Else)
	case *InList:
		if mayFail(e.E) {
			return true
		}
		for _, a := range e.List {
			if mayFail(a) {
				return true
			}
		}
	}
	return false
}

// evalShortCircuit evaluates l AND r (or l OR r) evaluating r only on the
// rows l does not decide, as PostgreSQL's executor does: WHERE b <> 0 AND
// a / b > 1 never divides by zero.
func (c *Ctx) evalShortCircuit(or bool, le, re Expr, b *batch) (vec, error) {
	l, err := c.eval(le, b)
	if err != nil {
		return vec{}, err
	}
	defer l.release()
	if l.scalar() {
		if !l.d.Null && (l.d.I != 0) == or {
			return scalarVec(types.Boolean(or), types.TBool), nil
		}
		r, err := c.eval(re, b)
		if err != nil {
			return vec{}, err
		}
		defer r.release()
		return c.apply(logicKernel(or), []vec{l, r}, types.TBool, b.n)
	}
	// Rows where l is NULL or the identity of the operator stay open.
	n := b.n
	x, v := boolBits(l.arr), validBits(l.arr)
	var open []int32
	for i := 0; i < n; i++ {
		if !isValid(v, i) || (x[i>>3]&(1<<(i&7)) != 0) != or {
			open = append(open, int32(i))
		}
	}
	mem := c.mem()
	var r vec
	switch len(open) {
	case 0:
		l.arr.Retain()
		return vec{arr: l.arr, t: types.TBool}, nil
	case n:
		if r, err = c.eval(re, b); err != nil {
			return vec{}, err
		}
	default:
		used := map[int]bool{}
		colRefs(re, used)
		sub, err := subBatch(mem, b, open, used)
		if err != nil {
			return vec{}, err
		}
		rs, err := c.eval(re, sub)
		sub.release()
		if err != nil {
			return vec{}, err
		}
		rc := rs.column(mem, len(open))
		rs.release()
		defer rc.Release()
		// Decided rows get NULL on the right, which leaves l's answer.
		which := make([]int32, n)
		pos := make([]int32, n)
		for i := range which {
			which[i] = -1
		}
		for j, i := range open {
			which[i], pos[i] = 0, int32(j)
			if rs.scalar() {
				pos[i] = 0
			}
		}
		r = vec{arr: gather(mem, arrow.FixedWidthTypes.Boolean, []arrow.Array{rc}, which, pos), t: types.TBool}
	}
	defer r.release()
	return c.logic(or, l, r, n), nil
}
