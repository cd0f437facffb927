package join

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/storage"
)

// Lookup (temporal) joins, FOR SYSTEM_TIME AS OF PROCTIME(), run as a
// join Op in lookup mode (Spec.Lookup):
//
//   - The right side, a keyed table's changelog, is kept in state as any
//     join keeps it, by join key, and committed with each epoch; its
//     changes emit nothing.
//   - A left row is kept nowhere. The left chunks of an epoch wait in
//     memory until the epoch's barrier; then, once every right change of
//     the epoch has been applied, each is joined with the right rows of
//     its key and goes out (NULL-padded for a LEFT join without a match).
//     A later change of the right side does not touch rows already out.
//
// So a left row is joined with the dimension as of the barrier that ends
// its epoch: the table's log up to that barrier's cut. A crash rewinds the
// view, the right side's state and both logs to the last checkpoint; the
// epochs after it are read again and emitted once, and their left rows
// meet the dimension as of the new epochs' barriers, which may be later
// than before the crash (processing time: Flink and RisingWave promise
// nothing more on replay). state.ttl does not apply to the right side:
// a forgotten dimension row would silently change later lookups.

// lookupJoin holds a lookup join's left chunks until the barrier.
type lookupJoin struct {
	on      bool
	pending []op.Chunk
	bytes   int64 // counted in Op.bytes while they wait
}

// hold keeps c (owning its record) until the barrier.
func (l *lookupJoin) hold(o *Op, c op.Chunk) {
	n := int64(storage.PaddedBufferBytes(c.Rec, 0))
	l.pending = append(l.pending, c)
	l.bytes += n
	o.store.bytes += n
	o.ReportBytes()
}

// flush joins the held chunks, in arrival order, with the right rows as
// they are at the barrier.
func (l *lookupJoin) flush(ectx *expr.Ctx, o *Op) error {
	var err error
	for i, c := range l.pending {
		if err == nil {
			err = o.pushParts(ectx, c, 0)
		} else {
			c.Rec.Release()
		}
		l.pending[i] = op.Chunk{}
	}
	l.pending = l.pending[:0]
	o.store.bytes -= l.bytes
	l.bytes = 0
	return err
}
