package opkit

import "math/bits"

// Mix folds v into the hash h (the group table's column hashes, the
// evicted-groups filter's probes).
func Mix(h, v uint64) uint64 {
	hi, lo := bits.Mul64(h^v, 0xbf58476d1ce4e5b9)
	return hi ^ lo
}

// EvictedFilter is a Bloom filter over the hashes of groups whose state
// lives only in the state table (evicted, or not loaded at startup). A new
// group whose hash it has never seen needs no read of the state table: a
// view over millions of distinct keys does not pay a point read per key.
//
// A Bloom filter cannot forget, and groups leave the evicted set (loaded
// back, deleted) while new ones join it, so the filter fills up and every
// new group would end up costing a point read. An operator that can list
// its evicted set (Refill: the aggregate scans its state table) has the
// filter rebuilt from it once the additions since the last build pass
// one per EvictedBitsPerMember bits (full), at a size that leaves the
// rebuilt set at most 2/3 of that fill, doubling it as the set grows: the
// false-positive rate stays below about 3 % however many groups come and go.
type EvictedFilter struct {
	bits []uint64
	n    int // additions since the filter was (re)built
	// size is the filter's size in bits when (re)built; 0: EvictedFilterBits.
	size int
	// Refill adds every member of the evicted set; nil: never rebuilt.
	Refill func(add func(uint64)) error
}

// EvictedFilterBits is the filter's initial (and smallest) size: 64 Mi
// bits (8 MiB), whatever the state cache's cap.
const EvictedFilterBits = 1 << 26

// EvictedBitsPerMember is the fill at which the filter counts as full:
// 8 bits per member, about 3 % false positives with 4 probes in a block.
const EvictedBitsPerMember = 8

func (f *EvictedFilter) Add(h uint64) {
	if f.bits == nil {
		f.alloc()
	}
	f.n++
	w, m := f.block(h)
	for i := range uint64(filterProbes) {
		b := m >> (9 * i) & 511
		w[b>>6] |= 1 << (b & 63)
	}
}

func (f *EvictedFilter) alloc() {
	if f.size == 0 {
		f.size = EvictedFilterBits
	}
	f.bits = make([]uint64, f.size/64)
	f.n = 0
}

// Added is how many hashes were added since the filter was (re)built.
func (f *EvictedFilter) Added() int { return f.n }

// MayContain reports whether h may have been added.
func (f *EvictedFilter) MayContain(h uint64) bool {
	if f.bits == nil {
		return false
	}
	w, m := f.block(h)
	for i := range uint64(filterProbes) {
		b := m >> (9 * i) & 511
		if w[b>>6]&(1<<(b&63)) == 0 {
			return false
		}
	}
	return true
}

// full says the filter holds more additions than its false-positive bound allows.
func (f *EvictedFilter) full() bool {
	return f.bits != nil && f.n*EvictedBitsPerMember > len(f.bits)*64
}

// RefreshIfFull rebuilds a full filter from refill, if the operator gave one.
func (f *EvictedFilter) RefreshIfFull() error {
	if f.Refill == nil || !f.full() {
		return nil
	}
	return f.Rebuild(f.Refill)
}

// Rebuild empties the filter and adds every member fill lists, doubling
// the size (and listing again) while they fill more than 2/3 of full.
func (f *EvictedFilter) Rebuild(fill func(add func(uint64)) error) error {
	for {
		f.alloc()
		if err := fill(f.Add); err != nil {
			return err
		}
		if f.n*EvictedBitsPerMember*3 <= f.size*2 {
			return nil
		}
		f.size *= 2
	}
}

// filterProbes is the number of bits set per hash, all in one 512-bit
// block (a cache line): one cache miss per add or test instead of one per
// probe, at a slightly higher false-positive rate than a plain filter of
// the same size.
const filterProbes = 4

// block returns the 8 words of h's block and the bits that pick the
// probes within it. The block comes from h's high bits, the probes from
// a remix of h, so they are independent of each other and of the hash
// table's slot (h's low bits).
func (f *EvictedFilter) block(h uint64) ([]uint64, uint64) {
	i := (h >> 32) % uint64(len(f.bits)/8) * 8
	return f.bits[i : i+8 : i+8], Mix(h, 0x9e3779b97f4a7c15)
}
