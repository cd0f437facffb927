package exec

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// State backends.
const (
	BackendPebble = "pebble"
	BackendMemory = "memory"
)

// StateOptions chooses a job's state backend.
type StateOptions struct {
	// Backend is BackendPebble ("" too) or BackendMemory.
	Backend string
	// MemoryLimit bounds a memory job's state in bytes (0: no bound).
	MemoryLimit int64
}

func (o StateOptions) memory() bool { return o.Backend == BackendMemory }

// memBackend reports whether the job's state is on the memory backend (a
// view's job: a change stream keeps no state).
func (j *Job) memBackend() bool { return j.spec.State.memory() && j.durable() }

// holdState is a memory job's epochs not yet handed to the coordinator.
type holdState struct {
	mu sync.Mutex
	// pending holds the writes (all but state: Memory.Apply) of the
	// epochs after the last snapshot taken.
	pending *storage.Batch
	// writing is the snapshot being written in the background, if any.
	writing *asyncSnap
	// kinds records, per injected epoch, what kind of round it ends.
	kinds map[uint64]barrierKind
	// released is the last epoch handed over with a checkpoint; lastAck
	// the last epoch the sink passed.
	released atomic.Uint64
	lastAck  atomic.Uint64
}

// barrierKind: a checkpoint, a savepoint; sync for a round whose caller
// waits for the job's state to be committed (CHECKPOINT, savepoints).
// skip: a periodic checkpoint taken while the previous snapshot was still
// being written (Barrier.NoSnapshot): its operators took none, so it
// writes none.
type barrierKind struct{ checkpoint, savepoint, sync, skip bool }

// asyncSnap is a snapshot of a memory job's map at a periodic checkpoint
// epoch, written by a goroutine of the job; batch holds the writes of the
// epochs up to it, committed with its pointer once it is durable.
type asyncSnap struct {
	epoch uint64
	batch *storage.Batch
	done  chan struct{}
	snap  *storage.MemSnapshot
	err   error
}

// useStateBackend puts the job's state where its backend keeps it; called
// before the operators load their state.
func (j *Job) useStateBackend() error {
	if !j.durable() {
		return nil
	}
	if j.spec.State.memory() {
		return j.db.Memory().Use(j.spec.ID)
	}
	return j.db.Memory().UsePebble(j.spec.ID)
}

// noteBarrier records what kind of round barrier b ends and returns the
// barrier to inject: for a memory job's periodic checkpoint taken while its
// previous snapshot is still being written, a copy of b with NoSnapshot
// set (b is shared by the round's jobs), so that no operator encodes a
// snapshot that would be dropped. Decided here, once per job and barrier,
// so every instance of every operator agrees, and holdForCheckpoint then
// starts no write for the epoch even if the previous one has ended since.
func (j *Job) noteBarrier(b *Barrier) *Barrier {
	if !j.spec.State.memory() {
		return b
	}
	h := &j.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kinds == nil {
		h.kinds = map[uint64]barrierKind{}
	}
	skip := false
	if a := h.writing; a != nil && b.Checkpoint && !b.CatchUp && j.durable() {
		select {
		case <-a.done:
		default:
			skip = true
		}
	}
	h.kinds[b.Epoch] = barrierKind{b.Checkpoint, b.Savepoint, b.CatchUp, skip}
	if skip {
		c := *b
		c.NoSnapshot = true
		b = &c
	}
	return b
}

// holdForCheckpoint returns what the coordinator commits for epoch, whose
// writes are w: w itself on the Pebble backend. A memory job applies its
// state writes to its map at once (storage.Memory.Apply) and keeps the
// rest of its epochs' writes (view rows, changelog, offsets) until a
// snapshot of the map that covers them is durable, so that its view rows
// and offsets in Pebble always match a committed snapshot:
//
//   - at a periodic checkpoint, it takes a copy-on-write clone of the map
//     and writes it in the background (Flink's asynchronous heap snapshot):
//     the round does not wait for it. The held epochs are handed over, with
//     the snapshot's pointer, in the first round after the files are synced.
//     If the previous snapshot is still being written, this checkpoint
//     takes none for the job: its epochs wait for the next one.
//   - at a CHECKPOINT or savepoint round the caller waits for the job's
//     state: the snapshot (after the background one, if any, is done) is
//     written on a job goroutine from the barrier on, and the round's
//     commit waits for its files (storage.Batch.CommitMemWrite), so the
//     epoch commits with its snapshot. The job's operators go on; the
//     round, and so the next epoch of every job, waits.
//
// In between it hands over an empty batch. It fails the job if its state
// outgrew its limit or a snapshot could not be written.
func (j *Job) holdForCheckpoint(epoch uint64, w *storage.Batch) (*storage.Batch, error) {
	if !j.spec.State.memory() || !j.durable() {
		return w, nil
	}
	h := &j.hold
	h.lastAck.Store(epoch)
	if err := j.checkMemoryLimit(); err != nil {
		j.fail(err)
		return nil, err
	}
	if err := j.db.Memory().Apply(j.spec.ID, w); err != nil {
		j.fail(err)
		return nil, err
	}
	// The snapshots the operators that hold their own state took at this
	// barrier (a checkpoint's): used below if this epoch snapshots.
	ops := w.TakeOpSnapshots()
	h.mu.Lock()
	defer h.mu.Unlock()
	kind := h.kinds[epoch]
	for e := range h.kinds {
		if e <= epoch {
			delete(h.kinds, e)
		}
	}
	if h.pending == nil {
		h.pending = j.db.State().NewEpochBatch()
	}
	h.pending.AbsorbEpoch(w)
	out := j.db.State().NewEpochBatch()
	if a := h.writing; a != nil {
		ready := false
		select {
		case <-a.done:
			ready = true
		default:
		}
		if !ready && kind.checkpoint && kind.sync {
			<-a.done // a background write runs on a job goroutine: it ends
			ready = true
		}
		if ready {
			h.writing = nil
			if a.err != nil {
				j.fail(a.err)
				return nil, a.err
			}
			out = a.batch
			if !(kind.checkpoint && kind.sync) { // else superseded below
				out.CommitMemSnapshot(j.spec.ID, a.snap)
				h.released.Store(a.epoch)
			}
		}
	}
	if !kind.checkpoint {
		return out, nil
	}
	if kind.sync {
		// The snapshot is written from here on, on a job goroutine, while
		// the round goes on aligning the other jobs; its commit waits for
		// the files.
		out.AbsorbEpoch(h.pending)
		h.pending = nil
		if clone := j.db.Memory().Clone(j.spec.ID, ops); clone != nil {
			w := clone.Start(func(f func()) {
				j.wg.Add(1)
				go func() {
					defer j.wg.Done()
					f()
				}()
			})
			out.CommitMemWrite(j.spec.ID, w, kind.savepoint)
		}
		h.released.Store(epoch)
		return out, nil
	}
	if h.writing == nil && !kind.skip {
		clone := j.db.Memory().Clone(j.spec.ID, ops)
		a := &asyncSnap{epoch: epoch, batch: h.pending, done: make(chan struct{})}
		h.pending = nil
		h.writing = a
		j.wg.Add(1)
		go func() {
			defer j.wg.Done()
			defer close(a.done)
			a.snap, a.err = clone.Write()
		}()
	}
	return out, nil
}

// committedAs is the epoch whose changes a commit up to epoch holds: for a
// memory job, the last checkpoint epoch it handed over.
func (j *Job) committedAs(epoch uint64) uint64 {
	if !j.spec.State.memory() || !j.durable() {
		return epoch
	}
	return min(epoch, j.hold.released.Load())
}

// ackedEpoch is the last epoch the sink passed, for a memory job whose
// commits lag its sink (0 otherwise).
func (j *Job) ackedEpoch() uint64 { return j.hold.lastAck.Load() }

// StateBackend is the job's state backend.
func (j *Job) StateBackend() string {
	if j.spec.State.memory() {
		return BackendMemory
	}
	return BackendPebble
}

// Parallelism is the number of instances of each of the job's stateful operators.
func (j *Job) Parallelism() int { return max(1, j.spec.Parallelism) }

// memoryLimited reports whether the job's memory has a bound to check:
// state.memory_limit on the memory backend, job.memory_limit on either.
func (j *Job) memoryLimited() bool {
	return j.durable() && (j.spec.State.memory() && j.spec.State.MemoryLimit > 0 || j.spec.MemoryLimit > 0)
}

// checkMemoryLimit fails with 53200 if the job's state (its operators'
// accounted bytes plus its state map) exceeds state.memory_limit on the
// memory backend, or if that state plus the epoch's uncommitted view
// writes exceed job.memory_limit. Besides each barrier, operators call it
// after every input batch (sizedOp) and the sink after every chunk, so one
// epoch cannot carry the job far past the limit: the overshoot is at most
// one batch's growth. It reads a few atomics and the map's size.
func (j *Job) checkMemoryLimit() error {
	if !j.memoryLimited() {
		return nil
	}
	state := j.StateBytes()
	if lim := j.spec.State.MemoryLimit; j.spec.State.memory() && lim > 0 && state > lim {
		return sqlerr.New(sqlerr.OutOfMemory, "job %s: state of %s exceeds state.memory_limit (%s) on the memory backend",
			j.spec.Name, plan.FormatMemory(state), plan.FormatMemory(lim))
	}
	if lim, writes := j.spec.MemoryLimit, j.epochBytes.Load(); lim > 0 && state+writes > lim {
		return &sqlerr.Error{Code: sqlerr.OutOfMemory,
			Msg: fmt.Sprintf("view %s: its job needs more than job.memory_limit (%s)", j.spec.Name, plan.FormatMemory(lim)),
			Detail: fmt.Sprintf("%s of operator state in memory and %s of view rows not yet committed; "+
				"a join without equality keys (a cross join) pairs every row of one input with every row of the other", plan.FormatMemory(state), plan.FormatMemory(writes))}
	}
	return nil
}

// sizedOp is an operator that can report its state's size between
// barriers (into the job's opBytes), for checkMemoryLimit.
type sizedOp interface{ reportBytes() }
