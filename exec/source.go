package exec

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// sourceRunner reads one split of one source of a job (a partition of a
// stream's log or a view's changelog, or a connector's split) and sends its
// rows down every edge that reads the source (a table scanned twice, as in
// a self-join, is read once). It is a task of the runtime: the runtime
// starts it, hands it each barrier on its channel, and reads how far it has
// read from its source's offsets; the runner passes each barrier on with
// the split's position and event time in the epoch's writes.
type sourceRunner struct {
	j        *Job
	s        *jobSource
	part     uint32
	barriers chan *Barrier
	outs     []*outlet
	ectx     *expr.Ctx
}

// run reads the split until the job ends.
func (r *sourceRunner) run() error {
	r.ectx = r.j.exprCtx()
	if r.s.conn != nil {
		return r.runConnector()
	}
	return r.runLog()
}

// runLog reads one partition of a stream's log or a view's changelog from
// the job's offset on.
func (r *sourceRunner) runLog() error {
	j, s, part, barriers := r.j, r.s, r.part, r.barriers
	src := s.n.src
	// A COPY into the stream keeps its blocks in memory for this reader.
	defer j.db.Log().TailReader(src.ID, part)()
	// w holds this source's writes of the current epoch (its offset,
	// skipped rows); it goes on with the barrier.
	w := j.db.State().NewEpochBatch()
	off := s.offsets[part].Load()
	const maxRows = 64 << 10
	// read processes the rows [off, to), or stops after a block once the
	// epoch is full.
	read := func(to uint64) error {
		err := j.db.Log().Read(memoryPool, src.ID, part, off, to, plan.OldLayoutRead(src, func(first uint64, rec arrow.RecordBatch) error {
			n := rec.NumRows()
			j.RowsIn.Add(n)
			if err := r.route(w, first, rec); err != nil {
				return err
			}
			off = first + uint64(n)
			s.offsets[part].Store(off)
			if j.mem.epochFull() {
				return errEpochFull
			}
			return nil
		}))
		if err == errEpochFull {
			return nil
		}
		return err
	}
	if s.snap != nil {
		err := r.emitSnapshot(w)
		s.snap.Close()
		s.snap = nil
		if err != nil {
			return err
		}
	}
	// A durable job's source is aligned: it passes each barrier on at the
	// barrier's offset in the cut and never reads past the marked offset of
	// a barrier it has not passed on yet (storage.DB.CutLimit). Change
	// streams read freely.
	aligned := j.durable()
	var passed uint64 // epoch of the last barrier passed on
	limit := func(end uint64) (uint64, error) {
		if !aligned {
			return end, nil
		}
		l, err := j.db.Epochs().CutLimit(src.ID, part, passed)
		return min(end, l), err
	}
	onBarrier := func(b *Barrier) error {
		if cut, ok := b.Cut[storage.LogPart{Table: src.ID, Part: part}]; ok && aligned {
			// Read up to the cut; an epoch that is full ends early (a
			// backfill or a job far behind catches up over several epochs,
			// and its view is at its own position until then).
			start, _, _, err := j.db.Log().Bounds(src.ID, part)
			if err != nil {
				return err
			}
			if off < start {
				off = start
				s.offsets[part].Store(off)
			}
			for off < cut && (b.CatchUp || !j.mem.epochFull()) {
				if err := read(min(cut, off+maxRows)); err != nil {
					return err
				}
			}
		} else if b.CatchUp {
			start, end, _, err := j.db.Log().Bounds(src.ID, part)
			if err != nil {
				return err
			}
			if off < start {
				off = start
				s.offsets[part].Store(off)
			}
			for off < end {
				if err := read(min(end, off+maxRows)); err != nil {
					return err
				}
			}
		}
		m := msg{barrier: b, w: w}
		if j.durable() {
			w.SetOffset(j.spec.ID, src.ID, part, off)
			s.wm[part].mark(&m, j.spec.ID, src.ID, part, w)
		} else {
			s.wm[part].mark(&m, j.spec.ID, src.ID, part, nil)
		}
		for _, o := range r.outs {
			if err := o.barrier(m); err != nil {
				return err
			}
			m.w = nil
		}
		w = j.db.State().NewEpochBatch()
		passed = b.Epoch
		return nil
	}
	for {
		select {
		case b := <-barriers:
			if err := onBarrier(b); err != nil {
				return err
			}
			continue
		case <-j.ctx.Done():
			return nil
		default:
		}
		start, end, changed, err := j.db.Log().Bounds(src.ID, part)
		if err == nil {
			end, err = limit(end)
		}
		if err != nil {
			return err
		}
		if off < start {
			// Retention removed rows no checkpoint, savepoint or committed
			// offset needed (a job that never committed starts at the
			// oldest retained offset, wherever that has moved).
			off = start
			s.offsets[part].Store(off)
		}
		if off < end && j.mem.epochFull() {
			// Wait for the barrier that ends this epoch (asked for) and for
			// the aggregate to take it; poll, since a barrier may already
			// be on its way.
			if done, err := r.awaitRoomInEpoch(onBarrier); err != nil || done {
				return err
			}
			continue
		}
		if off < end {
			if err := read(min(end, off+maxRows)); err != nil {
				return err
			}
			continue
		}
		select {
		case b := <-barriers:
			if err := onBarrier(b); err != nil {
				return err
			}
		case <-changed:
		case <-j.ctx.Done():
			return nil
		}
	}
}

// emitSnapshot sends the source view's snapshot rows on as inserts.
func (r *sourceRunner) emitSnapshot(w *storage.Batch) error {
	j, s, ectx := r.j, r.s, r.ectx
	ctx := &plan.Ctx{Context: j.ctx, DB: j.db, Expr: ectx}
	scan := &plan.ScanView{View: s.n.src, Snap: s.snap}
	ts := scan.Types()
	return plan.ReadView(ctx, scan, func(rec arrow.RecordBatch) error {
		// route expects a changelog block: the view's columns, then an op.
		ob := types.NewBuilder(memoryPool, types.TInt64)
		for i := 0; i < int(rec.NumRows()); i++ {
			types.AppendDatum(ob, types.Int(int64(OpInsert)), types.TInt64)
		}
		cols := make([]arrow.Array, 0, len(ts)+1)
		for c := range ts {
			col := rec.Column(c)
			col.Retain()
			cols = append(cols, col)
		}
		cols = append(cols, ob.NewArray())
		ob.Release()
		n := int(rec.NumRows())
		rec.Release()
		j.RowsIn.Add(int64(n))
		return r.route(w, 0, newRecord(append(append([]types.T(nil), ts...), types.TInt64), cols, n))
	})
}

// route sends a block of a source's rows down each of its edges, with the
// edge's stages applied. It owns rec.
func (r *sourceRunner) route(w *storage.Batch, first uint64, rec arrow.RecordBatch) error {
	s, part, ectx := r.s, r.part, r.ectx
	defer rec.Release()
	if err := plan.Failpoint(r.j.spec.Name, "source"); err != nil {
		return err
	}
	s.wm[part].observe(rec)
	var inOps []Op
	if s.n.changelog {
		rec.Retain()
		rec, inOps = plan.SplitOps(rec)
		defer rec.Release()
	}
	for _, o := range r.outs {
		// Rows are followed through the stages only for what needs them:
		// row ids and a changelog's ops.
		out, kept, err := r.transform(o, w, first, rec, o.rowIDs || inOps != nil)
		if err != nil {
			return err
		}
		var ids []uint64
		if o.rowIDs {
			ids = make([]uint64, len(kept))
			for i, k := range kept {
				ids[i] = uint64(part)<<48 | (first + uint64(k))
			}
		}
		if err := o.route(ectx, Chunk{Rec: out, Ops: pickOps(inOps, kept)}, ids); err != nil {
			return err
		}
	}
	return nil
}

// transform applies an edge's stages to rec. On a data error it finds the
// rows that raise it: with job.error_policy = 'skip' it records each in the
// epoch's error log and goes on without them; otherwise the job fails with
// the first one's stream offset.
func (r *sourceRunner) transform(o *outlet, w *storage.Batch, first uint64, rec arrow.RecordBatch, track bool) (arrow.RecordBatch, []int, error) {
	j, s, part, ectx := r.j, r.s, r.part, r.ectx
	out, kept, err := o.tryStages(ectx, rec, track)
	if err == nil || !isDataError(err) {
		return out, kept, err
	}
	good, err := eachRowAlone(rec, func(one arrow.RecordBatch) error {
		res, _, e := o.tryStages(ectx, one, false)
		if res != nil {
			res.Release()
		}
		return e
	}, func(i int, e error) error {
		se := sqlerr.As(e)
		off := first + uint64(i)
		if !j.spec.SkipErrors {
			return &sqlerr.Error{Code: se.Code, Msg: se.Msg,
				Detail: fmt.Sprintf("stream %s, partition %d, offset %d: row %s", s.n.src.Name, part, off, rowText(rec, i))}
		}
		w.PutJobError(j.spec.ID, storage.JobError{Job: j.spec.Name, Stream: s.n.src.Name,
			Partition: part, Offset: off, Code: se.Code, Message: se.Msg, Row: rowText(rec, i), At: time.Now().UTC()})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sub := takeRecord(rec, good, plan.ExprTypes(plannedExprs(rec)))
	defer sub.Release()
	out, kept, err = o.tryStages(ectx, sub, track)
	if err != nil {
		return nil, nil, err
	}
	for i, k := range kept {
		kept[i] = good[k]
	}
	return out, kept, nil
}

// tryStages runs the edge's stages and also evaluates the consumer's
// expressions that can raise errors (its keys, an aggregate's arguments),
// so a bad row is caught here, with its stream offset.
func (o *outlet) tryStages(ectx *expr.Ctx, rec arrow.RecordBatch, track bool) (arrow.RecordBatch, []int, error) {
	out, kept, err := applyStages(ectx, o.stages, rec, track)
	if err != nil {
		return out, kept, err
	}
	for _, e := range o.fallible {
		a, err := expr.Eval(ectx, e, out)
		if err != nil {
			out.Release()
			return nil, nil, err
		}
		a.Release()
	}
	return out, kept, nil
}

// fallibleOf keeps the expressions that can raise an error (anything but a
// column or a constant).
func fallibleOf(es ...expr.Expr) []expr.Expr {
	var out []expr.Expr
	for _, e := range es {
		switch e.(type) {
		case nil, *expr.ColRef, *expr.Const, *expr.Param:
			continue
		}
		out = append(out, e)
	}
	return out
}

// isDataError reports whether err is about a value (SQLSTATE class 22).
func isDataError(err error) bool { return strings.HasPrefix(sqlerr.Code(err), "22") }

// rowText renders row i of rec as (v1, v2, ...).
func rowText(rec arrow.RecordBatch, i int) string { return opkit.RowText(rec, i) }

func plannedExprs(rec arrow.RecordBatch) []expr.Expr {
	es := make([]expr.Expr, rec.NumCols())
	for i := range es {
		es[i] = &expr.ColRef{Idx: i, T: typeOfArrow(rec.Column(i))}
	}
	return es
}

// typeOfArrow recovers a SQL type that has rec's physical layout (opkit).
func typeOfArrow(a arrow.Array) types.T { return opkit.TypeOfArrow(a) }

// applyStages runs Filter/Project/Hop/LateralFuncScan stages over rec; with track it also
// returns, for each output row, the index of the input row it came from.
func applyStages(ectx *expr.Ctx, stages []plan.Plan, rec arrow.RecordBatch, track bool) (arrow.RecordBatch, []int, error) {
	rec.Retain()
	var kept []int
	if track {
		kept = make([]int, rec.NumRows())
		for i := range kept {
			kept[i] = i
		}
	}
	for _, st := range stages {
		switch st := st.(type) {
		case *plan.Filter:
			mask, err := expr.Eval(ectx, st.Pred, rec)
			if err != nil {
				rec.Release()
				return nil, nil, err
			}
			b := mask.(*array.Boolean)
			var rows []int
			for i := 0; i < b.Len(); i++ {
				if b.IsValid(i) && b.Value(i) {
					rows = append(rows, i)
				}
			}
			mask.Release()
			if len(rows) == int(rec.NumRows()) {
				continue
			}
			if track {
				for i, r := range rows {
					kept[i] = kept[r]
				}
				kept = kept[:len(rows)]
			}
			out := takeRecord(rec, rows, plan.ExprTypes(plannedExprs(rec)))
			rec.Release()
			rec = out
		case *plan.Project:
			out, err := plan.ProjectColumns(ectx, st.Exprs, st.Types(), rec)
			rec.Release()
			if err != nil {
				return nil, nil, err
			}
			rec = out
		case *plan.LateralFuncScan, *plan.Hop:
			var out arrow.RecordBatch
			var src []int
			var err error
			if h, ok := st.(*plan.Hop); ok {
				var buf hopBuf
				out, src, err = h.Expand(ectx, memoryPool, &buf, rec)
			} else {
				out, src, err = st.(*plan.LateralFuncScan).Expand(ectx, memoryPool, rec)
			}
			rec.Release()
			if err != nil {
				return nil, nil, err
			}
			if track {
				from := make([]int, len(src))
				for i, s := range src {
					from[i] = kept[s]
				}
				kept = from
			}
			rec = out
		}
	}
	return rec, kept, nil
}

// awaitRoomInEpoch asks for the barrier that ends a full epoch and waits a
// millisecond for it (polling, since it may already be on its way); done
// reports that the job is ending.
func (r *sourceRunner) awaitRoomInEpoch(onBarrier func(*Barrier) error) (done bool, err error) {
	j, barriers := r.j, r.barriers
	if j.spec.EpochFull != nil {
		j.spec.EpochFull()
	}
	select {
	case b := <-barriers:
		return false, onBarrier(b)
	case <-j.ctx.Done():
		return true, nil
	case <-time.After(time.Millisecond):
		return false, nil
	}
}
