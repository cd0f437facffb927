package exec

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// sortedKeys sorts many short byte keys held in one buffer, as an epoch's
// state and view writes need (they reach storage in key order). Each key's
// first 16 bytes are kept as two integers, so most comparisons are integer
// compares; equal prefixes fall back to the bytes, then to the order the
// keys were added (a stable sort). The buffers are reused between epochs.
type sortedKeys struct {
	buf  []byte
	keys []sortKey
}

type sortKey struct {
	hi, lo     uint64
	start, end int // in buf; start also orders keys added earlier first
	ref        int // the caller's: a group, an entry
}

func (s *sortedKeys) reset() { s.buf, s.keys = s.buf[:0], s.keys[:0] }

// add appends the key built by appending to buf (returns buf extended).
func (s *sortedKeys) add(ref int, appendKey func([]byte) []byte) {
	start := len(s.buf)
	s.buf = appendKey(s.buf)
	var p [16]byte
	copy(p[:], s.buf[start:])
	s.keys = append(s.keys, sortKey{hi: binary.BigEndian.Uint64(p[:8]), lo: binary.BigEndian.Uint64(p[8:]),
		start: start, end: len(s.buf), ref: ref})
}

func (s *sortedKeys) sort() {
	slices.SortFunc(s.keys, func(a, b sortKey) int {
		switch {
		case a.hi != b.hi:
			return cmpUint(a.hi, b.hi)
		case a.lo != b.lo:
			return cmpUint(a.lo, b.lo)
		}
		if c := bytes.Compare(s.buf[a.start:a.end], s.buf[b.start:b.end]); c != 0 {
			return c
		}
		return a.start - b.start
	})
}

func (s *sortedKeys) key(k sortKey) []byte { return s.buf[k.start:k.end] }

func cmpUint(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}
