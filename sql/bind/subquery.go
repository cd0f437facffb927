package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Subqueries in WHERE become joins (the streaming engine runs the same
// shapes):
//
//	[NOT] EXISTS (SELECT ... FROM t WHERE t.k = o.k AND p(t, o) AND q(t))
//	  → Join semi|anti  on t.k = o.k AND p(t, o)   (planner: keys, residual)
//	      left: outer input; right: Filter q(t) over t
//	x IN (SELECT y ...)      → Join semi on x = y [AND correlations]
//	x NOT IN (SELECT y ...)  → (uncorrelated only) null-aware:
//	  Project outer columns
//	    Filter n = 0 OR (x IS NOT NULL AND n = nn)
//	      Join inner (cross)
//	        Join anti on x = y (outer input, subquery)
//	        Aggregate [] [count(*) AS n, count(y) AS nn] (subquery)
//	(SELECT v ...) as a value (uncorrelated) → Join inner (cross) of the
//	  FROM input with SingleRow(subquery), a hidden column of the scope.
//
// Only conditions of WHERE joined by AND are decorrelated; a subquery is
// correlated when a name in it resolves in the enclosing query (scope.outer).

// scalarRef is where a scalar subquery's value is: column idx of scope sc;
// cnt is the column counting the rows a correlated one matched (-1: none);
// array marks ARRAY(subquery) (see value).
type scalarRef struct {
	sc    *scope
	idx   int
	cnt   int
	array bool
	// post and empty are an aggregating subquery's value over its
	// aggregates' hidden columns (from idx) and over no rows
	// (subqueryagg.go).
	post, empty expr.Expr
}

// splitAnd lists the conjuncts of a condition.
func splitAnd(n ast.ExprNode) []ast.ExprNode {
	switch x := n.(type) {
	case *ast.ParenthesesExpr:
		return splitAnd(x.Expr)
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.LogicAnd {
			return append(splitAnd(x.L), splitAnd(x.R)...)
		}
	}
	return []ast.ExprNode{n}
}

// subqueryPredicate recognises [NOT] EXISTS (q) and x [NOT] IN (q).
func subqueryPredicate(n ast.ExprNode) (lhs ast.ExprNode, q ast.ResultSetNode, not, ok bool) {
	for {
		switch x := n.(type) {
		case *ast.ParenthesesExpr:
			n = x.Expr
			continue
		case *ast.UnaryOperationExpr:
			if x.Op == opcode.Not || x.Op == opcode.Not2 {
				not = !not
				n = x.V
				continue
			}
		case *ast.ExistsSubqueryExpr:
			if sub, isSub := x.Sel.(*ast.SubqueryExpr); isSub {
				return nil, sub.Query, not != x.Not, true
			}
		case *ast.PatternInExpr:
			if sub, isSub := x.Sel.(*ast.SubqueryExpr); isSub {
				return x.Expr, sub.Query, not != x.Not, true
			}
		}
		return nil, nil, false, false
	}
}

// bindWhere binds WHERE over in (scope c.sc): subquery conditions become
// joins, the rest one Filter.
func (b *Binder) bindWhere(c *ectx, in planner.Node, where ast.ExprNode) (planner.Node, error) {
	conj := splitAnd(where)
	any := false
	for _, n := range conj {
		if _, _, _, ok := subqueryPredicate(n); ok {
			any = true
		}
	}
	if !any {
		pred, err := b.bindBool(c, where, "WHERE")
		if err != nil {
			return nil, err
		}
		return &planner.Filter{Input: in, Pred: pred}, nil
	}
	var pred expr.Expr
	for _, n := range conj {
		lhs, q, not, ok := subqueryPredicate(n)
		if !ok {
			e, err := b.bindBool(c, n, "WHERE")
			if err != nil {
				return nil, err
			}
			pred = andExpr(pred, e)
			continue
		}
		var err error
		if lhs == nil {
			in, err = b.existsJoin(c, in, q, not)
		} else {
			in, err = b.inJoin(c, in, lhs, q, not)
		}
		if err != nil {
			return nil, err
		}
	}
	if pred != nil {
		in = &planner.Filter{Input: in, Pred: pred}
	}
	return in, nil
}

// subquery is a bound subquery of a WHERE condition.
type subquery struct {
	right planner.Node
	// corr is the correlated conditions over the subquery's columns, then
	// the outer query's (nil if uncorrelated).
	corr expr.Expr
	// sel is the select-list value over right's columns (IN only).
	sel expr.Expr
	// order is a correlated subquery's ORDER BY over right's columns (with
	// wantCol; ARRAY(subquery) honours it).
	order []planner.SortKey
	// selOuter says sel also uses the outer query's columns, numbered
	// after right's (a subquery used as a value only: corrdomain.go).
	selOuter bool
	// lateral says a set-returning function in right reads the outer
	// query's columns (srflateral.go).
	lateral bool
	// aggs are the aggregates of a value subquery that aggregates its
	// rows (subqueryagg.go); sel is then over their results.
	aggs []planner.AggCall
}

// bindSubquery binds q nested in the query of scope sc; wantCol asks for
// its one output column.
func (b *Binder) bindSubquery(sc *scope, q ast.ResultSetNode, wantCol bool, what string) (*subquery, error) {
	// Only this subquery may use outer columns in its select list, not
	// the ones nested in it.
	valueSub := b.valueSubquery
	b.valueSubquery = false
	// Uncorrelated: the subquery binds on its own.
	refs := b.outerRefs
	prev := b.outer
	b.outer = sc
	p, err := b.bindResultSet(q, false)
	b.outer = prev
	if b.outerRefs == refs {
		if err != nil {
			return nil, err
		}
		out := &subquery{right: p}
		if wantCol {
			cols := p.Schema()
			if len(cols) != 1 {
				return nil, sqlerr.New(sqlerr.SyntaxError, "subquery has too many columns")
			}
			out.sel = &expr.ColRef{Idx: 0, T: cols[0].T, Name: cols[0].Name}
		}
		return out, nil
	}
	// Correlated: only SELECT ... FROM ... WHERE, outer columns in WHERE.
	s, ok := q.(*ast.SelectStmt)
	// A value subquery may aggregate its rows (subqueryagg.go).
	aggSel := ok && wantCol && valueSub && s.Fields != nil && len(s.Fields.Fields) == 1 && s.Fields.Fields[0].Expr != nil &&
		containsAgg(s.Fields.Fields[0].Expr) && s.OrderBy == nil
	if !ok || s.Kind != ast.SelectStmtKindSelect || s.With != nil || s.From == nil || s.GroupBy != nil ||
		s.Having != nil || s.Limit != nil || len(s.WindowSpecs) > 0 || hasAggOrWindow(s.Fields) && !aggSel {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"correlated subqueries in %s are supported only as SELECT ... FROM ... WHERE, without GROUP BY, aggregates, window functions, LIMIT or set operations", what)
	}
	prev = b.outer
	b.outer, b.lateral = nil, sc
	refs = b.outerRefs
	right, isc, err := b.bindFrom(s.From.TableRefs)
	b.outer, b.lateral = prev, nil
	if err != nil {
		return nil, err
	}
	isc.outer, isc.outerRefs = sc, &b.outerRefs
	nI, nO := len(isc.cols), len(sc.cols)
	out := &subquery{lateral: b.outerRefs != refs}
	var inner expr.Expr
	if s.Where != nil {
		for _, n := range splitAnd(s.Where) {
			if lhs, q, not, ok := subqueryPredicate(n); ok {
				// A subquery condition inside: joined to the subquery's
				// FROM, so it may refer to it but not further out.
				c := &ectx{sc: isc, noAgg: "aggregate functions are not allowed in WHERE"}
				refs := b.outerRefs
				if lhs == nil {
					right, err = b.existsJoin(c, right, q, not)
				} else {
					right, err = b.inJoin(c, right, lhs, q, not)
				}
				if err != nil {
					return nil, err
				}
				if j, ok := right.(*planner.Join); ok && b.outerRefs != refs && refersBeyond(j.On, len(j.Left.Schema())+len(j.Right.Schema())) {
					return nil, sqlerr.New(sqlerr.FeatureNotSupported, "subqueries that reference a query two or more levels out are not supported")
				}
				continue
			}
			refs := b.outerRefs
			e, err := b.bindBool(&ectx{sc: isc, noAgg: "aggregate functions are not allowed in WHERE", noWin: "window functions are not allowed in WHERE"}, n, "WHERE")
			if err != nil {
				return nil, err
			}
			if b.outerRefs == refs {
				inner = andExpr(inner, e)
				continue
			}
			tooFar := false
			walkCols(e, func(c *expr.ColRef) {
				tooFar = tooFar || c.Idx >= nI+nO
			})
			if tooFar {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "subqueries that reference a query two or more levels out are not supported")
			}
			out.corr = andExpr(out.corr, e)
		}
	}
	if !wantCol {
		// EXISTS ignores its select list, but its names must still exist.
		for _, f := range s.Fields.Fields {
			if f.WildCard == nil {
				if _, err := b.bindExpr(&ectx{sc: isc, noAgg: "aggregate functions are not allowed here"}, f.Expr); err != nil {
					return nil, err
				}
			}
		}
	}
	if wantCol {
		f := s.Fields.Fields
		if len(f) != 1 || f[0].WildCard != nil {
			if len(f) == 1 && f[0].WildCard != nil {
				cols, err := starCols(isc, f[0].WildCard.Table.O)
				if err != nil {
					return nil, err
				}
				if len(cols) == 1 {
					c := isc.cols[cols[0]].Column
					out.sel = &expr.ColRef{Idx: cols[0], T: c.T, Name: qualName(c)}
				}
			}
			if out.sel == nil {
				return nil, sqlerr.New(sqlerr.SyntaxError, "subquery has too many columns")
			}
		} else if aggSel {
			if err := b.bindAggSel(out, isc, nO, f[0].Expr); err != nil {
				return nil, err
			}
		} else {
			refs := b.outerRefs
			e, err := b.bindExpr(&ectx{sc: isc, noAgg: "aggregate functions are not allowed here"}, f[0].Expr)
			if err != nil {
				return nil, err
			}
			if b.outerRefs != refs {
				if !valueSub || refersBeyond(e, nI+nO) {
					return nil, sqlerr.New(sqlerr.FeatureNotSupported, "subqueries whose select list uses columns of the outer query are not supported")
				}
				out.selOuter = true
			}
			if out.sel, err = b.coerce(e, types.TText); err != nil {
				return nil, err
			}
		}
	}
	if wantCol && s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			oe, nullsFirst := nullsOrder(o)
			_, isPos, err := position(oe, 1, "ORDER BY")
			if err != nil {
				return nil, err
			}
			e := out.sel
			if !isPos {
				refs := b.outerRefs
				if e, err = b.bindExpr(&ectx{sc: isc, noAgg: "aggregate functions are not allowed in ORDER BY"}, oe); err != nil {
					return nil, err
				}
				if b.outerRefs != refs {
					return nil, sqlerr.New(sqlerr.FeatureNotSupported, "correlated subqueries ordered by columns of the outer query are not supported")
				}
			}
			out.order = append(out.order, planner.SortKey{E: e, Desc: o.Desc, NullsFirst: nullsFirst})
		}
	}
	if inner != nil {
		right = &planner.Filter{Input: right, Pred: inner}
	}
	out.right = right
	// Join order: outer columns first, then the subquery's.
	if out.corr != nil {
		out.corr = mapCols(out.corr, func(c *expr.ColRef) expr.Expr {
			r := *c
			if c.Idx < nI {
				r.Idx += nO
			} else {
				r.Idx -= nI
			}
			return &r
		})
	}
	return out, nil
}

func (b *Binder) existsJoin(c *ectx, in planner.Node, q ast.ResultSetNode, not bool) (planner.Node, error) {
	sub, err := b.bindSubquery(c.sc, q, false, "EXISTS")
	if err != nil {
		return nil, err
	}
	kind := planner.SemiJoin
	if not {
		kind = planner.AntiJoin
	}
	return &planner.Join{Left: in, Right: sub.right, Kind: kind, On: sub.corr, Cols: in.Schema()}, nil
}

func (b *Binder) inJoin(c *ectx, in planner.Node, lhs ast.ExprNode, q ast.ResultSetNode, not bool) (planner.Node, error) {
	x, err := b.bindExpr(c, lhs)
	if err != nil {
		return nil, err
	}
	what := "IN"
	if not {
		what = "NOT IN"
	}
	sub, err := b.bindSubquery(c.sc, q, true, what)
	if err != nil {
		return nil, err
	}
	nO := len(c.sc.cols)
	eq, err := b.binaryOp("=", x, shiftCols(sub.sel, nO))
	if err != nil {
		return nil, err
	}
	cols := in.Schema()
	if !not {
		return &planner.Join{Left: in, Right: sub.right, Kind: planner.SemiJoin, On: andExpr(eq, sub.corr), Cols: cols}, nil
	}
	if sub.corr != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "NOT IN with a correlated subquery is not supported; use NOT EXISTS")
	}
	// x NOT IN (S) is true when S is empty, or when x is not NULL, S has no
	// NULL and no value equal to x.
	anti := &planner.Join{Left: in, Right: sub.right, Kind: planner.AntiJoin, On: eq, Cols: cols}
	stats := &planner.Aggregate{
		Input: sub.right,
		Aggs: []planner.AggCall{
			{Func: planner.AggCountStar, T: types.TInt64},
			{Func: planner.AggCount, Arg: sub.sel, T: types.TInt64},
		},
		Cols: []planner.Column{{Name: "n", T: types.TInt64}, {Name: "nn", T: types.TInt64}},
	}
	cross := &planner.Join{Left: anti, Right: stats, Kind: planner.InnerJoin, Cols: append(append([]planner.Column(nil), cols...), stats.Cols...)}
	n := &expr.ColRef{Idx: len(cols), T: types.TInt64, Name: "n"}
	nn := &expr.ColRef{Idx: len(cols) + 1, T: types.TInt64, Name: "nn"}
	zero := &expr.Const{D: types.Int(0), T: types.TInt64}
	xv := eq.(*expr.Func).Args[0]
	pred := call("or", types.TBool, call("=", types.TBool, n, zero),
		call("and", types.TBool, call("is_not_null", types.TBool, xv), call("=", types.TBool, n, nn)))
	var out planner.Node = &planner.Filter{Input: cross, Pred: pred}
	exprs := make([]expr.Expr, len(cols))
	for i, col := range cols {
		exprs[i] = &expr.ColRef{Idx: i, T: col.T, Name: qualName(col)}
	}
	return &planner.Project{Input: out, Exprs: exprs, Cols: cols}, nil
}

// bindScalarSubqueries joins each subquery used as a value in nodes to in
// (see bindValueSubquery), as hidden columns of sc that bindExpr refers to.
func (b *Binder) bindScalarSubqueries(sc *scope, in planner.Node, nodes ...ast.Node) (planner.Node, error) {
	for _, sub := range findScalarSubqueries(nodes...) {
		var err error
		if in, err = b.bindValueSubquery(sc, in, sub); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// findScalarSubqueries lists the subqueries used as values in nodes, not
// counting those of EXISTS, IN and nested queries.
func findScalarSubqueries(nodes ...ast.Node) []scalarSub {
	v := &scalarFinder{}
	for _, n := range nodes {
		if n != nil {
			n.Accept(v)
		}
	}
	return v.found
}

type scalarFinder struct{ found []scalarSub }

func (v *scalarFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		v.found = append(v.found, scalarSub{q: x})
		return n, true
	case *ast.FuncCallExpr:
		if sub := arraySubquery(x); sub != nil {
			v.found = append(v.found, scalarSub{q: sub, array: true})
			return n, true
		}
	case *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr, *ast.SelectStmt, *ast.SetOprStmt:
		return n, true
	case *ast.PatternInExpr:
		if x.Sel != nil {
			x.Expr.Accept(v)
			return n, true
		}
	}
	return n, false
}

func (v *scalarFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// bindSubqueryExpr binds a subquery met as an expression: a scalar
// subquery prepared by bindScalarSubqueries, else an error in SQL words.
func (b *Binder) bindSubqueryExpr(c *ectx, n ast.ExprNode) (expr.Expr, error) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		if ref, ok := b.scalars[x]; ok && ref.sc == c.sc && c.agg == nil {
			return ref.value(), nil
		}
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"subqueries used as values are supported only in WHERE and in the select list of a query without GROUP BY or aggregates")
	case *ast.CompareSubqueryExpr:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ANY, SOME and ALL comparisons with a subquery are not supported")
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported,
		"EXISTS and IN (subquery) are supported only as conditions of WHERE, joined by AND (not under OR, in the select list or in JOIN ... ON)")
}

// hasAggOrWindow reports whether a select list calls an aggregate or window function.
func hasAggOrWindow(f *ast.FieldList) bool {
	if f == nil {
		return false
	}
	for _, x := range f.Fields {
		if x.Expr != nil && (containsAgg(x.Expr) || containsWindow(x.Expr)) {
			return true
		}
	}
	return false
}

// mapCols rebuilds e with every column reference replaced by fn's result.
func mapCols(e expr.Expr, fn func(*expr.ColRef) expr.Expr) expr.Expr {
	switch x := e.(type) {
	case *expr.ColRef:
		return fn(x)
	case *expr.Cast:
		return &expr.Cast{E: mapCols(x.E, fn), T: x.T}
	case *expr.Func:
		f := &expr.Func{Name: x.Name, T: x.T, Args: make([]expr.Expr, len(x.Args))}
		for i, a := range x.Args {
			f.Args[i] = mapCols(a, fn)
		}
		return f
	case *expr.Case:
		c := &expr.Case{T: x.T}
		for _, w := range x.Whens {
			c.Whens = append(c.Whens, expr.When{Cond: mapCols(w.Cond, fn), Then: mapCols(w.Then, fn)})
		}
		if x.Else != nil {
			c.Else = mapCols(x.Else, fn)
		}
		return c
	case *expr.InList:
		in := &expr.InList{E: mapCols(x.E, fn), Not: x.Not}
		for _, y := range x.List {
			in.List = append(in.List, mapCols(y, fn))
		}
		return in
	}
	return e
}

// refersBeyond reports whether e refers to a column at or past n.
func refersBeyond(e expr.Expr, n int) bool {
	found := false
	if e != nil {
		walkCols(e, func(c *expr.ColRef) { found = found || c.Idx >= n })
	}
	return found
}

// walkCols calls fn for every column reference in e.
func walkCols(e expr.Expr, fn func(*expr.ColRef)) {
	mapCols(e, func(c *expr.ColRef) expr.Expr { fn(c); return c })
}

// shiftCols moves every column index of e by d.
func shiftCols(e expr.Expr, d int) expr.Expr {
	return mapCols(e, func(c *expr.ColRef) expr.Expr {
		r := *c
		r.Idx += d
		return &r
	})
}
