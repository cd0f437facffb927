package exec

import (
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
)

// msg is what flows on a job's edges: a chunk or a barrier.
type msg struct {
	c       Chunk
	rowIDs  []uint64 // source positions of the rows (views of a stream's rows)
	barrier *Barrier
	// w, with a barrier, holds the epoch's writes of the operators the
	// barrier has passed: each writes its part of an epoch into a batch of
	// its own and hands it on with the barrier, so nothing can write into
	// an epoch after passing its barrier on.
	w *storage.Batch
	// in is the input of the consumer the message is for (a join's side).
	in int
	// wm, with a barrier, is the watermark of the rows sent before it
	// (watermark.go); late counts the rows operators dropped as late in
	// the epoch, carried (like w) to the sink, which counts them.
	wm   Watermark
	late int64
	// lateRows, with a barrier, are the late rows recorded in the epoch
	// (job.late_rows = 'record', late.go), carried like late.
	lateRows []storage.LateRow
}

// ack is a sink's acknowledgement of a barrier, with the epoch's writes.
type ack struct {
	epoch uint64
	w     *storage.Batch
}

// outlet is one producer instance's end of an edge: it applies the edge's
// stateless stages and sends each row to the consumer instance that owns
// its key group.
type outlet struct {
	j      *Job
	stages []plan.Plan
	keys   []expr.Expr
	outs   []chan msg // one per consumer instance
	in     int
	// wOut is the consumer instance whose channel carries the epoch's
	// writes with the barrier (0; in a distributed job, an instance on
	// this node: the exchange carries none).
	wOut int
	// rowIDs keeps the rows' source positions (the sink keys a view of a
	// stream's rows by them); aggregate says the consumer is an aggregate,
	// whose rows in flight bound an epoch.
	rowIDs    bool
	aggregate bool
	// fallible, on a source's edge, are the consumer's expressions that can
	// raise a data error; the source evaluates them to name the bad row.
	fallible []expr.Expr
	// Scratch of route, reused from batch to batch (an outlet has one
	// producer): the rows' key hashes and each instance's row numbers.
	hash []uint64
	idx  [][]int
	// errs are the rows skipped in the current epoch because an
	// expression of the stages failed on them (rowerrors.go).
	errs []storage.JobError
}

// emit applies the stages to c and routes the result; it owns c.Rec. A
// batch that a HOP or CUMULATE stage would expand past expandBatchRows is
// cut first, so no batch grows by the windows' fan-out.
func (o *outlet) emit(ectx *expr.Ctx, c Chunk, ids []uint64) error {
	defer c.Rec.Release()
	return plan.CutForExpand(o.stages, c.Rec, func(rec arrow.RecordBatch, lo, hi int) error {
		rec.Retain() // emitOne owns the part it is given
		part := Chunk{Rec: rec}
		if c.Ops != nil {
			part.Ops = c.Ops[lo:hi]
		}
		if c.Groups != nil {
			part.Groups = c.Groups[lo:hi]
		}
		var sub []uint64
		if ids != nil {
			sub = ids[lo:hi]
		}
		return o.emitOne(ectx, part, sub)
	})
}

// Emit implements op.Outlet: an operator's rows enter the edge.
func (o *outlet) Emit(ectx *expr.Ctx, c Chunk) error { return o.emit(ectx, c, nil) }

func (o *outlet) emitOne(ectx *expr.Ctx, c Chunk, ids []uint64) error {
	if len(o.stages) > 0 {
		out, kept, err := applyStages(ectx, o.stages, c.Rec, c.Ops != nil || ids != nil)
		if err != nil && isDataError(err) && o.j.spec.View != nil {
			out, kept, err = o.outputStagesSkipping(ectx, c.Rec, c.Ops)
		}
		c.Rec.Release()
		if err != nil {
			return err
		}
		c = Chunk{Rec: out, Ops: pickOps(c.Ops, kept)}
		if ids != nil {
			sub := make([]uint64, len(kept))
			for i, k := range kept {
				sub[i] = ids[k]
			}
			ids = sub
		}
	}
	return o.route(ectx, c, ids)
}

func pickOps(ops []Op, kept []int) []Op {
	if ops == nil {
		return nil
	}
	out := make([]Op, len(kept))
	for i, k := range kept {
		out[i] = ops[k]
	}
	return out
}

// route sends c's rows on, each to the consumer instance of its key group.
func (o *outlet) route(ectx *expr.Ctx, c Chunk, ids []uint64) error {
	out := c.Rec
	if out.NumRows() == 0 {
		out.Release()
		return nil
	}
	if !o.rowIDs {
		ids = nil
	}
	if o.aggregate {
		o.j.mem.inflight.Add(out.NumRows())
	}
	if len(o.outs) == 1 {
		return o.j.send(o.outs[0], msg{c: c, rowIDs: ids, in: o.in})
	}
	defer out.Release()
	n := int(out.NumRows())
	keys := make([]arrow.Array, len(o.keys))
	defer releaseAll(keys)
	for i, k := range o.keys {
		var err error
		if keys[i], err = expr.Eval(ectx, k, out); err != nil {
			return err
		}
	}
	canonKeys(ectx, keys, o.keys)
	o.hash = hashColumns(o.hash, keys, n)
	h := o.hash
	if len(o.idx) != len(o.outs) {
		o.idx = make([][]int, len(o.outs))
	}
	idx := o.idx
	for i := range idx {
		idx[i] = idx[i][:0]
	}
	for r := 0; r < n; r++ {
		inst := instanceOf(keyGroup(h[r]), len(o.outs))
		idx[inst] = append(idx[inst], r)
	}
	ts := plan.ExprTypes(plannedExprs(out))
	for i, rows := range idx {
		if len(rows) == 0 {
			continue
		}
		var sub []Op
		if c.Ops != nil {
			sub = make([]Op, len(rows))
			for x, r := range rows {
				sub[x] = c.Ops[r]
			}
		}
		take := takeRecord
		if o.aggregate {
			take = takeSplit
		}
		if err := o.j.send(o.outs[i], msg{c: Chunk{Rec: take(out, rows, ts), Ops: sub}, in: o.in}); err != nil {
			return err
		}
	}
	return nil
}

// barrier sends m's barrier to every consumer instance; the epoch's writes
// travel with the first.
func (o *outlet) barrier(m msg) error {
	o.recordOutputErrors(m)
	for i, out := range o.outs {
		b := msg{barrier: m.barrier, in: o.in, wm: m.wm}
		if i == o.wOut {
			b.w, b.late, b.lateRows = m.w, m.late, m.lateRows
		}
		if err := o.j.send(out, b); err != nil {
			return err
		}
	}
	return nil
}

// aligner merges a task's inputs and aligns barriers: in exactly-once mode an
// input that delivered barrier N is not read again until all inputs have.
type aligner struct {
	ins         []chan msg
	blocked     []bool
	arrived     int
	atLeastOnce bool
	cases       []reflect.SelectCase
	idx         []int
	done        <-chan struct{}
	w           *storage.Batch // writes carried by the barriers of the epoch being aligned
	late        int64          // late rows carried by them
	lateRows    []storage.LateRow
	// wms is each input's watermark as of its last barrier; wm is the
	// watermark passed on with the last aligned barrier (never lower than
	// an earlier one).
	wms   []Watermark
	wm    Watermark
	saved int64 // wm.At as last written (saveWatermark)
}

func newAligner(ins []chan msg, atLeastOnce bool, done <-chan struct{}) *aligner {
	a := &aligner{ins: ins, blocked: make([]bool, len(ins)), atLeastOnce: atLeastOnce, done: done,
		wms: make([]Watermark, len(ins)), wm: Watermark{At: NoWatermark}, saved: NoWatermark}
	for i := range a.wms {
		a.wms[i].At = NoWatermark
	}
	return a
}

// Watermark is the input watermark as of the last aligned barrier: the
// operator that owns the aligner compares the rows of the current epoch
// with it.
func (a *aligner) Watermark() Watermark { return a.wm }

// stamp sets an aligned barrier's watermark from its inputs'.
func (a *aligner) stamp(m *msg) {
	w := combineWatermarks(a.wms)
	if w.At < a.wm.At {
		w.At = a.wm.At // a partition that woke up from idle is behind: its rows are late
	}
	a.wm = w
	m.wm = w
}

// next returns the next chunk, or an aligned barrier (carrying the writes
// of every input's barrier), or ok=false when done.
func (a *aligner) next() (m msg, ok bool) {
	for {
		if len(a.ins) == 1 {
			select {
			case m := <-a.ins[0]:
				if m.barrier != nil {
					a.wms[0] = m.wm
					a.stamp(&m)
				}
				return m, true
			case <-a.done:
				return msg{}, false
			}
		}
		a.cases = a.cases[:0]
		a.idx = a.idx[:0]
		a.cases = append(a.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a.done)})
		for i, c := range a.ins {
			if a.blocked[i] && !a.atLeastOnce {
				continue
			}
			a.cases = append(a.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
			a.idx = append(a.idx, i)
		}
		chosen, v, _ := reflect.Select(a.cases)
		if chosen == 0 {
			return msg{}, false
		}
		i := a.idx[chosen-1]
		m := v.Interface().(msg)
		if m.barrier == nil {
			return m, true
		}
		if m.w != nil {
			if a.w == nil {
				a.w = m.w
			} else {
				a.w.Absorb(m.w)
			}
		}
		a.late += m.late
		a.lateRows = mergeLate(a.lateRows, m.lateRows)
		a.wms[i] = m.wm
		if !a.blocked[i] {
			a.blocked[i] = true
			a.arrived++
		}
		if a.arrived == len(a.ins) {
			for k := range a.blocked {
				a.blocked[k] = false
			}
			a.arrived = 0
			m.w, a.w = a.w, nil
			m.late, a.late = a.late, 0
			m.lateRows, a.lateRows = a.lateRows, nil
			a.stamp(&m)
			return m, true
		}
	}
}

// withWrites adds w to the writes m carries.
func withWrites(m msg, w *storage.Batch) msg {
	if m.w == nil {
		m.w = w
	} else {
		m.w.Absorb(w)
	}
	return m
}
