package exec

// State backends (state.backend). Operators do not know which one a job
// uses: they write their changed state into Runs and read it back through
// storage.DB.GetState/ScanState/ScanStatePrefix, and storage keeps a memory
// job's entries on the heap (storage/memstate.go). What differs here:
//
//   - Starting: the job's state is put where its backend keeps it
//     (storage.DB.UseMemoryState / UsePebbleState), converting it if the
//     job last ran on the other backend.
//   - Committing: a memory job hands the coordinator its epochs' writes
//     only at checkpoints (holdForCheckpoint), with a request to snapshot
//     its state in the same commit, so its view rows, changelog and offsets
//     in Pebble always match a snapshot. Its views therefore advance at
//     each checkpoint, as a Flink two-phase-commit sink does.
//   - Memory: the state may not grow beyond State.MemoryLimit; past it the
//     job fails with 53200 and its restart strategy applies.
//   - Memory jobs never evict state to Pebble (StateCacheBytes is 0).

import (
	"sync"
	"sync/atomic"

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

// holdState is a memory job's epochs not yet handed to the coordinator.
type holdState struct {
	mu      sync.Mutex
	pending *storage.Batch
	// kinds records, per injected epoch, whether it is a checkpoint and
	// whether a savepoint.
	kinds map[uint64]barrierKind
	// released is the last epoch handed over with a checkpoint; lastAck
	// the last epoch the sink passed.
	released atomic.Uint64
	lastAck  atomic.Uint64
}

type barrierKind struct{ checkpoint, savepoint bool }

// useStateBackend puts the job's state where its backend keeps it; called
// before the operators load their state.
func (j *Job) useStateBackend() error {
	if !j.durable() {
		return nil
	}
	if j.spec.State.memory() {
		return j.db.UseMemoryState(j.spec.ID)
	}
	return j.db.UsePebbleState(j.spec.ID)
}

// noteBarrier records what kind of round barrier b ends.
func (j *Job) noteBarrier(b *Barrier) {
	if !j.spec.State.memory() {
		return
	}
	h := &j.hold
	h.mu.Lock()
	if h.kinds == nil {
		h.kinds = map[uint64]barrierKind{}
	}
	h.kinds[b.Epoch] = barrierKind{b.Checkpoint, b.Savepoint}
	h.mu.Unlock()
}

// holdForCheckpoint returns what the coordinator commits for epoch, whose
// writes are w: w itself on the Pebble backend. A memory job keeps its
// epochs' writes until a checkpoint's epoch and then hands them over
// together, asking the commit to snapshot its state; in between it hands
// over an empty batch. It fails the job if its state outgrew its limit.
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
	h.mu.Lock()
	defer h.mu.Unlock()
	kind := h.kinds[epoch]
	for e := range h.kinds {
		if e <= epoch {
			delete(h.kinds, e)
		}
	}
	if h.pending == nil {
		h.pending = j.db.NewEpochBatch()
	}
	h.pending.AbsorbEpoch(w)
	if !kind.checkpoint {
		return j.db.NewEpochBatch(), nil
	}
	out := h.pending
	h.pending = nil
	out.SnapshotMemState(j.spec.ID, kind.savepoint)
	h.released.Store(epoch)
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

// memoryLimited reports whether the job's state has a bound to check.
func (j *Job) memoryLimited() bool {
	return j.spec.State.memory() && j.spec.State.MemoryLimit > 0 && j.durable()
}

// checkMemoryLimit fails with 53200 if the job's state (its operators'
// accounted bytes plus its state map) exceeds state.memory_limit. Besides
// each barrier, operators call it after every input batch (sizedOp), so
// one epoch cannot carry the state far past the limit: the overshoot is at
// most one batch's growth. It reads a few atomics and the map's size.
func (j *Job) checkMemoryLimit() error {
	if !j.memoryLimited() {
		return nil
	}
	lim := j.spec.State.MemoryLimit
	if used := j.StateBytes() + j.db.MemStateBytes(j.spec.ID); used > lim {
		return sqlerr.New(sqlerr.OutOfMemory, "job %s: state of %s exceeds state.memory_limit (%s) on the memory backend",
			j.spec.Name, FormatMemory(used), FormatMemory(lim))
	}
	return nil
}

// sizedOp is an operator that can report its state's size between
// barriers (into the job's opBytes), for checkMemoryLimit.
type sizedOp interface{ reportBytes() }
