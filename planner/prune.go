package planner

import "github.com/streamdb/streamdb/exec/expr"

// PruneJoinInputs narrows each join's inputs to the columns the operators
// above it and its own ON read, so a join keeps, writes and emits only
// those: Nexmark q4 joins whole auction and bid rows (ten and seven
// columns, four strings) to read four and three of them. A side is
// narrowed by a Project of column references over it; the filters,
// aggregates, sorts and projections above the join are rewritten to the
// narrower layout. What a node needs from its input is what its own
// expressions read, and for a pass-through node (Filter, Sort, Limit)
// also what its parent needs; a Project keeps all its expressions. Lookup
// and versioned joins, and nodes of other kinds, are left as they are
// (with what is below them). The plan's own output is unchanged.
func PruneJoinInputs(n Node) Node {
	out, _ := prune(n, allCols(len(n.Schema())))
	return out
}

// prune returns n rewritten to compute at least the columns need marks,
// and where each of n's output columns went (-1: dropped).
func prune(n Node, need []bool) (Node, []int) {
	switch n := n.(type) {
	case *Filter:
		in, m := prune(n.Input, markRefs(clone(need), 0, n.Pred))
		return &Filter{Input: in, Pred: remapExpr(n.Pred, m)}, m
	case *Sort:
		cn := clone(need)
		for _, k := range n.Keys {
			markRefs(cn, 0, k.E)
		}
		in, m := prune(n.Input, cn)
		s := &Sort{Input: in, Keys: make([]SortKey, len(n.Keys))}
		for i, k := range n.Keys {
			s.Keys[i] = SortKey{E: remapExpr(k.E, m), Desc: k.Desc, NullsFirst: k.NullsFirst}
		}
		return s, m
	case *Limit:
		in, m := prune(n.Input, need)
		return &Limit{Input: in, Offset: n.Offset, Count: n.Count}, m
	case *Project:
		cn := make([]bool, len(n.Input.Schema()))
		markRefs(cn, 0, n.Exprs...)
		in, m := prune(n.Input, cn)
		if in == n.Input {
			return n, identity(len(n.Cols))
		}
		return &Project{Input: in, Exprs: remapExprs(n.Exprs, m), Cols: n.Cols}, identity(len(n.Cols))
	case *Aggregate:
		cn := make([]bool, len(n.Input.Schema()))
		markRefs(cn, 0, n.GroupBy...)
		for _, a := range n.Aggs {
			if a.Arg != nil {
				markRefs(cn, 0, a.Arg)
			}
		}
		if n.Window != nil && n.Window.TimeOf != nil {
			markRefs(cn, 0, n.Window.TimeOf)
		}
		in, m := prune(n.Input, cn)
		if in == n.Input {
			return n, identity(len(n.Cols))
		}
		a := *n
		a.Input, a.GroupBy = in, remapExprs(n.GroupBy, m)
		a.Aggs = append([]AggCall(nil), n.Aggs...)
		for i := range a.Aggs {
			if a.Aggs[i].Arg != nil {
				a.Aggs[i].Arg = remapExpr(a.Aggs[i].Arg, m)
			}
		}
		if n.Window != nil {
			w := *n.Window
			if w.TimeOf != nil {
				w.TimeOf = remapExpr(w.TimeOf, m)
			}
			a.Window = &w
		}
		return &a, identity(len(n.Cols))
	case *Join:
		if n.Lookup || n.Versioned != nil {
			return n, identity(len(n.Cols))
		}
		return pruneJoin(n, need)
	}
	return n, identity(len(n.Schema()))
}

// pruneJoin narrows a join's sides to need plus the columns of ON.
func pruneJoin(n *Join, need []bool) (Node, []int) {
	nl, nr := len(n.Left.Schema()), len(n.Right.Schema())
	both := make([]bool, nl+nr)
	copy(both, need) // a semi or anti join's output is its left side's
	if n.On != nil {
		markRefs(both, 0, n.On)
	}
	l, ml := pruneSide(n.Left, both[:nl])
	r, mr := pruneSide(n.Right, both[nl:])
	if l == n.Left && r == n.Right {
		return n, identity(len(n.Cols))
	}
	wl := len(l.Schema())
	on := make([]int, nl+nr) // ON's columns: left then right
	copy(on, ml)
	for i, j := range mr {
		on[nl+i] = -1
		if j >= 0 {
			on[nl+i] = wl + j
		}
	}
	j := &Join{Left: l, Right: r, Kind: n.Kind, Lookup: n.Lookup, Versioned: n.Versioned}
	if n.On != nil {
		j.On = remapExpr(n.On, on)
	}
	j.Cols = append(append([]Column(nil), l.Schema()...), r.Schema()...)
	if n.Kind == SemiJoin || n.Kind == AntiJoin {
		j.Cols = j.Cols[:wl]
		return j, ml
	}
	return j, on
}

// pruneSide narrows one join input to the columns need marks: a Project
// of column references over it, unless it is a join (narrowed itself) or
// every column it computes is needed. A side none of whose columns is
// read keeps its first, so its rows still count.
func pruneSide(n Node, need []bool) (Node, []int) {
	in, m := prune(n, need)
	if _, ok := in.(*Join); ok {
		return in, m
	}
	cols := in.Schema()
	keep := make([]bool, len(cols))
	for i, ok := range need {
		if ok && m[i] >= 0 {
			keep[m[i]] = true
		}
	}
	if hopUnder(in) != nil {
		// A window join's side stays whole: its late rows are told apart
		// by the window and time columns (exec's hopRowTime).
		return in, m
	}
	if !anyTrue(keep) && len(keep) > 0 {
		keep[0] = true
	}
	if allTrue(keep) {
		return in, m
	}
	p := &Project{Input: in}
	at := make([]int, len(cols))
	for i, c := range cols {
		at[i] = -1
		if keep[i] {
			at[i] = len(p.Exprs)
			p.Exprs = append(p.Exprs, &expr.ColRef{Idx: i, T: c.T, Name: colName(c)})
			p.Cols = append(p.Cols, c)
		}
	}
	out := make([]int, len(m))
	for i, j := range m {
		out[i] = -1
		if j >= 0 {
			out[i] = at[j]
		}
	}
	return p, out
}

// hopUnder is the Hop n is, or is under filters and projections over.
func hopUnder(n Node) *Hop {
	for {
		switch x := n.(type) {
		case *Filter:
			n = x.Input
		case *Project:
			n = x.Input
		case *Hop:
			return x
		default:
			return nil
		}
	}
}

func colName(c Column) string {
	if c.Table != "" {
		return c.Table + "." + c.Name
	}
	return c.Name
}

// markRefs marks in need the columns es read, shifted by -off.
func markRefs(need []bool, off int, es ...expr.Expr) []bool {
	for _, e := range es {
		walk(e, func(x expr.Expr) {
			if c, ok := x.(*expr.ColRef); ok && c.Idx-off >= 0 && c.Idx-off < len(need) {
				need[c.Idx-off] = true
			}
		})
	}
	return need
}

func remapExpr(e expr.Expr, m []int) expr.Expr {
	return mapCols(e, func(i int) int { return m[i] })
}

func remapExprs(es []expr.Expr, m []int) []expr.Expr {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		out[i] = remapExpr(e, m)
	}
	return out
}

func allCols(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

func identity(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

func clone(b []bool) []bool { return append([]bool(nil), b...) }

func anyTrue(b []bool) bool {
	for _, x := range b {
		if x {
			return true
		}
	}
	return false
}

func allTrue(b []bool) bool {
	for _, x := range b {
		if !x {
			return false
		}
	}
	return true
}
