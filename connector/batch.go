package connector

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/types"
)

// Helpers for the batches connectors make.

// AppendInt appends v to an int64 column.
func AppendInt(b array.Builder, v int64) { b.(*array.Int64Builder).Append(v) }

// AppendBytes appends v to a text column.
func AppendBytes(b array.Builder, v []byte) { b.(*array.StringBuilder).BinaryBuilder.Append(v) }

// SchemaOf is the schema of a source's batches: columns c0, c1, ... of
// types ts.
func SchemaOf(ts []types.T) *arrow.Schema {
	names := make([]string, len(ts))
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	return types.Schema(names, ts)
}

// NewBatch makes a record of cols (which it takes over).
func NewBatch(schema *arrow.Schema, cols []arrow.Array, n int) arrow.RecordBatch {
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// NullColumn is n NULLs of type t: the column of a source's batch that the
// job does not read (Projector). BIGINT-like, DOUBLE and text columns of
// up to len(zeros)/8 rows allocate nothing: their bitmap, values and
// offsets are slices of one read-only zero buffer (a buffer with no
// allocator is never freed or recycled, and Arrow arrays are not written
// after they are made).
func NullColumn(mem memory.Allocator, t types.T, n int) arrow.Array {
	if n > 0 && 8*n <= len(zeros) {
		var bufs []*memory.Buffer
		switch t.Physical() {
		case types.PhysInt64, types.PhysFloat64:
			bufs = []*memory.Buffer{memory.NewBufferBytes(zeros[:(n+7)/8]), memory.NewBufferBytes(zeros[:8*n])}
		case types.PhysString:
			if t.Arrow().ID() == arrow.STRING {
				bufs = []*memory.Buffer{memory.NewBufferBytes(zeros[:(n+7)/8]), memory.NewBufferBytes(zeros[:4*(n+1)]), memory.NewBufferBytes(nil)}
			}
		}
		if bufs != nil {
			data := array.NewData(t.Arrow(), n, bufs, nil, n, 0)
			defer data.Release()
			return array.MakeFromData(data)
		}
	}
	b := types.NewBuilder(mem, t)
	defer b.Release()
	b.AppendNulls(n)
	return b.NewArray()
}

// zeros backs NullColumn's columns.
var zeros = make([]byte, 8*(64<<10))

// ReadCols are the declared columns a job reads (read[i] for column i; nil
// or too short: every column), as indexes.
func ReadCols(read []bool, n int) []int {
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if i >= len(read) || read[i] {
			out = append(out, i)
		}
	}
	return out
}
