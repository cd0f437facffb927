package exec

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// sortedKeys sorts many short byte keys held in one buffer, as an epoch's
// state and view writes need (they reach storage in key order). Each key's
// first 16 bytes are kept as two integers next to its index, so most
// comparisons are integer compares on small entries; equal prefixes fall
// back to the bytes, then to the order the keys were added (a stable
// sort). The buffers are reused between epochs.
//
// (The caller's value rides in each entry, so reading the sorted order back
// does not jump around memory.)
type sortedKeys struct {
	buf   []byte
	spans [][2]uint32 // [start, end) in buf, by index
	keys  []sortKey
}

type sortKey struct {
	hi, lo uint64
	i      uint32 // index into spans
	ref    int32  // the caller's value (fits the struct's padding)
}

func (s *sortedKeys) reset() {
	s.buf, s.spans, s.keys = s.buf[:0], s.spans[:0], s.keys[:0]
}

// add appends the key appendKey builds onto the buffer.
func (s *sortedKeys) add(ref int32, appendKey func([]byte) []byte) {
	start := len(s.buf)
	s.buf = appendKey(s.buf)
	var p [16]byte
	copy(p[:], s.buf[start:])
	s.keys = append(s.keys, sortKey{hi: binary.BigEndian.Uint64(p[:8]), lo: binary.BigEndian.Uint64(p[8:]),
		i: uint32(len(s.spans)), ref: ref})
	s.spans = append(s.spans, [2]uint32{uint32(start), uint32(len(s.buf))})
}

func (s *sortedKeys) sort() {
	slices.SortFunc(s.keys, func(a, b sortKey) int {
		switch {
		case a.hi != b.hi:
			return cmpUint(a.hi, b.hi)
		case a.lo != b.lo:
			return cmpUint(a.lo, b.lo)
		}
		if c := bytes.Compare(s.key(a), s.key(b)); c != 0 {
			return c
		}
		return int(a.i) - int(b.i)
	})
}

// key returns k's bytes; ref its caller's value.
func (s *sortedKeys) key(k sortKey) []byte { sp := s.spans[k.i]; return s.buf[sp[0]:sp[1]] }
func (s *sortedKeys) ref(k sortKey) int32  { return k.ref }

func cmpUint(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}
