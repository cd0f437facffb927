package opkit

import (
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/storage"
)

// State is an operator instance's state table: the entries of the key
// groups it owns (an entry's key starts with its key group), whichever
// backend holds them. The runtime makes one per instance (exec/opstate.go).
type State interface {
	// Get returns the value of key, nil if it has none.
	Get(key []byte) ([]byte, error)
	// Scan calls fn for every entry of the operator, in key order, and
	// ScanPrefix for those whose key starts with prefix. key and val are
	// valid during the call only.
	Scan(fn func(key, val []byte) error) error
	ScanPrefix(prefix []byte, fn func(key, val []byte) error) error
	// Loaded is called once the instance has read its state into its own
	// tables: a backend that keeps the state in those tables lets go of
	// its own copy of the instance's key groups.
	Loaded()
	// Commit hands the epoch's state over at barrier b into w (nil for a
	// job without state, when it does nothing). changed says whether the
	// state changed in the epoch. A backend that writes per epoch calls
	// write with a Writer for the epoch's changed entries; a backend that
	// holds the state in the operator's tables writes nothing per epoch
	// and, at a barrier that snapshots, adds encode's snapshot (or the
	// last one again when nothing changed since and ttlOn is as it was).
	// It returns whether write was called.
	Commit(w *storage.Batch, b *op.Barrier, changed, ttlOn bool, write func(*Writer) error, encode func(epoch uint64) *Snapshot) (bool, error)
}

// Writer writes an operator's changed entries into an epoch's batch, in
// one run made at the first write.
type Writer struct {
	w    *storage.Batch
	r    *storage.Run
	job  uint64
	op   uint32
	size int
}

// NewWriter returns a Writer of operator op of job into w.
func NewWriter(w *storage.Batch, job uint64, op uint32) *Writer {
	return &Writer{w: w, job: job, op: op}
}

// Reserve makes the run, if not made yet, with room for about size bytes.
func (x *Writer) Reserve(size int) { x.size = size }

func (x *Writer) run() *storage.Run {
	if x.r == nil {
		if x.size > 0 {
			x.r = x.w.NewRunSized(x.size)
		} else {
			x.r = x.w.NewRun()
		}
	}
	return x.r
}

// Put sets key to val; Delete removes key. Keys come in ascending order.
func (x *Writer) Put(key, val []byte) { x.run().PutState(x.job, x.op, key, val) }
func (x *Writer) Delete(key []byte)   { x.run().DeleteState(x.job, x.op, key) }

// Close adds the run, if any, to the batch.
func (x *Writer) Close() {
	if x.r != nil {
		x.w.AddRun(x.r)
		x.r = nil
	}
}

// Snapshot holds an operator instance's entries at a checkpoint barrier,
// as the operator writes them per epoch, sorted by key. It is built on
// the instance's goroutine at the barrier, so it is the barrier's state,
// and read by the snapshot writer while the instance goes on; nothing of
// it is kept once the snapshot is written (storage.OpSnapshot).
type Snapshot struct {
	op      uint32
	epoch   uint64
	Entries SortedKeys
}

// NewSnapshot returns an empty snapshot of operator op at epoch. An
// operator behind a State may give op 0: the State names its operator
// (ForOp) before it hands the snapshot on.
func NewSnapshot(op uint32, epoch uint64) *Snapshot { return &Snapshot{op: op, epoch: epoch} }

// ForOp sets the operator s belongs to and returns s.
func (s *Snapshot) ForOp(op uint32) *Snapshot {
	s.op = op
	return s
}

func (s *Snapshot) Op() uint32    { return s.op }
func (s *Snapshot) Epoch() uint64 { return s.epoch }
func (s *Snapshot) Len() int      { return len(s.Entries.Keys) }

// Entry reads the buffer, not SortedKeys.Key (its scratch is not the
// snapshot's to share between goroutines).
func (s *Snapshot) Entry(i int) (key, val []byte) {
	sp := s.Entries.spans[s.Entries.Keys[i].Idx()]
	return s.Entries.buf[sp[0]:sp[1]:sp[1]], s.Entries.buf[sp[1]:sp[2]:sp[2]]
}

// SnapReuse is an operator instance's last snapshot, kept while its state
// does not change, so that a checkpoint with nothing new hands it over
// again instead of encoding it all. It is dropped as soon as the state
// changes (Note), so the encoded copy is held beside the tables only
// while they are unchanged.
type SnapReuse struct {
	last    *Snapshot
	changed bool
	ttlOn   bool // the TTL was on when last was encoded (entries carry clocks)
}

// Note records, at every barrier, whether the instance's state changed in
// the epoch (its dirty set, complete as a per-epoch write has it, before
// it is cleared).
func (r *SnapReuse) Note(changed bool) {
	if changed {
		r.changed, r.last = true, nil
	}
}

// Take returns the instance's snapshot for epoch: the last one's entries
// when nothing changed since and the TTL is as it was, else encode's.
func (r *SnapReuse) Take(op uint32, epoch uint64, ttlOn bool, encode func(uint64) *Snapshot) *Snapshot {
	if r.last != nil && !r.changed && r.ttlOn == ttlOn {
		s := &Snapshot{op: op, epoch: epoch, Entries: r.last.Entries}
		r.last = s
		return s
	}
	s := encode(epoch)
	r.last, r.changed, r.ttlOn = s, false, ttlOn
	return s
}

// Last is the snapshot kept (tests).
func (r *SnapReuse) Last() *Snapshot { return r.last }

// Cursor reads state entries through one read view kept open between
// reads (on Pebble, one iterator): an operator that reads back many
// evicted groups in an epoch opens it once. It sees the state as when it
// was first read after Close; the operator closes it at every barrier,
// before it evicts, so a later read sees what the barrier committed.
type Cursor interface {
	Get(key []byte) ([]byte, error) // the value is valid until the next read
	ScanPrefix(prefix []byte, fn func(key, val []byte) error) error
	Close() error
}

// CursorState is a State that gives a Cursor.
type CursorState interface {
	State
	Cursor() Cursor
}

// CursorOf returns st's Cursor, or, for a State without one, a Cursor
// that reads st directly (Close does nothing).
func CursorOf(st State) Cursor {
	if c, ok := st.(CursorState); ok {
		return c.Cursor()
	}
	return plainCursor{st}
}

type plainCursor struct{ State }

func (plainCursor) Close() error { return nil }
