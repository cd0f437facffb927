package storage

import (
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestReadPoints: view 1 holds every round's epoch (Pebble), view 2 only
// checkpoint epochs, handed over two rounds later (memory). At every round
// a statement over both picks an epoch both hold, reads each view's rows
// at it, and the points kept stay few.
func TestReadPoints(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	rows := func(view, epoch uint64) {
		if err := db.pdb.Set(binary.BigEndian.AppendUint64([]byte("t/"), view), binary.BigEndian.AppendUint64(nil, epoch), nil); err != nil {
			t.Fatal(err)
		}
	}
	readRows := func(r Reader, view uint64) uint64 {
		v, closer, err := r.Get(binary.BigEndian.AppendUint64([]byte("t/"), view))
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		return binary.BigEndian.Uint64(v)
	}
	var mem uint64
	released := map[uint64]uint64{} // round → checkpoint epoch handed over then
	for e := uint64(1); e <= 40; e++ {
		checkpoint := e%5 == 0
		if checkpoint {
			released[e+2] = e
		}
		if c, ok := released[e]; ok {
			mem = c
		}
		rows(1, e)
		rows(2, mem)
		rp := &ReadPoint{Epoch: e, Checkpoint: checkpoint, Cut: Cut{}, Held: map[uint64]uint64{1: e, 2: mem}}
		if err := db.State().CommitEpochAt(nil, 0, nil, false, Cut{}, rp); err != nil {
			t.Fatal(err)
		}
		rs, ok, _, lagging := db.Epochs().PickRead([]uint64{1, 2}, 0)
		if mem == 0 {
			if ok || len(lagging) != 1 || lagging[0] != 2 {
				t.Fatalf("round %d: view 2 holds no epoch, yet ok %v, lagging %v", e, ok, lagging)
			}
			continue
		}
		if !ok || rs.Epoch != mem {
			t.Fatalf("round %d: picked %v %v, want epoch %d", e, ok, rs, mem)
		}
		for _, v := range []uint64{1, 2} {
			var r Reader = rs.Base
			if s := rs.Views[v]; s != nil {
				r = s
			}
			if got := readRows(r, v); got != mem {
				t.Fatalf("round %d: view %d read at %d, want %d", e, v, got, mem)
			}
		}
		rs.Release()
		if _, ok, _, lagging := db.Epochs().PickRead([]uint64{1, 2}, e); ok != (mem == e) || !ok && len(lagging) != 1 {
			t.Fatalf("round %d: at or after it: ok %v, lagging %v", e, ok, lagging)
		}
		db.reads.Lock()
		kept := len(db.reads.p.list)
		db.reads.Unlock()
		if kept > 4 {
			t.Fatalf("round %d: %d points kept", e, kept)
		}
	}
	// A view alone, or views that all hold the newest epoch, read it.
	if rs, ok, _, _ := db.Epochs().PickRead([]uint64{1}, 40); !ok || rs.Epoch != 40 || len(rs.Views) != 0 {
		t.Fatalf("view 1 alone: %v %v", ok, rs)
	} else {
		rs.Release()
	}
}
