package exec

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/session"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Session windows (GROUP BY keys, SESSION(ts, gap)): the operator is
// exec/session; here are the plan node, the batch query's loop and the
// wiring of a job's session node (its time bound, the watermark it keeps
// in the job's state).

// SessionAgg groups rows into session windows per Keys: a session is a
// maximal run of rows of a key whose Time values are less than Gap µs
// apart. Output: Keys, session start, session end (last time + Gap), Aggs.
type SessionAgg struct {
	In   Plan
	Keys []expr.Expr
	Time expr.Expr
	Gap  int64
	Aggs []AggSpec
}

func (p *SessionAgg) Types() []types.T { return sessionSpec(p).Types() }

// CheckSessionAggs refuses the aggregates a session window cannot merge.
func CheckSessionAggs(aggs []AggSpec) error { return session.CheckAggs(aggs) }

// sessionSpec is the operator's spec of p.
func sessionSpec(p *SessionAgg) *session.Spec {
	return &session.Spec{Keys: p.Keys, Time: p.Time, Gap: p.Gap, Aggs: p.Aggs}
}

// runSession runs a session window aggregate in a batch query: every input
// row into the sessions, then every session out.
func runSession(ctx *Ctx, p *SessionAgg, emit func(arrow.RecordBatch) error) error {
	if err := CheckSessionAggs(p.Aggs); err != nil {
		return err
	}
	o := session.New(sessionSpec(p), ctx.alloc())
	share := ctx.heap()
	defer share.release()
	if err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if err := o.Fold(ctx.Expr, rec); err != nil {
			return err
		}
		share.set(o.Bytes())
		return ctx.check()
	}); err != nil {
		return err
	}
	gids := o.All()
	const chunk = 64 << 10
	for len(gids) > 0 {
		part := gids[:min(len(gids), chunk)]
		gids = gids[len(part):]
		if err := ctx.canceled(); err != nil {
			return err
		}
		rec, err := o.Build(part)
		if err != nil {
			return err
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// sessionNode is an instance of a job's session node: the operator, and
// its input watermark kept under the job's own state (keyOpWatermark), so
// rows replayed after a restart meet the watermark they met before.
type sessionNode struct {
	*session.Op
	job uint64
	id  uint32
}

// newSessionNode makes instance inst of a job's session node.
func (j *Job) newSessionNode(n *gnode, inst int, out *outlet, root bool) (*sessionNode, error) {
	shift, timed := timeBound(n.session.In, n.session.Time)
	o := session.NewNode(sessionSpec(n.session), session.Node{Out: out, State: j.opState(n.op, inst, n.par),
		Timed: timed, Shift: shift, EOWC: root && j.spec.OnWindowClose})
	if j.durable() {
		wm := NoWatermark
		if !j.fresh && timed {
			v, err := j.db.GetState(j.spec.ID, jobStateOp, binary.BigEndian.AppendUint32([]byte{keyOpWatermark}, n.op))
			if err != nil {
				return nil, err
			}
			if len(v) == 8 {
				wm = int64(binary.BigEndian.Uint64(v))
			}
		}
		if err := o.Load(inst, n.par, wm); err != nil {
			return nil, err
		}
		if j.spec.Reemit && root {
			o.Reemit()
		}
	}
	return &sessionNode{Op: o, job: j.spec.ID, id: n.op}, nil
}

// Barrier implements op.Operator: the operator's barrier, then its
// watermark, if it moved, written through the epoch's batch (on either
// backend: it is the job's state, not the operator's).
func (s *sessionNode) Barrier(ectx *expr.Ctx, b *Barrier, w *storage.Batch) error {
	if err := s.Op.Barrier(ectx, b, w); err != nil {
		return err
	}
	if w == nil {
		return nil
	}
	if wm, moved := s.Watermark(); moved {
		r := w.NewRun()
		r.PutState(s.job, jobStateOp, binary.BigEndian.AppendUint32([]byte{keyOpWatermark}, s.id),
			binary.BigEndian.AppendUint64(nil, uint64(wm)))
		s.SavedWatermark()
		w.AddRun(r)
	}
	return nil
}
