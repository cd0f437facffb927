package exec

import "testing"

// TestEvictedFilter: no false negatives, and the false-positive rate at
// 10M evicted groups (the 10M-key view's case) stays near the documented 4 %.
func TestEvictedFilter(t *testing.T) {
	var f evictedFilter
	if f.mayContain(1) {
		t.Fatal("empty filter claims a member")
	}
	const n = 10_000_000
	for i := range uint64(n) {
		f.add(mix(i, 12345))
	}
	for i := range uint64(n) {
		if !f.mayContain(mix(i, 12345)) {
			t.Fatalf("false negative for member %d", i)
		}
	}
	fp := 0
	const probes = 200_000
	for i := range uint64(probes) {
		if f.mayContain(mix(i+1<<40, 12345)) {
			fp++
		}
	}
	if rate := float64(fp) / probes; rate > 0.06 {
		t.Fatalf("false-positive rate %.3f at %d members, want <= 0.06", rate, n)
	}
}
