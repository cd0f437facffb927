package exec

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// epochSink is the runtime's contract with a job's sink, the first phase
// of each epoch's two-phase commit: open loads what the sink keeps; write
// applies a chunk of changes into the epoch's writes; prepare ends the
// epoch at its aligned barrier and returns its writes (nil: nothing to
// commit, as for a change stream), which the runtime hands over with the
// barrier's acknowledgement (AwaitBarrier). The checkpoint coordinator
// commits them, the second phase, and tells the job (Job.Committed).
type epochSink interface {
	open() error
	write(m msg) error
	prepare(m msg) (*storage.Batch, error)
}

// sinkTask runs a job's sink: it aligns the barriers of the sink's inputs,
// hands each chunk to write and, at each aligned barrier, acknowledges the
// epoch with what prepare returns.
type sinkTask struct {
	j   *Job
	s   epochSink
	ins []chan msg
}

func (t *sinkTask) run() error {
	j := t.j
	if err := t.s.open(); err != nil {
		return err
	}
	al := newAligner(t.ins, j.spec.AtLeastOnce, j.ctx.Done())
	for {
		m, ok := al.next()
		if !ok {
			return nil
		}
		if m.barrier == nil {
			if err := t.s.write(m); err != nil {
				return err
			}
			continue
		}
		w, err := t.s.prepare(m)
		if err != nil || w == nil {
			if err != nil {
				return err
			}
			continue
		}
		select {
		case j.acks <- ack{m.barrier.Epoch, w}:
		case <-j.ctx.Done():
			return nil
		}
	}
}

// viewSink is the job's epochSink: it applies the changes that reach the
// root of the graph to the view's rows (or hands them to a change stream)
// in the epoch's writes.
type viewSink struct {
	j    *Job
	ectx *expr.Ctx
	root *gedge
	agg  *plan.HashAgg // the aggregate at the root, if any
	// outTs are the view's column types.
	outTs []types.T
	// w holds the sink's writes of the current epoch; prepare hands it
	// over, and a new one takes its place.
	w         *storage.Batch
	rs        rowSink
	ixw       *plan.IndexWriter
	writeLog  bool
	key, row  []byte
	survived  []int32
	failedNow []bool // the changes of the chunk whose group row failed
	// askedBarrier: the epoch's view writes passed half of
	// job.memory_limit and the sink asked for the next barrier.
	askedBarrier bool
	// groupErrs holds the record offsets of the groups left out of the
	// view because their row failed (job.error_policy = 'skip';
	// rowerrors.go).
	groupErrs map[uint64]bool
}

func newViewSink(j *Job) *viewSink {
	vs := &viewSink{j: j, ectx: j.exprCtx(), root: j.g.root}
	if vs.root.from.kind == nAgg {
		vs.agg = vs.root.from.agg
	}
	if v := j.spec.View; v != nil {
		for _, c := range v.Columns {
			vs.outTs = append(vs.outTs, c.Type)
		}
	}
	return vs
}

// open reads what the sink keeps of the view: the groups whose row failed,
// and the multiset or sequence of a view without aggregation.
func (vs *viewSink) open() error {
	j := vs.j
	vs.writeLog = j.changelog.Load()
	vs.w = j.db.State().NewEpochBatch()
	vs.ixw = plan.NewIndexWriter(j.spec.View)
	vs.rs.ixw = vs.ixw
	if j.spec.View != nil && vs.agg != nil {
		var err error
		if vs.groupErrs, err = j.db.Errors().JobErrorOffsets(j.spec.ID, GroupErrorPartition); err != nil {
			return err
		}
	}
	// Rows of a stream without a stateful operator are keyed by their
	// source position; any other rows, which may be retracted, are kept as
	// a multiset keyed by their content.
	if j.spec.View != nil && vs.agg == nil && !vs.root.byPosition() {
		// Rows that are never retracted (a join or union of streams) are
		// appended under a sequence number; others are a counted multiset.
		if err := vs.rs.load(j, !vs.root.from.retracts); err != nil {
			return err
		}
	}
	return nil
}

// wrote accounts n bytes of view writes to the epoch (job.memory_limit):
// at half the limit it asks for the next barrier now, once an epoch.
func (vs *viewSink) wrote(n int) error {
	j := vs.j
	if j.spec.MemoryLimit <= 0 || j.spec.View == nil {
		return nil
	}
	if b := j.mem.epochBytes.Add(int64(n)); b > j.spec.MemoryLimit/2 && !vs.askedBarrier && j.spec.EpochFull != nil {
		vs.askedBarrier = true
		j.spec.EpochFull()
	}
	return j.mem.check()
}

// prepare ends the epoch of barrier m: the watermark and late rows it
// brought, and the writes of the operators before the sink, join the
// sink's; it returns them all (nil for a change stream).
func (vs *viewSink) prepare(m msg) (*storage.Batch, error) {
	j := vs.j
	j.et.watermark.Store(m.wm.At)
	if j.spec.View == nil {
		j.et.lateRows.Add(m.late)
		return nil, nil // change streams flush at barriers but commit nothing
	}
	if vs.rs.bag != nil {
		if err := vs.rs.bag.barrier(m.barrier.Epoch, j.committed.Load()); err != nil {
			return nil, err
		}
	}
	w := vs.w
	j.et.saveLateRows(w, m.late)
	j.et.recordLateRows(w, m.lateRows, m.barrier.Epoch, m.late, j.et.lateRows.Load())
	vs.writeLog = j.changelog.Load()
	j.mem.dirty[len(j.mem.dirty)-1].Store(0)
	w.Absorb(m.w)
	j.mem.epochBytes.Store(0)
	vs.askedBarrier = false
	vs.w = j.db.State().NewEpochBatch()
	return w, nil
}

// write applies a chunk of changes: rows of a view without aggregation
// (rows), or upserts and deletes of an aggregate's groups by group key.
func (vs *viewSink) write(m msg) error {
	j, w := vs.j, vs.w
	rec := m.c.Rec
	agg := vs.agg
	if agg == nil {
		n := rec.NumRows()
		if err := vs.rows(w, m, vs.outTs, &vs.rs, vs.writeLog); err != nil {
			return err
		}
		if err := vs.wrote(runSize(&vs.rs, int(n))); err != nil {
			return err
		}
		j.mem.dirty[len(j.mem.dirty)-1].Add(n)
		j.RowsOut.Add(n)
		return nil
	}
	nk := len(agg.Keys)
	keyTs := plan.ExprTypes(agg.Keys)
	viewKey := func(r int) []byte {
		vs.key = append(vs.key[:0], m.c.Groups[r])
		for c := 0; c < nk; c++ {
			vs.key = encodeDatum(vs.key, types.DatumAt(rec.Column(c), r, keyTs[c]), keyTs[c])
		}
		return vs.key
	}
	stages := vs.root.stages
	out, kept, err := applyStages(vs.ectx, stages, rec, true)
	vs.failedNow = vs.failedNow[:0]
	if err != nil && isDataError(err) && j.spec.View != nil {
		vs.failedNow = slices.Grow(vs.failedNow[:0], int(rec.NumRows()))[:rec.NumRows()]
		clear(vs.failedNow)
		out, kept, err = vs.groupStagesSkipping(vs.ectx, stages, rec, m.c.Ops, viewKey, w, vs.groupErrs, vs.failedNow)
	}
	if err != nil {
		rec.Release()
		return err
	}
	ops := pickOps(m.c.Ops, kept)
	j.RowsOut.Add(out.NumRows())
	if j.spec.View == nil {
		rec.Release()
		return vs.emitOut(Chunk{Rec: out, Ops: ops})
	}
	// Upsert by group key: the last change of a group in the epoch wins.
	// A view row's key is its group's state key (key group, then the
	// encoded group key), and an instance emits its changes in that
	// order, so each chunk's writes are one sorted run.
	run := w.NewRun()
	// survived[r] is input row r's output row, or -1 if HAVING dropped it.
	survived := vs.survived[:0]
	for r := 0; r < int(rec.NumRows()); r++ {
		survived = append(survived, -1)
	}
	for i, k := range kept {
		survived[k] = int32(i)
	}
	vs.survived = survived
	// Index entries go to a run of their own, in change order: an
	// update's old entry is removed before its new one is written.
	ixw := vs.ixw
	var irun *storage.Run
	if ixw != nil {
		irun = w.NewRun()
	}
	for r := 0; r < int(rec.NumRows()); r++ {
		op := m.c.Ops[r]
		i := survived[r]
		if irun != nil && i >= 0 && (op == OpUpdateBefore || op == OpDelete) {
			ixw.Del(irun, out.Columns(), int(i), viewKey(r))
		}
		if op == OpUpdateBefore {
			continue
		}
		key := viewKey(r)
		if i >= 0 && op != OpDelete {
			vs.row = encodeRow(vs.row[:0], out, int(i), vs.outTs)
			run.PutViewRow(j.spec.View.ID, key, vs.row)
			if irun != nil {
				ixw.Put(irun, out.Columns(), int(i), key, vs.row)
			}
		} else {
			run.DeleteViewRow(j.spec.View.ID, key)
		}
		if len(vs.groupErrs) > 0 && (len(vs.failedNow) == 0 || !vs.failedNow[r]) {
			vs.groupComputes(key, w, vs.groupErrs)
		}
	}
	size := run.Len()
	w.AddRun(run)
	if irun != nil {
		size += irun.Len()
		w.AddRun(irun)
	}
	rec.Release()
	if err := vs.wrote(size); err != nil {
		out.Release()
		return err
	}
	if vs.writeLog {
		err = vs.appendChangelog(w, Chunk{Rec: out, Ops: ops})
	}
	out.Release()
	return err
}

// rowSink keeps the rows of a view without aggregation that are not keyed
// by source position. Rows that may be retracted are a multiset keyed by
// their content (bag: content -> multiplicity, stored as key = row, value
// = row + multiplicity). Rows that are never retracted are appended under
// a sequence number instead (key = 8-byte big-endian seq, value = row), so
// the sink keeps nothing per row and writes each epoch's rows as one
// sorted run. Sequence numbers start at 1<<63: their first byte is never
// the 0/1 NULL marker a content key starts with, so load tells the two
// layouts apart and keeps a view written as a multiset one.
type rowSink struct {
	bag    *viewBag // nil in append mode
	next   uint64   // append mode: the next sequence number
	enc    rowEncoder
	key    []byte
	val    []byte
	active bool
	ixw    *plan.IndexWriter // the view's indexes, if any
}

const appendSeqBase = 1 << 63

// load reads the view's committed rows: the multiset's counts, or the next
// sequence number. The multiset takes a share of the job's state cache on
// the Pebble backend (sinkbag.go).
func (rs *rowSink) load(j *Job, appendOnly bool) error {
	rs.active = true
	var budget int64
	if !j.spec.State.memory() {
		budget = j.mem.cacheShare()
	}
	bag := newViewBag(j, j.spec.View.ID, budget)
	next := uint64(appendSeqBase)
	err := j.db.Views().Scan(nil, j.spec.View.ID, func(k, v []byte) error {
		if len(k) == 8 && k[0] >= 0x80 {
			next = max(next, binary.BigEndian.Uint64(k)+1)
			return nil
		}
		appendOnly = false
		if len(v) < len(k) {
			return errCorruptState
		}
		n, _, err := readUvarint(v[len(k):])
		bag.loaded(k, int64(n))
		return err
	})
	if err != nil {
		return err
	}
	if appendOnly {
		rs.next = next
		return nil
	}
	if next != appendSeqBase {
		return errCorruptState // both layouts in one view
	}
	rs.bag = bag
	return nil
}

// indexRun returns a run for the index entries of a chunk (nil: no indexes).
func (rs *rowSink) indexRun(b *storage.Batch) *storage.Run {
	if rs.ixw == nil {
		return nil
	}
	return b.NewRun()
}

// addRun adds r (nil: none) to b.
func addRun(b *storage.Batch, r *storage.Run) {
	if r != nil {
		b.AddRun(r)
	}
}

// rows applies the rows of a view without aggregation. Rows from a
// stream are keyed by their source position; other rows go to rs.
func (vs *viewSink) rows(b *storage.Batch, m msg, outTs []types.T, rs *rowSink, writeLog bool) error {
	j := vs.j
	rec := m.c.Rec
	defer rec.Release()
	if j.spec.View == nil {
		rec.Retain()
		return vs.emitOut(Chunk{Rec: rec, Ops: m.c.Ops})
	}
	n := int(rec.NumRows())
	// A multiset's rows are its keys: equal values, one key (their display
	// scales follow the count, appendDScales).
	if rs.bag != nil {
		rs.enc.EncodeKeys(rec.Columns()[:len(outTs)], outTs, n)
	} else {
		rs.enc.Encode(rec.Columns()[:len(outTs)], outTs, n)
	}
	switch {
	case !rs.active:
		// Rows keyed by their stream position, ascending: one sorted run.
		run := b.NewRunSized(runSize(rs, n))
		irun := rs.indexRun(b)
		for i := 0; i < n; i++ {
			rs.key = binary.BigEndian.AppendUint64(rs.key[:0], m.rowIDs[i])
			run.PutViewRow(j.spec.View.ID, rs.key, rs.enc.Row(i))
			if irun != nil {
				rs.ixw.Put(irun, rec.Columns(), i, rs.key, rs.enc.Row(i))
			}
		}
		b.AddRun(run)
		addRun(b, irun)
	case rs.bag == nil:
		run := b.NewRunSized(runSize(rs, n))
		irun := rs.indexRun(b)
		for i := 0; i < n; i++ {
			if m.c.Ops != nil && m.c.Ops[i].Sign() < 0 {
				return fmt.Errorf("exec: a retraction reached the append-only rows of view %d", j.spec.View.ID)
			}
			rs.key = binary.BigEndian.AppendUint64(rs.key[:0], rs.next)
			rs.next++
			run.PutViewRow(j.spec.View.ID, rs.key, rs.enc.Row(i))
			if irun != nil {
				rs.ixw.Put(irun, rec.Columns(), i, rs.key, rs.enc.Row(i))
			}
		}
		b.AddRun(run)
		addRun(b, irun)
	default:
		bag := rs.bag
		// Single writes: a row may come and go in several chunks of an
		// epoch, and single writes to one key keep their order.
		var irun plan.IndexSink
		if rs.ixw != nil {
			irun = b
		}
		for i := 0; i < n; i++ {
			row := rs.enc.Row(i)
			sign := int64(1)
			if m.c.Ops != nil {
				sign = int64(m.c.Ops[i].Sign())
			}
			c, err := bag.get(row)
			if err != nil {
				return err
			}
			// A retraction of a row not there (its insertion may come
			// from another instance later in the epoch) leaves none.
			c = max(c+sign, 0)
			bag.set(row, c)
			if c <= 0 {
				b.DeleteViewRow(j.spec.View.ID, row)
				if irun != nil {
					rs.ixw.Del(irun, rec.Columns(), i, row)
				}
			}
			if c > 0 {
				rs.val = binary.AppendUvarint(append(rs.val[:0], row...), uint64(c))
				rs.val = plan.AppendDScales(rs.val, rec.Columns()[:len(outTs)], i, outTs)
				b.PutViewRow(j.spec.View.ID, row, rs.val)
				if irun != nil {
					rs.ixw.Put(irun, rec.Columns(), i, row, rs.val)
				}
			}
		}
	}
	if !writeLog {
		return nil
	}
	return vs.appendChangelog(b, m.c)
}

// appendChangelog queues a view's changes for its changelog, which views
// and change streams over the view read. Columns are the view's, then __op.
func (vs *viewSink) appendChangelog(w *storage.Batch, c Chunk) error {
	n := int(c.Rec.NumRows())
	if n == 0 {
		return nil
	}
	ob := types.NewBuilder(memoryPool, types.TInt64)
	defer ob.Release()
	for i := 0; i < n; i++ {
		op := OpInsert
		if c.Ops != nil {
			op = c.Ops[i]
		}
		types.AppendDatum(ob, types.Int(int64(op)), types.TInt64)
	}
	cols := make([]arrow.Array, 0, c.Rec.NumCols()+1)
	ts := make([]types.T, 0, c.Rec.NumCols()+1)
	for i := 0; i < int(c.Rec.NumCols()); i++ {
		col := c.Rec.Column(i)
		col.Retain()
		cols = append(cols, col)
		ts = append(ts, vs.j.spec.View.Columns[i].Type)
	}
	cols = append(cols, ob.NewArray())
	ts = append(ts, types.TInt64)
	rec := newRecord(ts, cols, n)
	defer rec.Release()
	return w.AppendLog(vs.j.spec.View.ID, 0, rec)
}

// emitOut hands a change stream's chunk to its reader.
func (vs *viewSink) emitOut(c Chunk) error {
	select {
	case vs.j.spec.Out <- c:
		return nil
	case <-vs.j.ctx.Done():
		c.Rec.Release()
		return nil
	}
}

// runSize estimates the bytes of a run of the n rows rs.enc holds, keyed by
// 8-byte positions: each write is its key and row plus Pebble's framing.
func runSize(rs *rowSink, n int) int { return rs.enc.Size() + n*(8+10+16) }
