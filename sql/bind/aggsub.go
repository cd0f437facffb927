package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/streamdb/streamdb/sqlerr"
)

// Subqueries inside an aggregate's arguments, which is where the parser
// puts a FILTER (WHERE ...) condition (count(*) FILTER (WHERE c) is
// count(CASE WHEN c THEN 1 END)). They are evaluated per input row, before
// the aggregation, so they become hidden columns of the FROM input as the
// value subqueries of WHERE do (bindScalarSubqueries):
//
//	(SELECT v ...)          as is (uncorrelated: a cross join of one row;
//	                        correlated: decorrelated, batch queries only)
//	[NOT] EXISTS (S)        (SELECT count(1) FROM S) > 0 (= 0), as existssel.go
//	x [NOT] IN (SELECT v)   [NOT] x = ANY(ARRAY(SELECT v ...)): NULL where
//	                        no element equals x and x or an element is NULL,
//	                        as IN is; v must have an array type
//
// In a materialized view the scalar and EXISTS forms over an uncorrelated
// subquery are maintained (the join retracts every row's value when the
// subquery's changes); IN (subquery) there is 0A000 (ARRAY(subquery) is not
// maintained), as is any correlated one.

// aggArgSubqueries rewrites EXISTS and IN (subquery) inside the aggregate
// calls of a grouped query's select list, HAVING and ORDER BY, and returns
// the aggregate calls holding a subquery (for bindScalarSubqueries).
func (b *Binder) aggArgSubqueries(s *ast.SelectStmt) ([]ast.Node, error) {
	f := &aggSubFinder{view: b.View}
	visit := func(n ast.ExprNode) {
		if n != nil {
			n.Accept(f)
		}
	}
	for _, fl := range s.Fields.Fields {
		visit(fl.Expr)
	}
	if s.Having != nil {
		visit(s.Having.Expr)
	}
	if s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			visit(o.Expr)
		}
	}
	return f.aggs, f.err
}

// aggSubFinder finds the aggregate calls with subqueries in their
// arguments and rewrites their EXISTS and IN (subquery).
type aggSubFinder struct {
	view bool
	aggs []ast.Node
	err  error
}

func (f *aggSubFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr, *ast.SelectStmt, *ast.SetOprStmt, *ast.WindowFuncExpr:
		return n, true
	case *ast.AggregateFuncExpr:
		f.rewrite(x, x.Args)
		return n, true
	case *ast.FuncCallExpr:
		// agg(...) FILTER (WHERE cond) written pg_agg_filter(cond, agg(...))
		// (aggfilter.go); the aggregate is met below.
		if x.FnName.L == "pg_agg_filter" && len(x.Args) == 2 {
			f.rewrite(x, x.Args[:1])
		}
	}
	return n, false
}

// rewrite rewrites args of call in place and notes call if they hold a
// subquery.
func (f *aggSubFinder) rewrite(call ast.Node, args []ast.ExprNode) {
	r := &aggSubRewriter{view: f.view}
	for i, a := range args {
		if out, ok := a.Accept(r); ok {
			args[i] = out.(ast.ExprNode)
		}
	}
	if r.err != nil && f.err == nil {
		f.err = r.err
	}
	if r.found {
		f.aggs = append(f.aggs, call)
	}
}

func (f *aggSubFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// aggSubRewriter rewrites EXISTS and IN (subquery) within one aggregate
// call's arguments, noting whether they hold any subquery.
type aggSubRewriter struct {
	view  bool
	found bool
	err   error
}

func (r *aggSubRewriter) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		r.found = true
		return n, true // rewritten in Leave; nested queries are their own
	case *ast.SelectStmt, *ast.SetOprStmt:
		return n, true
	}
	return n, false
}

func (r *aggSubRewriter) Leave(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.ExistsSubqueryExpr:
		if out, ok := (existsRewriter{}).Leave(n); ok && out != n {
			return out, true
		}
	case *ast.PatternInExpr:
		sub, ok := x.Sel.(*ast.SubqueryExpr)
		if !ok {
			return n, true
		}
		r.found = true
		if r.view {
			r.err = sqlerr.New(sqlerr.FeatureNotSupported, "IN (subquery) inside an aggregate's FILTER or arguments is not supported in a materialized view (it would be re-evaluated for every row whenever the subquery's rows change); use a join")
			return n, true
		}
		arr := &ast.FuncCallExpr{FnName: ast.NewCIStr("pg_array_subquery"), Args: []ast.ExprNode{sub}}
		var out ast.ExprNode = &ast.FuncCallExpr{FnName: ast.NewCIStr(ast.JSONMemberOf), Args: []ast.ExprNode{x.Expr, arr}}
		if x.Not {
			out = &ast.UnaryOperationExpr{Op: opcode.Not, V: &ast.ParenthesesExpr{Expr: out}}
		}
		return out, true
	}
	return n, true
}
