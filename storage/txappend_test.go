package storage

import (
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCommitAppends: rows in memory and staged rows of two tables become
// visible in one write, at the partitions' next offsets, and survive a
// reopen; a failed commit (a finished stage) aborts every stage and shows
// nothing.
func TestCommitAppends(t *testing.T) {
	withStageFileBytes(t, 1)
	fs := vfs.NewMem()
	db := openMem(t, fs)
	appendVals(t, db, 1, 0, seq(0, 2))
	r1 := rec(memory.DefaultAllocator, 10, 11)
	defer r1.Release()
	r2 := rec(memory.DefaultAllocator, 20)
	defer r2.Release()
	st1 := stageVals(t, db, 1, seq(100, 3))
	st2 := stageVals(t, db, 2, seq(200, 2))
	if vals, _ := readVals(t, db, 2, 0, 0, 100); len(vals) != 0 {
		t.Fatalf("rows of table 2 visible before the commit: %v", vals)
	}
	err := db.Log().CommitAppends([]TxAppend{
		{Table: 2, Part: 0, Recs: []arrow.RecordBatch{r2}, Stages: []*Stage{st2}},
		{Table: 1, Part: 0, Recs: []arrow.RecordBatch{r1}, Stages: []*Stage{st1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want1 := append(append(seq(0, 2), 10, 11), seq(100, 3)...)
	want2 := append([]int64{20}, seq(200, 2)...)
	check := func(when string) {
		if vals, _ := readVals(t, db, 1, 0, 0, 100); !slices.Equal(vals, want1) {
			t.Fatalf("%s: table 1 reads %v, want %v", when, vals, want1)
		}
		if vals, _ := readVals(t, db, 2, 0, 0, 100); !slices.Equal(vals, want2) {
			t.Fatalf("%s: table 2 reads %v, want %v", when, vals, want2)
		}
	}
	check("after the commit")
	if p, _ := stagedKeys(t, db); p != 0 {
		t.Fatalf("%d stage marks left after the commit", p)
	}
	db.Close()
	db = openMem(t, fs)
	defer db.Close()
	check("after reopen")

	st3 := stageVals(t, db, 1, seq(300, 2))
	st4 := stageVals(t, db, 2, seq(400, 2))
	st4.Abort()
	if err := db.Log().CommitAppends([]TxAppend{{Table: 1, Stages: []*Stage{st3}}, {Table: 2, Stages: []*Stage{st4}}}); err == nil {
		t.Fatal("a commit with a finished stage succeeded")
	}
	check("after a failed commit")
	if p, s := stagedKeys(t, db); p != 0 || s != 2 {
		t.Fatalf("after a failed commit: %d marks, %d staged blocks; want 0 and the 2 published", p, s)
	}
}

// TestCommitAppendsCut: a barrier cut marked while transactions commit to
// two partitions never falls inside one: at every cut both partitions hold
// the same number of rows (each transaction appends one row to each).
func TestCommitAppendsCut(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	const txns = 300
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < txns; i++ {
			a := rec(memory.DefaultAllocator, int64(i))
			b := rec(memory.DefaultAllocator, int64(i))
			err := db.Log().CommitAppends([]TxAppend{
				{Table: 1, Recs: []arrow.RecordBatch{a}},
				{Table: 2, Recs: []arrow.RecordBatch{b}},
			})
			a.Release()
			b.Release()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	parts := []LogPart{{Table: 1}, {Table: 2}}
	cuts := 0
	for epoch := uint64(1); ; epoch++ {
		cut, err := db.Epochs().MarkCut(epoch, parts)
		if err != nil {
			t.Fatal(err)
		}
		db.Epochs().ReleaseCut(epoch)
		if cut[parts[0]] != cut[parts[1]] {
			t.Fatalf("cut %d at %d rows of table 1 and %d of table 2", epoch, cut[parts[0]], cut[parts[1]])
		}
		cuts++
		if cut[parts[0]] == txns {
			break
		}
	}
	wg.Wait()
	t.Logf("%d consistent cuts over %d transactions", cuts, txns)
}
