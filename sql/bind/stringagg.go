package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// bindStringAgg binds string_agg(x, delimiter), which the parser writes as
// TiDB's group_concat(x separator delimiter): the non-NULL values of x in
// the order they reach the aggregate, joined by the delimiter; NULL when
// there are none. It is composed of two aggregates the engine has,
//
//	CASE WHEN count(x) = 0 THEN NULL ELSE array_to_string(array_agg(x), delimiter) END
//
// (array_to_string skips the NULL elements, as string_agg skips NULL
// values). As array_agg, it cannot retract, so a materialized view
// refuses it (0A000); DISTINCT and ORDER BY inside are not supported.
func (b *Binder) bindStringAgg(c *ectx, n *ast.AggregateFuncExpr) (expr.Expr, error) {
	if b.View {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "string_agg is not supported in a materialized view")
	}
	if n.Distinct || n.Order != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "string_agg with DISTINCT or ORDER BY is not supported")
	}
	if len(n.Args) != 2 {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function string_agg with %d arguments does not exist", len(n.Args))
	}
	arg, err := b.bindExpr(c.inputCtx("aggregate function calls cannot be nested"), n.Args[0])
	if err != nil {
		return nil, err
	}
	if arg, err = b.coerce(arg, types.TText); err != nil {
		return nil, err
	}
	sep, err := b.bindExpr(c.inputCtx("aggregate function calls cannot be nested"), n.Args[1])
	if err != nil {
		return nil, err
	}
	if sep, err = b.coerce(sep, types.TText); err != nil {
		return nil, err
	}
	if arg.Type().Kind != types.Text || sep.Type().Kind != types.Text {
		return nil, noFunction("string_agg", []expr.Expr{arg, sep})
	}
	cnt := addAggCall(c, planner.AggCall{Func: planner.AggCount, Arg: arg, T: types.TInt64}, "count")
	arr := addAggCall(c, planner.AggCall{Func: planner.AggArrayAgg, Arg: arg, T: types.TTextArray}, "array_agg")
	none, err := b.binaryOp("=", cnt, &expr.Const{D: types.Int(0), T: types.TInt64})
	if err != nil {
		return nil, err
	}
	return &expr.Case{Whens: []expr.When{{Cond: none, Then: &expr.Const{D: types.Null, T: types.TText}}},
		Else: call("array_to_string", types.TText, arr, sep), T: types.TText}, nil
}

// bindArrayAgg binds array_agg(x), which the parser writes as TiDB's
// bit_xor(x): the group's values (NULLs kept) in the order they reach the
// aggregate, as an array of x's type. The aggregate collects each value's
// output text (an element of the array type). In a materialized view it
// keeps each group's multiset of values instead, so it retracts, and
// lists them in ascending order, NULLs last (accum.Spec.Sorted; decision
// 2026-12-07-array-agg-in-views). DISTINCT and ORDER BY inside are not
// supported.
func (b *Binder) bindArrayAgg(c *ectx, n *ast.AggregateFuncExpr) (expr.Expr, error) {
	if n.Distinct || n.Order != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "array_agg with DISTINCT or ORDER BY is not supported")
	}
	if len(n.Args) != 1 {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function array_agg with %d arguments does not exist", len(n.Args))
	}
	arg, err := b.bindExpr(c.inputCtx("aggregate function calls cannot be nested"), n.Args[0])
	if err != nil {
		return nil, err
	}
	if arg, err = b.coerce(arg, types.TText); err != nil {
		return nil, err
	}
	t := arg.Type()
	if t.Kind == types.TextArray {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "array_agg of an array (a multidimensional array) is not supported")
	}
	if !types.ArrayElemOK(t) {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "array_agg of %s is not supported", typeName(t))
	}
	if b.View {
		return addAggCall(c, planner.AggCall{Func: planner.AggArrayAgg, Arg: arg, T: types.ArrayOf(t.Kind), Sorted: true}, "array_agg"), nil
	}
	if t.Kind != types.Text {
		arg = call("elem_out", types.TText, arg)
	}
	return addAggCall(c, planner.AggCall{Func: planner.AggArrayAgg, Arg: arg, T: types.ArrayOf(t.Kind)}, "array_agg"), nil
}
