package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Subqueries used as values (in WHERE and in the select list of a query
// without grouping) become hidden columns of the FROM input, joined once
// and never run per row:
//
//	(SELECT v FROM ...) uncorrelated
//	  Join inner (cross) (outer, SingleRow(S))
//	(SELECT v FROM t WHERE t.k = o.k AND p(o) AND q(t) AND r(t, o.k))
//	  Join left on o.k = k AND p(o)
//	    <outer>
//	    Aggregate [t.k AS k] [count(*) AS n, max(v)] (Filter q(t) AND r(t, t.k) <- t)
//	  value: single_value(n, max): 21000 where n > 1
//	ARRAY(SELECT v FROM t WHERE t.k = o.k ...)
//	  the same with [array_agg(v)]; value: array_or_empty(array_agg)
//	ARRAY(SELECT v ...) uncorrelated
//	  Join inner (cross) (outer, Aggregate [] [array_agg(v)] (S))
//
// A condition naming the outer query that is not such an equality either
// names only the outer query (it joins the ON of the LEFT join) or becomes
// a condition of the subquery once each outer column equated with a
// subquery expression is replaced by it (r(t, o.k) → r(t, t.k)); anything
// else is refused with 0A000.

// scalarSub is a subquery used as a value: (SELECT ...) or ARRAY(SELECT ...).
type scalarSub struct {
	q     *ast.SubqueryExpr
	array bool
}

// arraySubquery returns the subquery of pg_array_subquery((SELECT ...)),
// the parser's spelling of ARRAY(SELECT ...), or nil.
func arraySubquery(n *ast.FuncCallExpr) *ast.SubqueryExpr {
	if n.FnName.L != "pg_array_subquery" || len(n.Args) != 1 {
		return nil
	}
	a := n.Args[0]
	for {
		p, ok := a.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		a = p.Expr
	}
	sub, _ := a.(*ast.SubqueryExpr)
	return sub
}

// value is the expression of a subquery's hidden column(s) in scope sc.
func (r scalarRef) value() expr.Expr {
	v := r.sc.cols[r.idx]
	ref := &expr.ColRef{Idx: r.idx, T: v.T, Name: "(subquery)"}
	switch {
	case r.post != nil:
		return r.aggValue()
	case r.array:
		return call("array_or_empty", v.T, ref)
	case r.cnt >= 0:
		return call("single_value", v.T, &expr.ColRef{Idx: r.cnt, T: types.TInt64, Name: "(subquery count)"}, ref)
	}
	return ref
}

// arrayElem checks the value of ARRAY(subquery): any scalar type that has
// an array type (an untyped literal is text), as array_agg's argument.
func (b *Binder) arrayElem(e expr.Expr) (expr.Expr, error) {
	e, err := b.coerce(e, types.TText)
	if err != nil {
		return nil, err
	}
	t := e.Type()
	if t.Kind == types.TextArray {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ARRAY(subquery) of an array (a multidimensional array) is not supported")
	}
	if !types.ArrayElemOK(t) {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ARRAY(subquery) of %s is not supported (%s has no array type here)", typeName(t), typeName(t))
	}
	return e, nil
}

// subArrayAgg is the array_agg of ARRAY(subquery) over sel (checked by
// arrayElem) and its column: the aggregate collects each element's output
// text into the array of sel's type, as array_agg(x) does.
func subArrayAgg(sel expr.Expr) (planner.AggCall, planner.Column) {
	t := types.ArrayExprOf(sel.Type())
	if sel.Type().Kind != types.Text {
		sel = call("elem_out", types.TText, sel)
	}
	return planner.AggCall{Func: planner.AggArrayAgg, Arg: sel, T: t}, planner.Column{Name: "array", T: t}
}

// bindValueSubquery binds sub, nested in the query of scope sc over input
// in, and joins it to in: its column(s) become hidden columns of sc.
func (b *Binder) bindValueSubquery(sc *scope, in planner.Node, sub scalarSub) (planner.Node, error) {
	what := "a subquery used as a value"
	if sub.array {
		what = "ARRAY(subquery)"
	}
	b.valueSubquery = true
	s, err := b.bindSubquery(sc, sub.q.Query, true, what)
	b.valueSubquery = false
	if err != nil {
		return nil, err
	}
	switch {
	case b.View && sub.array:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ARRAY(subquery) is not supported in a materialized view")
	case b.View && (s.corr != nil || s.selOuter || s.lateral):
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "correlated subqueries used as values are not supported in a materialized view")
	}
	if b.scalars == nil {
		b.scalars = map[*ast.SubqueryExpr]scalarRef{}
	}
	nO := len(sc.cols)
	sel := s.sel
	if sub.array && s.aggs != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "correlated ARRAY(subquery) with aggregates is not supported")
	}
	if sub.array {
		if sel, err = b.arrayElem(sel); err != nil {
			return nil, err
		}
	}
	var right planner.Node
	ref := scalarRef{sc: sc, idx: nO, cnt: -1, array: sub.array}
	var on expr.Expr
	kind := planner.InnerJoin
	switch {
	case s.corr == nil && !s.selOuter && !s.lateral && !sub.array:
		right = &planner.SingleRow{Input: s.right}
	case s.corr == nil && !s.selOuter && !s.lateral:
		ac, col := subArrayAgg(sel)
		right = &planner.Aggregate{Input: s.right, Aggs: []planner.AggCall{ac}, Cols: []planner.Column{col}}
	default:
		agg, cond, err := b.decorrelate(nO, s, sel, sub.array)
		if err == errNeedsDomain {
			agg, cond, err = b.decorrelateDomain(in, nO, s, sel, sub.array)
		}
		if err != nil {
			return nil, err
		}
		right, on, kind = agg, cond, planner.LeftJoin
		ref.idx = nO + len(agg.GroupBy)
		if !sub.array {
			ref.cnt, ref.idx = ref.idx, ref.idx+1
		}
		if s.aggs != nil {
			ref.post, ref.empty = sel, emptyAggValue(sel, s.aggs)
		}
	}
	cols := append([]planner.Column(nil), in.Schema()...)
	for _, c := range right.Schema() {
		cols = append(cols, c)
		sc.cols = append(sc.cols, scopeCol{Column: planner.Column{Name: "?column?", T: c.T}, usingHidden: true})
	}
	b.scalars[sub.q] = ref
	return &planner.Join{Left: in, Right: right, Kind: kind, On: on, Cols: cols}, nil
}

// decorrelate groups the correlated subquery s (bound in a scope of nO
// columns) by its correlation keys: the aggregate to LEFT JOIN and the
// join's condition (over the outer columns, then the aggregate's).
func (b *Binder) decorrelate(nO int, s *subquery, sel expr.Expr, array bool) (*planner.Aggregate, expr.Expr, error) {
	sides := func(e expr.Expr) (outer, inner bool) {
		walkCols(e, func(c *expr.ColRef) {
			if c.Idx < nO {
				outer = true
			} else {
				inner = true
			}
		})
		return
	}
	if s.selOuter || s.lateral || s.aggs != nil {
		return nil, nil, errNeedsDomain
	}
	var innerKeys, outerKeys, rest []expr.Expr
	var residual expr.Expr
	for _, e := range splitAndExpr(s.corr) {
		if f, ok := e.(*expr.Func); ok && f.Name == "=" && len(f.Args) == 2 {
			l, r := f.Args[0], f.Args[1]
			lo, li := sides(l)
			ro, ri := sides(r)
			if lo && !li && ri && !ro {
				l, r = r, l
				lo, li, ro, ri = ro, ri, lo, li
			}
			if li && !lo && ro && !ri {
				innerKeys, outerKeys = append(innerKeys, l), append(outerKeys, r)
				continue
			}
		}
		rest = append(rest, e)
	}
	if len(innerKeys) == 0 {
		return nil, nil, errNeedsDomain
	}
	// An outer column equated with a subquery expression of its type can
	// be replaced by that expression inside the subquery.
	subst := map[int]expr.Expr{}
	for k, o := range outerKeys {
		if c, ok := o.(*expr.ColRef); ok && c.T == innerKeys[k].Type() {
			if _, dup := subst[c.Idx]; !dup {
				subst[c.Idx] = innerKeys[k]
			}
		}
	}
	var filter expr.Expr
	for _, e := range rest {
		outer, inner := sides(e)
		if !inner {
			residual = andExpr(residual, e)
			continue
		}
		if outer {
			e = mapCols(e, func(c *expr.ColRef) expr.Expr {
				if c.Idx < nO {
					if r, ok := subst[c.Idx]; ok {
						return r
					}
				}
				return c
			})
			if o, _ := sides(e); o {
				return nil, nil, errNeedsDomain
			}
		}
		filter = andExpr(filter, shiftCols(e, -nO))
	}
	input := s.right
	if filter != nil {
		input = &planner.Filter{Input: input, Pred: filter}
	}
	if array && len(s.order) > 0 {
		// array_agg takes the rows in the order they come.
		input = &planner.Sort{Input: input, Keys: s.order}
	}
	agg := &planner.Aggregate{Input: input}
	var on expr.Expr
	for k, ik := range innerKeys {
		ik = shiftCols(ik, -nO)
		agg.GroupBy = append(agg.GroupBy, ik)
		agg.Cols = append(agg.Cols, planner.Column{Name: "?column?", T: ik.Type()})
		eq, err := b.binaryOp("=", outerKeys[k], &expr.ColRef{Idx: nO + k, T: ik.Type(), Name: "?column?"})
		if err != nil {
			return nil, nil, err
		}
		on = andExpr(on, eq)
	}
	if array {
		ac, col := subArrayAgg(sel)
		agg.Aggs, agg.Cols = []planner.AggCall{ac}, append(agg.Cols, col)
	} else {
		if sel.Type().Kind == types.TextArray || sel.Type().Kind == types.Unknown {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "correlated subqueries used as values are not supported for a value of type %s", typeName(sel.Type()))
		}
		agg.Aggs = []planner.AggCall{{Func: planner.AggCountStar, T: types.TInt64}, {Func: planner.AggMax, Arg: sel, T: sel.Type()}}
		agg.Cols = append(agg.Cols, planner.Column{Name: "n", T: types.TInt64}, planner.Column{Name: "?column?", T: sel.Type()})
	}
	if residual != nil {
		on = andExpr(on, residual)
	}
	return agg, on, nil
}

// splitAndExpr lists the conjuncts of a bound condition.
func splitAndExpr(e expr.Expr) []expr.Expr {
	if f, ok := e.(*expr.Func); ok && f.Name == "and" && len(f.Args) == 2 {
		return append(splitAndExpr(f.Args[0]), splitAndExpr(f.Args[1])...)
	}
	return []expr.Expr{e}
}
