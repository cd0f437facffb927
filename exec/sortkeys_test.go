package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedKeys checks sortedKeys against a stable sort with bytes.Compare
// on keys of every length around the 16-byte prefix, with duplicates and
// keys that are prefixes of others (zero bytes included).
func TestSortedKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s sortedKeys
	for round := 0; round < 50; round++ {
		s.reset()
		var keys [][]byte
		for i := 0; i < 300; i++ {
			var k []byte
			if i > 0 && r.IntN(4) == 0 { // a copy, prefix or extension of an earlier key
				k = bytes.Clone(keys[r.IntN(len(keys))])
				switch r.IntN(3) {
				case 0:
					k = k[:r.IntN(len(k)+1)]
				case 1:
					k = append(k, byte(r.IntN(2)))
				}
			} else {
				k = make([]byte, r.IntN(24))
				for j := range k {
					k[j] = byte(r.IntN(3)) // small alphabet: many ties
				}
			}
			keys = append(keys, k)
			s.add(int32(i), func(buf []byte) []byte { return append(buf, k...) },
				func(buf []byte) []byte { return fmt.Appendf(buf, "v%d", i) })
		}
		s.sort()
		want := make([]int, len(keys))
		for i := range want {
			want[i] = i
		}
		slices.SortStableFunc(want, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
		for i, k := range s.keys {
			if int(k.ref) != want[i] || !bytes.Equal(s.key(k), keys[want[i]]) {
				t.Fatalf("round %d: position %d holds key %d %x, want key %d %x", round, i, k.ref, s.key(k), want[i], keys[want[i]])
			}
			if v := string(s.val(k)); v != fmt.Sprintf("v%d", k.ref) {
				t.Fatalf("round %d: key %d carries value %q", round, k.ref, v)
			}
		}
	}
}

// TestSortedKeysShrink: the buffers an epoch of many keys grew are kept
// while later epochs use a good part of them, and dropped after an epoch
// that used under a quarter, so one large epoch (a big COPY) does not pin
// its buffers for the job's life.
func TestSortedKeysShrink(t *testing.T) {
	var s sortedKeys
	fill := func(n int) {
		s.reset()
		for i := range n {
			s.add(int32(i), func(b []byte) []byte { return fmt.Appendf(b, "key%08d", i) }, nil)
		}
		s.sort()
	}
	fill(100_000)
	big := cap(s.keys)
	fill(40_000) // over a quarter: kept
	if cap(s.keys) != big {
		t.Fatalf("capacity %d after an epoch of 40000 keys, want %d kept", cap(s.keys), big)
	}
	fill(1000) // reset sees 40000 of big: still kept
	if cap(s.keys) != big {
		t.Fatalf("capacity %d after an epoch of 1000 keys, want %d kept", cap(s.keys), big)
	}
	fill(1000) // reset sees 1000 of big: dropped
	if cap(s.keys) >= big/4 || cap(s.buf) >= 1000*11*4 {
		t.Fatalf("capacity %d keys, %d bytes after small epochs: the large epoch's buffers are still held", cap(s.keys), cap(s.buf))
	}
	fill(3000)
	fill(10) // small buffers are always kept
	if cap(s.keys) < 3000 {
		t.Fatalf("capacity %d: buffers under keepKeys were dropped", cap(s.keys))
	}
}
