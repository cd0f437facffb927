package storage

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestTailCache: a published COPY's blocks are served from memory to the
// registered readers of its partition, each once, and read back exactly
// from Pebble once they are gone; nothing is kept for a stream without
// readers, for an aborted COPY, past the budget, or after the last reader
// goes.
func TestTailCache(t *testing.T) {
	withStageFileBytes(t, 1)
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	want := append(append(seq(0, 4), seq(4, 3)...), seq(7, 5)...)
	read := func(from, to uint64) []int64 {
		t.Helper()
		vals, _ := readVals(t, db, 1, 0, from, to)
		return vals
	}

	// No reader: nothing is cached.
	st := stageVals(t, db, 1, seq(0, 4), seq(4, 3), seq(7, 5))
	if _, err := st.Publish(0); err != nil {
		t.Fatal(err)
	}
	if got := read(0, 12); !slices.Equal(got, want) || db.Log().TailHits() != 0 || db.tail.size != 0 {
		t.Fatalf("no reader: read %v, hits %d, cached %d bytes", got, db.Log().TailHits(), db.tail.size)
	}

	// Two readers of partition 0, one of partition 1.
	r1, r2 := db.Log().TailReader(1, 0), db.Log().TailReader(1, 0)
	r3 := db.Log().TailReader(1, 1)
	st = stageVals(t, db, 1, seq(0, 4), seq(4, 3), seq(7, 5))
	if _, err := st.Publish(0); err != nil {
		t.Fatal(err)
	}
	// A read ending inside the third block owes nothing for it.
	if got := read(12, 21); !slices.Equal(got, want[:9]) || db.Log().TailHits() != 3 {
		t.Fatalf("first read: %v, hits %d", got, db.Log().TailHits())
	}
	if got := read(12, 24); !slices.Equal(got, want) || db.Log().TailHits() != 6 {
		t.Fatalf("second read: %v, hits %d", got, db.Log().TailHits())
	}
	// Blocks 1 and 2 were read whole twice: gone. Block 3 once: still there.
	if got := read(12, 24); !slices.Equal(got, want) || db.Log().TailHits() != 6 {
		t.Fatalf("third read (from Pebble): %v, hits %d", got, db.Log().TailHits())
	}
	if got := read(19, 24); !slices.Equal(got, want[7:]) || db.Log().TailHits() != 7 || len(db.tail.blocks) != 0 {
		t.Fatalf("last block: %v, hits %d, %d blocks cached", got, db.Log().TailHits(), len(db.tail.blocks))
	}
	// A read starting inside a block goes to Pebble.
	if got := read(14, 24); !slices.Equal(got, want[2:]) {
		t.Fatalf("read from inside a block: %v", got)
	}

	// An aborted COPY leaves nothing.
	st = stageVals(t, db, 1, seq(0, 4))
	if db.tail.size == 0 {
		t.Fatal("a staged block of a stream with readers is not cached")
	}
	st.Abort()
	if db.tail.size != 0 || len(db.tail.blocks) != 0 {
		t.Fatalf("after abort: %d bytes, %d blocks cached", db.tail.size, len(db.tail.blocks))
	}

	// The budget: the oldest blocks go first.
	db.tail.limit = db.tail.size + 2*recBytes(rec(memory.DefaultAllocator, seq(0, 4)...))
	st = stageVals(t, db, 1, seq(0, 4), seq(4, 4), seq(8, 4))
	if _, err := st.Publish(0); err != nil {
		t.Fatal(err)
	}
	if len(db.tail.blocks) != 2 || db.tail.size > db.tail.limit {
		t.Fatalf("over budget: %d blocks, %d bytes, limit %d", len(db.tail.blocks), db.tail.size, db.tail.limit)
	}
	hits := db.Log().TailHits()
	if got := read(24, 36); !slices.Equal(got, seq(0, 12)) || db.Log().TailHits() != hits+0 {
		// The read starts at the evicted block, so it goes to Pebble whole.
		t.Fatalf("after eviction: %v, hits %d (was %d)", got, db.Log().TailHits(), hits)
	}
	if got := read(28, 36); !slices.Equal(got, seq(4, 8)) || db.Log().TailHits() != hits+2 {
		t.Fatalf("the cached blocks: %v, hits %d (was %d)", got, db.Log().TailHits(), hits)
	}

	// The last reader of the table going drops what is left.
	r1()
	r2()
	if len(db.tail.blocks) == 0 {
		t.Fatal("blocks dropped while the table still has a reader")
	}
	r3()
	r3() // idempotent
	if db.tail.size != 0 || len(db.tail.blocks) != 0 || len(db.tail.tables) != 0 {
		t.Fatalf("after the last reader: %d bytes, %d blocks, %d tables", db.tail.size, len(db.tail.blocks), len(db.tail.tables))
	}
}
