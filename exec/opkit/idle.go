package opkit

import (
	"container/heap"
	"iter"
)

// IdleItem is a key queued for expiry: At is its idle clock when queued.
type IdleItem[G any] struct {
	At int64
	G  G
}

// IdleHeap is a min-heap of keys by idle clock.
type IdleHeap[G any] struct{ Items []IdleItem[G] }

func (h *IdleHeap[G]) Len() int           { return len(h.Items) }
func (h *IdleHeap[G]) Less(i, j int) bool { return h.Items[i].At < h.Items[j].At }
func (h *IdleHeap[G]) Swap(i, j int)      { h.Items[i], h.Items[j] = h.Items[j], h.Items[i] }
func (h *IdleHeap[G]) Push(x any)         { h.Items = append(h.Items, x.(IdleItem[G])) }
func (h *IdleHeap[G]) Pop() any {
	it := h.Items[len(h.Items)-1]
	var zero IdleItem[G]
	h.Items[len(h.Items)-1] = zero
	h.Items = h.Items[:len(h.Items)-1]
	return it
}

// Idler is a key an operator expires under state.ttl (a join's group, a
// top-N's partition): its idle clock (µs, the time of the last barrier
// after a row touched it; 0 if it never ran) and whether it is queued.
type Idler interface {
	IdleState() (clock *int64, queued *bool)
}

// QueueIdle queues g in h at clock at.
func QueueIdle[G Idler](h *IdleHeap[G], g G, at int64) {
	_, queued := g.IdleState()
	*queued = true
	heap.Push(h, IdleItem[G]{At: at, G: g})
}

// SweepIdle is the state.ttl sweep of an operator's keys queued in h, at a
// barrier at time now while the TTL is ttl (> 0); on says whether it was
// on at the last barrier. When it was not, every key of all not queued
// yet is queued, its clock starting now if it never ran. Then each key
// queued ttl or more ago is popped: a key gone says is stale (it left
// memory and was freed, emptied or read back since it was queued at) is
// dropped; a key touched since it was queued is queued again at its
// clock; any other is handed to expire, unqueued, with the clock it was
// queued at. expire may queue it (or the key read back in its place)
// again, and stops the sweep by returning more false.
func SweepIdle[G Idler](h *IdleHeap[G], on *bool, now, ttl int64, all iter.Seq[G],
	gone func(g G, at int64) bool, expire func(g G, at int64) (more bool, err error)) error {
	if !*on { // turned on: queue every key, its clock starting now if it never ran
		*on = true
		for g := range all {
			clock, queued := g.IdleState()
			if *queued {
				continue
			}
			if *clock == 0 {
				*clock = now
			}
			QueueIdle(h, g, *clock)
		}
	}
	for h.Len() > 0 && h.Items[0].At+ttl <= now {
		it := heap.Pop(h).(IdleItem[G])
		g := it.G
		clock, queued := g.IdleState()
		if gone(g, it.At) {
			*queued = false
			continue
		}
		if *clock > it.At { // touched since it was queued
			heap.Push(h, IdleItem[G]{At: *clock, G: g})
			continue
		}
		*queued = false
		if more, err := expire(g, it.At); err != nil || !more {
			return err
		}
	}
	return nil
}
