package storage

import (
	"encoding/binary"
	"errors"

	"encoding/json"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
)

// Batch collects one job's writes for one epoch: state changes, view row
// changes and source offsets. It is safe for concurrent use by the job's
// operators. The coordinator commits the batches of every job together.
//
// Operators that write many keys at once hand them over as Runs in key
// order (runs.go), and CommitEpoch lays the whole epoch out in key order:
// Pebble sorts a large batch before it can flush it, and a sorted one takes
// a linear pass instead of most of the commit's time.
type Batch struct {
	mu      sync.Mutex
	db      *DB
	b       *pebble.Batch   // writes made one at a time, in any order
	singles []*pebble.Batch // more such writes, from absorbed batches
	runs    []*Run
	appends []pendingAppend
	// memSnaps asks the commit to snapshot memory-backend jobs (memstate.go).
	memSnaps []memSnapReq
	// opSnaps are operators' own snapshots of their state at the epoch's
	// barrier (memory backend, memstate.go: OpSnapshot).
	opSnaps []OpSnapshot
}

// pendingAppend is a log block to append when the epoch commits.
type pendingAppend struct {
	table uint64
	part  uint32
	block []byte
}

// AppendLog queues rec to be appended to a log (a view's changelog) when
// the epoch commits; offsets are assigned then.
func (b *Batch) AppendLog(table uint64, part uint32, rec arrow.RecordBatch) error {
	block, err := EncodeBlock(rec)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.appends = append(b.appends, pendingAppend{table, part, block})
	b.mu.Unlock()
	return nil
}

// Absorb moves o's writes into b, after b's own; o must not be used
// afterwards. Operators of a job each write their part of an epoch into a
// batch of their own and hand it on with the barrier, so the writes of an
// epoch are exactly those made before each operator passed its barrier.
func (b *Batch) Absorb(o *Batch) {
	if o == nil || o == b {
		return
	}
	o.mu.Lock()
	singles := o.singles
	if !o.b.Empty() {
		singles = append(singles, o.b)
	}
	runs, appends, snaps, opSnaps := o.runs, o.appends, o.memSnaps, o.opSnaps
	o.b, o.singles, o.runs, o.appends, o.memSnaps, o.opSnaps = nil, nil, nil, nil, nil, nil
	o.mu.Unlock()
	b.mu.Lock()
	b.memSnaps = append(b.memSnaps, snaps...)
	b.opSnaps = append(b.opSnaps, opSnaps...)
	b.singles = append(b.singles, singles...)
	b.runs = append(b.runs, runs...)
	b.appends = append(b.appends, appends...)
	b.mu.Unlock()
}

// NewEpochBatch returns an empty epoch batch.
func (st State) NewEpochBatch() *Batch { return &Batch{db: st.db, b: st.db.pdb.NewBatch()} }

func stateKey(job uint64, op uint32, key []byte) []byte {
	return appendStateKey(make([]byte, 0, 14+len(key)), job, op, key)
}

func appendStateKey(k []byte, job uint64, op uint32, key []byte) []byte {
	k = append(k, "s/"...)
	k = binary.BigEndian.AppendUint64(k, job)
	k = binary.BigEndian.AppendUint32(k, op)
	return append(k, key...)
}

func viewKey(view uint64, key []byte) []byte {
	return appendViewKey(make([]byte, 0, 10+len(key)), view, key)
}

func appendViewKey(k []byte, view uint64, key []byte) []byte {
	k = append(k, "v/"...)
	k = binary.BigEndian.AppendUint64(k, view)
	return append(k, key...)
}

func offsetKey(job, table uint64, part uint32) []byte {
	k := make([]byte, 0, 22)
	k = append(k, "o/"...)
	k = binary.BigEndian.AppendUint64(k, job)
	k = binary.BigEndian.AppendUint64(k, table)
	return binary.BigEndian.AppendUint32(k, part)
}

// PutViewRow stores a view row under its key.
func (b *Batch) PutViewRow(view uint64, key, row []byte) {
	b.mu.Lock()
	b.b.Set(viewKey(view, key), row, nil)
	b.mu.Unlock()
}

// DeleteViewRow removes a view row.
func (b *Batch) DeleteViewRow(view uint64, key []byte) {
	b.mu.Lock()
	b.b.Delete(viewKey(view, key), nil)
	b.mu.Unlock()
}

// SetOffset records the offset a job has consumed a stream partition up to.
func (b *Batch) SetOffset(job, table uint64, part uint32, off uint64) {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], off)
	b.mu.Lock()
	b.b.Set(offsetKey(job, table, part), v[:], nil)
	b.mu.Unlock()
}

// Count is the number of writes in the batch.
func (b *Batch) Count() uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.b.Count()
	for _, s := range b.singles {
		n += s.Count()
	}
	for _, r := range b.runs {
		n += r.b.Count()
	}
	return n
}

// Len is the size of the batch's encoded writes in bytes.
func (b *Batch) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.b.Len()
	for _, s := range b.singles {
		n += s.Len()
	}
	for _, r := range b.runs {
		n += r.b.Len()
	}
	return n
}

// CommitEpoch commits the batches of every job, plus meta (a checkpoint
// record, may be nil under key k/<id>), atomically; sync makes it durable.
func (st State) CommitEpoch(batches []*Batch, id uint64, meta []byte, sync bool) error {
	return st.CommitEpochAt(batches, id, meta, sync, nil, nil)
}

// CommitEpochAt is CommitEpoch for a round whose barrier sat at cut: the
// cut is committed with the epoch (nil: left as it was), so a reader's
// snapshot holds the views and the stream positions they are at together.
// rp, if set, is the round's read point (readpoint.go), recorded before the
// cut is published, so a statement that waited for the cut finds it.
func (st State) CommitEpochAt(batches []*Batch, id uint64, meta []byte, sync bool, cut Cut, rp *ReadPoint) error {
	var l layout
	if cut != nil {
		l.addSet(committedCutKey, encodeCut(cut))
	}
	var appends []pendingAppend
	var mc memCommit
	for _, b := range batches {
		b.mu.Lock()
		st.db.Memory().routeLocked(b, &mc)
		err := l.addBatch(b.b)
		for _, s := range b.singles {
			if err == nil {
				err = l.addBatch(s)
			}
		}
		for _, r := range b.runs {
			l.addRun(r)
		}
		b.b, b.singles, b.runs = st.db.pdb.NewBatch(), nil, nil // the Batch may not be reused
		appends = append(appends, b.appends...)
		b.mu.Unlock()
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	if meta != nil {
		l.addSet(binary.BigEndian.AppendUint64([]byte("k/"), id), meta)
	}
	var pre *pebble.Batch
	if len(mc.runs) > 0 || len(mc.snaps) > 0 {
		pre = st.db.pdb.NewBatch()
		if err := st.db.Memory().applyWrites(&mc, &l, pre); err != nil {
			st.db.Memory().committed(&mc, err)
			return err
		}
	}
	// Changelog blocks get their offsets under their partitions' locks,
	// held until the commit is applied so offsets stay in order.
	type claim struct {
		pl   *partitionLog
		next uint64
	}
	pls := make([]*partitionLog, len(appends))
	for i, a := range appends {
		pl, err := st.db.Log().partition(a.table, a.part)
		if err != nil {
			return err
		}
		pls[i] = pl
	}
	claims := map[*partitionLog]*claim{}
	var order []*claim
	for i, a := range appends {
		pl := pls[i]
		c := claims[pl]
		if c == nil {
			pl.mu.Lock()
			c = &claim{pl: pl, next: pl.next}
			claims[pl] = c
			order = append(order, c)
		}
		l.addSet(logBlockKey(a.table, a.part, c.next), a.block)
		c.next += blockRows(a.block)
	}
	all, err := l.build(st.db.pdb)
	if err == nil && pre != nil && !pre.Empty() {
		// Range deletions first: the writes after them survive them.
		if err = pre.Apply(all, nil); err == nil {
			all = pre
		}
	}
	if err == nil {
		err = st.db.Commit(all, sync)
	} else {
		err = sqlerr.Wrap(sqlerr.IOError, err)
	}
	if pre != nil {
		st.db.Memory().committed(&mc, err)
	}
	if err == nil && rp != nil {
		st.db.Epochs().addReadPoint(rp)
	}
	if err == nil && cut != nil {
		st.db.Epochs().setCommittedCut(cut)
	}
	for _, c := range order {
		if err == nil {
			c.pl.advance(c.next)
		}
		c.pl.mu.Unlock()
	}
	return err
}

// LoadOffset returns a job's committed offset in a stream partition; ok is
// false if the job never committed one.
func (st State) LoadOffset(job, table uint64, part uint32) (off uint64, ok bool, err error) {
	v, ok, err := st.db.get(offsetKey(job, table, part))
	if err != nil || !ok {
		return 0, false, err
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// Offset is a job's committed position in one partition of a log it reads.
type Offset struct {
	Job, Table uint64
	Part       uint32
	Off        uint64
}

// Offsets returns every job's committed offsets.
func (st State) Offsets() ([]Offset, error) {
	var out []Offset
	err := st.db.scanPrefix(st.db.pdb, []byte("o/"), func(k, v []byte) error {
		if len(k) != 22 || len(v) != 8 {
			return sqlerr.New(sqlerr.DataCorrupted, "malformed offset record")
		}
		out = append(out, Offset{Job: binary.BigEndian.Uint64(k[2:]), Table: binary.BigEndian.Uint64(k[10:]),
			Part: binary.BigEndian.Uint32(k[18:]), Off: binary.BigEndian.Uint64(v)})
		return nil
	})
	return out, err
}

// Snapshot is a consistent read view that must be closed.
type Snapshot interface {
	Reader
	Close() error
}

// Snapshot returns a snapshot of the database and the end of a view's
// changelog at the same instant: changelog appends commit under the
// changelog partition's lock, so every change after the snapshot is at or
// after the returned offset.
func (vs Views) Snapshot(view uint64) (Snapshot, uint64, error) {
	pl, err := vs.db.Log().partition(view, 0)
	if err != nil {
		return nil, 0, err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return vs.db.pdb.NewSnapshot(), pl.next, nil
}

// Get returns an operator's committed state for key, or nil.
func (st State) Get(job uint64, op uint32, key []byte) ([]byte, error) {
	if m := st.db.Memory().of(job); m != nil {
		return m.get(op, key), nil
	}
	v, ok, err := st.db.get(stateKey(job, op, key))
	if !ok {
		return nil, err
	}
	return v, err
}

// Scan calls fn with every state entry of an operator (key without prefix).
func (st State) Scan(job uint64, op uint32, fn func(key, val []byte) error) error {
	if m := st.db.Memory().of(job); m != nil {
		return m.scan(op, nil, fn)
	}
	prefix := stateKey(job, op, nil)
	return st.db.scanPrefix(st.db.pdb, prefix, func(k, v []byte) error { return fn(k[len(prefix):], v) })
}

// ScanJob calls fn with every state entry a job keeps on the Pebble
// backend, with its operator (keys without the operator's prefix): tests
// count what a job left behind. A job on the memory backend keeps its
// entries in memory and has none here between checkpoints.
func (st State) ScanJob(job uint64, fn func(op uint32, key, val []byte) error) error {
	prefix := binary.BigEndian.AppendUint64([]byte("s/"), job)
	return st.db.scanPrefix(st.db.pdb, prefix, func(k, v []byte) error {
		if len(k) < len(prefix)+4 {
			return nil
		}
		return fn(binary.BigEndian.Uint32(k[len(prefix):]), k[len(prefix)+4:], v)
	})
}

// ScanPrefix calls fn with the state entries of an operator whose keys
// start with prefix (keys without the operator's prefix): an operator reads
// back a group of its state it evicted from memory.
func (st State) ScanPrefix(job uint64, op uint32, prefix []byte, fn func(key, val []byte) error) error {
	if m := st.db.Memory().of(job); m != nil {
		return m.scan(op, prefix, fn)
	}
	base := stateKey(job, op, nil)
	return st.db.scanPrefix(st.db.pdb, stateKey(job, op, prefix), func(k, v []byte) error { return fn(k[len(base):], v) })
}

// Get returns the row a view stores under key (nil: none): the
// view sink reads back a row of a multiset it evicted from memory.
func (vs Views) Get(view uint64, key []byte) ([]byte, error) {
	v, _, err := vs.db.get(viewKey(view, key))
	return v, err
}

// Scan calls fn with every row of a view as seen by r (nil: live).
func (vs Views) Scan(r Reader, view uint64, fn func(key, row []byte) error) error {
	if r == nil {
		r = vs.db.pdb
	}
	prefix := viewKey(view, nil)
	return vs.db.scanPrefix(r, prefix, func(k, v []byte) error { return fn(k[len(prefix):], v) })
}

// DeleteJobData adds to b the removal of a job's state, offsets and view rows.
func DeleteJobData(b *pebble.Batch, job uint64) {
	for _, p := range []string{"s/", "o/", "v/", "i/", "e/", "q/", "x/"} {
		start := binary.BigEndian.AppendUint64([]byte(p), job)
		b.DeleteRange(start, prefixEnd(start), nil)
	}
}

// ResetJob deletes everything job wrote (state, offsets, view rows
// and indexes, errors), durably: a distributed job's part starts a new
// generation from its sources' beginning (distjob).
func (st State) ResetJob(job uint64) error {
	b := st.db.pdb.NewBatch()
	defer b.Close()
	DeleteJobData(b, job)
	return st.db.Commit(b, true)
}

// LoadRecords returns the checkpoint records with id > after, in id order.
func (st State) LoadRecords(after uint64) ([][]byte, error) {
	var out [][]byte
	it, err := st.db.pdb.NewIter(&pebble.IterOptions{
		LowerBound: binary.BigEndian.AppendUint64([]byte("k/"), after+1),
		UpperBound: prefixEnd([]byte("k/")),
	})
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
		out = append(out, append([]byte(nil), v...))
	}
	return out, nil
}

// PutRecord replaces the checkpoint record id (a checkpoint whose upload
// to checkpoint storage failed after its commit is recorded as failed).
func (st State) PutRecord(id uint64, meta []byte) error {
	b := st.db.pdb.NewBatch()
	b.Set(binary.BigEndian.AppendUint64([]byte("k/"), id), meta, nil)
	return st.db.Commit(b, false)
}

// DeleteRecords deletes checkpoint records: the history keeps the retained
// checkpoints and the last few (checkpoint.HistoryKept), so loading it at
// startup does not grow with uptime. Not synced: a record that comes back
// after a crash is deleted again.
func (st State) DeleteRecords(ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	b := st.db.pdb.NewBatch()
	for _, id := range ids {
		b.Delete(binary.BigEndian.AppendUint64([]byte("k/"), id), nil)
	}
	return st.db.Commit(b, false)
}

// JobError is a row a job skipped under job.error_policy = 'skip' (the
// default). Stream is empty for a group's row of an aggregate, whose
// record is keyed by the group (exec.GroupErrorPartition).
type JobError struct {
	Job       string
	Stream    string
	Partition uint32
	Offset    uint64
	Code      string
	Message   string
	Row       string
	At        time.Time
}

func jobErrorKey(job uint64, part uint32, off uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte("e/"), job)
	k = binary.BigEndian.AppendUint32(k, part)
	return binary.BigEndian.AppendUint64(k, off)
}

// PutJobError records a skipped row; it commits with the epoch, so a replay
// after a crash records it exactly once.
func (b *Batch) PutJobError(job uint64, e JobError) {
	v, _ := json.Marshal(e)
	b.mu.Lock()
	b.b.Set(jobErrorKey(job, e.Partition, e.Offset), v, nil)
	b.mu.Unlock()
}

// DeleteJobError removes the record at (part, off) of job: a group whose
// row computes again is no longer left out.
func (b *Batch) DeleteJobError(job uint64, part uint32, off uint64) {
	b.mu.Lock()
	b.b.Delete(jobErrorKey(job, part, off), nil)
	b.mu.Unlock()
}

// JobErrorOffsets returns the offsets of job's records in partition part.
func (es Errors) JobErrorOffsets(job uint64, part uint32) (map[uint64]bool, error) {
	out := map[uint64]bool{}
	prefix := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte("e/"), job), part)
	err := es.db.scanPrefix(es.db.pdb, prefix, func(k, _ []byte) error {
		if len(k) == len(prefix)+8 {
			out[binary.BigEndian.Uint64(k[len(prefix):])] = true
		}
		return nil
	})
	return out, err
}

// JobErrorCounts returns how many skipped rows each job has recorded, by
// job ID (a scan of the keys only).
func (es Errors) JobErrorCounts() (map[uint64]int64, error) {
	out := map[uint64]int64{}
	err := es.db.scanPrefix(es.db.pdb, []byte("e/"), func(k, _ []byte) error {
		if len(k) >= 10 {
			out[binary.BigEndian.Uint64(k[2:10])]++
		}
		return nil
	})
	return out, err
}

// JobErrorCount returns how many skipped rows job has recorded, counting
// at most max (a scan of the keys only).
func (es Errors) JobErrorCount(job uint64, max int64) (int64, error) {
	var n int64
	stop := errors.New("enough")
	err := es.db.scanPrefix(es.db.pdb, binary.BigEndian.AppendUint64([]byte("e/"), job), func(_, _ []byte) error {
		if n++; n >= max {
			return stop
		}
		return nil
	})
	if err == stop {
		err = nil
	}
	return n, err
}

// JobErrors returns every recorded skipped row, by job then position.
func (es Errors) JobErrors() ([]JobError, error) {
	var out []JobError
	err := es.db.scanPrefix(es.db.pdb, []byte("e/"), func(_, v []byte) error {
		var e JobError
		if err := json.Unmarshal(v, &e); err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "job error record: %v", err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// Size estimates the bytes on disk of all operator state and view rows,
// memory-backend snapshot files included.
func (st State) Size() int64 {
	var n uint64
	for _, p := range []string{"s/", "v/", "i/"} {
		if u, err := st.db.pdb.EstimateDiskUsage([]byte(p), prefixEnd([]byte(p))); err == nil {
			n += u
		}
	}
	return int64(n) + st.db.Memory().SnapshotBytes()
}
