package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// bindJSONAgg binds jsonb_agg(x) and jsonb_object_agg(k, v), which the
// parser writes as TiDB's json_arrayagg and json_objectagg (or
// group_concat with a marker, with DISTINCT or ORDER BY inside). As
// string_agg (stringagg.go), each is composed of aggregates the engine has:
//
//	jsonb_agg(x)           → jsonb_agg_final(array_agg(to_jsonb(x)::text))
//	jsonb_object_agg(k, v) → jsonb_object_agg_final(array_agg(k::text), array_agg(to_jsonb(v)::text))
//
// with NULL for a group without rows (a NULL x or v is a json null; a
// NULL key is 22023). In a batch query without ORDER BY or DISTINCT the
// elements come in the order the rows reach the aggregate, as in
// PostgreSQL. Otherwise array_agg is sorted (aggorder.go) by the ORDER BY
// keys, else by the arguments (x; k then v), and retracts. The two arrays
// of jsonb_object_agg are sorted by the same keys followed by k and v, so
// their elements pair up (and of two equal keys the later, which jsonb
// keeps, is the same in both).
func (b *Binder) bindJSONAgg(c *ectx, n *ast.AggregateFuncExpr, object bool) (expr.Expr, error) {
	name, want := "jsonb_agg", 1
	if object {
		name, want = "jsonb_object_agg", 2
	}
	if len(n.Args) != want {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
	}
	ic := c.inputCtx("aggregate function calls cannot be nested")
	args := make([]expr.Expr, len(n.Args))
	for i, a := range n.Args {
		var err error
		if args[i], err = b.bindExpr(ic, a); err != nil {
			return nil, err
		}
		if args[i], err = b.coerce(args[i], types.TText); err != nil {
			return nil, err
		}
		if args[i].Type().Kind == types.Record {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s of a record is not supported", name)
		}
	}
	keys, dirs, err := b.aggOrderKeys(c, n, name)
	if err != nil {
		return nil, err
	}
	filter := b.takeAggFilter()
	sorted := b.View || n.Distinct || n.Order != nil || filter != nil
	if sorted && (n.Order == nil || object) {
		dk, dd := defaultOrder(args)
		keys, dirs = append(keys, dk...), append(dirs, dd...)
	}
	asText := func(e expr.Expr) expr.Expr { return &expr.Cast{E: e, T: types.TText} }
	arrayAgg := func(val expr.Expr) (expr.Expr, error) {
		if sorted {
			return b.sortedArrayAgg(c, "array_agg", val, types.TTextArray, keys, dirs, n.Distinct, args, filter)
		}
		return addAggCall(c, planner.AggCall{Func: planner.AggArrayAgg, Arg: val, T: types.TTextArray}, "array_agg"), nil
	}
	cnt := rowsCount(c, filter) // aggfilter.go
	varr, err := arrayAgg(asText(call("to_jsonb", types.TJSONB, args[len(args)-1])))
	if err != nil {
		return nil, err
	}
	final := call("jsonb_agg_final", types.TJSONB, varr)
	if object {
		karr, err := arrayAgg(asText(args[0]))
		if err != nil {
			return nil, err
		}
		final = call("jsonb_object_agg_final", types.TJSONB, karr, varr)
	}
	return b.nullIfNone(cnt, final) // windowcollect.go
}
