package exec

import (
	"container/heap"
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
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
	stamp   []*joinGroup // groups whose clock the barrier must write
	queue   idleHeap[*joinGroup]
	on      bool // the TTL was set at the last barrier: every group is queued
	now     func() int64
	expired int64 // keys expired so far
}

// touch notes that a row touched g in this epoch.
func (o *joinOp) touch(g *joinGroup) {
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
func (o *joinOp) expireIdle(ectx *expr.Ctx) error {
	t := &o.ttl
	if t.now == nil {
		t.now = func() int64 { return time.Now().UnixMicro() }
	}
	now := t.now()
	ttl := o.j.spec.StateTTL.micros()
	for _, g := range t.touched {
		g.touched, g.idle = false, now
		if ttl > 0 && !g.gone {
			t.stamp = append(t.stamp, g)
		}
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
		if g.idle > it.at && (!g.gone || g.evicted) { // touched since it was queued
			heap.Push(&t.queue, idleItem[*joinGroup]{at: g.idle, g: g})
			continue
		}
		g.queued = false
		if g.gone {
			if !g.evicted || o.groups[g.key] != nil || !o.readable(g.key) {
				continue // emptied, or read back since
			}
			var err error
			if g, err = o.reload(ectx, g.key, g.kg, g.hash); err != nil || g == nil {
				return err
			}
			if g.idle > 0 && g.idle+ttl > now {
				// A later group of the key, stored since with a later clock.
				g.queued = true
				heap.Push(&t.queue, idleItem[*joinGroup]{at: g.idle, g: g})
				continue
			}
		}
		o.expire(g)
	}
	return nil
}

// stampClocks, at a barrier after expiry and freeing, lists a row of each
// group touched in the epoch as changed if none of its changed rows is
// left to carry the group's new clock to the state table.
func (o *joinOp) stampClocks() {
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
func (o *joinOp) expire(g *joinGroup) {
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

// state.ttl for unwindowed aggregates (a window aggregate's groups end by
// the watermark instead; a global aggregate has one group): a group no row
// changed for the TTL is expired as a join key is. It is marked closing,
// so the barrier deletes its state entry and its DISTINCT / min-max value
// entries (saveState), emits nothing for it (its row is unchanged) and
// drops it from memory (forgetClosing); the view keeps the row it had. A
// later row of its key starts a new group, whose row replaces the old one
// in the view.
//
// A group's idle clock is the time of the barrier that saved it last, so
// it is stored with the group's state entry, which that barrier writes
// anyway (flushed per epoch, not per row): while the TTL is on, the entry
// ends with the trailer uvarint(9) 't' <clock: 8 bytes, µs, big-endian>
// (decodeGroup reads it; versions before it skip a trailer as the row it
// once held). A restored group resumes its clock; one saved without it
// (the TTL was off) starts its clock when loaded.
//
// Groups evicted to the state table while the TTL is on wait, by key, in a
// heap of their own; when they are due they are read back (as a row of
// their key would read them, with their stored clock) and expire if that
// clock is due too.

// aggTTL is an aggregate's expiry bookkeeping.
type aggTTL struct {
	on      bool     // the TTL was on at the last barrier
	idle    []int64  // per group id: idle clock (µs); 0: none yet
	gen     []uint32 // per group id: bumped when a new group takes the id
	queued  []bool   // per group id: in queue
	queue   idleHeap[aggIdle]
	evicted idleHeap[[]types.Datum] // keys of evicted groups
	expired int64
}

// aggIdle is a queued group: its id, and the id's generation then.
type aggIdle struct {
	g   int32
	gen uint32
}

// idleTrailer is the length and tag of the idle clock trailer.
const idleTrailer = 9

func (t *aggTTL) grow(n int) {
	for len(t.idle) < n {
		t.idle = append(t.idle, 0)
		t.gen = append(t.gen, 0)
		t.queued = append(t.queued, false)
	}
}

// created resets the bookkeeping of a group id a new group took.
func (t *aggTTL) created(g int32) {
	t.idle[g], t.queued[g] = 0, false
	t.gen[g]++
}

// appendIdle ends group g's state entry with its idle clock if the TTL is on.
func (t *aggTTL) appendIdle(buf []byte, g int32) []byte {
	if !t.on {
		return buf
	}
	buf = append(buf, idleTrailer, 't')
	return binary.BigEndian.AppendUint64(buf, uint64(t.idle[g]))
}

// decodeIdle reads a trailer of a group's state entry: ok if it is the
// idle clock (rest: after the length).
func decodeIdle(rest []byte) (int64, bool) {
	if len(rest) != idleTrailer || rest[0] != 't' {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(rest[1:])), true
}

// peekIdle is the idle clock at the end of a state entry val, 0 if it has
// none; a hint only (for a group left in the state table at startup).
func peekIdle(val []byte) int64 {
	l := len(val)
	if l < idleTrailer+1 || val[l-idleTrailer-1] != idleTrailer {
		return 0
	}
	at, _ := decodeIdle(val[l-idleTrailer:])
	return at
}

// usesTTL says whether state.ttl applies to the aggregate.
func (a *aggOp) usesTTL() bool { return a.win == nil && len(a.spec.Keys) > 0 }

// noteEvictedTTL queues evicted group g's key for expiry while the TTL is on.
func (a *aggOp) noteEvictedTTL(g int32) {
	t := &a.ttl
	if !t.on || !a.usesTTL() {
		return
	}
	ds := make([]types.Datum, len(a.keyTs))
	for c := range ds {
		ds[c] = a.gt.KeyDatum(c, g)
	}
	heap.Push(&t.evicted, idleItem[[]types.Datum]{at: t.idle[g], g: ds})
}

// expireIdle, at a barrier at time now, restarts the idle clock of the
// groups changed in the epoch and marks closing the groups idle for ttl
// (0: off). Called after markClosing, before prepareSave.
func (a *aggOp) expireIdle(now, ttl int64) error {
	t := &a.ttl
	if !a.usesTTL() {
		return nil
	}
	for _, g := range a.dirty {
		t.idle[g] = now
		if ttl > 0 && !t.queued[g] {
			t.queued[g] = true
			heap.Push(&t.queue, idleItem[aggIdle]{at: now, g: aggIdle{g, t.gen[g]}})
		}
	}
	if ttl <= 0 {
		t.on = false
		return nil
	}
	if !t.on { // turned on: queue every group, its clock starting now if it never ran
		t.on = true
		for g := int32(0); int(g) < a.gt.Len(); g++ {
			if !a.live[g] || t.queued[g] {
				continue
			}
			if t.idle[g] == 0 {
				t.idle[g] = now
			}
			t.queued[g] = true
			heap.Push(&t.queue, idleItem[aggIdle]{at: t.idle[g], g: aggIdle{g, t.gen[g]}})
		}
	}
	// Evicted groups that are due come back with their stored clocks.
	var keys [][]types.Datum
	for t.evicted.Len() > 0 && t.evicted.items[0].at+ttl <= now {
		keys = append(keys, heap.Pop(&t.evicted).(idleItem[[]types.Datum]).g)
	}
	back, err := a.bringBack(keys)
	if err != nil {
		return err
	}
	for _, g := range back {
		if t.idle[g] == 0 {
			t.idle[g] = now
		}
		t.queued[g] = true
		heap.Push(&t.queue, idleItem[aggIdle]{at: t.idle[g], g: aggIdle{g, t.gen[g]}})
	}
	for t.queue.Len() > 0 && t.queue.items[0].at+ttl <= now {
		it := heap.Pop(&t.queue).(idleItem[aggIdle])
		g := it.g.g
		if it.g.gen != t.gen[g] || !a.live[g] {
			continue // left memory: evicted (queued apart), closed or emptied
		}
		if t.idle[g] > it.at { // changed since it was queued
			heap.Push(&t.queue, idleItem[aggIdle]{at: t.idle[g], g: it.g})
			continue
		}
		t.queued[g] = false
		if a.isClosing[g] {
			continue
		}
		a.closing = append(a.closing, g)
		a.isClosing[g] = true
		if !a.isDirty[g] {
			a.isDirty[g] = true
			a.dirty = append(a.dirty, g)
		}
		t.expired++
	}
	return nil
}

// state.ttl for top-N partitions (ROW_NUMBER/RANK/DENSE_RANK OVER
// (PARTITION BY ...)): a partition no row changed for the TTL is expired as
// a join key is — its rows leave memory and the state table, nothing is
// emitted, so the view keeps the top rows it had; a later row of its key
// starts a new partition, whose top rows are inserted beside them.
// Partitions of a top-N per window are freed by the watermark instead;
// ORDER BY ... LIMIT has one partition, which never expires. The idle
// clock rides on the row entries the barrier writes anyway: while the TTL
// is on, a row's value is its count followed by the clock (8 bytes, µs,
// big-endian; readers of the count ignore it), and a loaded partition's
// clock is the latest of its rows'. A partition evicted to the state table
// while queued stays queued; when it comes up and its key has not been
// read back since (evicted lists those), it is read back with its stored
// clock and expires if that is due too, else it is queued anew.

// rankTTL is a rank's expiry bookkeeping.
type rankTTL struct {
	touched []*rankPart
	queue   idleHeap[*rankPart]
	on      bool
	expired int64
	// evicted holds the queued partitions evicted to the state table by
	// key, until they or a partition of their key are read back.
	evicted map[string]*rankPart
}

// noteEvicted notes that queued partition p went to the state table.
func (t *rankTTL) noteEvicted(p *rankPart) {
	if t.evicted == nil {
		t.evicted = map[string]*rankPart{}
	}
	t.evicted[p.key] = p
}

// noteReloaded notes that the partition of key is read back.
func (t *rankTTL) noteReloaded(key string) {
	if p := t.evicted[key]; p != nil {
		p.reloaded = true
		delete(t.evicted, key)
	}
}

// touchTTL notes that a row changed p in this epoch.
func (o *rankOp) touchTTL(p *rankPart) {
	if !p.touched && p.key != "" && o.spec.win == nil {
		p.touched = true
		o.ttl.touched = append(o.ttl.touched, p)
	}
}

// expireIdle, at a barrier whose changes are out, restarts the idle clock
// of the partitions changed in the epoch and expires those idle for the
// TTL: their rows are listed as changed with no count left.
func (o *rankOp) expireIdle(ectx *expr.Ctx, now int64) error {
	t := &o.ttl
	ttl := o.j.spec.StateTTL.micros()
	for _, p := range t.touched {
		p.touched, p.idle = false, now
		if ttl > 0 && !p.queued && !p.gone {
			p.queued = true
			heap.Push(&t.queue, idleItem[*rankPart]{at: now, g: p})
		}
	}
	clear(t.touched)
	t.touched = t.touched[:0]
	if ttl <= 0 || o.spec.win != nil {
		t.on = false
		return nil
	}
	if !t.on {
		t.on = true
		for k, p := range o.parts {
			if p.queued || k == "" {
				continue
			}
			if p.idle == 0 {
				p.idle = now
			}
			p.queued = true
			heap.Push(&t.queue, idleItem[*rankPart]{at: p.idle, g: p})
		}
	}
	for t.queue.Len() > 0 && t.queue.items[0].at+ttl <= now {
		it := heap.Pop(&t.queue).(idleItem[*rankPart])
		p := it.g
		if p.gone && (!p.evicted || p.reloaded || o.parts[p.key] != nil) {
			p.queued = false
			continue // freed, emptied or read back: a partition of its key is queued anew when it comes
		}
		if p.idle > it.at {
			heap.Push(&t.queue, idleItem[*rankPart]{at: p.idle, g: p})
			continue
		}
		p.queued = false
		if p.gone { // evicted: read it back with its stored clock
			var err error
			if p, err = o.reload(ectx, p.key, p.kg, p.hash); err != nil || p == nil {
				return err
			}
			if p.idle == 0 {
				p.idle = it.at // stored while the TTL was off
			}
			if p.idle+ttl > now {
				p.queued = true
				heap.Push(&t.queue, idleItem[*rankPart]{at: p.idle, g: p})
				continue
			}
		}
		for enc := range p.rows {
			o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
		}
		o.bytes -= mapBytes(p.rows) + p.outBytes + rankPartBytes + int64(len(p.key))
		delete(o.parts, p.key)
		p.gone = true
		t.expired++
	}
	return nil
}

// appendClock ends a row entry's value with the idle clock while the TTL
// is on.
func (o *rankOp) appendClock(b []byte, p *rankPart) []byte {
	if !o.ttl.on {
		return b
	}
	return binary.BigEndian.AppendUint64(b, uint64(p.idle))
}

// clockOf is the idle clock after a row entry's count (rest), 0 if none.
func clockOf(rest []byte) int64 {
	if len(rest) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(rest))
}
