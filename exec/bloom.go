package exec

// evictedFilter is a Bloom filter over the hashes of groups whose state
// lives only in the state table (evicted, or not loaded at startup). A new
// group whose hash it has never seen needs no read of the state table: a
// view over millions of distinct keys does not pay a point read per key.
type evictedFilter struct {
	bits []uint64
	mask uint64
}

// evictedFilterBits is the filter's size: 64 Mi bits (8 MiB), under 6 %
// false positives at 10M evicted groups, whatever the state cache's cap.
const evictedFilterBits = 1 << 26

func (f *evictedFilter) add(h uint64) {
	if f.bits == nil {
		f.bits = make([]uint64, evictedFilterBits/64)
		f.mask = evictedFilterBits - 1
	}
	h1, h2 := h, h>>33|h<<31|1
	for i := uint64(0); i < 4; i++ {
		p := (h1 + i*h2) & f.mask
		f.bits[p>>6] |= 1 << (p & 63)
	}
}

// mayContain reports whether h may have been added.
func (f *evictedFilter) mayContain(h uint64) bool {
	if f.bits == nil {
		return false
	}
	h1, h2 := h, h>>33|h<<31|1
	for i := uint64(0); i < 4; i++ {
		p := (h1 + i*h2) & f.mask
		if f.bits[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
	}
	return true
}
