package opkit

import (
	"testing"
)

// TestEvictedFilter: no false negatives, and the false-positive rate at
// 10M evicted groups (the 10M-key view's case) stays near the documented 4 %.
func TestEvictedFilter(t *testing.T) {
	var f EvictedFilter
	if f.MayContain(1) {
		t.Fatal("empty filter claims a member")
	}
	const n = 10_000_000
	for i := range uint64(n) {
		f.Add(Mix(i, 12345))
	}
	for i := range uint64(n) {
		if !f.MayContain(Mix(i, 12345)) {
			t.Fatalf("false negative for member %d", i)
		}
	}
	fp := 0
	const probes = 200_000
	for i := range uint64(probes) {
		if f.MayContain(Mix(i+1<<40, 12345)) {
			fp++
		}
	}
	if rate := float64(fp) / probes; rate > 0.06 {
		t.Fatalf("false-positive rate %.3f at %d members, want <= 0.06", rate, n)
	}
}

// TestEvictedFilterRebuild: groups keep joining and leaving the evicted set
// (50K of them at any time, 5M evictions in all, over a filter that would
// be full after 131K additions: 1 Mi bits). Rebuilt from the
// live set whenever full, the filter never misses a member and its
// false-positive rate stays below 5 % at every check; without rebuilds it
// would be near 100 %. A set that outgrows the filter makes it grow.
func TestEvictedFilterRebuild(t *testing.T) {
	f := EvictedFilter{size: 1 << 20}
	const window = 50_000
	lo, hi := uint64(0), uint64(0) // the evicted set: hashes of ids [lo, hi)
	h := func(i uint64) uint64 { return Mix(i, 777) }
	f.Refill = func(add func(uint64)) error {
		for i := lo; i < hi; i++ {
			add(h(i))
		}
		return nil
	}
	rebuilds := 0
	fpRate := func() float64 {
		fp := 0
		const probes = 20_000
		for i := range uint64(probes) {
			if f.MayContain(h(i + 1<<40)) {
				fp++
			}
		}
		return float64(fp) / probes
	}
	worst := 0.0
	check := func() {
		for i := lo; i < hi; i += 97 {
			if !f.MayContain(h(i)) {
				t.Fatalf("false negative for member %d", i)
			}
		}
		if rate := fpRate(); rate > 0.05 {
			t.Fatalf("false-positive rate %.3f after %d evictions (%d rebuilds, %d bits)", rate, hi, rebuilds, len(f.bits)*64)
		}
	}
	for hi < 5_000_000 {
		f.Add(h(hi))
		hi++
		if hi-lo > window {
			lo++ // loaded back: still in the filter until the next rebuild
		}
		if f.full() {
			if rebuilds%10 == 0 {
				worst = max(worst, fpRate()) // at its fullest
			}
			if err := f.RefreshIfFull(); err != nil {
				t.Fatal(err)
			}
			rebuilds++
		}
		if hi%500_000 == 0 {
			check()
		}
	}
	if rebuilds == 0 || len(f.bits)*64 != 1<<20 {
		t.Fatalf("%d rebuilds, %d bits: want rebuilds at the initial size", rebuilds, len(f.bits)*64)
	}
	if worst > 0.05 {
		t.Fatalf("false-positive rate %.3f just before a rebuild", worst)
	}
	t.Logf("%d rebuilds at %d bits; false-positive rate just before a rebuild %.2f %%", rebuilds, len(f.bits)*64, 100*worst)
	// The set only grows now: the filter doubles to keep the bound.
	for lo = hi; hi < lo+1_000_000; hi++ {
		f.Add(h(hi))
		if err := f.RefreshIfFull(); err != nil {
			t.Fatal(err)
		}
	}
	lo = hi - 1_000_000
	check()
	if len(f.bits)*64 < 1_000_000*EvictedBitsPerMember {
		t.Fatalf("filter of %d bits for 1M members", len(f.bits)*64)
	}
	t.Logf("grew to %d bits for 1M members", len(f.bits)*64)
}
