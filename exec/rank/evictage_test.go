package rank

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestRankEvictsColdPartitionsFirst: a rank over its share evicts the
// partitions no row used for longest (as the join does its groups,
// exec/join).
func TestRankEvictsColdPartitionsFirst(t *testing.T) {
	const n = 1000
	r := &Op{spec: &Spec{}, parts: map[string]*rankPart{}, evictedN: new(atomic.Int64)}
	for i := range n {
		k := fmt.Sprintf("k%04d", i)
		p := &rankPart{key: k, rows: map[string]int64{"row" + k: 1}, used: uint64(i % 10), hash: uint64(i)}
		r.parts[k] = p
		r.bytes += partBytes(p)
	}
	r.tick, r.budget = 10, r.bytes/2
	r.evict(^uint64(0))
	for k, p := range r.parts {
		if p.used < 6 {
			t.Errorf("partition %s used at tick %d kept while older ones went", k, p.used)
		}
	}
	if len(r.parts) < 3*n/10 || r.bytes > r.budget*8/10 {
		t.Errorf("%d partitions, %d bytes left (target %d)", len(r.parts), r.bytes, r.budget*8/10)
	}
}
