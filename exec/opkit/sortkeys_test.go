package opkit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedKeys checks SortedKeys against a stable sort with bytes.Compare
// on keys of every length around the 16-byte prefix, with duplicates and
// keys that are prefixes of others (zero bytes included).
func TestSortedKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s SortedKeys
	for round := 0; round < 50; round++ {
		s.Reset()
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
			s.Add(int32(i), func(buf []byte) []byte { return append(buf, k...) },
				func(buf []byte) []byte { return fmt.Appendf(buf, "v%d", i) })
		}
		s.Sort()
		want := make([]int, len(keys))
		for i := range want {
			want[i] = i
		}
		slices.SortStableFunc(want, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
		for i, k := range s.Keys {
			if int(k.Ref) != want[i] || !bytes.Equal(s.Key(k), keys[want[i]]) {
				t.Fatalf("round %d: position %d holds key %d %x, want key %d %x", round, i, k.Ref, s.Key(k), want[i], keys[want[i]])
			}
			if v := string(s.Val(k)); v != fmt.Sprintf("v%d", k.Ref) {
				t.Fatalf("round %d: key %d carries value %q", round, k.Ref, v)
			}
		}
	}
}

// TestSortedKeysShrink: the buffers an epoch of many keys grew are kept
// while later epochs use a good part of them, and dropped after an epoch
// that used under a quarter, so one large epoch (a big COPY) does not pin
// its buffers for the job's life.
func TestSortedKeysShrink(t *testing.T) {
	var s SortedKeys
	fill := func(n int) {
		s.Reset()
		for i := range n {
			s.Add(int32(i), func(b []byte) []byte { return fmt.Appendf(b, "key%08d", i) }, nil)
		}
		s.Sort()
	}
	fill(100_000)
	big := cap(s.Keys)
	fill(40_000) // over a quarter: kept
	if cap(s.Keys) != big {
		t.Fatalf("capacity %d after an epoch of 40000 keys, want %d kept", cap(s.Keys), big)
	}
	fill(1000) // reset sees 40000 of big: still kept
	if cap(s.Keys) != big {
		t.Fatalf("capacity %d after an epoch of 1000 keys, want %d kept", cap(s.Keys), big)
	}
	fill(1000) // reset sees 1000 of big: dropped
	if cap(s.Keys) >= big/4 || cap(s.buf) >= 1000*11*4 {
		t.Fatalf("capacity %d keys, %d bytes after small epochs: the large epoch's buffers are still held", cap(s.Keys), cap(s.buf))
	}
	fill(3000)
	fill(10) // small buffers are always kept
	if cap(s.Keys) < 3000 {
		t.Fatalf("capacity %d: buffers under keepKeys were dropped", cap(s.Keys))
	}
}
