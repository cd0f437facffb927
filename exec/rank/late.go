package rank

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
)

// OpID is the rank's operator id (the runtime checkpoints its watermark).
func (o *Op) OpID() uint32 { return o.op }

// KeepsWatermark says whether the rank acts on event time.
func (o *Op) KeepsWatermark() bool { return o.spec.Win != nil }

// TakeLate returns the late rows noted since the last call.
func (o *Op) TakeLate() []storage.LateRow { return o.lateLog.Take() }

// AdvanceWatermark notes the watermark of the barrier being aligned: partitions
// whose window it passes are freed by barrier, after their last changes,
// and the next epoch's rows are judged late against it.
func (o *Op) AdvanceWatermark(_ *expr.Ctx, wm op.Watermark) (int64, error) {
	if o.spec.Win == nil {
		return 0, nil
	}
	o.wm = wm.At
	late := o.late
	o.late = 0
	return late, nil
}

// isLate reports whether row i, whose partition keys are keys, belongs to
// a window that had ended at the watermark; if so it counts and notes it,
// unless it is a HOP row's window other than its last (hopTS: the rows'
// times, from lateHopTimes), which is dropped silently.
func (o *Op) isLate(rec arrow.RecordBatch, keys []arrow.Array, hopTS opkit.HopRows, i int) bool {
	w := o.spec.Win
	if w == nil || o.wm == op.NoWatermark {
		return false
	}
	col, ok := keys[w.Key].(*array.Int64)
	if !ok || col.IsNull(i) || !w.Closed(col.Value(i), o.wm) {
		return false
	}
	end := col.Value(i) + w.Offset
	if w.Hop == nil || w.Hop.IsLast(hopTS, i, end) {
		o.late++
		o.lateLog.Note(rec, i, end, o.wm+w.Shift)
	}
	return true
}

// lateHopTimes evaluates, when rows can be late and the partitions are
// HOP windows, the rows' times for isLate (nil otherwise).
func (o *Op) lateHopTimes(ectx *expr.Ctx, rec arrow.RecordBatch) (opkit.HopRows, error) {
	w := o.spec.Win
	if w == nil || w.Hop == nil || o.wm == op.NoWatermark {
		return opkit.HopRows{}, nil
	}
	return w.Hop.Times(ectx, rec)
}

// boundOf is partition p's window bound (ok false: NULL).
func boundOf(spec *Spec, p *rankPart) (int64, bool) {
	if !p.boundSet {
		d := opkit.DecodeRow(p.key, expr.Types(spec.Partition))[spec.Win.Key]
		p.bound, p.boundNull, p.boundSet = d.I, d.Null, true
	}
	return p.bound, !p.boundNull
}

// noteEvictedPart indexes evicted partition p by its window bound.
func (o *Op) noteEvictedPart(p *rankPart) {
	if o.spec.Win == nil {
		return
	}
	b, ok := boundOf(o.spec, p)
	if !ok {
		return
	}
	if o.evictedWins == nil {
		o.evictedWins = map[int64][]string{}
	}
	o.evictedWins[b] = append(o.evictedWins[b], p.key)
}

// freeClosed, at a barrier whose changes are out, deletes the partitions
// whose window the watermark has passed: their rows are listed as changed
// with no count left, so writeDirty deletes them.
func (o *Op) freeClosed(ectx *expr.Ctx) error {
	w := o.spec.Win
	if w == nil || o.wm == op.NoWatermark {
		return nil
	}
	for b, keys := range o.evictedWins {
		if !w.Closed(b, o.wm) {
			continue
		}
		delete(o.evictedWins, b)
		for _, k := range keys {
			if o.parts[k] != nil {
				continue // back in memory: freed below
			}
			h := keyHash(o.spec, k)
			if _, err := o.reload(ectx, k, byte(op.KeyGroup(h)), h); err != nil {
				return err
			}
		}
	}
	for k, p := range o.parts {
		b, ok := boundOf(o.spec, p)
		if !ok || !w.Closed(b, o.wm) {
			continue
		}
		for enc := range p.rows {
			o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
		}
		o.bytes -= mapBytes(p.rows) + p.outBytes + rankRowBytes + int64(len(k))
		delete(o.parts, k)
		p.gone = true
		o.freed++
	}
	return nil
}
