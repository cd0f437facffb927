package exec

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
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
func rankWindowOf(in plan.Plan, partition []expr.Expr) *windowClose {
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
		if best == nil || w.CloseAt(0) < best.CloseAt(0) {
			best = w
		}
	}
	return best
}

// boundThrough is windowBound that also looks through aggregates (a
// top-N over a window aggregate's rows partitions by its group keys) and
// the projections and filters over them.
func boundThrough(p plan.Plan, e expr.Expr) (int64, timeTrace, bool) {
	if c, ok := e.(*expr.ColRef); ok {
		switch p := p.(type) {
		case *plan.Project:
			if c.Idx < len(p.Exprs) {
				return boundThrough(p.In, p.Exprs[c.Idx])
			}
		case *plan.Filter:
			return boundThrough(p.In, e)
		case *plan.HashAgg:
			if c.Idx < len(p.Keys) {
				return boundThrough(p.In, p.Keys[c.Idx])
			}
			return 0, timeTrace{}, false
		}
	}
	return windowBound(p, e)
}
