package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestStagedReadWork is a regression guard on the work of reading a
// staged COPY, counted rather than timed: a job reads the log 64K rows at
// a time, one staged block (about a megabyte) per read, and each read
// must load that block from its table once, not the block after it as
// well. The block cache here is too small to hold a block, as Pebble's
// is in a server once the memtables have grown (they reserve their size
// from it), so every load is a miss and the misses count the loads.
// Reads that start inside a block load at most the two blocks they span
// plus the one the seek lands on first and the one before, which a
// reverse seek loads.
func TestStagedReadWork(t *testing.T) {
	const blocks, rows = 16, 64 << 10
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	r := rand.New(rand.NewPCG(1, 2))
	var want []int64
	st, err := db.Stages().New(1)
	if err != nil {
		t.Fatal(err)
	}
	for range blocks {
		vs := make([]int64, rows)
		for i := range vs {
			vs[i] = r.Int64N(1_000_000)
		}
		want = append(want, vs...)
		b := rec(memory.DefaultAllocator, vs...)
		err := st.Add(b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Publish(0); err != nil {
		t.Fatal(err)
	}
	// read reads the whole COPY step rows at a time, checks the rows and
	// returns the block loads and the reads made.
	read := func(step uint64) (loads, reads int64) {
		before := db.pdb.Metrics().BlockCache.Misses
		for off := uint64(0); off < blocks*rows; off += step {
			to := min(off+step, blocks*rows)
			next := off
			err := db.Log().Read(memory.DefaultAllocator, 1, 0, off, to, func(first uint64, rec arrow.RecordBatch) error {
				defer rec.Release()
				if first != next {
					t.Fatalf("rows from %d, want %d", first, next)
				}
				for i, v := range rec.Column(0).(interface{ Int64Values() []int64 }).Int64Values() {
					if v != want[first+uint64(i)] {
						t.Fatalf("row %d is %d, want %d", first+uint64(i), v, want[first+uint64(i)])
					}
				}
				next += uint64(rec.NumRows())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if next != to {
				t.Fatalf("read [%d, %d) ended at %d", off, to, next)
			}
			reads++
		}
		return db.pdb.Metrics().BlockCache.Misses - before, reads
	}
	loads, reads := read(rows)
	t.Logf("%d staged blocks read a block at a time: %d block loads in %d reads", blocks, loads, reads)
	if loads > blocks+2 {
		t.Errorf("reading %d staged blocks a block at a time loaded %d blocks, want at most %d", blocks, loads, blocks+2)
	}
	loads, reads = read(50_000)
	t.Logf("read 50000 rows at a time: %d block loads in %d reads", loads, reads)
	if loads > 4*reads {
		t.Errorf("%d reads of 50000 staged rows loaded %d blocks, want at most %d", reads, loads, 4*reads)
	}
}
