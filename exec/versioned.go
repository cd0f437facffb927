package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/versionjoin"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Versioned (event-time temporal) joins, FOR SYSTEM_TIME AS OF l.ts over
// a keyed table with a WATERMARK (HashJoin.Versioned). The operator is
// package exec/versionjoin; here are its hooks: the batch query, the
// graph node (an nJoin node of one instance whose HashJoin has
// Versioned) and the instance the runtime runs.

// versionSpec is the operator's spec of p.
func versionSpec(p *HashJoin) versionjoin.Spec {
	return versionjoin.Spec{
		Left:       p.Kind == JoinLeft,
		ProbeTypes: p.Left.Types(), BuildTypes: p.Right.Types(),
		ProbeKeys: p.LeftKeys, BuildKeys: p.RightKeys,
		ProbeTime: p.Versioned.ProbeTime, BuildTime: p.Versioned.BuildTime,
		Canon: canonKeysT,
	}
}

// runVersioned is a batch query's versioned join: the rule over all rows,
// the build side being the table's history (ScanStream.History).
func runVersioned(ctx *Ctx, p *HashJoin, emit func(arrow.RecordBatch) error) error {
	right, err := collect(ctx, p.Right)
	if err != nil {
		return err
	}
	left, err := collect(ctx, p.Left)
	if err != nil {
		if right != nil {
			right.Release()
		}
		return err
	}
	var build, probe []arrow.RecordBatch
	if right != nil {
		build = append(build, right)
	}
	if left != nil {
		probe = append(probe, left)
	}
	return versionjoin.Batch(ctx.Expr, versionSpec(p), build, probe, emitOutlet(emit))
}

// emitOutlet is a batch query's emit callback as an op.Outlet.
type emitOutlet func(arrow.RecordBatch) error

func (e emitOutlet) Emit(_ *expr.Ctx, c op.Chunk) error { return e(c.Rec) }

// scanKeyedHistory reads every row a keyed table inserted or updated to,
// in log order per partition: the table's versions.
func scanKeyedHistory(ctx *Ctx, t *storage.TableDef, snap storage.Reader, emit func(arrow.RecordBatch) error) error {
	ts := columnTypes(t)
	return readLogBlocks(ctx, t, snap, func(rec arrow.RecordBatch) error {
		rec, ops := splitOps(rec)
		defer rec.Release()
		var keep []int
		for i, o := range ops {
			if o.Sign() > 0 {
				keep = append(keep, i)
			}
		}
		if len(keep) == 0 {
			return nil
		}
		return emit(takeRecordMem(ctx.alloc(), rec, keep, ts))
	})
}

// errVersionedReemit refuses to rebuild a view's rows from a versioned
// join's state.
var errVersionedReemit = sqlerr.New(sqlerr.FeatureNotSupported,
	"a view over a temporal join (FOR SYSTEM_TIME AS OF a time column) cannot be upgraded from a savepoint: the join keeps no emitted rows to rebuild the view's rows from")

// versionedOp makes a versioned join's instance (the runtime's hook); a
// durable job's restores its state.
func (j *Job) versionedOp(n *gnode, out *outlet, reemit bool) (*versionjoin.Op, error) {
	if reemit {
		return nil, errVersionedReemit
	}
	spec := versionSpec(n.join)
	if !j.durable() {
		return versionjoin.New(spec, out, nil), nil
	}
	o := versionjoin.New(spec, out, j.opState(n.op, 0, 1))
	if err := o.Load(); err != nil {
		return nil, err
	}
	return o, nil
}

// versioned adds a versioned join's node: one instance (key group 0),
// the left side only inserting; its output only inserts (rows are final).
func (c *compiler) versioned(g *gnode) (*gnode, error) {
	n := g.join
	if err := c.input(g, 0, n.Left, n.LeftKeys); err != nil {
		return nil, err
	}
	if g.ins[0].from.retracts {
		return nil, errVersionedRetracts
	}
	if err := c.input(g, 1, n.Right, n.RightKeys); err != nil {
		return nil, err
	}
	g.retracts = false
	return c.add(g), nil
}

// errVersionedRetracts refuses a versioned join over a left side that retracts.
var errVersionedRetracts = sqlerr.New(sqlerr.FeatureNotSupported,
	"a temporal join (FOR SYSTEM_TIME AS OF a time column) in a continuous query needs a left side that only inserts rows (a stream without a PRIMARY KEY, a source, or a filter or projection of one); this one retracts rows, which the join, whose results are final, could not retract")

// versionedSide says source n is a keyed table read only as the versioned
// side of temporal joins: its WATERMARK makes its watermark. Any other
// reader of a keyed table sees its changes without event time (a change
// may retract a row of any time).
func versionedSide(n *gnode) bool {
	if n.kind != nSource || !Keyed(n.src) || n.src.Watermark == nil || len(n.outs) == 0 {
		return false
	}
	for _, e := range n.outs {
		if e.to == nil || e.to.kind != nJoin || e.to.join.Versioned == nil || e.in != 1 {
			return false
		}
	}
	return true
}

// checkVersionedSides refuses a graph where a versioned join's table is
// also read otherwise (it would have no watermark, and the join would
// never emit).
func checkVersionedSides(nodes []*gnode) error {
	for _, n := range nodes {
		if n.kind != nJoin || n.join.Versioned == nil {
			continue
		}
		if src := n.ins[1].from; !versionedSide(src) {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"a continuous query that joins %q FOR SYSTEM_TIME AS OF a time column cannot also read it otherwise: its watermark serves the temporal join only", src.src.Name)
		}
	}
	return nil
}
