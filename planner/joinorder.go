package planner

import (
	"sort"

	"github.com/streamdb/streamdb/exec/expr"
)

// reorderInnerJoins joins the inputs of a tree of inner joins (its leaves:
// the nodes under it that are not inner joins) in an order in which each
// input joins one it has a column equality with, when the written order
// pairs inputs that have none while another order does not: in `FROM a, b,
// c WHERE a.k = c.k AND b.j = c.j` a and b have no key of their own, and
// joining them first would pair every row of a with every row of b. The
// tree's conditions (ON and the WHERE equalities sunk into them) go to the
// lowest join that has all their columns, where physicalJoin makes the
// equalities hash keys, and a projection puts the columns back in their
// written order. Inner joins commute, so the result is the same; j itself
// is returned when no order has fewer joins without a key.
func reorderInnerJoins(j *Join) Node {
	var leaves []Node
	var offs []int
	var conds []expr.Expr
	crosses := 0
	var flatten func(n Node, off int)
	flatten = func(n Node, off int) {
		c, ok := n.(*Join)
		if !ok || c.Kind != InnerJoin || c.Lookup || c.Versioned != nil {
			leaves = append(leaves, n)
			offs = append(offs, off)
			return
		}
		nl := len(c.Left.Schema())
		if !hasEquiKey(c.On, nl) {
			crosses++
		}
		flatten(c.Left, off)
		flatten(c.Right, off+nl)
		for _, x := range conjuncts(c.On) {
			conds = append(conds, shift(x, off))
		}
	}
	flatten(j, 0)
	if len(leaves) < 3 || len(leaves) > 64 || crosses == 0 {
		return j
	}
	leafOf := func(col int) int { return sort.SearchInts(offs, col+1) - 1 }
	maskOf := func(e expr.Expr) uint64 {
		var m uint64
		walk(e, func(x expr.Expr) {
			if c, ok := x.(*expr.ColRef); ok {
				m |= 1 << leafOf(c.Idx)
			}
		})
		return m
	}
	// Column equalities between two leaves, as the two leaves' bits.
	var edges [][2]uint64
	for _, c := range conds {
		if a, b, ok := columnEquality(c); ok {
			if ma, mb := maskOf(a), maskOf(b); ma != mb {
				edges = append(edges, [2]uint64{ma, mb})
			}
		}
	}
	joinedTo := func(i int, in uint64) bool {
		bit := uint64(1) << i
		for _, e := range edges {
			if e[0] == bit && e[1]&in != 0 || e[1] == bit && e[0]&in != 0 {
				return true
			}
		}
		return false
	}
	order := []int{0}
	in := uint64(1)
	greedyCrosses := 0
	for len(order) < len(leaves) {
		next := -1
		for i := range leaves {
			if in&(1<<i) == 0 && joinedTo(i, in) {
				next = i
				break
			}
		}
		if next < 0 {
			for i := range leaves {
				if in&(1<<i) == 0 {
					next = i
					break
				}
			}
			greedyCrosses++
		}
		order = append(order, next)
		in |= 1 << next
	}
	if greedyCrosses >= crosses {
		return j
	}
	// Column i of j is column newIdx[i] of the reordered tree.
	newIdx := make([]int, len(j.Cols))
	at := 0
	for _, l := range order {
		for k := range leaves[l].Schema() {
			newIdx[offs[l]+k] = at
			at++
		}
	}
	to := func(i int) int { return newIdx[i] }
	placed := make([]bool, len(conds))
	cur, curMask := leaves[order[0]], uint64(1)<<order[0]
	for _, l := range order[1:] {
		curMask |= 1 << l
		var on []expr.Expr
		for ci, c := range conds {
			if !placed[ci] && maskOf(c)&^curMask == 0 {
				placed[ci] = true
				on = append(on, mapCols(c, to))
			}
		}
		cols := append(append([]Column(nil), cur.Schema()...), leaves[l].Schema()...)
		cur = &Join{Left: cur, Right: leaves[l], Kind: InnerJoin, On: and(on), Cols: cols}
	}
	exprs := make([]expr.Expr, len(j.Cols))
	for i, c := range j.Cols {
		name := c.Name
		if c.Table != "" {
			name = c.Table + "." + c.Name
		}
		exprs[i] = &expr.ColRef{Idx: newIdx[i], T: c.T, Name: name}
	}
	return &Project{Input: cur, Exprs: exprs, Cols: j.Cols}
}

// hasEquiKey reports whether a conjunct of on equates an expression over
// the left input (its first nl columns) with one over the right.
func hasEquiKey(on expr.Expr, nl int) bool {
	for _, c := range conjuncts(on) {
		if f, ok := c.(*expr.Func); ok && f.Name == "=" && len(f.Args) == 2 {
			sa, sb := side(f.Args[0], nl), side(f.Args[1], nl)
			if sa == sideLeft && sb == sideRight || sa == sideRight && sb == sideLeft {
				return true
			}
		}
	}
	return false
}
