package bind

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
)

// A set-returning function in the FROM of a correlated subquery used as a
// value may read the enclosing query's columns, as psql's \d+ does with
// ARRAY(SELECT 'toast.' || x FROM unnest(tc.reloptions) x): PostgreSQL's
// implicit LATERAL there. It binds to a FuncScan marked Lateral whose
// arguments number the outer columns as the enclosing scope does; the
// subquery is then decorrelated over the domain of the outer values
// (corrdomain.go), and the function runs once per distinct outer value
// (planner.LateralFuncScan over the domain) instead of being cross-joined
// with it. The function must be the subquery's first FROM item (its
// columns come first, where the domain's go); elsewhere it is 0A000.

// lateralArgs lists the outer columns a lateral function reads in
// s.right, or nil.
func lateralArgs(n planner.Node) []int {
	var out []int
	switch n := n.(type) {
	case *planner.FuncScan:
		if n.Lateral {
			for _, a := range n.Args {
				walkCols(a, func(c *expr.ColRef) { out = append(out, c.Idx) })
			}
		}
	default:
		for _, c := range n.Children() {
			out = append(out, lateralArgs(c)...)
		}
	}
	return out
}

// lateralOver replaces the lateral function of n, its first FROM item,
// with a LateralFuncScan over domain (k columns); arg maps an argument's
// outer column to the domain's. The result's columns are the domain's,
// then n's.
func lateralOver(n planner.Node, domain *planner.Aggregate, arg func(*expr.ColRef) expr.Expr) (planner.Node, error) {
	k := len(domain.Cols)
	switch n := n.(type) {
	case *planner.FuncScan:
		if n.Lateral {
			args := make([]expr.Expr, len(n.Args))
			for i, a := range n.Args {
				args[i] = mapCols(a, arg)
			}
			return &planner.LateralFuncScan{Input: domain, Func: n.Func, Args: args, Col: n.Col}, nil
		}
	case *planner.Project:
		in, err := lateralOver(n.Input, domain, arg)
		if err != nil {
			return nil, err
		}
		p := &planner.Project{Input: in, Cols: append(append([]planner.Column(nil), domain.Cols...), n.Cols...)}
		for i, c := range domain.Cols {
			p.Exprs = append(p.Exprs, &expr.ColRef{Idx: i, T: c.T, Name: c.Name})
		}
		for _, e := range n.Exprs {
			p.Exprs = append(p.Exprs, shiftCols(e, k))
		}
		return p, nil
	case *planner.Filter:
		in, err := lateralOver(n.Input, domain, arg)
		if err != nil {
			return nil, err
		}
		return &planner.Filter{Input: in, Pred: shiftCols(n.Pred, k)}, nil
	case *planner.Join:
		left, err := lateralOver(n.Left, domain, arg)
		if err != nil {
			return nil, err
		}
		if lateralArgs(n.Right) != nil {
			break
		}
		j := *n
		j.Left = left
		if j.On != nil {
			j.On = shiftCols(j.On, k)
		}
		j.Cols = append(append([]planner.Column(nil), domain.Cols...), n.Cols...)
		return &j, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported,
		"a set-returning function with arguments from the enclosing query is supported only as the first FROM item of a subquery used as a value")
}
