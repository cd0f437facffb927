package exec

import (
	"container/heap"
	"sync/atomic"
	"time"

	"github.com/streamdb/streamdb/exec/expr"
)

// state.ttl: the keys of an unwindowed join that no row has touched for
// the TTL (processing time) are expired: their rows leave the operator's
// memory and state, and nothing is emitted for them, so the view's rows
// that came from them stay as they are. A key's idle clock is the time of
// the last barrier after a row touched it; expiry is checked at barriers,
// from a heap of keys by that time, so a barrier's work is the keys that
// expire (and those touched since they were queued, which are queued
// again), not a scan of the state. Idle clocks are not stored: a restored
// job starts every key's clock anew.

// StateTTL is a job's state.ttl; the engine changes it while the job runs
// (SET state.ttl, ALTER MATERIALIZED VIEW ... SET (state.ttl = ...)).
type StateTTL struct{ us atomic.Int64 }

// NewStateTTL returns a TTL of d (0: keys never expire).
func NewStateTTL(d time.Duration) *StateTTL {
	t := &StateTTL{}
	t.Set(d)
	return t
}

// Set changes the TTL; 0 turns expiry off.
func (t *StateTTL) Set(d time.Duration) { t.us.Store(max(0, d.Microseconds())) }

// micros is the TTL in µs; 0 for none (t may be nil).
func (t *StateTTL) micros() int64 {
	if t == nil {
		return 0
	}
	return t.us.Load()
}

// StateTTL is the job's state.ttl (nil for a change stream).
func (j *Job) StateTTL() *StateTTL { return j.spec.StateTTL }

// idleItem is a key queued for expiry: at is its idle clock when queued.
type idleItem[G any] struct {
	at int64
	g  G
}

// idleHeap is a min-heap of keys by idle clock.
type idleHeap[G any] struct{ items []idleItem[G] }

func (h *idleHeap[G]) Len() int           { return len(h.items) }
func (h *idleHeap[G]) Less(i, j int) bool { return h.items[i].at < h.items[j].at }
func (h *idleHeap[G]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *idleHeap[G]) Push(x any)         { h.items = append(h.items, x.(idleItem[G])) }
func (h *idleHeap[G]) Pop() any {
	it := h.items[len(h.items)-1]
	var zero idleItem[G]
	h.items[len(h.items)-1] = zero
	h.items = h.items[:len(h.items)-1]
	return it
}

// joinTTL is a join's expiry bookkeeping.
type joinTTL struct {
	touched []*joinGroup // groups a row touched in the epoch
	queue   idleHeap[*joinGroup]
	on      bool // the TTL was set at the last barrier: every group is queued
	now     func() int64
	expired int64 // keys expired so far
}

// touch notes that a row touched g in this epoch.
func (o *joinOp) touch(g *joinGroup) {
	if !g.touched {
		g.touched = true
		o.ttl.touched = append(o.ttl.touched, g)
	}
}

// expireIdle, at a barrier, restarts the idle clock of the groups touched
// in the epoch and expires the groups idle for the TTL: their rows are
// listed as changed with no count left, so the barrier deletes them from
// the state table. A group evicted to the state table is read back first.
func (o *joinOp) expireIdle(ectx *expr.Ctx) error {
	t := &o.ttl
	if t.now == nil {
		t.now = func() int64 { return time.Now().UnixMicro() }
	}
	now := t.now()
	ttl := o.j.spec.StateTTL.micros()
	for _, g := range t.touched {
		g.touched, g.idle = false, now
		if ttl > 0 && !g.queued && !g.gone {
			g.queued = true
			heap.Push(&t.queue, idleItem[*joinGroup]{at: now, g: g})
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
			heap.Push(&t.queue, idleItem[*joinGroup]{at: g.idle, g: g})
		}
	}
	for t.queue.Len() > 0 && t.queue.items[0].at+ttl <= now {
		it := heap.Pop(&t.queue).(idleItem[*joinGroup])
		g := it.g
		if g.idle > it.at && !g.gone { // touched since it was queued
			heap.Push(&t.queue, idleItem[*joinGroup]{at: g.idle, g: g})
			continue
		}
		g.queued = false
		if g.gone {
			if !g.evicted || o.groups[g.key] != nil {
				continue // emptied, or back in memory under a group of its own
			}
			var err error
			if g, err = o.reload(ectx, g.key, g.kg, g.hash); err != nil || g == nil {
				return err
			}
		}
		o.expire(g)
	}
	return nil
}

// expire drops g's rows without emitting anything.
func (o *joinOp) expire(g *joinGroup) {
	for side := range g.rows {
		for _, r := range g.rows[side] {
			if !r.dirty {
				o.dirty = append(o.dirty, joinDirty{g: g, side: side, enc: r.enc})
			}
			o.bytes -= joinRowBytes + int64(len(r.enc))
		}
	}
	o.bytes -= joinGroupBytes + int64(len(g.key))
	delete(o.groups, g.key)
	g.gone = true
	o.ttl.expired++
}
