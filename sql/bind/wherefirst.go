package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/streamdb/streamdb/planner"
)

// filterBeforeValueSubqueries applies the conditions of a top-level
// query's WHERE that contain no subquery to the FROM input before the
// value subqueries of WHERE and the select list are joined to it, and
// returns the input and the conditions left for bindWhere.
//
// A correlated value subquery is decorrelated over the domain of its outer
// values (corrdomain.go: an aggregate over a copy of the input). Over the
// unfiltered input of a comma join, FROM o, l WHERE o.k = l.k AND l.q =
// (SELECT max(q) FROM l2 WHERE l2.k = o.k), that copy is o x l, a cross
// join no later pass can key (the equality sits in a filter above the
// subquery's join, which the copy is not under). Filtering first puts the
// equality under both, where the planner turns it into a join key.
//
// Only a query with no outer query is split: a subquery's own WHERE keeps
// one filter, from which its correlated conditions are read.
func (b *Binder) filterBeforeValueSubqueries(c *ectx, in planner.Node, where ast.ExprNode, scalarIn []ast.Node) (planner.Node, ast.ExprNode, error) {
	if where == nil || b.outer != nil || len(findScalarSubqueries(scalarIn...)) == 0 {
		return in, where, nil
	}
	var plain, rest []ast.ExprNode
	for _, n := range splitAnd(where) {
		if hasSubquery(n) {
			rest = append(rest, n)
		} else {
			plain = append(plain, n)
		}
	}
	if len(plain) == 0 {
		return in, where, nil
	}
	pred, err := b.bindBool(c, andAll(plain), "WHERE")
	if err != nil {
		return nil, nil, err
	}
	in = &planner.Filter{Input: in, Pred: pred}
	if len(rest) == 0 {
		return in, nil, nil // the subqueries are the select list's
	}
	return in, andAll(rest), nil
}

// andAll joins conditions with AND.
func andAll(ns []ast.ExprNode) ast.ExprNode {
	e := ns[0]
	for _, n := range ns[1:] {
		e = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: e, R: n}
	}
	return e
}

// hasSubquery reports whether n contains a subquery of any kind.
func hasSubquery(n ast.Node) bool {
	v := &subqueryFinder{}
	n.Accept(v)
	return v.found
}

type subqueryFinder struct{ found bool }

func (v *subqueryFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr, *ast.SelectStmt, *ast.SetOprStmt:
		v.found = true
		return n, true
	}
	return n, v.found
}

func (v *subqueryFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }
