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
// job does not read (Projector); see types.NullArray.
func NullColumn(mem memory.Allocator, t types.T, n int) arrow.Array {
	return types.NullArray(mem, t, n)
}

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
