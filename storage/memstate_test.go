package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
)

// TestMemStateRoundTrip: a memory job's state writes reach its map and not
// Pebble; a checkpoint's commit snapshots the map to files and a pointer;
// a reopened database loads the same entries; the Pebble backend takes the
// snapshot over as its s/ range; a corrupted file is refused with XX001.
func TestMemStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const job = 7
	if err := db.Memory().Use(job); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for epoch := 0; epoch < 3; epoch++ {
		b := db.State().NewEpochBatch()
		r := b.NewRun()
		for i := 0; i < 500; i++ {
			k := []byte{byte(i % 128)}
			k = binary.BigEndian.AppendUint32(k, uint32(i))
			v := fmt.Sprintf("v%d-%d", epoch, i)
			if epoch == 2 && i%3 == 0 {
				r.DeleteState(job, 1, k)
				delete(want, string(k))
				continue
			}
			r.PutState(job, 1, k, []byte(v))
			want[string(k)] = v
		}
		b.AddRun(r)
		b.SetOffset(job, 1, 0, uint64(epoch))
		if epoch == 2 {
			b.SnapshotMemState(job, false, nil)
		}
		if err := db.State().CommitEpoch([]*Batch{b}, 0, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := db.scanPrefix(db.pdb, []byte("s/"), func(k, v []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d s/ keys in Pebble (%v), want none", n, err)
	}
	check := func(what string) {
		t.Helper()
		got := map[string]string{}
		if err := db.State().Scan(job, 1, func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: %x = %q, want %q", what, k, got[k], v)
			}
		}
	}
	check("in memory")
	db.Close()
	if db, err = Open(dir, Options{CacheBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := db.Memory().Use(job); err != nil {
		t.Fatal(err)
	}
	check("reloaded from the snapshot")
	if err := db.Memory().UsePebble(job); err != nil {
		t.Fatal(err)
	}
	check("taken over by Pebble")
	if db.Memory().HasSnapshot(job) {
		t.Fatal("the pointer outlived the switch to Pebble")
	}
	// Back to memory, snapshot, then corrupt a file.
	if err := db.Memory().Use(job); err != nil {
		t.Fatal(err)
	}
	b := db.State().NewEpochBatch()
	b.SnapshotMemState(job, false, nil)
	if err := db.State().CommitEpoch([]*Batch{b}, 0, nil, true); err != nil {
		t.Fatal(err)
	}
	check("memory again")
	files, _ := filepath.Glob(filepath.Join(dir, memStateDir, "*", "*", "*.arrow"))
	if len(files) == 0 {
		t.Fatal("no snapshot files")
	}
	data, _ := os.ReadFile(files[0])
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(files[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	db.Memory().Forget(job)
	err = db.Memory().Use(job)
	var se *sqlerr.Error
	if !asSQLErr(err, &se) || se.Code != sqlerr.DataCorrupted {
		t.Fatalf("corrupted snapshot: %v, want XX001", err)
	}
	db.Close()
}

func asSQLErr(err error, out **sqlerr.Error) bool {
	se, ok := err.(*sqlerr.Error)
	*out = se
	return ok
}

// TestStateFileRoundTrip: the snapshot file format keeps entries and order.
func TestStateFileRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	i := 0
	rows, err := WriteStateFile(&buf, func() (StateEntry, bool) {
		if i == 3 {
			return StateEntry{}, false
		}
		i++
		return StateEntry{Key: []byte{byte(i)}, Val: bytes.Repeat([]byte{byte(i)}, i)}, true
	})
	if err != nil || rows != 3 {
		t.Fatalf("rows %d, %v", rows, err)
	}
	var got []string
	if err := ReadStateFile(buf.Bytes(), func(k, v []byte) error { got = append(got, fmt.Sprintf("%x=%x", k, v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[01=01 02=0202 03=030303]" {
		t.Fatalf("got %v", got)
	}
}
