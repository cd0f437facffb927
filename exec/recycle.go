package exec

import (
	"math/bits"
	"sync"
)

// recycler is an Arrow allocator whose freed buffers are kept, up to a
// bound, and handed out again without zeroing. A source splits every batch
// between an aggregate's instances; with Go's allocator each split made
// fresh memory (page faults on a fresh server, zeroing on a warm one, and
// garbage to collect), tens of megabytes per million rows. The split
// buffers live only until the instance has folded them into its groups,
// so a handful are enough.
//
// Buffers are NOT zeroed: only code that writes every byte it later reads
// may allocate from it (takeInt64s, which fills a values buffer and makes
// no validity bitmap). Its records go only to aggregates, which copy what
// they keep (group keys into their hash table, arguments into their
// accumulators) and release each batch after folding it.
type recycler struct {
	mu    sync.Mutex
	free  [48][][]byte // by size class: capacity 1<<c
	held  int64
	limit int64
}

// splitPool recycles the buffers of batches split between aggregate
// instances (outlet.route).
var splitPool = &recycler{limit: 16 << 20}

func sizeClass(n int) int {
	if n <= 64 {
		return 6
	}
	return bits.Len(uint(n - 1))
}

func (r *recycler) Allocate(size int) []byte {
	c := sizeClass(size)
	r.mu.Lock()
	if l := r.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		r.free[c] = l[:len(l)-1]
		r.held -= int64(cap(b))
		r.mu.Unlock()
		return b[:size]
	}
	r.mu.Unlock()
	return make([]byte, size, 1<<c)
}

func (r *recycler) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return // not ours: let the collector have it
	}
	r.mu.Lock()
	if r.held+int64(c) <= r.limit {
		r.free[bits.TrailingZeros(uint(c))] = append(r.free[bits.TrailingZeros(uint(c))], b[:0])
		r.held += int64(c)
	}
	r.mu.Unlock()
}
