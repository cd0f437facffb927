package planner

import (
	"github.com/streamdb/streamdb/storage"
)

// MarkSourceReads returns n with each scan of a connector source (CREATE
// SOURCE) marked with the columns the plan reads of it (Scan.Reads), so
// the job tells a generating connector to leave the others out
// (connector.Projector). It changes no node's columns or state layout.
// A scan under a node it does not know keeps Reads nil: every column.
func MarkSourceReads(n Node) Node {
	return markReads(n, allCols(len(n.Schema())))
}

// markReads marks the scans under n, of whose columns need are read.
func markReads(n Node, need []bool) Node {
	switch n := n.(type) {
	case *Scan:
		if n.Table.Kind != storage.KindSource || len(need) != len(n.Table.Columns) || allTrue(need) {
			return n
		}
		s := *n
		s.Reads = clone(need)
		return &s
	case *Filter:
		c := *n
		c.Input = markReads(n.Input, markRefs(clone(need), 0, n.Pred))
		return &c
	case *Project:
		c := *n
		c.Input = markReads(n.Input, markRefs(make([]bool, len(n.Input.Schema())), 0, n.Exprs...))
		return &c
	case *Sort:
		cn := clone(need)
		for _, k := range n.Keys {
			markRefs(cn, 0, k.E)
		}
		c := *n
		c.Input = markReads(n.Input, cn)
		return &c
	case *Limit:
		c := *n
		c.Input = markReads(n.Input, need)
		return &c
	case *SingleRow:
		c := *n
		c.Input = markReads(n.Input, need)
		return &c
	case *Aggregate:
		cn := markRefs(make([]bool, len(n.Input.Schema())), 0, n.GroupBy...)
		for _, a := range n.Aggs {
			if a.Arg != nil {
				markRefs(cn, 0, a.Arg)
			}
		}
		if n.Window != nil && n.Window.TimeOf != nil {
			markRefs(cn, 0, n.Window.TimeOf)
		}
		c := *n
		c.Input = markReads(n.Input, cn)
		return &c
	case *Hop:
		nIn := len(n.Input.Schema())
		c := *n
		c.Input = markReads(n.Input, markRefs(clone(need[:nIn]), 0, n.TS))
		return &c
	case *UnionAll:
		c := *n
		c.Inputs = make([]Node, len(n.Inputs))
		for i, in := range n.Inputs {
			c.Inputs[i] = markReads(in, need)
		}
		return &c
	case *Join:
		nl, nr := len(n.Left.Schema()), len(n.Right.Schema())
		both := make([]bool, nl+nr)
		copy(both, need) // a semi or anti join's output is its left side's
		if n.On != nil {
			markRefs(both, 0, n.On)
		}
		if n.Lookup || n.Versioned != nil {
			both = allCols(nl + nr) // their time and key columns are not all in On
		}
		c := *n
		c.Left, c.Right = markReads(n.Left, both[:nl]), markReads(n.Right, both[nl:])
		return &c
	}
	return n
}
