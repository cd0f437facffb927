package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// splitOps separates a changelog block's trailing op column.
func SplitOps(rec arrow.RecordBatch) (arrow.RecordBatch, []connector.Op) {
	nc := int(rec.NumCols()) - 1
	opsCol := rec.Column(nc).(*array.Int64).Int64Values()
	ops := make([]connector.Op, len(opsCol))
	for i, v := range opsCol {
		ops[i] = connector.Op(v)
	}
	cols := make([]arrow.Array, nc)
	ts := make([]types.T, nc)
	for i := 0; i < nc; i++ {
		cols[i] = rec.Column(i)
		cols[i].Retain()
		ts[i] = opkit.TypeOfArrow(cols[i])
	}
	out := opkit.NewRecord(ts, cols, int(rec.NumRows()))
	rec.Release()
	return out, ops
}
