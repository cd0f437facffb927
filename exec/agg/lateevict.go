package agg

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// Window groups evicted to the state table close too.
//
// A group of a window aggregate that the state cache evicted (or left in
// the state table when the job started) is not in memory when the
// watermark passes its window's end, so markClosing, which looks at the
// groups in memory, would leave it there until a row of its key came
// back — for a closed window, never. The aggregate therefore keeps, for
// each evicted group, its key (not its accumulators) in an index by window
// bound; at a barrier whose watermark passes a bound, the groups indexed
// under it are looked up as a row of their key would be (lookup, then
// created(), which loads those the evicted filter may hold from the state
// table), and markClosing then closes them with the groups in memory:
// their final row, for EMIT ON WINDOW CLOSE, and the deletion of their
// state and values. Keys indexed but gone from the state table (the group
// came back, closed or emptied since) load nothing and are dropped again.

// evictedWindows indexes evicted groups' keys by their window bound (the
// window-closing group key's value).
type evictedWindows struct {
	byBound map[int64][][]types.Datum
	bounds  []int64 // the keys of byBound, unsorted
}

// noteEvicted indexes group g, about to leave memory, by its window bound.
func (ws *windows) noteEvicted(gt *accum.GroupTable, nkeys int, g int32) {
	if ws.win == nil {
		return
	}
	ds := make([]types.Datum, nkeys)
	for c := range ds {
		ds[c] = gt.KeyDatum(c, g)
	}
	ws.noteEvictedKey(ds)
}

// noteEvictedKey indexes an evicted group's key ds.
func (ws *windows) noteEvictedKey(ds []types.Datum) {
	if ws.win == nil || ds[ws.win.Key].Null {
		return
	}
	b := ds[ws.win.Key]
	ew := &ws.evictedWins
	if ew.byBound == nil {
		ew.byBound = map[int64][][]types.Datum{}
	}
	if _, ok := ew.byBound[b.I]; !ok {
		ew.bounds = append(ew.bounds, b.I)
	}
	ew.byBound[b.I] = append(ew.byBound[b.I], ds)
}

// closedEvicted takes out of the index the keys of the evicted groups
// whose window the last barrier's watermark has passed: Barrier brings
// them back into memory (bringBack), so markClosing closes them.
func (ws *windows) closedEvicted() [][]types.Datum {
	ew := &ws.evictedWins
	if ws.win == nil || ws.wm == op.NoWatermark || len(ew.bounds) == 0 {
		return nil
	}
	var keys [][]types.Datum
	open := ew.bounds[:0]
	for _, b := range ew.bounds {
		if !ws.win.Closed(b, ws.wm) {
			open = append(open, b)
			continue
		}
		keys = append(keys, ew.byBound[b]...)
		delete(ew.byBound, b)
	}
	ew.bounds = open
	return keys
}

// bringBack looks up the groups of keys as rows of those keys would:
// those not in memory are read from the state table (created, through the
// evicted filter). It returns the groups it read back; keys the state
// table no longer has leave no group.
func (a *Op) bringBack(keys [][]types.Datum) ([]int32, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, len(a.keyTs))
	defer opkit.ReleaseAll(cols)
	for c, t := range a.keyTs {
		bld := types.NewBuilder(a.mem, t)
		for _, ds := range keys {
			types.AppendDatum(bld, ds[c], t)
		}
		cols[c] = bld.NewArray()
		bld.Release()
	}
	gids := make([]int32, len(keys))
	if a.gt.Lookup(cols, len(keys), gids, true) == 0 {
		return nil, nil // all in memory already
	}
	created := slices.Clone(a.gt.Created)
	a.grow()
	if err := a.created(); err != nil {
		return nil, err
	}
	back := created[:0]
	for _, g := range created {
		if a.count.N(g) <= 0 {
			a.dropGroup(g) // not in the state table (any more)
			continue
		}
		back = append(back, g)
	}
	return back, nil
}
