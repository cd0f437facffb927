package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// A correlated subquery used as a value may aggregate its rows, as psql's
// publication query does with (SELECT string_agg(attname, ', ') FROM ...
// WHERE attrelid = pr.prrelid ...): it is decorrelated over the domain of
// the outer values (corrdomain.go), its aggregates grouped by the domain
// next to a count(*). An outer value with no rows has no group; there the
// value is the aggregates' value over no rows (count 0, the others NULL),
// as the subquery run for that row gives. No GROUP BY, HAVING or ORDER BY
// (0A000 as before); the aggregates' arguments may use outer columns, the
// expression around them may not.

// bindAggSel binds the select list of an aggregating value subquery
// (scope isc, nested in a scope of nO columns) into out.aggs and out.sel.
func (b *Binder) bindAggSel(out *subquery, isc *scope, nO int, n ast.ExprNode) error {
	st := &aggState{}
	refs := b.outerRefs
	e, err := b.bindExpr(&ectx{sc: isc, agg: st, noWin: "window functions are not allowed in a subquery that aggregates"}, n)
	if err != nil {
		return err
	}
	nI := len(isc.cols)
	for _, a := range st.aggs {
		if a.Arg != nil && refersBeyond(a.Arg, nI+nO) {
			return sqlerr.New(sqlerr.FeatureNotSupported, "subqueries that reference a query two or more levels out are not supported")
		}
	}
	if refersBeyond(e, len(st.aggs)) {
		return sqlerr.New(sqlerr.FeatureNotSupported, "an aggregating subquery's select list may use columns of the outer query only inside its aggregates")
	}
	if b.outerRefs != refs {
		out.selOuter = true
	}
	if e.Type().Kind == types.Unknown {
		if e, err = b.coerce(e, types.TText); err != nil {
			return err
		}
	}
	out.aggs, out.sel = st.aggs, e
	return nil
}

// emptyAggValue is post over no rows: count is 0, the other aggregates
// NULL.
func emptyAggValue(post expr.Expr, aggs []planner.AggCall) expr.Expr {
	return mapCols(post, func(c *expr.ColRef) expr.Expr {
		switch aggs[c.Idx].Func {
		case planner.AggCount, planner.AggCountStar:
			return &expr.Const{D: types.Int(0), T: c.T}
		}
		return &expr.Const{D: types.Null, T: c.T}
	})
}

// aggValue is an aggregating subquery's value in the outer query: post
// over the hidden aggregate columns where the outer value has rows (the
// count is not NULL), else its value over no rows.
func (r scalarRef) aggValue() expr.Expr {
	post := mapCols(r.post, func(c *expr.ColRef) expr.Expr {
		return &expr.ColRef{Idx: r.idx + c.Idx, T: c.T, Name: "(subquery)"}
	})
	none := call("is_null", types.TBool, &expr.ColRef{Idx: r.cnt, T: types.TInt64, Name: "(subquery count)"})
	return &expr.Case{Whens: []expr.When{{Cond: none, Then: r.empty}}, Else: post, T: r.post.Type()}
}
