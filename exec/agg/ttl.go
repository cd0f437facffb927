package agg

import (
	"container/heap"
	"encoding/binary"

	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// state.ttl for unwindowed aggregates (a window aggregate's groups end by
// the watermark instead; a global aggregate has one group): a group no row
// changed for the TTL is expired as a join key is. It is marked closing,
// so the barrier deletes its state entry and its DISTINCT / min-max value
// entries (writeState), emits nothing for it (its row is unchanged) and
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
	applies bool     // state.ttl applies: a grouped aggregate, not a window's
	idle    []int64  // per group id: idle clock (µs); 0: none yet
	gen     []uint32 // per group id: bumped when a new group takes the id
	queued  []bool   // per group id: in queue
	queue   opkit.IdleHeap[aggIdle]
	evicted opkit.IdleHeap[[]types.Datum] // keys of evicted groups
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

// noteEvicted queues evicted group g's key (nkeys columns of gt) for
// expiry while the TTL is on.
func (t *aggTTL) noteEvicted(gt *accum.GroupTable, nkeys int, g int32) {
	if !t.on || !t.applies {
		return
	}
	ds := make([]types.Datum, nkeys)
	for c := range ds {
		ds[c] = gt.KeyDatum(c, g)
	}
	heap.Push(&t.evicted, opkit.IdleItem[[]types.Datum]{At: t.idle[g], G: ds})
}

// expireIdle, at a barrier at time now, restarts the idle clock of the
// groups changed in the epoch and marks closing the groups idle for ttl
// (0: off). Called after markClosing, before prepareSave.
func (a *Op) expireIdle(now, ttl int64) error {
	t := &a.ttl
	if !t.applies {
		return nil
	}
	for _, g := range a.dirty {
		t.idle[g] = now
		if ttl > 0 && !t.queued[g] {
			t.queued[g] = true
			heap.Push(&t.queue, opkit.IdleItem[aggIdle]{At: now, G: aggIdle{g, t.gen[g]}})
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
			heap.Push(&t.queue, opkit.IdleItem[aggIdle]{At: t.idle[g], G: aggIdle{g, t.gen[g]}})
		}
	}
	// Evicted groups that are due come back with their stored clocks.
	var keys [][]types.Datum
	for t.evicted.Len() > 0 && t.evicted.Items[0].At+ttl <= now {
		keys = append(keys, heap.Pop(&t.evicted).(opkit.IdleItem[[]types.Datum]).G)
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
		heap.Push(&t.queue, opkit.IdleItem[aggIdle]{At: t.idle[g], G: aggIdle{g, t.gen[g]}})
	}
	for t.queue.Len() > 0 && t.queue.Items[0].At+ttl <= now {
		it := heap.Pop(&t.queue).(opkit.IdleItem[aggIdle])
		g := it.G.g
		if it.G.gen != t.gen[g] || !a.live[g] {
			continue // left memory: evicted (queued apart), closed or emptied
		}
		if t.idle[g] > it.At { // changed since it was queued
			heap.Push(&t.queue, opkit.IdleItem[aggIdle]{At: t.idle[g], G: it.G})
			continue
		}
		t.queued[g] = false
		if a.wins.isClosing[g] {
			continue
		}
		a.wins.closing = append(a.wins.closing, g)
		a.wins.isClosing[g] = true
		if !a.isDirty[g] {
			a.isDirty[g] = true
			a.dirty = append(a.dirty, g)
		}
		t.expired++
	}
	return nil
}
