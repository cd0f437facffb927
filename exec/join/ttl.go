package join

import (
	"maps"
	"time"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
)

// state.ttl: the keys of an unwindowed join that no row has touched for
// the TTL (processing time) are expired: their rows leave the operator's
// memory and state, and nothing is emitted for them, so the view's rows
// that came from them stay as they are. A key's idle clock is the time of
// the last barrier after a row touched it; expiry is checked at barriers,
// from a heap of keys by that time, so a barrier's work is the keys that
// expire (and those touched since they were queued, which are queued
// again), not a scan of the state.
//
// A key's idle clock is stored with its rows: while the TTL is on, each
// row entry a barrier writes carries its group's clock (appendJoinValue), and
// the barrier after a row touched a group writes at least one of the
// group's rows (stampClocks: the changed row itself, unless the epoch
// only removed rows), so the latest clock among a group's stored rows is
// its clock. load and reload take that; a group stored while the TTL was
// off starts its clock when it is loaded.

// joinTTL is a join's expiry bookkeeping.
type joinTTL struct {
	touched []*joinGroup // groups a row touched in the epoch
	stamp   []*joinGroup // groups whose clock the barrier must write
	queue   opkit.IdleHeap[*joinGroup]
	on      bool // the TTL was set at the last barrier: every group is queued
	never   bool // a lookup join: nothing expires
	now     func() int64
	expired int64 // keys expired so far
}

// touch notes that a row touched g in this epoch.
func (t *joinTTL) touch(g *joinGroup) {
	if t.never {
		return // a lookup join's right rows never expire (lookupjoin.go)
	}
	if !g.touched {
		g.touched = true
		t.touched = append(t.touched, g)
	}
}

// expireIdle, at a barrier, restarts the idle clock of the groups touched
// in the epoch and expires the groups idle for the TTL: their rows are
// listed as changed with no count left, so the barrier deletes them from
// the state table. A group evicted to the state table is read back first.
func (o *Op) expireIdle(ectx *expr.Ctx) error {
	t := &o.ttl
	if t.now == nil {
		t.now = func() int64 { return time.Now().UnixMicro() }
	}
	now := t.now()
	ttl := o.ttlOf()
	for _, g := range t.touched {
		g.touched, g.idle = false, now
		if ttl > 0 && !g.gone {
			t.stamp = append(t.stamp, g)
		}
		if ttl > 0 && !g.queued && !g.gone {
			opkit.QueueIdle(&t.queue, g, now)
		}
	}
	clear(t.touched)
	t.touched = t.touched[:0]
	if ttl <= 0 {
		t.on = false
		return nil
	}
	// A group gone from memory is stale unless it was evicted and neither
	// read back nor emptied since (touched since it was queued, it is
	// queued again at its stored clock, as one in memory is).
	gone := func(g *joinGroup, at int64) bool {
		return g.gone && (!g.evicted || g.idle <= at && (o.store.groups[g.key] != nil || !o.store.readable(g.key)))
	}
	return opkit.SweepIdle(&t.queue, &t.on, now, ttl, maps.Values(o.store.groups), gone, func(g *joinGroup, _ int64) (bool, error) {
		if g.gone { // evicted: read it back with its stored clock
			var err error
			if g, err = o.store.reload(ectx, g.key, g.kg, g.hash, -1); err != nil || g == nil {
				return false, err
			}
			if g.idle > 0 && g.idle+ttl > now {
				// A later group of the key, stored since with a later clock.
				opkit.QueueIdle(&t.queue, g, g.idle)
				return true, nil
			}
		}
		if err := o.store.complete(g); err != nil { // its rows not read back go too
			return false, err
		}
		o.store.expire(g)
		t.expired++
		return true, nil
	})
}

// IdleState is g's idle clock and whether it is queued (opkit.SweepIdle).
func (g *joinGroup) IdleState() (*int64, *bool) { return &g.idle, &g.queued }

// stampClocks, at a barrier after expiry and freeing, lists a row of each
// group touched in the epoch as changed if none of its changed rows is
// left to carry the group's new clock to the state table.
func (ks *store) stampClocks(t *joinTTL) {
	for _, g := range t.stamp {
		if g.gone || g.clockRow {
			g.clockRow = false
			continue
		}
		for side := range g.rows {
			if len(g.rows[side]) > 0 {
				r := &g.rows[side][0]
				if !r.dirty {
					r.dirty = true
					ks.dirty = append(ks.dirty, joinDirty{g: g, side: side, enc: r.enc})
				}
				break
			}
		}
	}
	clear(t.stamp)
	t.stamp = t.stamp[:0]
}

// expire drops g's rows without emitting anything.
func (ks *store) expire(g *joinGroup) {
	for side := range g.rows {
		for _, r := range g.rows[side] {
			if !r.dirty {
				ks.dirty = append(ks.dirty, joinDirty{g: g, side: side, enc: r.enc})
			}
			ks.bytes -= joinRowBytes + int64(len(r.enc))
		}
	}
	ks.dropEmpty(g)
}
