package storage

import "encoding/binary"

// PartFilter chooses the part of a distributed job's data that one node
// restores from another node's snapshot (distjob, docs/design/cluster.md
// step 6): the state and view rows of some key groups and the positions
// of some source splits. Keys it relies on: an operator's state key and a
// view row's key start with the key group (one byte); an offset key ends
// with the split; the job's own per-split state (under JobOp) is a kind
// byte, the source table and the split.
type PartFilter struct {
	Group func(kg byte) bool
	Split func(part uint32) bool
	// JobOp is the operator id of the job's own state; of it, the entries
	// whose kind is in SplitKinds are per split, those whose kind is in
	// SharedKinds are the same on every node (copied as they are), the
	// others are dropped.
	JobOp       uint32
	SplitKinds  string
	SharedKinds string
	// SrcTable, DstTable: the source's table id in the snapshot and here.
	SrcTable, DstTable uint64
}

// CopyJobPart adds to b, as job dst's, the data of job src in from (a
// snapshot) that f keeps: state and view rows of its key groups, offsets
// and per-split state of its splits (rewriting the job and table ids).
// It returns how many entries it copied. b should first delete dst's data
// (DeleteJobData) when it replaces a part.
func (st State) CopyJobPart(b *WriteBatch, from *DB, src, dst uint64, f PartFilter) (int, error) {
	n := 0
	put := func(k, v []byte) error {
		n++
		return b.Set(k, v, nil)
	}
	sp := append([]byte("s/"), idBytes(src)...)
	err := from.scanPrefix(from.pdb, sp, func(k, v []byte) error {
		rest := k[len(sp):]
		if len(rest) < 5 {
			return nil
		}
		op, key := binary.BigEndian.Uint32(rest), rest[4:]
		if op != f.JobOp {
			if f.Group(key[0]) {
				return put(appendStateKey(nil, dst, op, key), v)
			}
			return nil
		}
		if len(key) > 0 && containsByte(f.SharedKinds, key[0]) {
			return put(appendStateKey(nil, dst, op, key), v)
		}
		if len(key) != 13 || !containsByte(f.SplitKinds, key[0]) || binary.BigEndian.Uint64(key[1:]) != f.SrcTable ||
			!f.Split(binary.BigEndian.Uint32(key[9:])) {
			return nil
		}
		nk := append([]byte{key[0]}, binary.BigEndian.AppendUint64(nil, f.DstTable)...)
		return put(appendStateKey(nil, dst, op, binary.BigEndian.AppendUint32(nk, binary.BigEndian.Uint32(key[9:]))), v)
	})
	if err != nil {
		return n, err
	}
	vp := append([]byte("v/"), idBytes(src)...)
	err = from.scanPrefix(from.pdb, vp, func(k, v []byte) error {
		if rest := k[len(vp):]; len(rest) > 0 && f.Group(rest[0]) {
			return put(appendViewKey(nil, dst, rest), v)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	op := append([]byte("o/"), idBytes(src)...)
	err = from.scanPrefix(from.pdb, op, func(k, v []byte) error {
		if len(k) != 22 || binary.BigEndian.Uint64(k[10:]) != f.SrcTable || !f.Split(binary.BigEndian.Uint32(k[18:])) {
			return nil
		}
		return put(offsetKey(dst, f.DstTable, binary.BigEndian.Uint32(k[18:])), v)
	})
	return n, err
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}
