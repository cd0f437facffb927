package exec

import (
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/exec/versionjoin"
	"github.com/streamdb/streamdb/sqlerr"
)

// errVersionedReemit refuses to rebuild a view's rows from a versioned
// join's state.
var errVersionedReemit = sqlerr.New(sqlerr.FeatureNotSupported,
	"a view over a temporal join (FOR SYSTEM_TIME AS OF a time column) cannot be upgraded from a savepoint: the join keeps no emitted rows to rebuild the view's rows from")

// versionedOp makes a versioned join's instance (the runtime's hook); a
// durable job's restores its state.
func (f opFactory) versionedOp(n *gnode, out *outlet, reemit bool) (*versionjoin.Op, error) {
	j := f.j
	if reemit {
		return nil, errVersionedReemit
	}
	spec := plan.VersionSpec(n.join)
	if !j.durable() {
		return versionjoin.New(spec, out, nil), nil
	}
	o := versionjoin.New(spec, out, f.opState(n.op, 0, 1))
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
	if n.kind != nSource || !plan.Keyed(n.src) || n.src.Watermark == nil || len(n.outs) == 0 {
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
