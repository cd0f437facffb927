package exec

import (
	"sync"
	"sync/atomic"

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
func (s *JobSpec) memBackend() bool { return s.State.memory() && s.View != nil }

// holdState is a job's state backend at its commits: on the memory
// backend it holds the job's epochs not yet handed to the coordinator until
// a snapshot of the state map covers them (forCheckpoint). On the Pebble
// backend it passes each epoch's writes through.
type holdState struct {
	db   *storage.DB
	spec *JobSpec
	mem  *memAccount
	// wg counts the job's goroutines; snapshot writes are among them.
	wg *sync.WaitGroup
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

// useStateBackend puts the state of the job of spec where its backend
// keeps it; called before the operators load their state.
func useStateBackend(db *storage.DB, spec *JobSpec) error {
	if spec.View == nil {
		return nil
	}
	if spec.State.memory() {
		return db.Memory().Use(spec.ID)
	}
	return db.Memory().UsePebble(spec.ID)
}

// noteBarrier records what kind of round barrier b ends and returns the
// barrier to inject: for a memory job's periodic checkpoint taken while its
// previous snapshot is still being written, a copy of b with NoSnapshot
// set (b is shared by the round's jobs), so that no operator encodes a
// snapshot that would be dropped. Decided here, once per job and barrier,
// so every instance of every operator agrees, and forCheckpoint then
// starts no write for the epoch even if the previous one has ended since.
func (h *holdState) noteBarrier(b *Barrier) *Barrier {
	if !h.spec.State.memory() {
		return b
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kinds == nil {
		h.kinds = map[uint64]barrierKind{}
	}
	skip := false
	if a := h.writing; a != nil && b.Checkpoint && !b.CatchUp && h.spec.View != nil {
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

// forCheckpoint returns what the coordinator commits for epoch, whose
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
// In between it hands over an empty batch. It returns an error, which
// fails the job, if its state outgrew its limit or a snapshot could not be
// written.
func (h *holdState) forCheckpoint(epoch uint64, w *storage.Batch) (*storage.Batch, error) {
	if !h.spec.memBackend() {
		return w, nil
	}
	h.lastAck.Store(epoch)
	if err := h.mem.check(); err != nil {
		return nil, err
	}
	if err := h.db.Memory().Apply(h.spec.ID, w); err != nil {
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
		h.pending = h.db.State().NewEpochBatch()
	}
	h.pending.AbsorbEpoch(w)
	out := h.db.State().NewEpochBatch()
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
				return nil, a.err
			}
			out = a.batch
			if !(kind.checkpoint && kind.sync) { // else superseded below
				out.CommitMemSnapshot(h.spec.ID, a.snap)
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
		if clone := h.db.Memory().Clone(h.spec.ID, ops); clone != nil {
			w := clone.Start(func(f func()) {
				h.wg.Add(1)
				go func() {
					defer h.wg.Done()
					f()
				}()
			})
			out.CommitMemWrite(h.spec.ID, w, kind.savepoint)
		}
		h.released.Store(epoch)
		return out, nil
	}
	if h.writing == nil && !kind.skip {
		clone := h.db.Memory().Clone(h.spec.ID, ops)
		a := &asyncSnap{epoch: epoch, batch: h.pending, done: make(chan struct{})}
		h.pending = nil
		h.writing = a
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer close(a.done)
			a.snap, a.err = clone.Write()
		}()
	}
	return out, nil
}

// committedAs is the epoch whose changes a commit up to epoch holds: for a
// memory job, the last checkpoint epoch it handed over.
func (h *holdState) committedAs(epoch uint64) uint64 {
	if !h.spec.memBackend() {
		return epoch
	}
	return min(epoch, h.released.Load())
}

// ackedEpoch is the last epoch the sink passed, for a memory job whose
// commits lag its sink (0 otherwise).
func (h *holdState) ackedEpoch() uint64 { return h.lastAck.Load() }
