package join

import "testing"

// BenchmarkRowHash: the hash of a stored row (rowsOut), per row; no
// allocation.
func BenchmarkRowHash(b *testing.B) {
	key, enc := "\x01\x00\x00\x00\x00\x00\x01\x86\xa0", string(make([]byte, 120))
	b.ReportAllocs()
	var x uint64
	for b.Loop() {
		x += rowHash(key, enc)
	}
	_ = x
}
