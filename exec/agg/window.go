package agg

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// Window aggregates (how a group key bounds windows is traced through the
// plan in exec, windowagg.go): a group whose window end is at or before
// the watermark is closed at the barrier: its final row is emitted, its
// state is deleted in the same epoch, and a row that would fall into it
// afterwards (its window end at or before the watermark on arrival) is
// late, dropped and counted. The same test on both sides makes closing
// exact: no row can reach a closed group.

// windows is a window aggregate's closing by the watermark: which group
// key closes its groups (win, windowagg.go; nil: not a window aggregate),
// the groups closing at the current barrier (closing; isClosing by
// group), the evicted groups indexed by window so they close too
// (lateevict.go), the input watermark of the last barrier (wm,
// AdvanceWatermark) and the late rows dropped since (lateN; logged in
// late under job.late_rows = 'record').
type windows struct {
	win         *opkit.WindowClose
	closing     []int32
	isClosing   []bool
	late        *opkit.LateLog
	evictedWins evictedWindows
	wm          int64
	lateN       int64
}

// dropLate removes from rec (and signs) the rows whose window had closed
// at the last barrier's watermark (keys: the aggregate's group keys); it returns the rows kept (rec itself if all are) and
// how many late rows it dropped. It owns rec. A HOP window's row is
// counted (and noted) only if it is its row's last window: the others
// are dropped silently, the row being late once, when all its windows
// are closed.
func (ws *windows) dropLate(ectx *expr.Ctx, keys []expr.Expr, rec arrow.RecordBatch, signs []int8) (arrow.RecordBatch, []int8, int64, error) {
	w, wm := ws.win, ws.wm
	if w == nil || wm == op.NoWatermark {
		return rec, signs, 0, nil
	}
	col, err := expr.Eval(ectx, keys[w.Key], rec)
	if err != nil {
		rec.Release()
		return nil, nil, 0, err
	}
	defer col.Release()
	vals := col.(*array.Int64)
	n := vals.Len()
	var keep []int
	var hopTS opkit.HopRows // evaluated at the first row dropped
	late := int64(0)
	for i := 0; i < n; i++ {
		if vals.IsValid(i) && w.Closed(vals.Value(i), wm) {
			end := vals.Value(i) + w.Offset
			if w.Hop != nil && hopTS.TS == nil {
				if hopTS, err = w.Hop.Times(ectx, rec); err != nil {
					rec.Release()
					return nil, nil, 0, err
				}
				defer hopTS.Release()
			}
			if w.Hop == nil || w.Hop.IsLast(hopTS, i, end) {
				late++
				ws.late.Note(rec, i, end, wm+w.Shift)
			}
			if keep == nil {
				keep = make([]int, 0, n)
				for k := 0; k < i; k++ {
					keep = append(keep, k)
				}
			}
			continue
		}
		if keep != nil {
			keep = append(keep, i)
		}
	}
	if keep == nil {
		return rec, signs, 0, nil
	}
	out := opkit.TakeRecord(rec, keep, recTypes(rec))
	rec.Release()
	if signs != nil {
		s := make([]int8, len(keep))
		for i, k := range keep {
			s[i] = signs[k]
		}
		signs = s
	}
	return out, signs, late, nil
}

// markClosing finds the groups in memory (live, in gt) whose window ended
// at or before the last barrier's watermark and marks them closing, and
// changed through changed: prepareSave then deletes their state, and
// forgetClosing drops them once their last changes are out.
func (ws *windows) markClosing(gt *accum.GroupTable, live []bool, changed func(g int32)) {
	w, wm := ws.win, ws.wm
	ws.closing = ws.closing[:0]
	if w == nil || wm == op.NoWatermark {
		return
	}
	for g := 0; g < gt.Len(); g++ {
		gid := int32(g)
		if !live[gid] {
			continue
		}
		d := gt.KeyDatum(w.Key, gid)
		if d.Null || !w.Closed(d.I, wm) {
			continue
		}
		ws.closing = append(ws.closing, gid)
		ws.isClosing[gid] = true
		changed(gid)
	}
}

// forgetClosing drops the closed groups from memory through drop (their
// state was deleted with the epoch that closed them).
func (ws *windows) forgetClosing(drop func(g int32)) {
	for _, g := range ws.closing {
		drop(g)
		ws.isClosing[g] = false
	}
	ws.closing = ws.closing[:0]
}

// dropGroup frees group g's memory: its key, accumulators and last output
// (eviction, whose state stays in the state table, and closed windows,
// whose state went with the epoch that closed them).
func (a *Op) dropGroup(g int32) {
	a.bytes -= groupBytes + a.gt.KeyBytes(g) + int64(len(a.lastOut[g]))
	a.gt.Remove(g)
	for _, acc := range a.accs {
		acc.Reset(g)
	}
	a.count.Reset(g)
	a.lastOut[g] = ""
	a.live[g] = false
}

// closedRows emits, for EMIT ON WINDOW CLOSE, the final rows of the groups
// closing at this barrier, in the order of their windows, as inserts; the
// groups changed in the epoch that stay open emit nothing (their state is
// saved). It clears the dirty set as changesOf does.
func (a *Op) closedRows(emit func(op.Chunk) error) error {
	for _, g := range a.dirty {
		a.isDirty[g] = false
	}
	a.dirty, a.byID = a.dirty[:0], a.byID[:0]
	if len(a.wins.closing) == 0 {
		return nil
	}
	ids := slices.Clone(a.wins.closing)
	k := a.wins.win.Key
	slices.SortFunc(ids, func(x, y int32) int {
		dx, dy := a.gt.KeyDatum(k, x), a.gt.KeyDatum(k, y)
		switch {
		case dx.I < dy.I:
			return -1
		case dx.I > dy.I:
			return 1
		}
		return 0
	})
	rec, err := a.build(ids)
	if err != nil {
		return err
	}
	groups := make([]uint8, len(ids))
	ops := make([]types.ChangeOp, len(ids))
	for i, g := range ids {
		groups[i] = uint8(op.KeyGroup(a.gt.Hashes[g]))
		ops[i] = types.ChangeInsert
	}
	return emit(op.Chunk{Rec: rec, Ops: ops, Groups: groups})
}

// recTypes are SQL types with the layouts of rec's columns.
func recTypes(rec arrow.RecordBatch) []types.T {
	ts := make([]types.T, rec.NumCols())
	for i := range ts {
		ts[i] = opkit.TypeOfArrow(rec.Column(i))
	}
	return ts
}
