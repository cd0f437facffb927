package opkit

import "testing"

// TestEvictAgesCut: the cut is the youngest age whose entries and all older
// ones free what is needed.
func TestEvictAgesCut(t *testing.T) {
	var a EvictAges
	a.Add(0, 100)
	a.Add(3, 50)
	a.Add(evictAge(100, 1), 30) // older than the buckets: the oldest
	for _, c := range []struct {
		need int64
		want int
	}{{10, evictAgeBuckets - 1}, {30, evictAgeBuckets - 1}, {31, 3}, {80, 3}, {81, 0}, {1000, 0}} {
		if got := a.Cut(c.need); got != c.want {
			t.Errorf("cut(%d) = %d, want %d", c.need, got, c.want)
		}
	}
	if evictAge(5, 7) != 0 {
		t.Errorf("an entry used after the tick has age 0")
	}
}
