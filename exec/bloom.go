package exec

// evictedFilter is a Bloom filter over the hashes of groups whose state
// lives only in the state table (evicted, or not loaded at startup). A new
// group whose hash it has never seen needs no read of the state table: a
// view over millions of distinct keys does not pay a point read per key.
type evictedFilter struct {
	bits []uint64
}

// evictedFilterBits is the filter's size: 64 Mi bits (8 MiB), about 4 %
// false positives at 10M evicted groups, whatever the state cache's cap.
const evictedFilterBits = 1 << 26

func (f *evictedFilter) add(h uint64) {
	if f.bits == nil {
		f.bits = make([]uint64, evictedFilterBits/64)
	}
	w, m := f.block(h)
	for i := range uint64(filterProbes) {
		b := m >> (9 * i) & 511
		w[b>>6] |= 1 << (b & 63)
	}
}

// mayContain reports whether h may have been added.
func (f *evictedFilter) mayContain(h uint64) bool {
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

// filterProbes is the number of bits set per hash, all in one 512-bit
// block (a cache line): one cache miss per add or test instead of one per
// probe, at a slightly higher false-positive rate than a plain filter of
// the same size.
const filterProbes = 4

// block returns the 8 words of h's block and the bits that pick the
// probes within it. The block comes from h's high bits, the probes from
// a remix of h, so they are independent of each other and of the hash
// table's slot (h's low bits).
func (f *evictedFilter) block(h uint64) ([]uint64, uint64) {
	i := (h >> 32) % uint64(len(f.bits)/8) * 8
	return f.bits[i : i+8 : i+8], mix(h, 0x9e3779b97f4a7c15)
}
