package opkit

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unsafe"
)

// SortedKeys sorts many short byte keys, as an epoch's state and view
// writes need (they reach storage in key order). Each entry holds the key's
// first 16 bytes as two integers, so most comparisons are integer
// compares; a key of at most 16 bytes (an aggregate's state key for a
// BIGINT group key is 10) is wholly in its entry and is read back from it,
// so neither sorting nor reading the result goes back to the buffer.
// Longer keys fall back to the buffer. Ties go to the key added first (a
// stable sort). Each key may carry a value, kept in the buffer after it.
// The buffers are reused between epochs.
type SortedKeys struct {
	buf     []byte
	spans   [][3]uint32 // key [start, mid), value [mid, end) in buf, by index
	Keys    []SortKey
	scratch [16]byte
}

type SortKey struct {
	hi, lo uint64
	Ref    int32  // the caller's value (a group, an entry)
	li     uint32 // length (if ≤ 16, else 17) << idxBits | index into spans
}

const idxBits = 27 // up to 134M keys an epoch

func (k SortKey) n() int { return int(k.li >> idxBits) }

// Idx is the entry's index in the order added.
func (k SortKey) Idx() uint32 { return k.li & (1<<idxBits - 1) }

// Reset empties s for the next epoch, keeping its buffers for reuse
// unless the epoch just done filled under a quarter of them: a larger
// epoch before it sized them (a COPY of a million groups leaves about
// 70 MB), and they are dropped rather than held for the job's life. The
// next large epoch grows them again by doubling.
func (s *SortedKeys) Reset() {
	if cap(s.Keys) > keepKeys && len(s.Keys) < cap(s.Keys)/4 {
		s.buf, s.spans, s.Keys = nil, nil, nil
		return
	}
	s.buf, s.spans, s.Keys = s.buf[:0], s.spans[:0], s.Keys[:0]
}

// keepKeys is the entry capacity SortedKeys keeps whatever its use.
const keepKeys = 4096

// Reserve makes room for n more entries of size more bytes of keys and
// values in all, so that adding them allocates nothing.
func (s *SortedKeys) Reserve(n, size int) {
	s.buf = slices.Grow(s.buf, size)
	s.spans = slices.Grow(s.spans, n)
	s.Keys = slices.Grow(s.Keys, n)
}

// Add appends the key appendKey builds, then the value appendVal builds
// (nil: none), onto the buffer.
func (s *SortedKeys) Add(ref int32, appendKey, appendVal func([]byte) []byte) {
	start := len(s.buf)
	s.buf = appendKey(s.buf)
	mid := len(s.buf)
	key := s.buf[start:]
	var p [16]byte
	copy(p[:], key)
	n := min(len(key), 17)
	s.Keys = append(s.Keys, SortKey{hi: binary.BigEndian.Uint64(p[:8]), lo: binary.BigEndian.Uint64(p[8:]),
		Ref: ref, li: uint32(n)<<idxBits | uint32(len(s.spans))})
	if appendVal != nil {
		s.buf = appendVal(s.buf)
	}
	s.spans = append(s.spans, [3]uint32{uint32(start), uint32(mid), uint32(len(s.buf))})
}

// AddKV is Add of a key and a value already built.
func (s *SortedKeys) AddKV(ref int32, key, val []byte) {
	start := len(s.buf)
	s.buf = append(s.buf, key...)
	mid := len(s.buf)
	s.buf = append(s.buf, val...)
	var p [16]byte
	copy(p[:], key)
	n := min(len(key), 17)
	s.Keys = append(s.Keys, SortKey{hi: binary.BigEndian.Uint64(p[:8]), lo: binary.BigEndian.Uint64(p[8:]),
		Ref: ref, li: uint32(n)<<idxBits | uint32(len(s.spans))})
	s.spans = append(s.spans, [3]uint32{uint32(start), uint32(mid), uint32(len(s.buf))})
}

// Val returns the value added with k.
func (s *SortedKeys) Val(k SortKey) []byte {
	sp := s.spans[k.Idx()]
	return s.buf[sp[1]:sp[2]]
}

func (s *SortedKeys) Sort() {
	slices.SortFunc(s.Keys, func(a, b SortKey) int {
		switch {
		case a.hi != b.hi:
			return cmpUint(a.hi, b.hi)
		case a.lo != b.lo:
			return cmpUint(a.lo, b.lo)
		}
		// Equal first 16 bytes (zero-padded): a short key is a prefix of
		// the other, so the shorter sorts first; two long ones compare on.
		if an, bn := a.n(), b.n(); an != bn && (an <= 16 || bn <= 16) {
			return an - bn
		} else if an > 16 {
			if c := bytes.Compare(s.long(a), s.long(b)); c != 0 {
				return c
			}
		}
		return int(a.Idx()) - int(b.Idx())
	})
}

// Key returns k's bytes; valid until the next call.
func (s *SortedKeys) Key(k SortKey) []byte {
	if n := k.n(); n <= 16 {
		binary.BigEndian.PutUint64(s.scratch[:8], k.hi)
		binary.BigEndian.PutUint64(s.scratch[8:], k.lo)
		return s.scratch[:n]
	}
	return s.long(k)
}

func (s *SortedKeys) long(k SortKey) []byte {
	sp := s.spans[k.Idx()]
	return s.buf[sp[0]:sp[1]]
}

func cmpUint(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

// Footprint is the length and capacity of s's buffer (bytes), spans and
// keys (entries), for tests of how much s holds.
func (s *SortedKeys) Footprint() [3][2]int {
	return [3][2]int{{len(s.buf), cap(s.buf)}, {len(s.spans), cap(s.spans)}, {len(s.Keys), cap(s.Keys)}}
}

// SharesBuf reports whether s and o hold one buffer (a reused snapshot).
func (s *SortedKeys) SharesBuf(o *SortedKeys) bool {
	return len(s.buf) > 0 && unsafe.SliceData(s.buf) == unsafe.SliceData(o.buf)
}
