package exec

import (
	"github.com/streamdb/streamdb/exec/over"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/exec/rank"
	"github.com/streamdb/streamdb/storage"
)

// Top-N and the window functions of views: the operator is exec/rank;
// here is the wiring of a job's rank node (its spec from the plan, the
// job's share of state, TTL and late-row log).

// rankSpecOf is the operator's spec of rank node n: it keeps only each
// partition's top if its input never retracts and the rank is bounded.
func rankSpecOf(n *gnode) *rank.Spec {
	s := n.rank
	rs := &rank.Spec{InTs: n.ins[0].from.outTypes(n.ins[0]), Partition: s.partition, Order: s.order,
		Lo: s.lo, Hi: s.hi, Win: s.win, AppendOnly: !n.ins[0].from.retracts && s.hi >= 0}
	rs.OutTs = rs.InTs
	if s.window != nil {
		rs.Funcs, rs.OutTs = s.window.Funcs, s.window.Types()
	}
	return rs
}

// newRankOp makes an instance of rank node n emitting into out, with
// budget bytes of the state cache (0: it never evicts); not loaded.
func newRankOp(j *Job, n *gnode, out *outlet, budget int64) *rank.Op {
	s := rankSpecOf(n)
	nd := rank.Node{Node: opNode(j, n, out, budget)}
	if s.Win != nil {
		nd.Late = j.et.newLateLog("top-n", n.op, s.InTs)
	}
	return rank.New(s, nd)
}

// rankNode is instance inst of a job's rank node: the operator, as opTask
// drives it (watermarkKeeper, sizedOp).
type rankNode struct{ *rank.Op }

// newRankNode makes instance inst of rank node n and, for a durable job,
// loads its state (reemit: the next barrier emits every partition anew).
func (f opFactory) newRankNode(n *gnode, inst int, out *outlet, reemit bool) (rankNode, error) {
	j := f.j
	if !j.durable() {
		return rankNode{newRankOp(j, n, out, 0)}, nil
	}
	o := newRankOp(j, n, out, j.mem.cacheShare())
	if err := o.Load(j.exprCtx(), f.opState(n.op, inst, n.par), inst, n.par); err != nil {
		return rankNode{}, err
	}
	if reemit {
		o.ReemitAll()
	}
	return rankNode{o}, nil
}

func (n rankNode) opID() uint32 { return n.OpID() }

func (n rankNode) keepsWatermark() bool { return n.KeepsWatermark() }

func (n rankNode) takeLate() []storage.LateRow { return n.TakeLate() }

func (n rankNode) reportBytes() { n.ReportBytes() }

// rankFuncsOnly says every function of w is row_number, rank or
// dense_rank, which the rank operator computes in its walk of the order.
func rankFuncsOnly(w *plan.Window) bool { return over.RankOnly(w.Funcs) }
