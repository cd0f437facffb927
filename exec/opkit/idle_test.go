package opkit

import (
	"maps"
	"slices"
	"testing"
)

type idleKey struct {
	name   string
	clock  int64
	queued bool
	gone   bool
}

func (k *idleKey) IdleState() (*int64, *bool) { return &k.clock, &k.queued }

// TestSweepIdle: turning the TTL on queues every key (a key that never
// ran starts its clock then); at a later barrier the keys idle for the TTL
// expire, a key touched since it was queued is queued again at its clock,
// a stale key is dropped, and expire stops the sweep by returning false.
func TestSweepIdle(t *testing.T) {
	keys := map[string]*idleKey{"a": {name: "a", clock: 10}, "b": {name: "b"}, "c": {name: "c", clock: 5}, "d": {name: "d", clock: 20}}
	var h IdleHeap[*idleKey]
	on := false
	var expired []string
	gone := func(k *idleKey, _ int64) bool { return k.gone }
	expire := func(k *idleKey, _ int64) (bool, error) {
		expired = append(expired, k.name)
		return k.name != "stop", nil
	}
	if err := SweepIdle(&h, &on, 100, 1000, maps.Values(keys), gone, expire); err != nil {
		t.Fatal(err)
	}
	if !on || h.Len() != 4 || keys["b"].clock != 100 || len(expired) != 0 {
		t.Fatalf("on %v, %d queued, b's clock %d, expired %v", on, h.Len(), keys["b"].clock, expired)
	}
	keys["a"].clock = 500 // touched since
	keys["c"].gone = true // left memory
	if err := SweepIdle(&h, &on, 1020, 1000, maps.Values(keys), gone, expire); err != nil {
		t.Fatal(err)
	}
	// Due: c (5, gone: dropped), a (10, touched: queued at 500), d (20).
	if !slices.Equal(expired, []string{"d"}) || keys["c"].queued || !keys["a"].queued || keys["d"].queued || h.Len() != 2 {
		t.Fatalf("expired %v, c queued %v, a queued %v, %d queued", expired, keys["c"].queued, keys["a"].queued, h.Len())
	}
	stop := &idleKey{name: "stop", clock: 600}
	QueueIdle(&h, stop, 600)
	QueueIdle(&h, &idleKey{name: "after", clock: 700}, 700)
	expired = nil
	if err := SweepIdle(&h, &on, 5000, 1000, maps.Values(keys), gone, expire); err != nil {
		t.Fatal(err)
	}
	// Due in order: b (100), a (500), stop (600): the sweep ends at stop,
	// leaving after (700) queued.
	if !slices.Equal(expired, []string{"b", "a", "stop"}) || h.Len() != 1 {
		t.Fatalf("expired %v, %d queued", expired, h.Len())
	}
}
