package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/types"
)

// The recycler hands a freed buffer out again, keeps no more than its
// limit, ignores buffers it did not make, and a split made from it reads
// back exactly after the previous one's buffers were reused.
func TestRecycler(t *testing.T) {
	r := &recycler{limit: 8 << 10}
	a := r.Allocate(3000)
	if len(a) != 3000 || cap(a) != 4096 {
		t.Fatalf("Allocate(3000): len %d cap %d", len(a), cap(a))
	}
	a[0] = 42
	r.Free(a)
	b := r.Allocate(4000)
	if &b[0] != &a[0] || b[0] != 42 {
		t.Fatal("a freed buffer of the same class was not reused (as is, unzeroed)")
	}
	r.Free(b)
	r.Free(r.Allocate(4096)) // a second 4 KiB buffer: at the limit
	r.Free(make([]byte, 4096))
	if r.held != 8<<10 {
		t.Fatalf("held %d bytes, limit %d", r.held, r.limit)
	}
	r.Free(make([]byte, 100)) // not a class size: dropped
	if r.held != 8<<10 {
		t.Fatalf("held %d bytes after freeing a foreign buffer", r.held)
	}

	withChecked(t)
	kb := array.NewInt64Builder(memoryPool)
	defer kb.Release()
	for i := 0; i < 1000; i++ {
		kb.Append(int64(i))
	}
	ts := []types.T{types.TInt64}
	rec := newRecord(ts, []arrow.Array{kb.NewArray()}, 1000)
	defer rec.Release()
	even, odd := make([]int, 0, 500), make([]int, 0, 500)
	for i := 0; i < 1000; i++ {
		if i%2 == 0 {
			even = append(even, i)
		} else {
			odd = append(odd, i)
		}
	}
	for round := 0; round < 3; round++ {
		for _, idx := range [][]int{even, odd} {
			s := takeSplit(rec, idx, ts)
			vs := s.Column(0).(*array.Int64)
			for x, i := range idx {
				if vs.Value(x) != int64(i) || vs.IsNull(x) {
					t.Fatalf("round %d: row %d is %d, want %d", round, x, vs.Value(x), i)
				}
			}
			s.Release()
		}
	}
}
