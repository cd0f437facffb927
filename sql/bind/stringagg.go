package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// bindGroupConcat binds TiDB's group_concat, which the parser writes for
// string_agg(x, delimiter) and, with a marker as the separator
// (parse.AggMarker), for array_agg, jsonb_agg and jsonb_object_agg calls
// with DISTINCT or ORDER BY inside (the forms TiDB's grammar takes only
// in group_concat). The separator is group_concat's last argument.
func (b *Binder) bindGroupConcat(c *ectx, n *ast.AggregateFuncExpr) (expr.Expr, error) {
	m := *n
	switch name := groupConcatName(n.Args); name {
	case "array_agg":
		m.Args = n.Args[:len(n.Args)-1]
		return b.bindArrayAgg(c, &m)
	case "jsonb_agg", "jsonb_object_agg":
		m.Args = n.Args[:len(n.Args)-1]
		return b.bindJSONAgg(c, &m, name == "jsonb_object_agg")
	default:
		if parse.IsPGAgg(name) { // aggs_pg.go
			m.Args = n.Args[:len(n.Args)-1]
			return b.bindPGAgg(c, &m, name)
		}
	}
	return b.bindStringAgg(c, n)
}

// groupConcatName is the aggregate a group_concat call with arguments
// args stands for: the one its marker separator names, else string_agg.
func groupConcatName(args []ast.ExprNode) string {
	if len(args) > 0 {
		if v, ok := args[len(args)-1].(*test_driver.ValueExpr); ok {
			if s, ok := v.GetValue().(string); ok {
				if name, ok := parse.AggFromMarker(s); ok {
					return name
				}
			}
		}
	}
	return "string_agg"
}

// bindStringAgg binds string_agg(x, delimiter), which the parser writes as
// TiDB's group_concat(x separator delimiter): the non-NULL values of x
// joined by the delimiter; NULL when there are none. It is composed of two
// aggregates the engine has,
//
//	CASE WHEN count(x) = 0 THEN NULL ELSE array_to_string(array_agg(x), delimiter) END
//
// (array_to_string skips the NULL elements, as string_agg skips NULL
// values). The values come in the order they reach the aggregate in a
// batch query; with ORDER BY or DISTINCT inside the call, or in a
// materialized view, array_agg is sorted (aggorder.go): by the ORDER BY
// keys, else by x.
func (b *Binder) bindStringAgg(c *ectx, n *ast.AggregateFuncExpr) (expr.Expr, error) {
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
	keys, dirs, err := b.aggOrderKeys(c, n, "string_agg")
	if err != nil {
		return nil, err
	}
	cnt := addAggCall(c, planner.AggCall{Func: planner.AggCount, Arg: arg, T: types.TInt64}, "count")
	var arr expr.Expr
	if b.View || n.Distinct || n.Order != nil {
		if n.Order == nil {
			keys, dirs = defaultOrder([]expr.Expr{arg})
		}
		if arr, err = b.sortedArrayAgg(c, "array_agg", arg, types.TTextArray, keys, dirs, n.Distinct, []expr.Expr{arg}, nil); err != nil {
			return nil, err
		}
	} else {
		arr = addAggCall(c, planner.AggCall{Func: planner.AggArrayAgg, Arg: arg, T: types.TTextArray}, "array_agg")
	}
	return b.nullIfNone(cnt, call("array_to_string", types.TText, arr, sep)) // windowcollect.go
}

// bindArrayAgg binds array_agg(x), which the parser writes as TiDB's
// bit_xor(x) (or group_concat with a marker, with DISTINCT or ORDER BY
// inside): the group's values (NULLs kept) as an array of x's type. In a
// batch query without ORDER BY or DISTINCT they come in the order they
// reach the aggregate, and the aggregate collects each value's output
// text (an element of the array type). Otherwise it is sorted
// (aggorder.go): by the ORDER BY keys, else by x ascending, NULLs last
// (decision 2026-12-07-array-agg-in-views), and retracts.
func (b *Binder) bindArrayAgg(c *ectx, n *ast.AggregateFuncExpr) (expr.Expr, error) {
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
	if err := arrayAggElem(t); err != nil {
		return nil, err
	}
	keys, dirs, err := b.aggOrderKeys(c, n, "array_agg")
	if err != nil {
		return nil, err
	}
	if filter := b.takeAggFilter(); b.View || n.Distinct || n.Order != nil || filter != nil {
		if n.Order == nil {
			keys, dirs = defaultOrder([]expr.Expr{arg})
		}
		return b.sortedArrayAgg(c, "array_agg", arg, types.ArrayExprOf(t), keys, dirs, n.Distinct, []expr.Expr{arg}, filter)
	}
	if t.Kind != types.Text {
		arg = call("elem_out", types.TText, arg)
	}
	return addAggCall(c, planner.AggCall{Func: planner.AggArrayAgg, Arg: arg, T: types.ArrayExprOf(t)}, "array_agg"), nil
}
