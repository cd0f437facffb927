package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// EXISTS in a select list, as psql's \d of an index sends it
// ((NOT i.indimmediate) AND EXISTS (SELECT 1 FROM pg_constraint WHERE
// conrelid = i.indrelid ...)): a subquery without grouping, aggregates,
// windows or LIMIT has a row exactly when it has a nonzero count, so
//
//	[NOT] EXISTS (SELECT ... FROM f WHERE w)
//	  → (SELECT count(1) FROM f WHERE w) > 0   (NOT: = 0)
//
// and the scalar subquery is bound as any other (correlated ones are
// decorrelated into a grouped join whose missing groups count 0). Other
// EXISTS in a select list stay 0A000 (bindSubqueryExpr).

// existsAsCount rewrites the select list's EXISTS subqueries in place.
func existsAsCount(fields *ast.FieldList) {
	v := existsRewriter{}
	for _, f := range fields.Fields {
		if f.Expr != nil {
			if n, ok := f.Expr.Accept(v); ok {
				f.Expr = n.(ast.ExprNode)
			}
		}
	}
}

type existsRewriter struct{}

func (existsRewriter) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.ExistsSubqueryExpr, *ast.SubqueryExpr, *ast.SelectStmt, *ast.SetOprStmt:
		return n, true // EXISTS is rewritten in Leave; nested queries are their own
	}
	return n, false
}

func (existsRewriter) Leave(n ast.Node) (ast.Node, bool) {
	x, ok := n.(*ast.ExistsSubqueryExpr)
	if !ok {
		return n, true
	}
	sub, ok := x.Sel.(*ast.SubqueryExpr)
	if !ok {
		return n, true
	}
	s, ok := sub.Query.(*ast.SelectStmt)
	if !ok || s.Kind != ast.SelectStmtKindSelect || s.With != nil || s.GroupBy != nil || s.Having != nil ||
		s.Limit != nil || len(s.WindowSpecs) > 0 || hasAggOrWindow(s.Fields) {
		return n, true
	}
	count := *s
	count.Distinct = false
	count.OrderBy = nil
	count.Fields = &ast.FieldList{Fields: []*ast.SelectField{{
		Expr: &ast.AggregateFuncExpr{F: "count", Args: []ast.ExprNode{ast.NewValueExpr(1, "", "")}},
	}}}
	op := opcode.GT
	if x.Not {
		op = opcode.EQ
	}
	return &ast.BinaryOperationExpr{Op: op, L: &ast.SubqueryExpr{Query: &count}, R: ast.NewValueExpr(0, "", "")}, true
}
