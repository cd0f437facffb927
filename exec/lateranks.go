package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Top-N per window: a rank node (ROW_NUMBER/RANK/DENSE_RANK OVER
// (PARTITION BY ... ORDER BY ...) bounded by an outer filter) one of whose
// partition keys is a window's bound — through the projections, filters
// and aggregates under it, a window end or a tumbling window's start, as
// windowBound finds them for window aggregates, over a time a watermark
// bounds (eventtime.go) — frees a window's
// partition once the watermark passes the window's end: at that barrier
// the partition's last changes are emitted, then its rows are deleted from
// the state table and memory, and nothing more is emitted for it (the view
// keeps its top rows). A row whose window had ended at the watermark of
// the barrier before it is late: dropped, counted, and recorded under
// job.late_rows = 'record'. Partitions evicted to the state table are
// indexed by window and read back to be freed. The rank's input watermark
// is checkpointed like a window aggregate's, so replayed rows are judged
// as before a restart.

// rankWindowOf finds the partition key of a rank over in that bounds
// windows over a time a watermark bounds, preferring the earliest close;
// nil if none does (the rank then keeps every window).
func rankWindowOf(in Plan, partition []expr.Expr) *windowClose {
	var best *windowClose
	for i, k := range partition {
		if k.Type().Kind != types.Timestamp {
			continue
		}
		off, t, ok := boundThrough(in, k)
		if !ok || !t.ok {
			continue
		}
		w := &windowClose{Key: i, Offset: off, Shift: t.shift, Hop: hopOfKey(in, k)}
		if best == nil || w.closeAt(0) < best.closeAt(0) {
			best = w
		}
	}
	return best
}

// boundThrough is windowBound that also looks through aggregates (a
// top-N over a window aggregate's rows partitions by its group keys) and
// the projections and filters over them.
func boundThrough(p Plan, e expr.Expr) (int64, timeTrace, bool) {
	if c, ok := e.(*expr.ColRef); ok {
		switch p := p.(type) {
		case *Project:
			if c.Idx < len(p.Exprs) {
				return boundThrough(p.In, p.Exprs[c.Idx])
			}
		case *Filter:
			return boundThrough(p.In, e)
		case *HashAgg:
			if c.Idx < len(p.Keys) {
				return boundThrough(p.In, p.Keys[c.Idx])
			}
			return 0, timeTrace{}, false
		}
	}
	return windowBound(p, e)
}

// opID is the rank's operator id (runOp checkpoints its watermark).
func (o *rankOp) opID() uint32 { return o.op }

// keepsWatermark says whether the rank acts on event time.
func (o *rankOp) keepsWatermark() bool { return o.spec.win != nil }

// takeLate returns the late rows noted since the last call.
func (o *rankOp) takeLate() []storage.LateRow { return o.lateLog.Take() }

// advance notes the watermark of the barrier being aligned: partitions
// whose window it passes are freed by barrier, after their last changes,
// and the next epoch's rows are judged late against it.
func (o *rankOp) AdvanceWatermark(_ *expr.Ctx, wm Watermark) (int64, error) {
	if o.spec.win == nil {
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
func (o *rankOp) isLate(rec arrow.RecordBatch, keys []arrow.Array, hopTS hopRows, i int) bool {
	w := o.spec.win
	if w == nil || o.wm == NoWatermark {
		return false
	}
	col, ok := keys[w.Key].(*array.Int64)
	if !ok || col.IsNull(i) || !w.closed(col.Value(i), o.wm) {
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
func (o *rankOp) lateHopTimes(ectx *expr.Ctx, rec arrow.RecordBatch) (hopRows, error) {
	w := o.spec.win
	if w == nil || w.Hop == nil || o.wm == NoWatermark {
		return hopRows{}, nil
	}
	return w.Hop.Times(ectx, rec)
}

// boundOf is partition p's window bound (ok false: NULL).
func (o *rankOp) boundOf(p *rankPart) (int64, bool) {
	if !p.boundSet {
		d := decodeRow(p.key, exprTypes(o.spec.partition))[o.spec.win.Key]
		p.bound, p.boundNull, p.boundSet = d.I, d.Null, true
	}
	return p.bound, !p.boundNull
}

// noteEvictedPart indexes evicted partition p by its window bound.
func (o *rankOp) noteEvictedPart(p *rankPart) {
	if o.spec.win == nil {
		return
	}
	b, ok := o.boundOf(p)
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
func (o *rankOp) freeClosed(ectx *expr.Ctx) error {
	w := o.spec.win
	if w == nil || o.wm == NoWatermark {
		return nil
	}
	for b, keys := range o.evictedWins {
		if !w.closed(b, o.wm) {
			continue
		}
		delete(o.evictedWins, b)
		for _, k := range keys {
			if o.parts[k] != nil {
				continue // back in memory: freed below
			}
			h := o.keyHash(k)
			if _, err := o.reload(ectx, k, byte(keyGroup(h)), h); err != nil {
				return err
			}
		}
	}
	for k, p := range o.parts {
		b, ok := o.boundOf(p)
		if !ok || !w.closed(b, o.wm) {
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
