package exec

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/join"
	"github.com/streamdb/streamdb/storage"
)

// Streaming joins: the operator is exec/join; here is the wiring of a
// job's join node (its spec from the plan, the job's share of state, TTL
// and late-row logs).

// joinSpec is the operator's spec of join node n: its rows end by
// watermark (joinTimeOf) only if every source under it has one.
func joinSpec(n *gnode) *join.Spec {
	s := n.join
	js := &join.Spec{Kind: s.Kind, LeftTs: s.Left.Types(), RightTs: s.Right.Types(), OutTs: s.Types(),
		LeftKeys: s.LeftKeys, RightKeys: s.RightKeys, Residual: s.Residual, Lookup: s.Lookup}
	if t := joinTimeOf(s, n.joinPreds); t != nil && watermarked(n) {
		js.Time = t
	}
	return js
}

// newJoinOp makes an instance of join node n emitting into out, with
// budget bytes of the state cache (0: it never evicts); not loaded.
func newJoinOp(j *Job, n *gnode, out *outlet, budget int64) *join.Op {
	s := joinSpec(n)
	nd := join.Node{Node: opNode(j, n, out, budget)}
	if s.Time != nil && !s.Lookup {
		nd.Late = [2]*lateLog{j.et.newLateLog(s.Time.Kind, n.op, s.LeftTs), j.et.newLateLog(s.Time.Kind, n.op, s.RightTs)}
	}
	return join.New(s, nd)
}

// joinNode is instance inst of a job's join node: the operator, as opTask
// drives it (watermarkKeeper, sizedOp).
type joinNode struct{ *join.Op }

// newJoinNode makes instance inst of join node n and, for a durable job,
// loads its state (reemit: it will re-emit all of it, so it keeps every
// group until the first barrier).
func (f opFactory) newJoinNode(n *gnode, inst int, out *outlet, reemit bool) (joinNode, error) {
	j := f.j
	if !j.durable() {
		return joinNode{newJoinOp(j, n, out, 0)}, nil
	}
	o := newJoinOp(j, n, out, j.mem.cacheShare())
	if reemit {
		o.DeferEviction()
	}
	return joinNode{o}, o.Load(j.exprCtx(), f.opState(n.op, inst, n.par), inst, n.par)
}

func (n joinNode) opID() uint32 { return n.OpID() }

func (n joinNode) keepsWatermark() bool { return n.KeepsWatermark() }

func (n joinNode) takeLate() []storage.LateRow { return n.TakeLate() }

func (n joinNode) reportBytes() { n.ReportBytes() }

func (n joinNode) reemitAll(ectx *expr.Ctx) error { return n.ReemitAll(ectx) }
