package bind

import (
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// The collecting aggregates (array_agg, string_agg, jsonb_agg,
// jsonb_object_agg) are each built on array_agg (stringagg.go,
// jsonagg.go). Called plainly in a batch query, array_agg keeps the order
// the rows arrive in, as PostgreSQL does. With ORDER BY or DISTINCT inside
// the call, or in a materialized view, it is sorted (accum's
// arrayAggBagAcc): each group keeps a multiset of (ORDER BY keys, value)
// entries, which retracts, and lists the values by the keys, then by the
// value itself, so ties come out the same every time. In a view without
// ORDER BY the keys are the aggregate's arguments (decision record
// 2026-12-07-ordered-aggregates).

// aggOrderKeys binds the ORDER BY list inside aggregate call n.
func (b *Binder) aggOrderKeys(c *ectx, n *ast.AggregateFuncExpr, name string) ([]expr.Expr, []plan.AggOrder, error) {
	if n.Order == nil {
		return nil, nil, nil
	}
	ic := c.inputCtx("aggregate function calls cannot be nested")
	keys := make([]expr.Expr, 0, len(n.Order.Items))
	dirs := make([]plan.AggOrder, 0, len(n.Order.Items))
	for _, it := range n.Order.Items {
		ke, nullsFirst := nullsOrder(it)
		if _, ok := ke.(*ast.PositionExpr); ok {
			continue // a constant (TiDB reads ORDER BY 1 as a position), which orders nothing
		}
		k, err := b.bindExpr(ic, ke)
		if err != nil {
			return nil, nil, err
		}
		if k, err = b.coerce(k, types.TText); err != nil {
			return nil, nil, err
		}
		if !orderable(k.Type()) {
			return nil, nil, sqlerr.New(sqlerr.UndefinedFunction, "could not identify an ordering operator for type %s", typeName(k.Type()))
		}
		keys = append(keys, k)
		dirs = append(dirs, plan.AggOrder{Desc: it.Desc, NullsFirst: nullsFirst})
	}
	return keys, dirs, nil
}

// orderable reports whether values of t have an order (json has none).
func orderable(t types.T) bool { return t.Kind != types.JSON }

// sortedArrayAgg adds the sorted array_agg of val (whose array type is t)
// ordered by keys (dirs), each entry once if distinct, and returns its
// reference. args are the aggregate's arguments: with DISTINCT, every
// ORDER BY key must be one of them, as in PostgreSQL (42P10). filter, if
// not nil, is the call's FILTER condition (aggfilter.go).
func (b *Binder) sortedArrayAgg(c *ectx, name string, val expr.Expr, t types.T, keys []expr.Expr, dirs []plan.AggOrder,
	distinct bool, args []expr.Expr, filter expr.Expr) (expr.Expr, error) {
	if distinct {
		for _, a := range args {
			if !orderable(a.Type()) {
				return nil, sqlerr.New(sqlerr.UndefinedFunction, "could not identify an equality operator for type %s", typeName(a.Type()))
			}
		}
		for _, k := range keys {
			if !exprIn(k, args) {
				return nil, sqlerr.New("42P10", "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
			}
		}
	}
	if len(keys) == 1 && keys[0].String() == val.String() && dirs[0] == (plan.AggOrder{}) {
		keys, dirs = nil, nil // ascending by the value itself: the entry's own order
	}
	if filter != nil && len(keys) == 0 {
		// A filtered-out row is a NULL record: one constant key makes one.
		keys, dirs = []expr.Expr{&expr.Const{D: types.Boolean(true), T: types.TBool}}, []plan.AggOrder{{}}
	}
	agg := planner.AggCall{Func: planner.AggArrayAgg, Arg: val, T: t, Sorted: true, Distinct: distinct, Order: dirs}
	if len(keys) > 0 {
		fs := make([]types.RecordField, len(keys)+1)
		for i, k := range keys {
			fs[i] = types.RecordField{Name: fmt.Sprintf("k%d", i+1), T: k.Type()}
		}
		fs[len(keys)] = types.RecordField{Name: "x", T: val.Type()}
		agg.Arg = filteredRecord(filter, call("row_ctor", types.RecordOf(fs), append(append([]expr.Expr(nil), keys...), val)...))
	}
	return addAggCall(c, agg, name), nil
}

// exprIn reports whether e is (prints as) one of es.
func exprIn(e expr.Expr, es []expr.Expr) bool {
	for _, x := range es {
		if x.String() == e.String() {
			return true
		}
	}
	return false
}

// defaultOrder is the ORDER BY a sorted aggregate without one uses: its
// arguments, ascending, those that have an order.
func defaultOrder(args []expr.Expr) ([]expr.Expr, []plan.AggOrder) {
	var keys []expr.Expr
	for _, a := range args {
		if orderable(a.Type()) {
			keys = append(keys, a)
		}
	}
	return keys, make([]plan.AggOrder, len(keys))
}
