package expr

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Evaluation model. An expression is evaluated bottom-up over a whole batch:
// every node yields a vec, which is either a column of n rows or a single
// scalar that stands for all rows (constants, parameters, now()). Kernels
// switch once on the physical type and on the shape (column⊕column,
// column⊕scalar, scalar⊕column) and then run typed loops. A node whose
// operands are all scalars is computed by running the column kernel over
// one-row columns, so each operator is written once.
//
// Ownership: a vec owns one reference to its array; whoever receives a vec
// releases it.

// Ctx is what evaluation needs besides the batch.
type Ctx struct {
	Mem    memory.Allocator
	Params []types.Datum
	Now    int64 // transaction timestamp, µs since 1970 (now())
	// RawKeys keeps interval and float key columns as they are instead of
	// their representatives (exec/keycanon.go): the job of a view whose
	// state was keyed that way (storage.TableDef.KeyFormat 0).
	RawKeys bool
	// RawJSONBKeys keeps jsonb key columns as they are instead of their
	// key form (types.JSONBKey): the job of a view whose state was keyed
	// that way (storage.TableDef.KeyFormat below KeyFormatJSONB).
	RawJSONBKeys bool
}

func (c *Ctx) mem() memory.Allocator {
	if c.Mem == nil {
		return memory.DefaultAllocator
	}
	return c.Mem
}

// vec is an intermediate result: a column (arr != nil) or a scalar d.
type vec struct {
	arr arrow.Array
	d   types.Datum
	t   types.T
}

func (v vec) scalar() bool { return v.arr == nil }

func (v vec) release() {
	if v.arr != nil {
		v.arr.Release()
	}
}

func scalarVec(d types.Datum, t types.T) vec { return vec{d: d, t: t} }

// column returns v as an array of n rows (a new reference).
func (v vec) column(mem memory.Allocator, n int) arrow.Array {
	if v.arr != nil {
		v.arr.Retain()
		return v.arr
	}
	return broadcast(mem, v.d, v.t, n)
}

// batch is the input of evaluation: the columns (nil where not loaded) and
// the row count.
type batch struct {
	cols []arrow.Array
	n    int
}

// Eval evaluates e over every row of b and returns a new array of
// e.Type().Arrow() with b.NumRows() rows. The caller releases it.
func Eval(ctx *Ctx, e Expr, b arrow.RecordBatch) (arrow.Array, error) {
	in := batch{cols: b.Columns(), n: int(b.NumRows())}
	v, err := ctx.eval(e, &in)
	if err != nil {
		return nil, err
	}
	defer v.release()
	return v.column(ctx.mem(), in.n), nil
}

// EvalConst evaluates e with no input columns (constants, params, now())
// and returns the single value.
func EvalConst(ctx *Ctx, e Expr) (types.Datum, error) {
	v, err := ctx.eval(e, &batch{n: 1})
	if err != nil {
		return types.Datum{}, err
	}
	defer v.release()
	if v.scalar() {
		return v.d, nil
	}
	return datumAt(v.arr, v.t, 0), nil
}

// IsConst reports whether e has no ColRef (so it can be folded).
func IsConst(e Expr) bool {
	switch e := e.(type) {
	case *ColRef:
		return false
	case *Const, *Param:
		return true
	case *Cast:
		return IsConst(e.E)
	case *Func:
		if e.Name == "gen_random_uuid" || e.Name == "random" || e.Name == "clock_timestamp" { // a new value per row or call
			return false
		}
		for _, a := range e.Args {
			if !IsConst(a) {
				return false
			}
		}
		return true
	case *Case:
		for _, w := range e.Whens {
			if !IsConst(w.Cond) || !IsConst(w.Then) {
				return false
			}
		}
		return e.Else == nil || IsConst(e.Else)
	case *InList:
		if !IsConst(e.E) {
			return false
		}
		for _, a := range e.List {
			if !IsConst(a) {
				return false
			}
		}
		return true
	}
	return false
}

func (c *Ctx) eval(e Expr, b *batch) (vec, error) {
	switch e := e.(type) {
	case *ColRef:
		if e.Idx < 0 || e.Idx >= len(b.cols) || b.cols[e.Idx] == nil {
			return vec{}, sqlerr.New(sqlerr.Internal, "column %s is not available here", e)
		}
		a := b.cols[e.Idx]
		a.Retain()
		return vec{arr: a, t: e.T}, nil
	case *Const:
		return scalarVec(e.D, e.T), nil
	case *Param:
		if e.Idx < 0 || e.Idx >= len(c.Params) {
			return vec{}, sqlerr.New("42P02", "there is no parameter $%d", e.Idx+1)
		}
		return scalarVec(c.Params[e.Idx], e.T), nil
	case *Cast:
		return c.evalCast(e, b)
	case *Func:
		return c.evalFunc(e, b)
	case *Case:
		return c.evalCase(e, b)
	case *InList:
		return c.evalIn(e, b)
	}
	return vec{}, sqlerr.New(sqlerr.Internal, "cannot evaluate %T", e)
}

// evalArgs evaluates es; on error it releases what it made.
func (c *Ctx) evalArgs(es []Expr, b *batch) ([]vec, error) {
	vs := make([]vec, 0, len(es))
	for _, e := range es {
		v, err := c.eval(e, b)
		if err != nil {
			releaseAll(vs)
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

func releaseAll(vs []vec) {
	for _, v := range vs {
		v.release()
	}
}

// kernel computes a node over args of n rows. Args may be scalars unless
// the kernel materializes them.
type kernel func(c *Ctx, args []vec, n int) (vec, error)

// apply runs k; when every arg is a scalar it runs k over one-row columns
// and returns a scalar, so kernels need no scalar⊕scalar case.
func (c *Ctx) apply(k kernel, args []vec, t types.T, n int) (vec, error) {
	allScalar := len(args) > 0
	for _, a := range args {
		if !a.scalar() {
			allScalar = false
			break
		}
	}
	if !allScalar {
		return k(c, args, n)
	}
	one := make([]vec, len(args))
	for i, a := range args {
		one[i] = vec{arr: broadcast(c.mem(), a.d, a.t, 1), t: a.t}
	}
	defer releaseAll(one)
	r, err := k(c, one, 1)
	if err != nil || r.scalar() {
		return r, err
	}
	defer r.release()
	return scalarVec(datumAt(r.arr, t, 0), t), nil
}

// ---- array construction ----

func newBuf(mem memory.Allocator, nbytes int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(nbytes)
	return buf
}

// fixedBuf allocates a buffer for n values of T and returns it with a typed
// view of its bytes.
func fixedBuf[T any](mem memory.Allocator, n int) (*memory.Buffer, []T) {
	var z T
	buf := newBuf(mem, n*int(unsafe.Sizeof(z)))
	if n == 0 {
		return buf, nil
	}
	return buf, unsafe.Slice((*T)(unsafe.Pointer(&buf.Bytes()[0])), n)
}

// bitBuf allocates a zeroed bitmap of n bits.
func bitBuf(mem memory.Allocator, n int) (*memory.Buffer, []byte) {
	buf := newBuf(mem, nbytes(n))
	bs := buf.Bytes()
	clear(bs)
	return buf, bs
}

// finish wraps buffers into an array; it takes over the references to valid
// and bufs. A nil valid (or nulls == 0) means no nulls.
func finish(dt arrow.DataType, n int, valid *memory.Buffer, nulls int, bufs ...*memory.Buffer) arrow.Array {
	if valid != nil && nulls == 0 {
		valid.Release()
		valid = nil
	}
	all := append([]*memory.Buffer{valid}, bufs...)
	data := array.NewData(dt, n, all, nil, nulls, 0)
	for _, b := range all {
		if b != nil {
			b.Release()
		}
	}
	arr := array.MakeFromData(data)
	data.Release()
	return arr
}

// validBits returns a's validity bitmap starting at bit 0, or nil if a has
// no nulls. It copies only when a is sliced at a non-byte offset.
func validBits(a arrow.Array) []byte {
	if a.NullN() == 0 {
		return nil
	}
	return bitsAt(a.NullBitmapBytes(), a.Data().Offset(), a.Len())
}

// boolBits returns the values bitmap of a Boolean array starting at bit 0.
func boolBits(a arrow.Array) []byte {
	return bitsAt(a.Data().Buffers()[1].Bytes(), a.Data().Offset(), a.Len())
}

func bitsAt(bm []byte, off, n int) []byte {
	if off%8 == 0 {
		return bm[off/8:]
	}
	out := make([]byte, nbytes(n))
	bitutil.CopyBitmap(bm, off, n, out, 0)
	return out
}

// validity returns the AND of the validity of the array args (scalars are
// valid unless NULL; a NULL scalar makes every row NULL). It shares the
// buffer of a sole nullable unsliced input.
func validity(mem memory.Allocator, n int, args ...vec) (*memory.Buffer, int) {
	var arrs []arrow.Array
	for _, a := range args {
		if a.scalar() {
			if a.d.Null {
				buf, _ := bitBuf(mem, n)
				return buf, n
			}
			continue
		}
		if a.arr.NullN() > 0 {
			arrs = append(arrs, a.arr)
		}
	}
	switch len(arrs) {
	case 0:
		return nil, 0
	case 1:
		a := arrs[0]
		if a.Data().Offset() == 0 {
			buf := a.Data().Buffers()[0]
			buf.Retain()
			return buf, a.NullN()
		}
	}
	buf := newBuf(mem, nbytes(n))
	out := buf.Bytes()
	a := arrs[0]
	bitutil.CopyBitmap(a.NullBitmapBytes(), a.Data().Offset(), n, out, 0)
	for _, a := range arrs[1:] {
		bitutil.BitmapAnd(out, a.NullBitmapBytes(), 0, int64(a.Data().Offset()), out, 0, int64(n))
	}
	return buf, n - bitutil.CountSetBits(out, 0, n)
}

func bufBytes(b *memory.Buffer) []byte {
	if b == nil {
		return nil
	}
	return b.Bytes()
}

// isValid reports whether bit i of a validity bitmap is set (nil: all valid).
func isValid(valid []byte, i int) bool {
	return valid == nil || valid[i>>3]&(1<<(i&7)) != 0
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// ---- scalars ----

// broadcast makes an array of n copies of d.
func broadcast(mem memory.Allocator, d types.Datum, t types.T, n int) arrow.Array {
	var valid *memory.Buffer
	nulls := 0
	if d.Null {
		valid, _ = bitBuf(mem, n)
		nulls = n
	}
	switch t.Physical() {
	case types.PhysBool:
		buf, bs := bitBuf(mem, n)
		if d.I != 0 && !d.Null {
			bitutil.SetBitsTo(bs, 0, int64(n), true)
		}
		return finish(t.Arrow(), n, valid, nulls, buf)
	case types.PhysInt64:
		return finish(t.Arrow(), n, valid, nulls, fill(mem, n, d.I))
	case types.PhysFloat64:
		return finish(t.Arrow(), n, valid, nulls, fill(mem, n, d.F))
	case types.PhysDecimal:
		if ds := fillDS(mem, d.DS, n); ds != nil && unconstrained(t) {
			return finish(t.Arrow(), n, valid, nulls, fill(mem, n, d.D), ds)
		}
		return finish(t.Arrow(), n, valid, nulls, fill(mem, n, d.D))
	case types.PhysInterval:
		return finish(t.Arrow(), n, valid, nulls, fill(mem, n, d.IV))
	case types.PhysUUID:
		var u [16]byte
		if !d.Null {
			u = types.UUIDBytes(d.S)
		}
		return finish(t.Arrow(), n, valid, nulls, fill(mem, n, u))
	case types.PhysString:
		s := d.S
		if d.Null {
			s = ""
		}
		offBuf, offs := fixedBuf[int32](mem, n+1)
		dataBuf := newBuf(mem, len(s)*n)
		data := dataBuf.Bytes()
		for i := 0; i < n; i++ {
			offs[i] = int32(i * len(s))
			copy(data[i*len(s):], s)
		}
		offs[n] = int32(n * len(s))
		return finish(t.Arrow(), n, valid, nulls, offBuf, dataBuf)
	case types.PhysList:
		if valid != nil {
			valid.Release()
		}
		return broadcastList(mem, d, t, n)
	case types.PhysStruct:
		if valid != nil {
			valid.Release()
		}
		return broadcastRecord(mem, d, t, n)
	}
	// Untyped NULL.
	if valid != nil {
		valid.Release()
	}
	return array.NewNull(n)
}

func fill[T any](mem memory.Allocator, n int, v T) *memory.Buffer {
	buf, vals := fixedBuf[T](mem, n)
	for i := range vals {
		vals[i] = v
	}
	return buf
}

// datumAt returns row i of a (of type t) as a Datum.
func datumAt(a arrow.Array, t types.T, i int) types.Datum {
	if a.IsNull(i) {
		return types.Null
	}
	switch a := a.(type) {
	case *array.Boolean:
		return types.Boolean(a.Value(i))
	case *array.Int64:
		return types.Int(a.Value(i))
	case *array.Float64:
		return types.Float(a.Value(i))
	case *array.Decimal128:
		if ds := types.DScales(a); ds != nil {
			return types.Datum{D: a.Value(i), DS: ds[i]}
		}
		return types.Datum{D: a.Value(i)}
	case *array.String:
		return types.Str(a.Value(i))
	case *array.MonthDayNanoInterval:
		return types.Datum{IV: a.Value(i)}
	case *array.FixedSizeBinary:
		return types.Str(types.UUIDText(a.Value(i)))
	case *array.List:
		return types.Datum{A: types.TextArrayAt(a, i, t)}
	case *array.Struct:
		return types.DatumAt(a, i, t)
	}
	return types.Null
}

func decOf(v int64) decimal128.Num { return decimal128.FromI64(v) }

// nbytes is the size of a bitmap of n bits.
func nbytes(n int) int { return (n + 7) / 8 }
