package bind

import (
	"fmt"
	"math"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// withinGroup returns the ordered-set aggregate call n stands for, as the
// dialect layer writes percentile_cont(f) WITHIN GROUP (ORDER BY x) and
// its kin (max(pg_within_group('percentile_cont', x, desc, f)), see
// parse.WithinGroupFunc), and its name.
func withinGroup(n *ast.AggregateFuncExpr) (*ast.FuncCallExpr, string, bool) {
	if !strings.EqualFold(n.F, "max") || len(n.Args) != 1 {
		return nil, "", false
	}
	call, ok := n.Args[0].(*ast.FuncCallExpr)
	if !ok || call.FnName.L != parse.WithinGroupFunc || len(call.Args) < 3 {
		return nil, "", false
	}
	v, ok := call.Args[0].(ast.ValueExpr)
	if !ok {
		return nil, "", false
	}
	name, ok := v.GetValue().(string)
	return call, name, ok
}

// bindOrderedSet binds percentile_cont(f), percentile_disc(f) or mode()
// WITHIN GROUP (ORDER BY x) as PostgreSQL 15 types them: percentile_cont
// takes double precision (numbers are converted) or interval and returns
// the same; percentile_disc and mode return x's type. The fraction f must
// be a constant in [0, 1] (22003 otherwise, at bind time rather than at
// the first group); a NULL fraction gives NULL.
func (b *Binder) bindOrderedSet(c *ectx, call *ast.FuncCallExpr, name string) (expr.Expr, error) {
	x, err := b.bindExpr(c.inputCtx("aggregate function calls cannot be nested"), call.Args[1])
	if err != nil {
		return nil, err
	}
	if x, err = b.coerce(x, types.TText); err != nil {
		return nil, err
	}
	desc := false
	if v, ok := call.Args[2].(ast.ValueExpr); ok {
		desc = v.GetValue() == int64(1)
	}
	direct := call.Args[3:]
	agg := planner.AggCall{Func: planner.AggFunc(name), Desc: desc, Frac: math.NaN()}
	key := name + "()"
	switch name {
	case "mode":
		if len(direct) != 0 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function mode takes no arguments before WITHIN GROUP")
		}
		agg.T = x.Type()
	case "percentile_cont", "percentile_disc":
		if len(direct) != 1 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s takes one fraction before WITHIN GROUP, not %d", name, len(direct))
		}
		if agg.Frac, err = b.fraction(c, name, direct[0]); err != nil {
			return nil, err
		}
		key = fmt.Sprintf("%s(%g)", name, agg.Frac)
		agg.T = x.Type()
		if name == "percentile_cont" && agg.T.Kind != types.Interval {
			if !agg.T.IsNumeric() {
				return nil, sqlerr.New(sqlerr.UndefinedFunction, "function percentile_cont(double precision) WITHIN GROUP (ORDER BY %s) does not exist", typeName(agg.T))
			}
			if x, err = b.castTo(x, types.TFloat64); err != nil {
				return nil, err
			}
			agg.T = types.TFloat64
		}
	default:
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s does not exist", name)
	}
	agg.Arg = x
	dir := ""
	if desc {
		dir = " DESC"
	}
	return addAggCall(c, agg, key+" WITHIN GROUP (ORDER BY "+x.String()+dir+")"), nil
}

// fraction reads percentile_cont/disc's constant fraction: NaN stands for
// NULL (a NaN fraction is out of range, as in PostgreSQL).
func (b *Binder) fraction(c *ectx, name string, n ast.ExprNode) (float64, error) {
	if f, ok := n.(*ast.FuncCallExpr); ok && f.FnName.L == "pg_array_ctor" {
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s with an array of fractions is not supported: call it once per fraction", name)
	}
	e, err := b.bindExpr(c.inputCtx("aggregate functions are not allowed in the fraction of "+name), n)
	if err != nil {
		return 0, err
	}
	if e.Type().Physical() == types.PhysList {
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s with an array of fractions is not supported: call it once per fraction", name)
	}
	if !expr.IsConst(e) {
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "the fraction of %s must be a constant", name)
	}
	if e, err = b.castTo(e, types.TFloat64); err != nil {
		return 0, err
	}
	d, err := expr.EvalConst(&expr.Ctx{}, e)
	if sqlerr.Code(err) == "42P02" { // a parameter: no value at bind time
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "the fraction of %s must be a constant, not a parameter", name)
	}
	if err != nil {
		return 0, err
	}
	if d.Null {
		return math.NaN(), nil
	}
	if d.F < 0 || d.F > 1 || math.IsNaN(d.F) {
		return 0, sqlerr.New(sqlerr.NumericOutOfRange, "percentile value %g is not between 0 and 1", d.F)
	}
	return d.F, nil
}
