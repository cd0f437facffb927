package exec

import (
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
)

// The state of an operator instance as opkit.State, over either backend
// (statebackend.go): operators read and commit their state through it and
// never ask which backend the job is on.

// opFactory builds the job's operator instances (aggop.go, joinop.go,
// rankop.go, session.go, temporal.go, versioned.go) with what the runtime
// gives each: its state over the job's backend (opState), its outlet, its
// share of the state cache and its late-row log.
type opFactory struct{ j *Job }

// opState returns the state of the instance inst (of par) of operator id.
func (f opFactory) opState(id uint32, inst, par int) opkit.State {
	j := f.j
	t := stateTable{db: j.db, job: j.spec.ID, op: id}
	if j.spec.memBackend() {
		return &memOpState{stateTable: t, own: func(kg int) bool { return instanceOf(kg, par) == inst }}
	}
	return &pebbleOpState{t}
}

// stateTable reads an operator's entries where the job's backend keeps them.
type stateTable struct {
	db  *storage.DB
	job uint64
	op  uint32
}

func (t *stateTable) Get(key []byte) ([]byte, error) { return t.db.State().Get(t.job, t.op, key) }

// Cursor reads the operator's entries through one iterator kept open
// between reads (opkit.Cursor).
func (t *stateTable) Cursor() opkit.Cursor { return t.db.State().Cursor(t.job, t.op) }

func (t *stateTable) Scan(fn func(key, val []byte) error) error {
	return t.db.State().Scan(t.job, t.op, fn)
}

func (t *stateTable) ScanPrefix(prefix []byte, fn func(key, val []byte) error) error {
	return t.db.State().ScanPrefix(t.job, t.op, prefix, fn)
}

// pebbleOpState writes the changed entries at every barrier.
type pebbleOpState struct{ stateTable }

func (s *pebbleOpState) Loaded() {}

func (s *pebbleOpState) Commit(w *storage.Batch, _ *op.Barrier, _, _ bool, write func(*opkit.Writer) error, _ func(uint64) *opkit.Snapshot) (bool, error) {
	if w == nil {
		return false, nil
	}
	x := opkit.NewWriter(w, s.job, s.op)
	err := write(x)
	x.Close()
	return true, err
}

// memOpState: the operator's tables are the state; the job's map lets go
// of the instance's key groups once they are loaded, nothing is written
// per epoch, and a checkpoint gets the operator's snapshot.
type memOpState struct {
	stateTable
	own  func(keyGroup int) bool
	snap opkit.SnapReuse
}

func (s *memOpState) Loaded() { s.db.Memory().Release(s.job, s.op, s.own) }

func (s *memOpState) Commit(w *storage.Batch, b *op.Barrier, changed, ttlOn bool, _ func(*opkit.Writer) error, encode func(uint64) *opkit.Snapshot) (bool, error) {
	s.snap.Note(changed)
	if w != nil && b.Snapshots() {
		w.AddOpSnapshot(s.snap.Take(s.op, b.Epoch, ttlOn, func(e uint64) *opkit.Snapshot { return encode(e).ForOp(s.op) }))
	}
	return false, nil
}

// opNode is what instance 0 of keyed operator n (a join, a rank) is given
// by the runtime: Load gives the instance its own state.
func opNode(j *Job, n *gnode, out *outlet, budget int64) opkit.Node {
	return opkit.Node{ID: n.op, Out: out, State: opFactory{j}.opState(n.op, 0, 1), Budget: budget,
		Committed: &j.committed, Bytes: &j.mem.opBytes, Evicted: &j.Evicted, TTL: j.spec.StateTTL.micros}
}
