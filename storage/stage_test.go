package storage

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// stageVals stages blocks of values in a new stage of table.
func stageVals(t *testing.T, db *DB, table uint64, blocks ...[]int64) *Stage {
	t.Helper()
	st, err := db.Stages().New(table)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		r := rec(memory.DefaultAllocator, b...)
		err := st.Add(r)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func stagedKeys(t *testing.T, db *DB) (pending, staged int) {
	t.Helper()
	pending, staged, err := db.Stages().Keys()
	if err != nil {
		t.Fatal(err)
	}
	return pending, staged
}

// withStageFileBytes makes stages ingest an sstable every n bytes.
func withStageFileBytes(t *testing.T, n int64) {
	old := stageFileBytes
	stageFileBytes = n
	t.Cleanup(func() { stageFileBytes = old })
}

// TestStagePublish: staged rows are invisible, appends to the partition
// go on meanwhile, and Publish makes them the next offsets at once; every
// range reads back exactly, across reference and plain blocks, before and
// after a reopen; truncation past a reference block drops its staged rows.
func TestStagePublish(t *testing.T) {
	withStageFileBytes(t, 1) // an sstable per block
	fs := vfs.NewMem()
	db := openMem(t, fs)
	appendVals(t, db, 1, 0, seq(0, 3))
	st := stageVals(t, db, 1, seq(3, 4), seq(7, 2))
	if first := appendVals(t, db, 1, 0, []int64{100, 101}); first != 3 {
		t.Fatalf("append during a stage at offset %d, want 3", first)
	}
	if vals, _ := readVals(t, db, 1, 0, 0, 100); !slices.Equal(vals, []int64{0, 1, 2, 100, 101}) {
		t.Fatalf("staged rows visible before Publish: %v", vals)
	}
	first, err := st.Publish(0)
	if err != nil {
		t.Fatal(err)
	}
	st.Abort() // after Publish: nothing
	if first != 5 {
		t.Fatalf("Publish at offset %d, want 5", first)
	}
	if first := appendVals(t, db, 1, 0, []int64{200}); first != 11 {
		t.Fatalf("append after Publish at offset %d, want 11", first)
	}
	all := append([]int64{0, 1, 2, 100, 101}, append(seq(3, 6), 200)...)
	check := func(when string) {
		for from := uint64(0); from <= 12; from++ {
			for to := from; to <= 12; to++ {
				vals, offs := readVals(t, db, 1, 0, from, to)
				lo, hi := min(from, 12), min(to, 12)
				if !slices.Equal(vals, all[lo:hi]) {
					t.Fatalf("%s: ReadLog[%d,%d) = %v, want %v", when, from, to, vals, all[lo:hi])
				}
				for i, o := range offs {
					if o != lo+uint64(i) {
						t.Fatalf("%s: ReadLog[%d,%d): row %d at offset %d", when, from, to, i, o)
					}
				}
			}
		}
		if got, _ := db.Log().OffsetAt(1, 0, time.Now().Add(time.Hour)); got != 12 {
			t.Fatalf("%s: LogOffsetAt(future) = %d, want 12", when, got)
		}
	}
	check("after Publish")
	if p, s := stagedKeys(t, db); p != 0 || s != 2 {
		t.Fatalf("after Publish: %d pending, %d staged blocks; want 0, 2", p, s)
	}
	db.Close()
	db = openMem(t, fs)
	defer db.Close()
	check("after reopen")
	if first := appendVals(t, db, 1, 0, []int64{300}); first != 12 {
		t.Fatalf("append after reopen at offset %d, want 12", first)
	}
	// Offset 6 lies in the reference block [5, 11): it is kept.
	if err := db.Log().Truncate(1, 0, 6); err != nil {
		t.Fatal(err)
	}
	if _, s := stagedKeys(t, db); s != 2 {
		t.Fatalf("truncation below a reference block's end dropped staged rows: %d left", s)
	}
	if err := db.Log().Truncate(1, 0, 11); err != nil {
		t.Fatal(err)
	}
	if start, end := bounds(t, db, 1, 0); start != 11 || end != 13 {
		t.Fatalf("after truncation: bounds [%d, %d), want [11, 13)", start, end)
	}
	if _, s := stagedKeys(t, db); s != 0 {
		t.Fatalf("truncation past a reference block left %d staged blocks", s)
	}
	if vals, _ := readVals(t, db, 1, 0, 0, 13); !slices.Equal(vals, []int64{200, 300}) {
		t.Fatalf("after truncation read %v", vals)
	}
}

// TestStageAbort: an aborted stage leaves no keys, no files and no rows,
// and does not move the log's end; an empty stage publishes nothing.
func TestStageAbort(t *testing.T) {
	withStageFileBytes(t, 1)
	fs := vfs.NewMem()
	db := openMem(t, fs)
	defer db.Close()
	appendVals(t, db, 1, 0, seq(0, 2))
	st := stageVals(t, db, 1, seq(2, 3), seq(5, 3))
	st.Abort()
	if p, s := stagedKeys(t, db); p != 0 || s != 0 {
		t.Fatalf("after Abort: %d pending, %d staged blocks", p, s)
	}
	if files, _ := fs.List(fs.PathJoin("db", stageDir)); len(files) != 0 {
		t.Fatalf("after Abort: staging files %v", files)
	}
	st = stageVals(t, db, 1)
	if first, err := st.Publish(0); err != nil || first != 2 {
		t.Fatalf("empty Publish: %d, %v", first, err)
	}
	if _, end := bounds(t, db, 1, 0); end != 2 {
		t.Fatalf("log end %d after an aborted and an empty stage, want 2", end)
	}
	if p, _ := stagedKeys(t, db); p != 0 {
		t.Fatalf("%d pending after an empty Publish", p)
	}
}

// TestStagePowerLoss: after a power loss at any point of a stage — before
// or after some sstables were ingested, with a half-written one in the
// staging directory, before or after Publish returned — the log holds the
// stage's rows whole or not at all (whole if Publish returned), offsets are
// dense, and opening removes whatever an unpublished stage left.
func TestStagePowerLoss(t *testing.T) {
	withStageFileBytes(t, 600) // an sstable every block or two (a block is about 400 bytes)
	var published, dropped int
	for seed := uint64(0); seed < 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		fs := vfs.NewCrashableMem()
		db := openMem(t, fs)
		appendVals(t, db, 1, 0, seq(0, 2))
		blocks := 1 + r.IntN(5)
		st, err := db.Stages().New(1)
		if err != nil {
			t.Fatal(err)
		}
		want := seq(0, 2)
		for b := range blocks {
			v := seq(int64(10*(b+1)), 1+r.IntN(3))
			rc := rec(memory.DefaultAllocator, v...)
			if err := st.Add(rc); err != nil {
				t.Fatal(err)
			}
			rc.Release()
			want = append(want, v...)
		}
		publish := r.IntN(2) == 0
		if publish {
			if _, err := st.Publish(0); err != nil {
				t.Fatal(err)
			}
		}
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, 6))})
		db.Close()
		db = openMem(t, clone)
		vals, offs := readVals(t, db, 1, 0, 0, 1000)
		for i, o := range offs {
			if o != uint64(i) {
				t.Fatalf("seed %d: row %d at offset %d", seed, i, o)
			}
		}
		switch {
		case slices.Equal(vals, want):
			published++
		case slices.Equal(vals, seq(0, 2)) && !publish:
			dropped++
		default:
			t.Fatalf("seed %d (published %v): log %v, want %v or the first 2 rows only", seed, publish, vals, want)
		}
		p, s := stagedKeys(t, db)
		if files, _ := clone.List(clone.PathJoin("db", stageDir)); p != 0 || len(files) != 0 || (!publish && s != 0) {
			t.Fatalf("seed %d: after power loss and reopen: %d pending, %d staged blocks, staging files %v", seed, p, s, files)
		}
		db.Close()
	}
	if published == 0 || dropped == 0 {
		t.Fatalf("%d seeds published, %d dropped: both must occur", published, dropped)
	}
}

// TestKeyPrefixesDoNotOverlap: a published COPY's reference blocks, a
// role and a table's data live under distinct prefixes: loading roles sees
// only roles, and dropping a table leaves the roles (roles once shared the
// r/ prefix with the references).
func TestKeyPrefixesDoNotOverlap(t *testing.T) {
	withStageFileBytes(t, 1)
	db := openMem(t, vfs.NewMem())
	b := db.NewBatch()
	PutRole(b, &RoleDef{Name: "alice"})
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	st := stageVals(t, db, 1, seq(0, 4))
	if _, err := st.Publish(0); err != nil {
		t.Fatal(err)
	}
	roles, err := db.Catalog().LoadRoles()
	if err != nil || len(roles) != 1 || roles[0].Name != "alice" {
		t.Fatalf("roles after a published COPY: %v, %v", roles, err)
	}
	// A sink's entry (w/) is neither a role nor a catalog entry.
	b = db.NewBatch()
	PutSink(b, &SinkDef{ID: 9, Name: "alice", View: "v"})
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if roles, err := db.Catalog().LoadRoles(); err != nil || len(roles) != 1 {
		t.Fatalf("roles after CREATE SINK: %v, %v", roles, err)
	}
	if defs, err := db.Catalog().Load(); err != nil || len(defs) != 0 {
		t.Fatalf("catalog after CREATE SINK: %v, %v", defs, err)
	}
	if sinks, err := db.Catalog().LoadSinks(); err != nil || len(sinks) != 1 || sinks[0].Name != "alice" {
		t.Fatalf("sinks: %v, %v", sinks, err)
	}
	// A late row (q/) is not a job error (e/), and goes with its job.
	eb := db.State().NewEpochBatch()
	eb.PutLateRows(9, []LateRow{{Job: "alice", Seq: 1}}, 0, 0)
	if err := db.State().CommitEpoch([]*Batch{eb}, 0, nil, false); err != nil {
		t.Fatal(err)
	}
	if errs, err := db.Errors().JobErrors(); err != nil || len(errs) != 0 {
		t.Fatalf("job errors after a late row: %v, %v", errs, err)
	}
	if late, err := db.Errors().LateRows(); err != nil || len(late) != 1 {
		t.Fatalf("late rows: %v, %v", late, err)
	}
	b = db.NewBatch()
	DeleteJobData(b, 9)
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if late, err := db.Errors().LateRows(); err != nil || len(late) != 0 {
		t.Fatalf("late rows after the job's data went: %v, %v", late, err)
	}
	if roles, err := db.Catalog().LoadRoles(); err != nil || len(roles) != 1 {
		t.Fatalf("roles after deleting a job's data: %v, %v", roles, err)
	}
	b = db.NewBatch()
	DeleteTable(b, &TableDef{Name: "t", ID: 1})
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if roles, err := db.Catalog().LoadRoles(); err != nil || len(roles) != 1 {
		t.Fatalf("roles after DROP TABLE: %v, %v", roles, err)
	}
}
