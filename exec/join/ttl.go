package join

import (
	"container/heap"
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
	now     func() int64
	expired int64 // keys expired so far
}

// touch notes that a row touched g in this epoch.
func (o *Op) touch(g *joinGroup) {
	if o.lk.on {
		return // a lookup join's right rows never expire (lookupjoin.go)
	}
	if !g.touched {
		g.touched = true
		o.ttl.touched = append(o.ttl.touched, g)
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
			g.queued = true
			heap.Push(&t.queue, opkit.IdleItem[*joinGroup]{At: now, G: g})
		}
	}
	clear(t.touched)
	t.touched = t.touched[:0]
	if ttl <= 0 {
		t.on = false
		return nil
	}
	if !t.on { // turned on: queue every group, its clock starting now if it never ran
		t.on = true
		for _, g := range o.groups {
			if g.queued {
				continue
			}
			if g.idle == 0 {
				g.idle = now
			}
			g.queued = true
			heap.Push(&t.queue, opkit.IdleItem[*joinGroup]{At: g.idle, G: g})
		}
	}
	for t.queue.Len() > 0 && t.queue.Items[0].At+ttl <= now {
		it := heap.Pop(&t.queue).(opkit.IdleItem[*joinGroup])
		g := it.G
		if g.idle > it.At && (!g.gone || g.evicted) { // touched since it was queued
			heap.Push(&t.queue, opkit.IdleItem[*joinGroup]{At: g.idle, G: g})
			continue
		}
		g.queued = false
		if g.gone {
			if !g.evicted || o.groups[g.key] != nil || !o.readable(g.key) {
				continue // emptied, or read back since
			}
			var err error
			if g, err = o.reload(ectx, g.key, g.kg, g.hash, -1); err != nil || g == nil {
				return err
			}
			if g.idle > 0 && g.idle+ttl > now {
				// A later group of the key, stored since with a later clock.
				g.queued = true
				heap.Push(&t.queue, opkit.IdleItem[*joinGroup]{At: g.idle, G: g})
				continue
			}
		}
		if err := o.complete(g); err != nil { // its rows not read back go too
			return err
		}
		o.expire(g)
	}
	return nil
}

// stampClocks, at a barrier after expiry and freeing, lists a row of each
// group touched in the epoch as changed if none of its changed rows is
// left to carry the group's new clock to the state table.
func (o *Op) stampClocks() {
	t := &o.ttl
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
					o.dirty = append(o.dirty, joinDirty{g: g, side: side, enc: r.enc})
				}
				break
			}
		}
	}
	clear(t.stamp)
	t.stamp = t.stamp[:0]
}

// expire drops g's rows without emitting anything.
func (o *Op) expire(g *joinGroup) {
	for side := range g.rows {
		for _, r := range g.rows[side] {
			if !r.dirty {
				o.dirty = append(o.dirty, joinDirty{g: g, side: side, enc: r.enc})
			}
			o.bytes -= joinRowBytes + int64(len(r.enc))
		}
	}
	o.dropEmpty(g)
	o.ttl.expired++
}
