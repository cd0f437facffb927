package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// OldLayoutRead wraps fn, a reader of table t's log blocks, so that a
// block written before uuid was stored as 16 bytes (a uuid column as a
// String of its text, or a uuid[] as List<String>) reaches fn in today's
// layout, read by t's column types: blocks whose fields carry no type
// metadata are not upgraded by storage.DecodeBlock. A table without uuid
// columns reads as it is.
func OldLayoutRead(t *storage.TableDef, fn func(uint64, arrow.RecordBatch) error) func(uint64, arrow.RecordBatch) error {
	ts := ColumnTypes(t)
	if !types.HasOldLayout(ts) {
		return fn
	}
	return func(first uint64, rec arrow.RecordBatch) error {
		return fn(first, types.UpgradeLayoutTo(rec, ts))
	}
}
