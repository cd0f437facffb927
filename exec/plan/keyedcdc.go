package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/opkit"
)

// ApplyUpstream nets a changelog that another database decided (a CDC
// source's transaction) into k, row by row in order, and returns the log
// rows that carry it: rec holds the table's columns then an op. An insert
// or update_after of a key k holds becomes an update pair, of one it
// lacks an insert; a delete or update_before (which may carry only the
// key columns) deletes the row k holds for the key, carrying that whole
// row so that views retract the values they counted, and is dropped if k
// holds none. The upstream database checked its keys row by row, so no
// row of rec is refused.
func (k *KeyedRows) ApplyUpstream(rec arrow.RecordBatch) *Changes {
	n := int(rec.NumRows())
	cols := k.cols(rec)
	keys := k.Keys(cols, n)
	var enc opkit.RowEncoder
	enc.Encode(cols, k.ts, n)
	ops := rec.Column(len(k.ts)).(*array.Int64).Int64Values()
	ch := &Changes{}
	for i, key := range keys {
		old, had := k.rows[key]
		if connector.Op(ops[i]).Sign() < 0 {
			if had {
				delete(k.rows, key)
				ch.add(old, connector.OpDelete)
			}
			continue
		}
		row := enc.RowString(i)
		if had {
			ch.add(old, connector.OpUpdateBefore)
			ch.add(row, connector.OpUpdateAfter)
		} else {
			ch.add(row, connector.OpInsert)
		}
		k.put(key, row)
	}
	return ch
}
