package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Records (types.Record, an Arrow Struct):
//
//	field_select(r, k)   (r).field: field k (an Int64 constant, 0-based) of
//	                     record r; NULL where r is NULL
//	row_ctor(a, ...)     ROW(a, ...): a record of the result type's shape
//	record_mask(r, m)    r, NULL where m is NULL (record casts)
//	record_key(r)        Text: equal exactly when the records are = (grouping)

// fieldSelectKernel returns the field's child array itself when no record
// is NULL, else the child with the records' NULLs added to its validity:
// no values are copied.
func fieldSelectKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		k := int(datumOf(args[1], 0).I)
		rec := args[0].column(c.mem(), n)
		defer rec.Release()
		s, ok := rec.(*array.Struct)
		if !ok || k < 0 || k >= s.NumField() {
			return vec{}, sqlerr.New(sqlerr.Internal, "field_select: field %d of %s", k, rec.DataType())
		}
		child := s.Field(k)
		if s.NullN() == 0 {
			child.Retain()
			return vec{arr: child, t: t}, nil
		}
		return vec{arr: maskNulls(c.mem(), child, s), t: t}, nil
	}
}

// maskNulls returns a, NULL also where mask is NULL (both of n rows).
func maskNulls(mem memory.Allocator, a, mask arrow.Array) arrow.Array {
	d := a.Data()
	off, n := d.Offset(), d.Len()
	valid, bits := bitBuf(mem, off+n)
	defer valid.Release()
	nulls := 0
	for i := 0; i < n; i++ {
		if a.IsValid(i) && mask.IsValid(i) {
			bitutil.SetBit(bits, off+i)
		} else {
			nulls++
		}
	}
	bufs := append([]*memory.Buffer{valid}, d.Buffers()[1:]...)
	nd := array.NewData(d.DataType(), n, bufs, d.Children(), nulls, off)
	defer nd.Release()
	return array.MakeFromData(nd)
}

// broadcastRecord makes an array of n copies of record d.
func broadcastRecord(mem memory.Allocator, d types.Datum, t types.T, n int) arrow.Array {
	b := types.NewBuilder(mem, t)
	defer b.Release()
	for i := 0; i < n; i++ {
		types.AppendDatum(b, d, t)
	}
	return b.NewArray()
}

// rowCtorKernel is row_ctor(a, b, ...): ROW(a, b, ...), a record of type t
// whose fields are the arguments' columns themselves (no values copied).
func rowCtorKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		fs := types.RecordFields(t)
		if len(fs) != len(args) {
			return vec{}, sqlerr.New(sqlerr.Internal, "row_ctor: %d fields, %d arguments", len(fs), len(args))
		}
		mem := c.mem()
		children := make([]arrow.ArrayData, len(args))
		for k, a := range args {
			col := a.column(mem, n)
			defer col.Release()
			children[k] = col.Data()
		}
		d := array.NewData(t.Arrow(), n, []*memory.Buffer{nil}, children, 0, 0)
		defer d.Release()
		return vec{arr: array.MakeFromData(d), t: t}, nil
	}
}

// recordMaskKernel is record_mask(r, m): r, NULL where m is NULL (a cast
// of a NULL record is NULL, not a record of NULL fields).
func recordMaskKernel(t types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		mem := c.mem()
		r := args[0].column(mem, n)
		defer r.Release()
		m := args[1].column(mem, n)
		defer m.Release()
		if m.NullN() == 0 {
			r.Retain()
			return vec{arr: r, t: t}, nil
		}
		return vec{arr: maskNulls(mem, r, m), t: t}, nil
	}
}

// recordKeyKernel is record_key(r): types.RecordKey, the text grouping,
// DISTINCT and joins use for a record.
func recordKeyKernel(t, rt types.T) kernel {
	return func(c *Ctx, args []vec, n int) (vec, error) {
		return c.rowwise(t, n, args, func(i int) (types.Datum, error) {
			return types.Str(types.RecordKey(datumOf(args[0], i), rt)), nil
		})
	}
}
