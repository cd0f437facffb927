package exec

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// sortedKeys sorts many short byte keys, as an epoch's state and view
// writes need (they reach storage in key order). Each entry holds the key's
// first 16 bytes as two integers, so most comparisons are integer
// compares; a key of at most 16 bytes (an aggregate's state key for a
// BIGINT group key is 10) is wholly in its entry and is read back from it,
// so neither sorting nor reading the result goes back to the buffer.
// Longer keys fall back to the buffer. Ties go to the key added first (a
// stable sort). Each key may carry a value, kept in the buffer after it.
// The buffers are reused between epochs.
type sortedKeys struct {
	buf     []byte
	spans   [][3]uint32 // key [start, mid), value [mid, end) in buf, by index
	keys    []sortKey
	scratch [16]byte
}

type sortKey struct {
	hi, lo uint64
	ref    int32  // the caller's value (a group, an entry)
	li     uint32 // length (if ≤ 16, else 17) << idxBits | index into spans
}

const idxBits = 27 // up to 134M keys an epoch

func (k sortKey) n() int      { return int(k.li >> idxBits) }
func (k sortKey) idx() uint32 { return k.li & (1<<idxBits - 1) }

// reset empties s for the next epoch, keeping its buffers for reuse
// unless the epoch just done filled under a quarter of them: a larger
// epoch before it sized them (a COPY of a million groups leaves about
// 70 MB), and they are dropped rather than held for the job's life. The
// next large epoch grows them again by doubling.
func (s *sortedKeys) reset() {
	if cap(s.keys) > keepKeys && len(s.keys) < cap(s.keys)/4 {
		s.buf, s.spans, s.keys = nil, nil, nil
		return
	}
	s.buf, s.spans, s.keys = s.buf[:0], s.spans[:0], s.keys[:0]
}

// keepKeys is the entry capacity sortedKeys keeps whatever its use.
const keepKeys = 4096

// reserve makes room for n more entries of size more bytes of keys and
// values in all, so that adding them allocates nothing.
func (s *sortedKeys) reserve(n, size int) {
	s.buf = slices.Grow(s.buf, size)
	s.spans = slices.Grow(s.spans, n)
	s.keys = slices.Grow(s.keys, n)
}

// add appends the key appendKey builds, then the value appendVal builds
// (nil: none), onto the buffer.
func (s *sortedKeys) add(ref int32, appendKey, appendVal func([]byte) []byte) {
	start := len(s.buf)
	s.buf = appendKey(s.buf)
	mid := len(s.buf)
	key := s.buf[start:]
	var p [16]byte
	copy(p[:], key)
	n := min(len(key), 17)
	s.keys = append(s.keys, sortKey{hi: binary.BigEndian.Uint64(p[:8]), lo: binary.BigEndian.Uint64(p[8:]),
		ref: ref, li: uint32(n)<<idxBits | uint32(len(s.spans))})
	if appendVal != nil {
		s.buf = appendVal(s.buf)
	}
	s.spans = append(s.spans, [3]uint32{uint32(start), uint32(mid), uint32(len(s.buf))})
}

// addKV is add of a key and a value already built.
func (s *sortedKeys) addKV(ref int32, key, val []byte) {
	start := len(s.buf)
	s.buf = append(s.buf, key...)
	mid := len(s.buf)
	s.buf = append(s.buf, val...)
	var p [16]byte
	copy(p[:], key)
	n := min(len(key), 17)
	s.keys = append(s.keys, sortKey{hi: binary.BigEndian.Uint64(p[:8]), lo: binary.BigEndian.Uint64(p[8:]),
		ref: ref, li: uint32(n)<<idxBits | uint32(len(s.spans))})
	s.spans = append(s.spans, [3]uint32{uint32(start), uint32(mid), uint32(len(s.buf))})
}

// val returns the value added with k.
func (s *sortedKeys) val(k sortKey) []byte {
	sp := s.spans[k.idx()]
	return s.buf[sp[1]:sp[2]]
}

func (s *sortedKeys) sort() {
	slices.SortFunc(s.keys, func(a, b sortKey) int {
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
		return int(a.idx()) - int(b.idx())
	})
}

// key returns k's bytes; valid until the next call.
func (s *sortedKeys) key(k sortKey) []byte {
	if n := k.n(); n <= 16 {
		binary.BigEndian.PutUint64(s.scratch[:8], k.hi)
		binary.BigEndian.PutUint64(s.scratch[8:], k.lo)
		return s.scratch[:n]
	}
	return s.long(k)
}

func (s *sortedKeys) long(k sortKey) []byte {
	sp := s.spans[k.idx()]
	return s.buf[sp[0]:sp[1]]
}

func cmpUint(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}
