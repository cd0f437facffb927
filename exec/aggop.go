package exec

import (
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
)

// aggNode is instance slot (of the job's aggregate instances) of an
// aggregate node: the operator, as opTask drives it. Besides the operator's
// own work it keeps the job's counters up to date: the instance's state
// bytes (stateBytes[slot]) and changed groups (dirty[slot], which bound the
// epoch), the rows in flight to aggregates, and whether state spilled.
type aggNode struct {
	*agg.Op
	j    *Job
	slot int
}

// What opTask asks of an aggregate instance besides op.Operator.
var (
	_ watermarkKeeper = (*aggNode)(nil)
	_ sizedOp         = (*aggNode)(nil)
	_ afterBarrierOp  = (*aggNode)(nil)
)

// newAggNode makes instance inst of aggregate node n, slot slot of the
// job's aggregate instances, emitting into out, and, for a durable job,
// loads its state (reemit: the view is rebuilt from its state, root: its
// rows are the view's).
func (f opFactory) newAggNode(n *gnode, inst, slot int, out *outlet, root bool) (*aggNode, error) {
	j := f.j
	spec := plan.AggSpecOf(n.agg, n.ins[0].from.retracts, windowCloseOf(n.agg))
	nd := agg.Node{Node: opNode(j, n, out, j.mem.cacheShare()),
		// A view without readers needs no old rows (changesOf).
		KeepRows:      !root || j.spec.View == nil || j.spec.Changelog || len(j.spec.View.Indexes) > 0,
		OldRows:       func() bool { return f.oldRows(root) },
		OnWindowClose: root && j.spec.OnWindowClose,
		PerEpoch:      !j.spec.memBackend()}
	if spec.Win != nil {
		nd.Late = j.et.newLateLog("window aggregate", n.op, n.agg.In.Types())
	}
	o := agg.New(spec, nd)
	reemit := j.spec.Reemit && root
	if j.durable() {
		if err := o.Load(f.opState(n.op, inst, n.par), inst, n.par, reemit); err != nil {
			return nil, err
		}
		if reemit {
			o.ReemitAll()
		}
	}
	if len(n.agg.Keys) == 0 && !o.Restored() {
		// A global aggregate has its one row before any input, as its
		// batch query does (count(*) = 0).
		o.ReemitAll()
	}
	j.mem.aggBytes[slot].Store(o.Bytes())
	return &aggNode{Op: o, j: j, slot: slot}, nil
}

// oldRows says whether an aggregate's changes carry old rows
// (update_before, deletes' values): only a changelog or a change stream
// needs them. The changelog flag only ever turns on, and a reader that
// turns it on with epoch n committed reads the changelog only from epoch
// n+3 (EnableChangelog); barrier n+2 is injected after that, so every
// epoch it reads has them. An aggregate inside the graph always sends
// them: its consumer retracts what it took from the group before. A
// view's indexes need them too, to remove a changed row's entries.
func (f opFactory) oldRows(root bool) bool {
	j := f.j
	return !root || j.spec.View == nil || j.changelog.Load() || len(j.spec.View.Indexes) > 0
}

// Push folds a chunk into the instance (the "agg" failpoint first) and
// updates the job's counters (opTask then checks the memory limit,
// sizedOp).
func (n *aggNode) Push(ectx *expr.Ctx, c Chunk, in int) error {
	if err := plan.Failpoint(n.j.spec.Name, "agg"); err != nil {
		c.Rec.Release()
		return err
	}
	rows := c.Rec.NumRows()
	if err := n.Op.Push(ectx, c, in); err != nil {
		return err
	}
	n.j.mem.dirty[n.slot].Store(int64(n.Dirty()))
	n.j.mem.inflight.Add(-rows)
	return nil
}

// Barrier runs the operator's barrier; the epoch's changed groups are then
// none.
func (n *aggNode) Barrier(ectx *expr.Ctx, b *Barrier, w *storage.Batch) error {
	if err := n.Op.Barrier(ectx, b, w); err != nil {
		return err
	}
	n.j.mem.dirty[n.slot].Store(0)
	return nil
}

// afterBarrier, once the barrier has gone on, lets a view's instance evict
// what is over its share of the state cache.
func (n *aggNode) afterBarrier(epoch uint64) error {
	if !n.j.durable() {
		return nil
	}
	if err := n.AfterBarrier(epoch); err != nil {
		return err
	}
	if n.Spilled() {
		n.j.mem.spilling.Store(true)
	}
	n.reportBytes()
	return nil
}

func (n *aggNode) reportBytes() { n.j.mem.aggBytes[n.slot].Store(n.Bytes()) }

func (n *aggNode) opID() uint32 { return n.OpID() }

func (n *aggNode) keepsWatermark() bool { return n.KeepsWatermark() }

func (n *aggNode) takeLate() []storage.LateRow { return n.TakeLate() }
