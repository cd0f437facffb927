package storage

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// TestMemStateAsyncSnapshot: state applied ahead of the commit
// (Memory.Apply), a copy-on-write clone written while the live map keeps
// changing, and its pointer committed later (CommitMemSnapshot): the
// snapshot holds the state as of the clone, not the later writes, and a
// job restarting loads it; a snapshot written but never committed is
// removed when the job starts again. Run it with -race: the writer reads
// the clone while the map is written.
func TestMemStateAsyncSnapshot(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	const job = 9
	if err := db.Memory().Use(job); err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return binary.BigEndian.AppendUint32([]byte{byte(i % 128)}, uint32(i)) }
	epoch := func(gen, from, to int) *Batch {
		b := db.State().NewEpochBatch()
		r := b.NewRun()
		for i := from; i < to; i++ {
			r.PutState(job, 1, key(i), []byte(fmt.Sprintf("g%d-%d", gen, i)))
		}
		b.AddRun(r)
		if err := db.Memory().Apply(job, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	held := epoch(0, 0, 2000)
	clone := db.Memory().Clone(job, nil)
	done := make(chan *MemSnapshot)
	go func() {
		s, err := clone.Write()
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	epoch(1, 1000, 3000) // applied to the live map while the clone is written; never committed
	snap := <-done
	if snap == nil {
		t.FailNow()
	}
	held.CommitMemSnapshot(job, snap)
	if err := db.State().CommitEpoch([]*Batch{held}, 0, nil, true); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := db.scanPrefix(db.pdb, []byte("s/"), func(k, v []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d s/ keys in Pebble (%v), want none", n, err)
	}
	// Another snapshot written but never committed (a crash, a stop).
	if _, err := db.Memory().Clone(job, nil).Write(); err != nil {
		t.Fatal(err)
	}
	if err := db.Memory().Use(job); err != nil { // a restart: reload
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := db.State().Scan(job, 1, func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2000 {
		t.Fatalf("%d entries after the restart, want the clone's 2000", len(got))
	}
	for i := 0; i < 2000; i++ {
		if want := fmt.Sprintf("g0-%d", i); got[string(key(i))] != want {
			t.Fatalf("entry %d = %q, want %q (the state as of the clone)", i, got[string(key(i))], want)
		}
	}
	names, _ := db.fs.List(db.fs.PathJoin(dir, memStateDir, fmt.Sprintf("%016x", job)))
	if len(names) != 1 {
		t.Errorf("snapshot directories after the restart: %v, want only the committed one", names)
	}
}
