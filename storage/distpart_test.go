package storage

import (
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCopyJobPart: a distributed part's restore copies, from a snapshot,
// only the state and view rows of the key groups it is given and the
// offsets and per-split job state of its splits of the source, under its
// own job and table ids; it drops the rest (other key groups and splits,
// another table's offsets, the job's other own state).
func TestCopyJobPart(t *testing.T) {
	open := func() *DB {
		db, err := Open("db", Options{FS: vfs.NewMem(), CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	const jobOp = ^uint32(0)
	splitKey := func(kind byte, table uint64, part uint32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte{kind}, table), part)
	}
	from := open()
	b := from.NewBatch()
	for kg := byte(0); kg < 4; kg++ {
		b.Set(stateKey(5, 1, []byte{kg, 'k'}), []byte{kg}, nil)
		b.Set(viewKey(5, []byte{kg, 'r'}), []byte{kg}, nil)
	}
	for part := uint32(0); part < 3; part++ {
		b.Set(offsetKey(5, 9, part), binary.BigEndian.AppendUint64(nil, uint64(100+part)), nil)
		b.Set(stateKey(5, jobOp, splitKey('x', 9, part)), []byte{byte(part)}, nil)
	}
	b.Set(offsetKey(5, 8, 1), binary.BigEndian.AppendUint64(nil, 7), nil) // another table
	b.Set(stateKey(5, jobOp, []byte{'l'}), []byte{1}, nil)                // not per split
	b.Set(stateKey(5, jobOp, []byte{'w', 0, 0, 0, 7}), []byte{2}, nil)    // the same on every node
	b.Set(stateKey(6, 1, []byte{1, 'k'}), []byte{1}, nil)                 // another job
	if err := from.Commit(b, true); err != nil {
		t.Fatal(err)
	}
	to := open()
	wb := to.NewBatch()
	n, err := to.State().CopyJobPart(wb, from, 5, 15, PartFilter{
		Group: func(kg byte) bool { return kg == 1 || kg == 3 },
		Split: func(p uint32) bool { return p == 2 },
		JobOp: jobOp, SplitKinds: "xp", SharedKinds: "w", SrcTable: 9, DstTable: 19})
	if err != nil {
		t.Fatal(err)
	}
	if err := to.Commit(wb, true); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := to.scanPrefix(to.pdb, nil, func(k, _ []byte) error {
		keys = append(keys, string(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		string(stateKey(15, 1, []byte{1, 'k'})): true, string(stateKey(15, 1, []byte{3, 'k'})): true,
		string(viewKey(15, []byte{1, 'r'})): true, string(viewKey(15, []byte{3, 'r'})): true,
		string(offsetKey(15, 19, 2)): true, string(stateKey(15, jobOp, splitKey('x', 19, 2))): true,
		string(stateKey(15, jobOp, []byte{'w', 0, 0, 0, 7})): true,
	}
	got := 0
	for _, k := range keys {
		if len(k) > 1 && k[1] == '/' && (k[0] == 's' || k[0] == 'v' || k[0] == 'o') {
			if !want[k] {
				t.Fatalf("copied %q, not in the part", k)
			}
			got++
		}
	}
	if got != len(want) || n != len(want) {
		t.Fatalf("copied %d keys (reported %d), want %d", got, n, len(want))
	}
	if off, ok, err := to.State().LoadOffset(15, 19, 2); err != nil || !ok || off != 102 {
		t.Fatalf("split 2's offset: %d %v %v, want 102", off, ok, err)
	}
}
