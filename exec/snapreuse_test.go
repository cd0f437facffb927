package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// memOpJob is a view job on the memory backend with a discarding outlet.
func memOpJob(t *testing.T) (*Job, *outlet) {
	j, out, stop := opBenchJob(&testing.B{})
	t.Cleanup(stop)
	j.spec.State = StateOptions{Backend: BackendMemory}
	return j, out
}

// kvRecord makes a batch of (k, v) rows.
func kvRecord(rows [][2]int64) arrow.RecordBatch { return opkittest.KVRecord(rows) }

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
	w := j.db.State().NewEpochBatch()
	if err := barrier(&Barrier{Epoch: e, Checkpoint: true}, w); err != nil {
		t.Fatal(err)
	}
	snaps := w.TakeOpSnapshots()
	if len(snaps) != 1 {
		t.Fatalf("epoch %d: %d snapshots handed over", e, len(snaps))
	}
	return snaps[0].(*stateSnapshot)
}

// TestRankJoinSnapshotReuse: as exec/agg's TestAggSnapshotReuse for a
// top-N and a join, through their barriers on the memory backend.
func TestRankJoinSnapshotReuse(t *testing.T) {
	t.Run("rank", func(t *testing.T) {
		j, out := memOpJob(t)
		k, v := kvRefs()
		ts := []types.T{types.TInt64, types.TInt64}
		w := &plan.Window{In: &plan.Batches{Ts: ts}, PartitionBy: []expr.Expr{k}, OrderBy: []plan.SortKey{{E: v, Desc: true}},
			Funcs: []plan.WindowFunc{{Kind: plan.WinRowNumber, T: types.TInt64}}}
		spec := &rankSpec{window: w, partition: w.PartitionBy, order: w.OrderBy, hi: 3}
		in := &gedge{from: &gnode{kind: nSource, retracts: true}, stages: []plan.Plan{&plan.Batches{Ts: ts}}}
		op := newRankOp(j, &gnode{kind: nRank, rank: spec, ins: []*gedge{in}}, out, 0)
		ectx := j.exprCtx()
		churn(t, j, func(c Chunk, _ int) error { return op.Push(ectx, c, 0) },
			func(b *Barrier, w *storage.Batch) error { return op.Barrier(ectx, b, w) }, op.Snapshot, 1)
	})
	t.Run("join", func(t *testing.T) {
		j, out := memOpJob(t)
		k, _ := kvRefs()
		ts := []types.T{types.TInt64, types.TInt64}
		spec := &plan.HashJoin{Left: &plan.Batches{Ts: ts}, Right: &plan.Batches{Ts: ts}, Kind: plan.JoinLeft,
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
	var cs []*opkittest.Churn
	for s := range sides {
		cs = append(cs, opkittest.NewChurn(uint64(11+s)))
	}
	var last *stateSnapshot
	reused, checkpoints := 0, 0
	for e := uint64(1); e <= 150; e++ {
		for side, c := range cs {
			ins, del := c.Epoch()
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
			if err := barrier(&Barrier{Epoch: e}, j.db.State().NewEpochBatch()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		s := barrierSnap(t, j, barrier, e)
		opkittest.CheckSnap(t, e, s, full(e))
		checkpoints++
		if last != nil && opkittest.SameBuf(s, last) {
			reused++
		}
		last = s
	}
	if reused == 0 {
		t.Fatal("no checkpoint reused the last snapshot")
	}
	t.Logf("%d of %d checkpoints reused the last snapshot", reused, checkpoints)
}

// TestNoSnapshotWhileWriting: a memory job's periodic checkpoint barrier
// injected while its previous snapshot is still being written tells its
// operators to take none (on the job's own copy: the round's barrier is
// shared), and the epoch is recorded as writing none; a CHECKPOINT's
// barrier, or one after the write ended, snapshots.
func TestNoSnapshotWhileWriting(t *testing.T) {
	j := &Job{spec: JobSpec{ID: 1, View: &storage.TableDef{ID: 1}, State: StateOptions{Backend: BackendMemory}}}
	j.hold.spec = &j.spec
	a := &asyncSnap{epoch: 1, done: make(chan struct{})}
	j.hold.writing = a
	round := &Barrier{Epoch: 2, Checkpoint: true}
	b := j.hold.noteBarrier(round)
	if !b.NoSnapshot || b.Snapshots() || round.NoSnapshot || b.Epoch != 2 || !j.hold.kinds[2].skip {
		t.Fatalf("periodic barrier during a write: NoSnapshot %v (round's %v), kind %+v", b.NoSnapshot, round.NoSnapshot, j.hold.kinds[2])
	}
	if b := j.hold.noteBarrier(&Barrier{Epoch: 3, Checkpoint: true, CatchUp: true}); !b.Snapshots() || j.hold.kinds[3].skip {
		t.Fatal("a CHECKPOINT's barrier skipped the snapshot")
	}
	if b := j.hold.noteBarrier(&Barrier{Epoch: 4}); b.Snapshots() || j.hold.kinds[4].skip {
		t.Fatal("a barrier that is no checkpoint snapshots or skips")
	}
	close(a.done)
	if b := j.hold.noteBarrier(&Barrier{Epoch: 5, Checkpoint: true}); !b.Snapshots() || j.hold.kinds[5].skip {
		t.Fatal("a periodic barrier after the write ended skipped the snapshot")
	}
	j.spec.State = StateOptions{}
	j.hold.writing = &asyncSnap{done: make(chan struct{})}
	if b := j.hold.noteBarrier(&Barrier{Epoch: 6, Checkpoint: true}); !b.Snapshots() {
		t.Fatal("a Pebble job's barrier skipped")
	}
}
