package storage

// The memory state backend (state.backend = 'memory').
//
// No s/ key of a job on it reaches Pebble per epoch. Its operator state
// lives in one of two places:
//
//   - An operator that snapshots itself (exec: the aggregate, top-N,
//     join, SESSION and temporal filter; stateSnapshot) keeps its state
//     only in its own typed tables. It reads its entries from the map when
//     the job starts, then takes them out (Memory.Release), writes no
//     state per epoch, and at a checkpoint barrier hands the epoch's batch
//     an OpSnapshot: its canonical (key, value) entries as of the barrier,
//     in key order, immutable, which the snapshot writer reads in place of
//     the map's entries of that operator.
//   - Other state (the operators' watermarks) is written in Runs and read
//     through State.Get/State.Scan/State.ScanPrefix as on Pebble; the DB
//     routes the job's s/ keys to an ordered map on the heap (a B-tree per
//     operator).
//
// A commit that carries the job's checkpoint (Batch.SnapshotMemState,
// CommitMemWrite) writes a full snapshot of the map and the operators'
// snapshots — an Arrow IPC file per operator and range of 16 key groups
// (memsnap.go) — under memstate/ in the data directory, synced before the
// commit, and commits a pointer to it (x/<job>) with the job's offsets and
// view rows. The job hands its epochs to the coordinator only at
// checkpoints (exec: holdForCheckpoint), so the job's offsets, view rows,
// changelog and snapshot pointer in Pebble always describe one checkpoint:
// after kill -9 the job resumes from there.
//
// The canonical, backend-independent form of a job's state is its list of
// (key, value) entries. A savepoint round materializes a memory job's map
// into its s/ range (the savepoint is then self-contained and restores into
// either backend); the next commit of the job removes that range again.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"sync"

	"github.com/RaduBerinde/btreemap"
	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
)

// memState is one memory-backend job's operator state.
type memState struct {
	mu  sync.RWMutex
	ops map[uint32]*btreemap.BTreeMap[string, []byte]
	// bytes is the size of the entries' keys and values plus per-entry overhead.
	bytes int64
	// invalid is set when a commit that applied writes here failed: the
	// next Memory.Use reloads the map from the last snapshot.
	invalid bool
	// pebbleState is whether the job's s/ range in Pebble may hold entries
	// (state from the Pebble backend, or a savepoint's materialized copy);
	// the job's next snapshot commit deletes it.
	pebbleState bool
	// epoch is that of the snapshot the map equals (0: none, the map came
	// from the s/ range).
	epoch uint64
}

// memEntryOverhead approximates a map entry's cost beyond its key and
// value: the btree slot, the string and slice headers.
const memEntryOverhead = 64

func newMemState() *memState { return &memState{ops: map[uint32]*btreemap.BTreeMap[string, []byte]{}} }

func (m *memState) tree(op uint32) *btreemap.BTreeMap[string, []byte] {
	t := m.ops[op]
	if t == nil {
		t = btreemap.New[string, []byte](32, strings.Compare)
		m.ops[op] = t
	}
	return t
}

// putLocked stores a copy of key and val.
func (m *memState) putLocked(op uint32, key, val []byte) {
	_, old, replaced := m.tree(op).ReplaceOrInsert(string(key), bytes.Clone(val))
	if replaced {
		m.bytes += int64(len(val) - len(old))
		return
	}
	m.bytes += int64(len(key)+len(val)) + memEntryOverhead
}

func (m *memState) deleteLocked(op uint32, key []byte) {
	t := m.ops[op]
	if t == nil {
		return
	}
	if k, v, ok := t.Delete(string(key)); ok {
		m.bytes -= int64(len(k)+len(v)) + memEntryOverhead
	}
}

func (m *memState) get(op uint32, key []byte) []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.ops[op]
	if t == nil {
		return nil
	}
	_, v, ok := t.Get(string(key))
	if !ok {
		return nil
	}
	return bytes.Clone(v)
}

// scan calls fn with op's entries whose keys start with prefix, in key order.
// fn must not keep key or val, nor write state.
func (m *memState) scan(op uint32, prefix []byte, fn func(key, val []byte) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.ops[op]
	if t == nil {
		return nil
	}
	lo := btreemap.Min[string]()
	hi := btreemap.Max[string]()
	if len(prefix) > 0 {
		lo = btreemap.GE(string(prefix))
		if end := prefixEnd(prefix); len(end) > 0 {
			hi = btreemap.LT(string(end))
		}
	}
	var kb []byte
	for k, v := range t.Ascend(lo, hi) {
		kb = append(kb[:0], k...)
		if err := fn(kb, v); err != nil {
			return err
		}
	}
	return nil
}

// OpSnapshot is an operator instance's state at a checkpoint barrier, taken
// by the operator itself (memory backend): its canonical state entries —
// the keys (after the job and operator) and values the Pebble backend
// would hold — in key order. It must not change once handed over: the
// snapshot is written from it in the background while the operator goes
// on. The instances of one operator hold disjoint key groups.
type OpSnapshot interface {
	// Op is the operator id the entries belong to; Epoch the barrier's.
	Op() uint32
	Epoch() uint64
	Len() int
	// Entry returns the i-th entry; the slices stay valid and unchanged.
	Entry(i int) (key, val []byte)
}

// AddOpSnapshot adds an operator's snapshot of its state to b (the writes
// of the barrier it was taken at).
func (b *Batch) AddOpSnapshot(s OpSnapshot) {
	b.mu.Lock()
	b.opSnaps = append(b.opSnaps, s)
	b.mu.Unlock()
}

// TakeOpSnapshots takes the operators' snapshots out of b. If b holds the
// writes of several epochs (a late acknowledgement), an operator's
// snapshots from before its newest are dropped.
func (b *Batch) TakeOpSnapshots() []OpSnapshot {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	all := b.opSnaps
	b.opSnaps = nil
	b.mu.Unlock()
	newest := map[uint32]uint64{}
	for _, s := range all {
		newest[s.Op()] = max(newest[s.Op()], s.Epoch())
	}
	out := all[:0]
	for _, s := range all {
		if s.Epoch() == newest[s.Op()] {
			out = append(out, s)
		}
	}
	return out
}

// Release removes from job's map the entries of operator op whose
// key group own says an instance holds in its own tables now (it loaded
// them and snapshots them itself: OpSnapshot), so they are not held twice.
func (ms Memory) Release(job uint64, op uint32, own func(keyGroup int) bool) {
	m := ms.of(job)
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.ops[op]
	if t == nil {
		return
	}
	var keys []string
	for k := range t.Ascend(btreemap.Min[string](), btreemap.Max[string]()) {
		if len(k) > 0 && own(int(k[0])) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		m.deleteLocked(op, []byte(k))
	}
	if t.Len() == 0 {
		delete(m.ops, op)
	}
}

// of returns job's memory state, or nil if the job is on the Pebble backend.
func (ms Memory) of(job uint64) *memState {
	ms.db.memMu.RLock()
	defer ms.db.memMu.RUnlock()
	return ms.db.mem[job]
}

// Bytes is the size of a memory-backend job's state map (0 for a
// job on the Pebble backend).
func (ms Memory) Bytes(job uint64) int64 {
	m := ms.of(job)
	if m == nil {
		return 0
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.bytes
}

func memPointerKey(job uint64) []byte { return binary.BigEndian.AppendUint64([]byte("x/"), job) }

// loadPointer returns the job's committed snapshot pointer, if any.
func (ms Memory) loadPointer(job uint64) (*memPointer, error) {
	v, ok, err := ms.db.get(memPointerKey(job))
	if err != nil || !ok {
		return nil, err
	}
	var p memPointer
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "memory state pointer of job %d: %v", job, err)
	}
	return &p, nil
}

// Use puts job on the memory backend before its operators load
// their state: its map is loaded from its last snapshot or, if it has none
// (a new job, a job that ran on the Pebble backend, a restored savepoint),
// from its s/ range. A map already loaded is not kept: the running job
// applied its epochs to it ahead of their commit (Memory.Apply).
func (ms Memory) Use(job uint64) error {
	ms.db.memMu.Lock()
	if ms.db.mem == nil {
		ms.db.mem = map[uint64]*memState{}
	}
	delete(ms.db.mem, job)
	ms.db.memMu.Unlock()
	p, err := ms.loadPointer(job)
	if err != nil {
		return err
	}
	// A snapshot written after the last committed one never became the
	// job's (a crash, a stop while it was written): remove it.
	ms.removeSnapshotsAfter(job, p)
	m := newMemState()
	if p != nil {
		m.epoch = p.Epoch
		err = ms.readSnapshot(job, p, func(op uint32, key, val []byte) { m.putLocked(op, key, val) })
	} else {
		err = ms.db.scanPrefix(ms.db.pdb, binary.BigEndian.AppendUint64([]byte("s/"), job), func(k, v []byte) error {
			if len(k) < 14 {
				return sqlerr.New(sqlerr.DataCorrupted, "malformed state key")
			}
			m.putLocked(binary.BigEndian.Uint32(k[10:]), k[14:], v)
			m.pebbleState = true
			return nil
		})
	}
	if err != nil {
		return err
	}
	if p == nil {
		// Any s/ entries are the state; none may mean a new job.
		m.pebbleState = true
	}
	ms.db.memMu.Lock()
	ms.db.mem[job] = m
	ms.db.memMu.Unlock()
	return nil
}

// UsePebble puts job on the Pebble backend. If the job last ran on
// the memory backend, its snapshot becomes its s/ range (the snapshot, not
// whatever s/ holds, is its state) and the pointer is removed, in one
// synced commit.
func (ms Memory) UsePebble(job uint64) error {
	ms.db.memMu.Lock()
	delete(ms.db.mem, job)
	ms.db.memMu.Unlock()
	p, err := ms.loadPointer(job)
	if err != nil || p == nil {
		return err
	}
	b := ms.db.pdb.NewBatch()
	start := binary.BigEndian.AppendUint64([]byte("s/"), job)
	if err := b.DeleteRange(start, prefixEnd(start), nil); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	err = ms.readSnapshot(job, p, func(op uint32, key, val []byte) {
		_ = b.Set(stateKey(job, op, key), val, nil)
	})
	if err != nil {
		return err
	}
	_ = b.Delete(memPointerKey(job), nil)
	if err := ms.db.Commit(b, true); err != nil {
		return err
	}
	ms.removeSnapshots(job, nil)
	return nil
}

// Forget drops a job's map (the job was dropped, or its data
// was replaced by a restore: the next Memory.Use reads it again).
func (ms Memory) Forget(job uint64) {
	ms.db.memMu.Lock()
	delete(ms.db.mem, job)
	ms.db.memMu.Unlock()
}

// SnapshotMemState marks b as the batch that commits job's checkpoint on
// the memory backend: the commit writes a full snapshot of the job's map
// and of the operators' snapshots ops, and its pointer. materialize also
// writes them into the job's s/ range (a savepoint: the Pebble checkpoint
// it exports then holds the state).
func (b *Batch) SnapshotMemState(job uint64, materialize bool, ops []OpSnapshot) {
	b.mu.Lock()
	b.memSnaps = append(b.memSnaps, memSnapReq{job: job, materialize: materialize, ops: ops})
	b.mu.Unlock()
}

type memSnapReq struct {
	job         uint64
	materialize bool
	ops         []OpSnapshot
	ready       *memPointer // written already (MemClone.Write): commit only
	write       *MemWrite   // being written: the commit waits for it
}

// MemWrite is a snapshot being written in the background for the round
// that commits it (CHECKPOINT, savepoints: CommitMemWrite).
type MemWrite struct {
	c    *MemClone
	done chan struct{}
	p    *memPointer
	err  error
}

// Start writes the clone on a goroutine that spawn starts (the job's, so
// that stopping the job waits for it) and returns at once.
func (c *MemClone) Start(spawn func(func())) *MemWrite {
	w := &MemWrite{c: c, done: make(chan struct{})}
	spawn(func() {
		defer close(w.done)
		w.p, w.err = c.db.Memory().writeSnapshot(c.job, c.m, c.ops)
	})
	return w
}

// CommitMemWrite marks b as the batch that commits job's checkpoint on the
// memory backend with the snapshot w, which is being written: the commit
// waits until w's files are synced, then commits its pointer. materialize
// also writes w's entries into the job's s/ range (a savepoint).
func (b *Batch) CommitMemWrite(job uint64, w *MemWrite, materialize bool) {
	b.mu.Lock()
	b.memSnaps = append(b.memSnaps, memSnapReq{job: job, materialize: materialize, write: w})
	b.mu.Unlock()
}

// CommitMemSnapshot marks b as the batch that commits job's snapshot p,
// written in the background (MemClone.Write), as the job's state: its
// pointer is committed with b, and the job's older snapshots go after.
func (b *Batch) CommitMemSnapshot(job uint64, p *MemSnapshot) {
	b.mu.Lock()
	b.memSnaps = append(b.memSnaps, memSnapReq{job: job, ready: p.p})
	b.mu.Unlock()
}

// Apply applies the state writes of memory job job in b to the
// job's map now, and takes them out of b: the map then holds the state as
// of b's epoch, ahead of b's commit, so that a snapshot of it can be
// written while the epoch waits (exec holds a memory job's epochs until
// their snapshot is durable). A job restarting reloads the map from its
// last committed snapshot, so running ahead is never seen.
func (ms Memory) Apply(job uint64, b *Batch) error {
	m := ms.of(job)
	if m == nil || b == nil {
		return nil
	}
	b.mu.Lock()
	var mine []*pebble.Batch
	kept := b.runs[:0]
	for _, r := range b.runs {
		if j, ok := stateJob(r.first); ok && j == job {
			mine = append(mine, r.b)
			continue
		}
		kept = append(kept, r)
	}
	for i := len(kept); i < len(b.runs); i++ {
		b.runs[i] = nil
	}
	b.runs = kept
	b.mu.Unlock()
	var keep *Run // writes of other keys found in those runs (not expected)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rb := range mine {
		r := rb.Reader()
		for {
			kind, k, v, ok, err := r.Next()
			if err != nil {
				return sqlerr.Wrap(sqlerr.IOError, err)
			}
			if !ok {
				break
			}
			if j, isState := stateJob(k); !isState || j != job {
				// Not expected in an operator's run; keep it for Pebble.
				if keep == nil {
					keep = b.NewRun()
					keep.ordered = false
				}
				if kind == pebble.InternalKeyKindDelete {
					_ = keep.b.Delete(k, nil)
				} else {
					_ = keep.b.Set(k, v, nil)
				}
				continue
			}
			op := binary.BigEndian.Uint32(k[10:])
			if kind == pebble.InternalKeyKindDelete {
				m.deleteLocked(op, k[14:])
			} else {
				m.putLocked(op, k[14:], v)
			}
		}
	}
	if keep != nil {
		b.mu.Lock()
		b.runs = append(b.runs, keep)
		b.mu.Unlock()
	}
	return nil
}

// MemClone is a copy-on-write copy of a memory job's map, taken at a
// checkpoint barrier, to write as a snapshot in the background while the
// job goes on changing its map.
type MemClone struct {
	db  *DB
	job uint64
	m   *memState
	ops []OpSnapshot
}

// MemSnapshot is a snapshot written by MemClone.Write, not committed yet.
type MemSnapshot struct {
	p *memPointer
	// Bytes is the size of its files.
	Bytes int64
}

// Clone returns a lazy copy of job's map (nil if the job is not on
// the memory backend), to write with the operators' snapshots ops. Cloning
// marks the map's nodes shared: the job's next writes copy the nodes they
// change, the clone's reads copy nothing.
func (ms Memory) Clone(job uint64, ops []OpSnapshot) *MemClone {
	m := ms.of(job)
	if m == nil {
		return nil
	}
	c := newMemState()
	m.mu.Lock()
	for op, t := range m.ops {
		c.ops[op] = t.Clone()
	}
	c.bytes = m.bytes
	m.mu.Unlock()
	return &MemClone{db: ms.db, job: job, m: c, ops: ops}
}

// Write writes the clone as the job's next snapshot and syncs it.
func (c *MemClone) Write() (*MemSnapshot, error) {
	p, err := c.db.Memory().writeSnapshot(c.job, c.m, c.ops)
	if err != nil {
		return nil, err
	}
	s := &MemSnapshot{p: p}
	for _, f := range p.Files {
		s.Bytes += f.Bytes
	}
	return s, nil
}

// memCommit is what CommitEpochAt does for memory-backend jobs.
type memCommit struct {
	runs  []*pebble.Batch // runs of memory jobs' state writes
	snaps []memSnapReq
	// touched lists the maps the runs write, to invalidate if the commit fails.
	touched  map[*memState]bool
	pointers map[uint64]*memPointer
}

// routeMemState takes the runs of memory jobs' state out of b (b.mu held):
// an operator's run holds only its own state keys.
func (ms Memory) routeLocked(b *Batch, mc *memCommit) {
	mc.snaps = append(mc.snaps, b.memSnaps...)
	b.memSnaps = nil
	b.opSnaps = nil // taken by the job if it snapshots (exec: holdForCheckpoint)
	ms.db.memMu.RLock()
	n := len(ms.db.mem)
	ms.db.memMu.RUnlock()
	if n == 0 {
		return
	}
	kept := b.runs[:0]
	for _, r := range b.runs {
		if job, ok := stateJob(r.first); ok && ms.of(job) != nil {
			mc.runs = append(mc.runs, r.b)
			continue
		}
		kept = append(kept, r)
	}
	for i := len(kept); i < len(b.runs); i++ {
		b.runs[i] = nil
	}
	b.runs = kept
}

// stateJob returns the job of state key k.
func stateJob(k []byte) (uint64, bool) {
	if len(k) < 14 || k[0] != 's' || k[1] != '/' {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[2:]), true
}

// applyWrites applies the routed runs to their maps, then writes the
// requested snapshots and adds their pointers (and, for savepoints, the
// materialized entries) to l; pre receives range deletions that must
// precede l's writes. Called before the Pebble commit; on its failure the
// caller invalidates the touched maps.
func (ms Memory) applyWrites(mc *memCommit, l *layout, pre *pebble.Batch) error {
	mc.touched = map[*memState]bool{}
	for _, rb := range mc.runs {
		r := rb.Reader()
		for {
			kind, k, v, ok, err := r.Next()
			if err != nil {
				return sqlerr.Wrap(sqlerr.IOError, err)
			}
			if !ok {
				break
			}
			job, isState := stateJob(k)
			m := ms.of(job)
			if !isState || m == nil {
				// Not expected in an operator's run; keep it in Pebble.
				l.addSet(bytes.Clone(k), bytes.Clone(v))
				if kind == pebble.InternalKeyKindDelete {
					l.segs[len(l.segs)-1].kind = kind
				}
				continue
			}
			mc.touched[m] = true
			op := binary.BigEndian.Uint32(k[10:])
			m.mu.Lock()
			if kind == pebble.InternalKeyKindDelete {
				m.deleteLocked(op, k[14:])
			} else {
				m.putLocked(op, k[14:], v)
			}
			m.mu.Unlock()
		}
	}
	mc.pointers = map[uint64]*memPointer{}
	for _, s := range mc.snaps {
		m := ms.of(s.job)
		if m == nil {
			continue
		}
		mc.touched[m] = true
		p := s.ready
		// What a savepoint materializes: the map and the operators'
		// snapshots the files are written from.
		src, ops := m, s.ops
		switch {
		case s.write != nil:
			<-s.write.done
			if s.write.err != nil {
				return s.write.err
			}
			p, src, ops = s.write.p, s.write.c.m, s.write.c.ops
		case p == nil:
			var err error
			if p, err = ms.writeSnapshot(s.job, m, s.ops); err != nil {
				return err
			}
		}
		mc.pointers[s.job] = p
		m.mu.Lock()
		m.epoch = p.Epoch
		m.mu.Unlock()
		v, _ := json.Marshal(p)
		l.addSet(memPointerKey(s.job), v)
		start := binary.BigEndian.AppendUint64([]byte("s/"), s.job)
		m.mu.Lock()
		drop := m.pebbleState || s.materialize
		m.pebbleState = s.materialize
		m.mu.Unlock()
		if drop {
			if err := pre.DeleteRange(start, prefixEnd(start), nil); err != nil {
				return sqlerr.Wrap(sqlerr.IOError, err)
			}
		}
		if s.materialize {
			materializeMem(l, s.job, src, ops)
		}
	}
	return nil
}

// materializeMem adds job's state, m's entries and the operators'
// snapshots ops (which replace m's entries of their operators), to l as
// the job's s/ range.
func materializeMem(l *layout, job uint64, m *memState, ops []OpSnapshot) {
	own := opsOf(ops)
	m.mu.RLock()
	for op, t := range m.ops {
		if own[op] != nil {
			continue
		}
		for k, v := range t.Ascend(btreemap.Min[string](), btreemap.Max[string]()) {
			l.addSet(stateKey(job, op, []byte(k)), v)
		}
	}
	m.mu.RUnlock()
	for _, o := range ops {
		for i := range o.Len() {
			k, v := o.Entry(i)
			l.addSet(stateKey(job, o.Op(), k), v)
		}
	}
}

// committed finishes a commit: on failure the touched maps are no longer
// the committed state; on success old snapshots are removed.
func (ms Memory) committed(mc *memCommit, err error) {
	if err != nil {
		for m := range mc.touched {
			m.mu.Lock()
			m.invalid = true
			m.mu.Unlock()
		}
		return
	}
	for job, p := range mc.pointers {
		ms.removeSnapshots(job, p)
	}
}

// HasSnapshot reports whether job's state is in memory-backend snapshot
// files (a pointer x/<job>) rather than in its s/ range.
func (ms Memory) HasSnapshot(job uint64) bool {
	p, err := ms.loadPointer(job)
	return err == nil && p != nil
}

// AbsorbEpoch moves the writes of a later epoch o into b (a memory job's
// epochs held until a checkpoint). The writes of different epochs may touch
// the same keys, so they lose their place in key order: each epoch's single
// writes and runs become unordered runs, which CommitEpochAt applies in the
// order of their epochs rather than of their keys.
func (b *Batch) AbsorbEpoch(o *Batch) {
	if o == nil || o == b {
		return
	}
	b.unorder()
	o.unorder()
	b.Absorb(o)
}

// unorder turns b's writes into unordered runs, in the order they apply.
func (b *Batch) unorder() {
	b.mu.Lock()
	defer b.mu.Unlock()
	var runs []*Run
	for _, s := range b.singles {
		runs = append(runs, &Run{b: s})
	}
	if b.b != nil && !b.b.Empty() {
		runs = append(runs, &Run{b: b.b})
		b.b = b.db.pdb.NewBatch()
	}
	for _, r := range b.runs {
		r.ordered = false
		runs = append(runs, r)
	}
	b.singles, b.runs = nil, runs
}

// Drop forgets a dropped job's map and removes its snapshot
// files (its pointer went with DeleteJobData).
func (ms Memory) Drop(job uint64) {
	ms.Forget(job)
	ms.removeSnapshots(job, nil)
}

// Entries counts job's committed operator state entries: those of its
// last committed snapshot (else of its map) on the memory backend, of its
// s/ range on Pebble. It reads them all, so it is for tests and benchmarks
// (the boundedness run), not hot paths.
func (st State) Entries(job uint64) (int64, error) {
	if m := st.db.Memory().of(job); m != nil {
		if p, err := st.db.Memory().loadPointer(job); err != nil || p != nil {
			var n int64
			if p != nil {
				for _, f := range p.Files {
					n += f.Rows
				}
			}
			return n, err
		}
		m.mu.RLock()
		defer m.mu.RUnlock()
		var n int64
		for _, t := range m.ops {
			n += int64(t.Len())
		}
		return n, nil
	}
	var n int64
	err := st.db.scanPrefix(st.db.pdb, binary.BigEndian.AppendUint64([]byte("s/"), job), func(k, v []byte) error {
		n++
		return nil
	})
	return n, err
}
