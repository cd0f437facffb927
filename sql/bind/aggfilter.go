package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// FILTER (WHERE cond) on array_agg, jsonb_agg and jsonb_object_agg,
// which keep NULL values, so cond cannot be the CASE WHEN that makes the
// other aggregates skip a row (string_agg's included). The parser writes
// agg(...) FILTER (WHERE cond) as pg_agg_filter(cond, agg(...)); the
// aggregate is then the sorted array_agg (aggorder.go) whose argument,
// the record of its ORDER BY keys and value, is NULL where cond is not
// true, and a NULL record is no entry (exec/accum arrayAggBagAcc). A
// group whose filter keeps no row gives NULL, as in PostgreSQL. Without
// ORDER BY inside the call the values are listed as in a view: by the
// arguments ascending (PostgreSQL leaves that order undefined).

// bindAggFilter binds pg_agg_filter(cond, call).
func (b *Binder) bindAggFilter(c *ectx, cond, call ast.ExprNode) (expr.Expr, error) {
	agg, ok := call.(*ast.AggregateFuncExpr)
	if !ok || c.agg == nil {
		return b.bindExpr(c, call) // refused as an aggregate out of place
	}
	f, err := b.bindBool(c.inputCtx("aggregate functions are not allowed in FILTER"), cond, "FILTER")
	if err != nil {
		return nil, err
	}
	outer := b.aggFilter
	b.aggFilter = f
	defer func() { b.aggFilter = outer }()
	e, err := b.bindAgg(c, agg)
	if err == nil && b.aggFilter != nil {
		err = sqlerr.New(sqlerr.FeatureNotSupported, "FILTER is not supported with %s", agg.F)
	}
	return e, err
}

// takeAggFilter returns the FILTER condition of the aggregate being bound
// (nil if none), which is then no longer pending.
func (b *Binder) takeAggFilter() expr.Expr {
	f := b.aggFilter
	b.aggFilter = nil
	return f
}

// filtered is e where the filter f (nil: none) is true, else NULL.
func filtered(f, e expr.Expr) expr.Expr {
	if f == nil {
		return e
	}
	return &expr.Case{Whens: []expr.When{{Cond: f, Then: e}}, T: e.Type()}
}

// filteredRecord is record r where the filter f (nil: none) is true, else
// NULL (record_mask, as CASE does not carry records).
func filteredRecord(f, r expr.Expr) expr.Expr {
	if f == nil {
		return r
	}
	return call("record_mask", r.Type(), r, filtered(f, &expr.Const{D: types.Boolean(true), T: types.TBool}))
}

// rowsCount adds the count of the rows the filter f (nil: none) keeps.
func rowsCount(c *ectx, f expr.Expr) expr.Expr {
	if f == nil {
		return addAggCall(c, planner.AggCall{Func: planner.AggCountStar, T: types.TInt64}, "count_star")
	}
	one := &expr.Const{D: types.Int(1), T: types.TInt64}
	return addAggCall(c, planner.AggCall{Func: planner.AggCount, Arg: filtered(f, one), T: types.TInt64}, "count")
}
