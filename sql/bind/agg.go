package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// aggState collects the grouping expressions and aggregate calls of one
// SELECT. Expressions bound above the Aggregate refer to its output:
// column i < len(group) is grouping expression i, the rest are aggs.
type aggState struct {
	group    []expr.Expr
	groupKey []string // group[i].String(), to recognise a grouped expression
	aggs     []planner.AggCall
	aggKey   []string
	window   *groupWindow // GROUP BY SESSION(...) or HOP(...) (groupwin.go)
}

// matchGroup reports whether n, bound against the Aggregate's input, is one
// of the grouping expressions, and if so returns a reference to it.
func (a *aggState) matchGroup(b *Binder, c *ectx, n ast.ExprNode) (expr.Expr, bool) {
	if len(a.group) == 0 || containsAgg(n) {
		return nil, false
	}
	e, err := b.bindExpr(c.inputCtx("aggregate"), n)
	if err != nil {
		return nil, false
	}
	key := e.String()
	for i, k := range a.groupKey {
		if k == key {
			return &expr.ColRef{Idx: i, T: a.group[i].Type(), Name: k}, true
		}
	}
	return nil, false
}

// addGroup appends a grouping expression (duplicates are kept once).
func (a *aggState) addGroup(e expr.Expr) {
	key := e.String()
	for _, k := range a.groupKey {
		if k == key {
			return
		}
	}
	a.group = append(a.group, e)
	a.groupKey = append(a.groupKey, key)
}

// columns is the Aggregate's output schema.
func (a *aggState) columns() []planner.Column {
	cols := make([]planner.Column, 0, len(a.group)+len(a.aggs))
	for _, g := range a.group {
		name := "?column?"
		if r, ok := g.(*expr.ColRef); ok {
			name = r.Name
		}
		cols = append(cols, planner.Column{Name: name, T: g.Type()})
	}
	for i, c := range a.aggs {
		cols = append(cols, planner.Column{Name: a.aggKey[i], T: c.T})
	}
	return cols
}

func (b *Binder) bindAgg(c *ectx, n *ast.AggregateFuncExpr) (expr.Expr, error) {
	name := strings.ToLower(n.F)
	if c.agg == nil {
		msg := c.noAgg
		if msg == "" {
			msg = "aggregate functions are not allowed here"
		}
		return nil, sqlerr.New(sqlerr.GroupingError, "%s", msg)
	}
	if name == "group_concat" { // string_agg, as the parser writes it
		return b.bindGroupConcat(c, n)
	}
	if name == "json_arrayagg" || name == "json_objectagg" { // jsonb_agg, jsonb_object_agg
		return b.bindJSONAgg(c, n, name == "json_objectagg")
	}
	if name == "bit_xor" { // array_agg, as the parser writes it
		return b.bindArrayAgg(c, n)
	}
	if call, fn, ok := withinGroup(n); ok {
		return b.bindOrderedSet(c, call, fn)
	}
	call := planner.AggCall{Func: planner.AggFunc(name), Distinct: n.Distinct}
	var arg expr.Expr
	switch name {
	case "count", "sum", "avg", "min", "max":
	default:
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s does not exist", name)
	}
	if len(n.Args) != 1 {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
	}
	// count(*) reaches us as count(1); any non-NULL constant counts every row.
	if name == "count" && !n.Distinct && isNonNullConst(n.Args[0]) {
		call.Func = planner.AggCountStar
		call.T = types.TInt64
	} else {
		var err error
		arg, err = b.bindExpr(c.inputCtx("aggregate function calls cannot be nested"), n.Args[0])
		if err != nil {
			return nil, err
		}
		if arg, err = b.coerce(arg, types.TText); err != nil {
			return nil, err
		}
		if call.T, err = aggType(name, arg); err != nil {
			return nil, err
		}
		if arg, err = b.aggArg(arg, name, n.Distinct, call.T); err != nil {
			return nil, err
		}
		call.Arg = arg
	}
	return addAggCall(c, call, name), nil
}

// aggArg converts the numeric argument of sum or avg to the scale the
// aggregate works at: sum's result type. avg keeps its argument's storage
// scale, unconstrained: its accumulator divides a 192-bit sum held there,
// so a value with more integer digits than the average's storage scale
// leaves still adds up (exec/accum widesum.go), and avg(DISTINCT x)
// de-duplicates the values of x as they are, not rounded to the average's
// scale (except in views created before that: AvgDistinctAtAvgScale).
func (b *Binder) aggArg(arg expr.Expr, name string, distinct bool, t types.T) (expr.Expr, error) {
	at := arg.Type()
	switch {
	case t.Kind != types.Numeric || at.Kind != types.Numeric:
		return arg, nil
	case name == "avg" && !(distinct && b.AvgDistinctAtAvgScale):
		t = types.T{Kind: types.Numeric, Scale: at.Scale}
	}
	return b.castTo(arg, t)
}

// addAggCall adds call to the aggregates of the query being bound (once)
// and returns the reference to its result.
func addAggCall(c *ectx, call planner.AggCall, name string) expr.Expr {
	key := aggString(call, name)
	i := 0
	for ; i < len(c.agg.aggs); i++ {
		if c.agg.aggKey[i] == key {
			break
		}
	}
	if i == len(c.agg.aggs) {
		c.agg.aggs = append(c.agg.aggs, call)
		c.agg.aggKey = append(c.agg.aggKey, key)
	}
	return &expr.ColRef{Idx: len(c.agg.group) + i, T: call.T, Name: key}
}

func isNonNullConst(n ast.ExprNode) bool {
	v, ok := n.(ast.ValueExpr)
	return ok && v.GetValue() != nil
}

// aggString is how an aggregate prints in plans and dedupes within a query.
func aggString(c planner.AggCall, name string) string {
	if c.Arg == nil {
		return "count(*)"
	}
	d := ""
	if c.Distinct {
		d = "DISTINCT "
	}
	switch {
	case c.Sorted && len(c.Order) > 0:
		return name + "(" + d + planner.SortedArgString(c.Arg, c.Order) + ")"
	case c.Sorted && !c.Distinct: // by the value itself (a batch array_agg(x) keeps arrival order)
		return name + "(" + c.Arg.String() + " ORDER BY " + c.Arg.String() + ")"
	}
	return name + "(" + d + c.Arg.String() + ")"
}

// aggType is the result type of an aggregate, as in PostgreSQL.
func aggType(name string, arg expr.Expr) (types.T, error) {
	t := arg.Type()
	if t.Kind == types.Time && (name == "sum" || name == "avg") {
		// PostgreSQL casts time to interval implicitly here; streamdb does not.
		return t, sqlerr.New(sqlerr.FeatureNotSupported, "%s(time) is not supported: cast the argument to interval", name)
	}
	switch name {
	case "count":
		return types.TInt64, nil
	case "min", "max":
		if t.Kind != types.Bool && t.Kind != types.JSON && t.Kind != types.JSONB && t.Kind != types.UUID && t.Kind != types.Bytea { // PostgreSQL 15 has no min(uuid), min(bytea)
			return t, nil
		}
	case "sum":
		switch {
		case t.Kind == types.Int16 || t.Kind == types.Int32:
			return types.TInt64, nil
		case t.Kind == types.Int64:
			return numType(0), nil
		case t.Kind == types.Numeric:
			// The sum has its inputs' display scale (see numeric.go).
			return numericResult(t, t, func(s, _ int32) int32 { return s }), nil
		case t.IsFloat() || t.Kind == types.Interval:
			return t, nil
		}
	case "avg":
		switch {
		case t.IsInteger() || t.Kind == types.Numeric:
			// sum / count: a quotient, whose display scale depends on
			// the values (see numeric.go).
			return avgType(t), nil
		case t.IsFloat():
			return types.TFloat64, nil
		case t.Kind == types.Interval:
			return t, nil
		}
	}
	return types.T{}, noFunction(name, []expr.Expr{arg})
}

// containsAgg reports whether an aggregate call occurs in n (subqueries
// excluded: their aggregates are their own).
func containsAgg(n ast.Node) bool {
	return contains(n, func(n ast.Node) bool { _, ok := n.(*ast.AggregateFuncExpr); return ok })
}

// contains reports whether a node that is matches occurs in n, outside
// nested queries.
func contains(n ast.Node, is func(ast.Node) bool) bool {
	if n == nil {
		return false
	}
	v := &finder{is: is}
	n.Accept(v)
	return v.found
}

type finder struct {
	is    func(ast.Node) bool
	found bool
}

func (v *finder) Enter(n ast.Node) (ast.Node, bool) {
	if v.is(n) {
		v.found = true
		return n, true
	}
	switch n.(type) {
	case *ast.SubqueryExpr, *ast.SelectStmt, *ast.SetOprStmt:
		return n, true
	}
	return n, v.found
}

func (v *finder) Leave(n ast.Node) (ast.Node, bool) { return n, true }
