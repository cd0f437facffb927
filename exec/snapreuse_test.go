package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// snapChurn is a multiset of (k, v) rows and the random epochs that change
// it: none in a third of them, else inserts and retractions of present rows.
type snapChurn struct {
	rng  *rand.Rand
	rows map[[2]int64]int
}

func newSnapChurn(seed uint64) *snapChurn {
	return &snapChurn{rng: rand.New(rand.NewPCG(seed, 1)), rows: map[[2]int64]int{}}
}

// epoch returns the epoch's inserts and retractions (both empty a third of
// the time) and applies them to the multiset.
func (c *snapChurn) epoch() (ins, del [][2]int64) {
	if c.rng.IntN(3) == 0 {
		return nil, nil
	}
	for range c.rng.IntN(40) {
		r := [2]int64{c.rng.Int64N(30), c.rng.Int64N(6)}
		ins = append(ins, r)
		c.rows[r]++
	}
	for r, n := range c.rows {
		if c.rng.IntN(4) == 0 {
			del = append(del, r)
			if n == 1 {
				delete(c.rows, r)
			} else {
				c.rows[r] = n - 1
			}
		}
	}
	return ins, del
}

func sameBuf(a, b *stateSnapshot) bool {
	return a.Entries.SharesBuf(&b.Entries)
}

// checkSnap fails unless got holds exactly full's entries.
func checkSnap(t *testing.T, epoch uint64, got, full storage.OpSnapshot) {
	t.Helper()
	g, f := snapshotEntries(got), snapshotEntries(full)
	if fmt.Sprint(g) != fmt.Sprint(f) {
		t.Fatalf("epoch %d: snapshot handed over (%d entries) differs from a full encode (%d entries)", epoch, len(g), len(f))
	}
}

// TestAggSnapshotReuse: over random epochs of inserts and retractions
// (count(DISTINCT), min/max under retraction), some changing nothing, the
// snapshot an aggregate hands over at a checkpoint (the last one's entries
// when nothing changed since, snapReuse) equals a full encode of its groups
// at every checkpoint, and checkpoints with nothing new do reuse it.
func TestAggSnapshotReuse(t *testing.T) {
	j := valueJob(t)
	op := restoredOp(t, j)
	c := newSnapChurn(7)
	var last *stateSnapshot
	var snap snapReuse // as the memory backend's State keeps it (opstate.go)
	reused := 0
	for e := uint64(1); e <= 200; e++ {
		ins, del := c.epoch()
		if len(ins) > 0 {
			pushSigned(t, op, ins, 1)
		}
		if len(del) > 0 {
			pushSigned(t, op, del, -1)
		}
		// As the aggregate's barrier on the memory backend (aggtask.go, opstate.go).
		prepareSave(op, e)
		snap.Note(len(op.dirty) > 0)
		if e%3 != 0 { // a checkpoint every third epoch: changes accumulate
			s := snap.Take(op.id, e, op.ttl.on, func(e uint64) *stateSnapshot { return snapshotAgg(op, e) })
			checkSnap(t, e, s, snapshotAgg(op, e))
			if last != nil && sameBuf(s, last) {
				reused++
			}
			last = s
		}
		if err := op.changesOf(true, func(c Chunk) error { c.Rec.Release(); return nil }); err != nil {
			t.Fatal(err)
		}
		op.clearValueChanges()
	}
	if reused == 0 {
		t.Fatal("no checkpoint reused the last snapshot")
	}
	t.Logf("%d of 133 checkpoints reused the last snapshot", reused)
}

// memOpJob is a view job on the memory backend with a discarding outlet.
func memOpJob(t *testing.T) (*Job, *outlet) {
	j, out, stop := opBenchJob(&testing.B{})
	t.Cleanup(stop)
	j.spec.State = StateOptions{Backend: BackendMemory}
	return j, out
}

func signedChunk(rows [][2]int64, op Op) Chunk {
	ops := make([]Op, len(rows))
	for i := range ops {
		ops[i] = op
	}
	return Chunk{Rec: kvRecord(rows), Ops: ops}
}

// barrierSnap runs op's barrier at a checkpoint of epoch e and returns the
// snapshot it handed over.
func barrierSnap(t *testing.T, j *Job, barrier func(*Barrier, *storage.Batch) error, e uint64) *stateSnapshot {
	t.Helper()
	w := j.db.NewEpochBatch()
	if err := barrier(&Barrier{Epoch: e, Checkpoint: true}, w); err != nil {
		t.Fatal(err)
	}
	snaps := w.TakeOpSnapshots()
	if len(snaps) != 1 {
		t.Fatalf("epoch %d: %d snapshots handed over", e, len(snaps))
	}
	return snaps[0].(*stateSnapshot)
}

// TestRankJoinSnapshotReuse: as TestAggSnapshotReuse for a top-N and a
// join, through their barriers on the memory backend.
func TestRankJoinSnapshotReuse(t *testing.T) {
	t.Run("rank", func(t *testing.T) {
		j, out := memOpJob(t)
		k, v := kvRefs()
		ts := []types.T{types.TInt64, types.TInt64}
		w := &Window{In: &Batches{Ts: ts}, PartitionBy: []expr.Expr{k}, OrderBy: []SortKey{{E: v, Desc: true}},
			Funcs: []WindowFunc{{Kind: WinRowNumber, T: types.TInt64}}}
		spec := &rankSpec{window: w, partition: w.PartitionBy, order: w.OrderBy, hi: 3}
		in := &gedge{from: &gnode{kind: nSource, retracts: true}, stages: []Plan{&Batches{Ts: ts}}}
		op := newRankOp(j, &gnode{kind: nRank, rank: spec, ins: []*gedge{in}}, out, 0)
		ectx := j.exprCtx()
		churn(t, j, func(c Chunk, _ int) error { return op.Push(ectx, c, 0) },
			func(b *Barrier, w *storage.Batch) error { return op.Barrier(ectx, b, w) }, op.Snapshot, 1)
	})
	t.Run("join", func(t *testing.T) {
		j, out := memOpJob(t)
		k, _ := kvRefs()
		ts := []types.T{types.TInt64, types.TInt64}
		spec := &HashJoin{Left: &Batches{Ts: ts}, Right: &Batches{Ts: ts}, Kind: JoinLeft,
			LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}
		op := newJoinOp(j, &gnode{kind: nJoin, join: spec}, out, 0)
		ectx := j.exprCtx()
		churn(t, j, func(c Chunk, side int) error { return op.Push(ectx, c, side) },
			func(b *Barrier, w *storage.Batch) error { return op.Barrier(ectx, b, w) }, op.Snapshot, 2)
	})
}

// churn drives random epochs into an operator with sides inputs, a
// checkpoint every third epoch, and checks each snapshot handed over
// against a full encode.
func churn(t *testing.T, j *Job, push func(Chunk, int) error, barrier func(*Barrier, *storage.Batch) error,
	full func(uint64) *stateSnapshot, sides int) {
	t.Helper()
	var cs []*snapChurn
	for s := range sides {
		cs = append(cs, newSnapChurn(uint64(11+s)))
	}
	var last *stateSnapshot
	reused, checkpoints := 0, 0
	for e := uint64(1); e <= 150; e++ {
		for side, c := range cs {
			ins, del := c.epoch()
			for _, b := range []struct {
				rows [][2]int64
				op   Op
			}{{ins, OpInsert}, {del, OpDelete}} {
				if len(b.rows) == 0 {
					continue
				}
				if err := push(signedChunk(b.rows, b.op), side); err != nil {
					t.Fatal(err)
				}
			}
		}
		if e%3 == 0 {
			if err := barrier(&Barrier{Epoch: e}, j.db.NewEpochBatch()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		s := barrierSnap(t, j, barrier, e)
		checkSnap(t, e, s, full(e))
		checkpoints++
		if last != nil && sameBuf(s, last) {
			reused++
		}
		last = s
	}
	if reused == 0 {
		t.Fatal("no checkpoint reused the last snapshot")
	}
	t.Logf("%d of %d checkpoints reused the last snapshot", reused, checkpoints)
}

// BenchmarkSnapshotAgg: a full encode of an aggregate's 100K groups (two
// values each for its count(DISTINCT) and min/max), against handing over
// the last snapshot when nothing changed (docs/BENCHMARKS.md).
//
//	go test ./exec -run '^$' -bench BenchmarkSnapshotAgg -benchtime 20x
func BenchmarkSnapshotAgg(b *testing.B) {
	j := valueJob(b)
	op := newAggOp(valueSpec(), true)
	op.id = 7
	if err := j.loadState(op, 0, 1, false); err != nil {
		b.Fatal(err)
	}
	var rows [][2]int64
	for k := range int64(100_000) {
		rows = append(rows, [2]int64{k, 1}, [2]int64{k, 2})
	}
	pushSigned(b, op, rows, 1)
	prepareSave(op, 1)
	var snap snapReuse
	snap.Note(true)
	encode := func(e uint64) *stateSnapshot { return snapshotAgg(op, e) }
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			snapshotAgg(op, 2)
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		snap.Take(op.id, 2, op.ttl.on, encode)
		for b.Loop() {
			snap.Note(false)
			snap.Take(op.id, 3, op.ttl.on, encode)
		}
	})
}

// TestNoSnapshotWhileWriting: a memory job's periodic checkpoint barrier
// injected while its previous snapshot is still being written tells its
// operators to take none (on the job's own copy: the round's barrier is
// shared), and the epoch is recorded as writing none; a CHECKPOINT's
// barrier, or one after the write ended, snapshots.
func TestNoSnapshotWhileWriting(t *testing.T) {
	j := &Job{spec: JobSpec{ID: 1, View: &storage.TableDef{ID: 1}, State: StateOptions{Backend: BackendMemory}}}
	a := &asyncSnap{epoch: 1, done: make(chan struct{})}
	j.hold.writing = a
	round := &Barrier{Epoch: 2, Checkpoint: true}
	b := j.noteBarrier(round)
	if !b.NoSnapshot || b.Snapshots() || round.NoSnapshot || b.Epoch != 2 || !j.hold.kinds[2].skip {
		t.Fatalf("periodic barrier during a write: NoSnapshot %v (round's %v), kind %+v", b.NoSnapshot, round.NoSnapshot, j.hold.kinds[2])
	}
	if b := j.noteBarrier(&Barrier{Epoch: 3, Checkpoint: true, CatchUp: true}); !b.Snapshots() || j.hold.kinds[3].skip {
		t.Fatal("a CHECKPOINT's barrier skipped the snapshot")
	}
	if b := j.noteBarrier(&Barrier{Epoch: 4}); b.Snapshots() || j.hold.kinds[4].skip {
		t.Fatal("a barrier that is no checkpoint snapshots or skips")
	}
	close(a.done)
	if b := j.noteBarrier(&Barrier{Epoch: 5, Checkpoint: true}); !b.Snapshots() || j.hold.kinds[5].skip {
		t.Fatal("a periodic barrier after the write ended skipped the snapshot")
	}
	j.spec.State = StateOptions{}
	j.hold.writing = &asyncSnap{done: make(chan struct{})}
	if b := j.noteBarrier(&Barrier{Epoch: 6, Checkpoint: true}); !b.Snapshots() {
		t.Fatal("a Pebble job's barrier skipped")
	}
}
