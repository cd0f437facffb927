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
