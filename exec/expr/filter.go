package expr

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Filter evaluates pred and returns the batch of rows where it is true
// (NULL = false); it returns b retained if all pass.
func Filter(ctx *Ctx, pred Expr, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := int(b.NumRows())
	v, err := ctx.eval(pred, &batch{cols: b.Columns(), n: n})
	if err != nil {
		return nil, err
	}
	defer v.release()
	if v.scalar() {
		if !v.d.Null && v.d.I != 0 {
			b.Retain()
			return b, nil
		}
		return b.NewSlice(0, 0), nil
	}
	sel, all := selection(v.arr, n)
	if all {
		b.Retain()
		return b, nil
	}
	mem := ctx.mem()
	cols := make([]arrow.Array, b.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, col := range b.Columns() {
		if cols[i], err = take(mem, col, sel); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(b.Schema(), cols, int64(len(sel))), nil
}

// take returns the rows sel of a.
func take(mem memory.Allocator, a arrow.Array, sel []int32) (arrow.Array, error) {
	switch l := a.(type) {
	case *array.Int64, *array.Float64, *array.Decimal128, *array.MonthDayNanoInterval, *array.Boolean, *array.String, *array.FixedSizeBinary:
		return gather(mem, a.DataType(), []arrow.Array{a}, nil, sel), nil
	case *array.List:
		if types.ListDScales(l) != nil { // numeric[]: Take would drop the elements' display scales
			return gather(mem, a.DataType(), []arrow.Array{a}, nil, sel), nil
		}
	}
	idx := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, len(sel),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(sel))}, nil, 0, 0))
	defer idx.Release()
	out, err := compute.TakeArray(compute.WithAllocator(context.Background(), mem), a, idx)
	return out, sqlerr.Wrap(sqlerr.Internal, err)
}

// gather builds an array of len(pos) rows of type dt: row j is row pos[j]
// of srcs[which[j]], or NULL where which[j] < 0. A nil which means srcs[0].
// All sources share dt's physical layout.
func gather(mem memory.Allocator, dt arrow.DataType, srcs []arrow.Array, which, pos []int32) arrow.Array {
	n := len(pos)
	valids := make([][]byte, len(srcs))
	nullable := which != nil
	for i, s := range srcs {
		valids[i] = validBits(s)
		nullable = nullable || valids[i] != nil
	}
	var vbuf *memory.Buffer
	nulls := 0
	if nullable {
		var vout []byte
		vbuf, vout = bitBuf(mem, n)
		for j, p := range pos {
			s := int32(0)
			if which != nil {
				if s = which[j]; s < 0 {
					nulls++
					continue
				}
			}
			if isValid(valids[s], int(p)) {
				vout[j>>3] |= 1 << (j & 7)
			} else {
				nulls++
			}
		}
	}
	switch srcs[0].(type) {
	case *array.Int64:
		return finish(dt, n, vbuf, nulls, gatherFixed(mem, srcs, which, pos, int64s))
	case *array.Float64:
		return finish(dt, n, vbuf, nulls, gatherFixed(mem, srcs, which, pos, float64s))
	case *array.Decimal128:
		vals := gatherFixed(mem, srcs, which, pos, decs)
		if ds := gatherDS(mem, srcs, which, pos); ds != nil {
			return finish(dt, n, vbuf, nulls, vals, ds)
		}
		return finish(dt, n, vbuf, nulls, vals)
	case *array.MonthDayNanoInterval:
		return finish(dt, n, vbuf, nulls, gatherFixed(mem, srcs, which, pos, intervals))
	case *array.FixedSizeBinary: // uuid
		return finish(dt, n, vbuf, nulls, gatherFixed(mem, srcs, which, pos, uuids))
	case *array.Boolean:
		bits := make([][]byte, len(srcs))
		for i, s := range srcs {
			bits[i] = boolBits(s)
		}
		buf, out := bitBuf(mem, n)
		for j, p := range pos {
			s := int32(0)
			if which != nil {
				if s = which[j]; s < 0 {
					continue
				}
			}
			if bitutil.BitIsSet(bits[s], int(p)) {
				out[j>>3] |= 1 << (j & 7)
			}
		}
		return finish(dt, n, vbuf, nulls, buf)
	case *array.String:
		strs := make([]*array.String, len(srcs))
		size := 0
		for j, p := range pos {
			s := int32(0)
			if which != nil {
				if s = which[j]; s < 0 {
					continue
				}
			}
			if strs[s] == nil {
				strs[s] = srcs[s].(*array.String)
			}
			size += strs[s].ValueLen(int(p))
		}
		offBuf, offs := fixedBuf[int32](mem, n+1)
		dataBuf := newBuf(mem, size)
		data := dataBuf.Bytes()
		at := 0
		for j, p := range pos {
			offs[j] = int32(at)
			s := int32(0)
			if which != nil {
				if s = which[j]; s < 0 {
					continue
				}
			}
			at += copy(data[at:], strs[s].Value(int(p)))
		}
		offs[n] = int32(at)
		return finish(dt, n, vbuf, nulls, offBuf, dataBuf)
	case *array.List:
		// text[] is rare in CASE and COALESCE: build it value by value.
		if vbuf != nil {
			vbuf.Release()
		}
		t := types.TypeOfField(arrow.Field{Type: dt})
		b := array.NewBuilder(mem, dt)
		for _, s := range srcs {
			if l, ok := s.(*array.List); ok && types.ListDScales(l) != nil {
				b.Release()
				b = types.NewBuilder(mem, t) // numeric[] elements keep their display scales
				break
			}
		}
		defer b.Release()
		for j, p := range pos {
			s := int32(0)
			if which != nil {
				if s = which[j]; s < 0 {
					b.AppendNull()
					continue
				}
			}
			types.AppendDatum(b, types.DatumAt(srcs[s], int(p), t), t)
		}
		return b.NewArray()
	}
	panic("expr: gather of unsupported array " + srcs[0].DataType().String())
}

func gatherFixed[T int64 | float64 | decimal128.Num | arrow.MonthDayNanoInterval | [16]byte](
	mem memory.Allocator, srcs []arrow.Array, which, pos []int32, values func(arrow.Array) []T) *memory.Buffer {
	buf, out := fixedBuf[T](mem, len(pos))
	if which == nil {
		vals := values(srcs[0])
		for j, p := range pos {
			out[j] = vals[p]
		}
		return buf
	}
	vals := make([][]T, len(srcs))
	for i, s := range srcs {
		vals[i] = values(s)
	}
	var zero T
	for j, p := range pos {
		if s := which[j]; s >= 0 {
			out[j] = vals[s][p]
		} else {
			out[j] = zero
		}
	}
	return buf
}

// ---- lazy evaluation over row subsets (CASE) ----

// colRefs marks the columns e reads.
func colRefs(e Expr, used map[int]bool) {
	switch e := e.(type) {
	case *ColRef:
		used[e.Idx] = true
	case *Cast:
		colRefs(e.E, used)
	case *Func:
		for _, a := range e.Args {
			colRefs(a, used)
		}
	case *Case:
		for _, w := range e.Whens {
			colRefs(w.Cond, used)
			colRefs(w.Then, used)
		}
		if e.Else != nil {
			colRefs(e.Else, used)
		}
	case *InList:
		colRefs(e.E, used)
		for _, a := range e.List {
			colRefs(a, used)
		}
	}
}

// subBatch returns the rows sel of b, with only the columns in used.
func subBatch(mem memory.Allocator, b *batch, sel []int32, used map[int]bool) (*batch, error) {
	out := &batch{cols: make([]arrow.Array, len(b.cols)), n: len(sel)}
	for i := range used {
		if i < 0 || i >= len(b.cols) || b.cols[i] == nil {
			continue
		}
		c, err := take(mem, b.cols[i], sel)
		if err != nil {
			out.release()
			return nil, err
		}
		out.cols[i] = c
	}
	return out, nil
}

func (b *batch) release() {
	for _, c := range b.cols {
		if c != nil {
			c.Release()
		}
	}
}

// evalCase evaluates each WHEN only on the rows no earlier WHEN took, and
// each THEN only on the rows its WHEN took, so that
// CASE WHEN x <> 0 THEN 10/x END never divides by zero.
func (c *Ctx) evalCase(e *Case, b *batch) (vec, error) {
	mem := c.mem()
	used := map[int]bool{}
	colRefs(e, used)

	n := b.n
	which := make([]int32, n)
	pos := make([]int32, n)
	for i := range which {
		which[i] = -1
	}
	var srcs []arrow.Array
	defer func() {
		for _, s := range srcs {
			s.Release()
		}
	}()

	// rows maps the rows of cur to rows of b (nil: identity).
	cur, rows := b, []int32(nil)
	defer func() {
		if cur != b {
			cur.release()
		}
	}()
	global := func(local int32) int32 {
		if rows == nil {
			return local
		}
		return rows[local]
	}
	// assign evaluates v over the rows take of cur and routes them to it.
	assign := func(v Expr, take []int32, all bool) error {
		tb := cur
		if !all {
			var err error
			if tb, err = subBatch(mem, cur, take, used); err != nil {
				return err
			}
			defer tb.release()
		}
		r, err := c.eval(v, tb)
		if err != nil {
			return err
		}
		if (r.scalar() && r.d.Null) || r.t.Physical() == types.PhysNull {
			r.release()
			return nil // rows stay NULL
		}
		scalar := r.scalar() // a constant arm: every row reads its row 0
		arr := r.column(mem, 1)
		r.release()
		src := int32(len(srcs))
		srcs = append(srcs, arr)
		for j := 0; j < tb.n; j++ {
			g := int32(j)
			if !all {
				g = take[j]
			}
			g = global(g)
			which[g] = src
			if !scalar {
				pos[g] = int32(j)
			}
		}
		return nil
	}

	for _, w := range e.Whens {
		if cur.n == 0 {
			break
		}
		cv, err := c.eval(w.Cond, cur)
		if err != nil {
			return vec{}, err
		}
		var matched []int32
		all := false
		switch {
		case cv.scalar():
			all = !cv.d.Null && cv.d.I != 0
		default:
			matched, all = selection(cv.arr, cur.n)
		}
		cv.release()
		if all {
			if n > 0 && cur == b && len(srcs) == 0 {
				// The first arm takes every row: no gathering needed.
				return c.eval(w.Then, b)
			}
			if err := assign(w.Then, nil, true); err != nil {
				return vec{}, err
			}
			return c.finishCase(e.T, srcs, which, pos)
		}
		if len(matched) == 0 {
			continue
		}
		if err := assign(w.Then, matched, false); err != nil {
			return vec{}, err
		}
		// Narrow cur to the rows not yet taken.
		rest := make([]int32, 0, cur.n-len(matched))
		k := 0
		for j := int32(0); j < int32(cur.n); j++ {
			if k < len(matched) && matched[k] == j {
				k++
				continue
			}
			rest = append(rest, j)
		}
		next, err := subBatch(mem, cur, rest, used)
		if err != nil {
			return vec{}, err
		}
		newRows := make([]int32, len(rest))
		for j, l := range rest {
			newRows[j] = global(l)
		}
		if cur != b {
			cur.release()
		}
		cur, rows = next, newRows
	}
	if e.Else != nil && cur.n > 0 {
		if cur == b && len(srcs) == 0 {
			return c.eval(e.Else, b)
		}
		if err := assign(e.Else, nil, true); err != nil {
			return vec{}, err
		}
	}
	return c.finishCase(e.T, srcs, which, pos)
}

func (c *Ctx) finishCase(t types.T, srcs []arrow.Array, which, pos []int32) (vec, error) {
	if len(srcs) == 0 {
		return scalarVec(types.Null, t), nil
	}
	if t.Physical() == types.PhysNull {
		return scalarVec(types.Null, t), nil
	}
	return vec{arr: gather(c.mem(), t.Arrow(), srcs, which, pos), t: t}, nil
}
