package exec

import (
	"encoding/binary"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/exec/session"
	"github.com/streamdb/streamdb/storage"
)

// sessionNode is an instance of a job's session node: the operator, and
// its input watermark kept under the job's own state (keyOpWatermark), so
// rows replayed after a restart meet the watermark they met before.
type sessionNode struct {
	*session.Op
	job uint64
	id  uint32
}

// newSessionNode makes instance inst of a job's session node.
func (f opFactory) newSessionNode(n *gnode, inst int, out *outlet, root bool) (*sessionNode, error) {
	j := f.j
	shift, timed := timeBound(n.session.In, n.session.Time)
	o := session.NewNode(plan.SessionSpec(n.session), session.Node{Out: out, State: f.opState(n.op, inst, n.par),
		Timed: timed, Shift: shift, EOWC: root && j.spec.OnWindowClose})
	if j.durable() {
		wm := NoWatermark
		if !j.fresh && timed {
			v, err := j.db.State().Get(j.spec.ID, jobStateOp, binary.BigEndian.AppendUint32([]byte{keyOpWatermark}, n.op))
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
