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
