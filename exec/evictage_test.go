package exec

import (
	"fmt"
	"testing"
)

// TestEvictAgesCut: the cut is the youngest age whose entries and all older
// ones free what is needed.
func TestEvictAgesCut(t *testing.T) {
	var a evictAges
	a.add(0, 100)
	a.add(3, 50)
	a.add(evictAge(100, 1), 30) // older than the buckets: the oldest
	for _, c := range []struct {
		need int64
		want int
	}{{10, evictAgeBuckets - 1}, {30, evictAgeBuckets - 1}, {31, 3}, {80, 3}, {81, 0}, {1000, 0}} {
		if got := a.cut(c.need); got != c.want {
			t.Errorf("cut(%d) = %d, want %d", c.need, got, c.want)
		}
	}
	if evictAge(5, 7) != 0 {
		t.Errorf("an entry used after the tick has age 0")
	}
}

// TestJoinEvictsColdGroupsFirst: a join over its share evicts the groups
// no row used for longest, and keeps those used in the last epochs (the hot
// keys), whatever the map's order; the rank operator does the same with its
// partitions.
func TestJoinEvictsColdGroupsFirst(t *testing.T) {
	o := &joinOp{j: &Job{}, groups: map[string]*joinGroup{}}
	const n = 1000
	for i := range n {
		k := fmt.Sprintf("k%04d", i)
		g := &joinGroup{key: k, used: uint64(i % 10), hash: uint64(i)}
		g.insert(0, joinRow{enc: "row" + k, count: 1})
		o.groups[k] = g
		o.bytes += o.groupBytes(g)
	}
	o.tick = 10
	o.budget = o.bytes / 2 // evicts to 40 %: the groups used at ticks 0–5
	o.evict(^uint64(0))
	if o.bytes > o.budget*8/10 {
		t.Fatalf("%d bytes left against a target of %d", o.bytes, o.budget*8/10)
	}
	for k, g := range o.groups {
		if g.used < 6 {
			t.Errorf("group %s used at tick %d kept while older ones went", k, g.used)
		}
	}
	if len(o.groups) < 3*n/10 {
		t.Errorf("%d groups left: hot groups evicted", len(o.groups))
	}
	for _, g := range o.groups {
		if g.rows[0][0].enc != "row"+g.key {
			t.Fatalf("row of %s is %q after the first spill", g.key, g.rows[0][0].enc)
		}
	}

	r := &rankOp{j: &Job{}, spec: &rankSpec{}, parts: map[string]*rankPart{}}
	for i := range n {
		k := fmt.Sprintf("k%04d", i)
		p := &rankPart{key: k, rows: map[string]int64{"row" + k: 1}, used: uint64(i % 10), hash: uint64(i)}
		r.parts[k] = p
		r.bytes += r.partBytes(p)
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
