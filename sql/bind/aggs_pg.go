package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// PostgreSQL's statistical and boolean aggregates, which the parser writes
// as group_concat with a marker (sql/parse pgaggs.go). Each is composed
// of count and sum aggregates the engine has, and a final function over
// their results (exec/expr pgaggfinal.go), as string_agg is composed
// (stringagg.go): count and sum retract, encode their state at
// checkpoints and run over windows, so these aggregates do too.
//
//	variance(x), var_samp, var_pop, stddev, stddev_samp, stddev_pop
//	    count(x), sum(x), sum(x*x); integers and NUMERIC as exact NUMERIC
//	    (result NUMERIC, PostgreSQL's digits), floats as DOUBLE PRECISION
//	bool_and(b), every(b)  count(b) and count(NULLIF(b, true)), the falses
//	bool_or(b)             count(b) and count(NULLIF(b, false)), the trues
//	corr(y, x) ... regr_sxy(y, x)
//	    over the rows where both are non-NULL: count, Σx, Σy, Σx², Σy²,
//	    Σxy in DOUBLE PRECISION (regr_count is the count)
//
// DISTINCT in the variance family is composed of DISTINCT counts and sums
// (composeVariance); in the two-argument ones it is refused (0A000);
// bool_and(DISTINCT b) is bool_and(b), bit_and and bit_or likewise;
// bit_xor(DISTINCT x) counts distinct values. ORDER BY inside the call does not
// change these results and is allowed, as in PostgreSQL.

// aggAdder adds an aggregate the composition uses and returns the
// reference to its result: in a GROUP BY (addAggCall) or over a window.
type aggAdder func(call planner.AggCall) (expr.Expr, error)

// bindPGAgg binds aggregate name (one of parse.IsPGAgg) called as n, whose
// marker separator is dropped, in a GROUP BY.
func (b *Binder) bindPGAgg(c *ectx, n *ast.AggregateFuncExpr, name string) (expr.Expr, error) {
	filter := b.takeAggFilter()
	args := make([]expr.Expr, len(n.Args))
	for i, a := range n.Args {
		e, err := b.bindExpr(c.inputCtx("aggregate function calls cannot be nested"), a)
		if err != nil {
			return nil, err
		}
		args[i] = e
	}
	add := func(call planner.AggCall) (expr.Expr, error) {
		return addAggCall(c, call, string(call.Func)), nil
	}
	return b.composePGAgg(name, args, n.Distinct, filter, add)
}

// composePGAgg composes aggregate name over the bound arguments args,
// with FILTER condition filter (nil: none), adding its parts with add.
func (b *Binder) composePGAgg(name string, args []expr.Expr, distinct bool, filter expr.Expr, add aggAdder) (expr.Expr, error) {
	want := 1
	switch name {
	case "bool_and", "bool_or", "every":
		if len(args) != 1 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args))
		}
		return b.composeBoolAgg(name, args[0], filter, add)
	case "bit_and", "bit_or", "bit_xor":
		if len(args) != 1 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args))
		}
		return b.composeBitAgg(name, args[0], distinct && name == "bit_xor", filter, add)
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
	default:
		want = 2
	}
	if len(args) != want {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args))
	}
	if want == 1 {
		return b.composeVariance(name, args[0], distinct, filter, add)
	}
	if distinct {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s(DISTINCT y, x) is not supported: the sums over distinct (y, x) pairs cannot be composed of DISTINCT sums", name)
	}
	return b.composeRegr(name, args, filter, add)
}

// composeBoolAgg composes bool_and, every and bool_or of x.
func (b *Binder) composeBoolAgg(name string, x, filter expr.Expr, add aggAdder) (expr.Expr, error) {
	x, err := b.coerce(x, types.TBool)
	if err != nil {
		return nil, err
	}
	if x.Type().Kind != types.Bool {
		return nil, noFunction(name, []expr.Expr{x})
	}
	x = filtered(filter, x)
	cnt, err := add(planner.AggCall{Func: planner.AggCount, Arg: x, T: types.TInt64})
	if err != nil {
		return nil, err
	}
	// bool_and: no false; bool_or: a true. NULLIF(x, v) is x but NULL for v.
	keep := name == "bool_and" || name == "every"
	odd, err := add(planner.AggCall{Func: planner.AggCount, Arg: call("nullif", types.TBool, x, boolConst(keep)), T: types.TInt64})
	if err != nil {
		return nil, err
	}
	op := "="
	if !keep {
		op = ">"
	}
	res, err := b.binaryOp(op, odd, &expr.Const{D: types.Int(0), T: types.TInt64})
	if err != nil {
		return nil, err
	}
	return b.nullIfNone(cnt, res)
}

// composeBitAgg composes bit_and, bit_or and bit_xor of an integer x of
// w bits from count(x) and, for each bit k, the count of the rows with bit
// k set, count(NULLIF(x & 2^k, 0)): each retracts, so the result does
// under UPDATE and DELETE. Bit k of the result is set when its count is
// count(x) (bit_and), above 0 (bit_or) or odd (bit_xor); the top bit
// weighs -2^(w-1), two's complement, so the result fits x's type.
//
// DISTINCT changes bit_and and bit_or in nothing; bit_xor(DISTINCT x)
// counts, per bit, the distinct x with the bit set:
// count(DISTINCT CASE WHEN x & 2^k <> 0 THEN x END).
func (b *Binder) composeBitAgg(name string, x expr.Expr, distinct bool, filter expr.Expr, add aggAdder) (expr.Expr, error) {
	x, err := b.coerce(x, types.TInt32)
	if err != nil {
		return nil, err
	}
	t := x.Type()
	w := map[types.Kind]int{types.Int16: 16, types.Int32: 32, types.Int64: 64}[t.Kind]
	if w == 0 {
		return nil, noFunction(name, []expr.Expr{x})
	}
	if x, err = b.castTo(x, types.TInt64); err != nil {
		return nil, err
	}
	x = filtered(filter, x)
	i64 := func(v int64) expr.Expr { return &expr.Const{D: types.Int(v), T: types.TInt64} }
	cnt, err := add(planner.AggCall{Func: planner.AggCount, Arg: x, T: types.TInt64})
	if err != nil {
		return nil, err
	}
	var res expr.Expr = i64(0)
	for k := 0; k < w; k++ {
		bit := int64(1) << k // 1<<63 is math.MinInt64 already
		if k == w-1 && w < 64 {
			bit = -bit // two's complement
		}
		mask := int64(1) << k
		set, err := b.binaryOp("&", x, i64(mask))
		if err != nil {
			return nil, err
		}
		var arg expr.Expr = call("nullif", types.TInt64, set, i64(0))
		if distinct {
			nz, err := b.binaryOp("<>", set, i64(0))
			if err != nil {
				return nil, err
			}
			arg = &expr.Case{Whens: []expr.When{{Cond: nz, Then: x}}, T: types.TInt64}
		}
		ck, err := add(planner.AggCall{Func: planner.AggCount, Arg: arg, T: types.TInt64, Distinct: distinct})
		if err != nil {
			return nil, err
		}
		var cond expr.Expr
		switch name {
		case "bit_and":
			cond, err = b.binaryOp("=", ck, cnt)
		case "bit_or":
			cond, err = b.binaryOp(">", ck, i64(0))
		default:
			var odd expr.Expr
			if odd, err = b.binaryOp("%", ck, i64(2)); err == nil {
				cond, err = b.binaryOp("=", odd, i64(1))
			}
		}
		if err != nil {
			return nil, err
		}
		term := &expr.Case{Whens: []expr.When{{Cond: cond, Then: i64(bit)}}, Else: i64(0), T: types.TInt64}
		if res, err = b.binaryOp("|", res, term); err != nil {
			return nil, err
		}
	}
	if res, err = b.castTo(res, t); err != nil {
		return nil, err
	}
	return b.nullIfNone(cnt, res)
}

// composeVariance composes the variance and standard deviation forms of x.
//
// With DISTINCT the parts are count(DISTINCT x), sum(DISTINCT x) and
// Σ over the distinct x of x², which is sum(DISTINCT x*x) over the x >= 0
// plus the same over the x < 0: on either side x*x tells the x apart
// (sum(DISTINCT x*x) alone would count 2 and -2 once).
func (b *Binder) composeVariance(name string, x expr.Expr, distinct bool, filter expr.Expr, add aggAdder) (expr.Expr, error) {
	x, err := b.coerce(x, types.TFloat64)
	if err != nil {
		return nil, err
	}
	final := map[string]string{"stddev": "pg_stddev_samp", "stddev_samp": "pg_stddev_samp", "stddev_pop": "pg_stddev_pop",
		"variance": "pg_var_samp", "var_samp": "pg_var_samp", "var_pop": "pg_var_pop"}[name]
	t := x.Type()
	var res types.T
	switch {
	case t.IsInteger():
		if x, err = b.castTo(x, numType(0)); err != nil {
			return nil, err
		}
		res = types.T{Kind: types.Numeric, Scale: varianceStore(t)}
	case t.Kind == types.Numeric:
		res = types.T{Kind: types.Numeric, Scale: varianceStore(t)}
	case t.IsFloat():
		if x, err = b.castTo(x, types.TFloat64); err != nil {
			return nil, err
		}
		res = types.TFloat64
	default:
		return nil, noFunction(name, []expr.Expr{x})
	}
	sq, err := b.binaryOp("*", x, x)
	if err != nil {
		return nil, err
	}
	x, sq = filtered(filter, x), filtered(filter, sq)
	cnt, err := add(planner.AggCall{Func: planner.AggCount, Arg: x, T: types.TInt64, Distinct: distinct})
	if err != nil {
		return nil, err
	}
	s1, err := b.sumOf(x, distinct, add)
	if err != nil {
		return nil, err
	}
	if !distinct {
		s2, err := b.sumOf(sq, false, add)
		if err != nil {
			return nil, err
		}
		return call(final, res, cnt, s1, s2), nil
	}
	var s2 expr.Expr
	for _, op := range []string{">=", "<"} {
		side, err := b.binaryOp(op, x, &expr.Const{D: types.Int(0), T: types.TInt64})
		if err != nil {
			return nil, err
		}
		part, err := b.sumOf(filtered(side, sq), true, add)
		if err != nil {
			return nil, err
		}
		zero := types.Datum{} // a numeric 0
		if part.Type().IsFloat() {
			zero = types.Float(0)
		}
		part = call("coalesce", part.Type(), part, &expr.Const{D: zero, T: part.Type()})
		if s2 == nil {
			s2 = part
		} else if s2, err = b.binaryOp("+", s2, part); err != nil {
			return nil, err
		}
	}
	return call(final, res, cnt, s1, s2), nil
}

// sumOf adds sum(x), a numeric x held at the sum's scale as bindAgg does.
func (b *Binder) sumOf(x expr.Expr, distinct bool, add aggAdder) (expr.Expr, error) {
	t, err := aggType("sum", x)
	if err != nil {
		return nil, err
	}
	if t.Kind == types.Numeric && x.Type() != t {
		if x, err = b.castTo(x, t); err != nil {
			return nil, err
		}
	}
	return add(planner.AggCall{Func: planner.AggSum, Arg: x, T: t, Distinct: distinct})
}

// composeRegr composes corr, covar_* and regr_* of (y, x) as DOUBLE PRECISION.
func (b *Binder) composeRegr(name string, args []expr.Expr, filter expr.Expr, add aggAdder) (expr.Expr, error) {
	var err error
	for i := range args {
		if args[i], err = b.coerce(args[i], types.TFloat64); err != nil {
			return nil, err
		}
		if t := args[i].Type(); !t.IsInteger() && !t.IsFloat() && t.Kind != types.Numeric {
			return nil, noFunction(name, args)
		}
		if args[i], err = b.castTo(args[i], types.TFloat64); err != nil {
			return nil, err
		}
	}
	both := call("and", types.TBool, call("is_not_null", types.TBool, args[0]), call("is_not_null", types.TBool, args[1]))
	if filter != nil {
		both = call("and", types.TBool, filter, both)
	}
	y, x := filtered(both, args[0]), filtered(both, args[1])
	cnt, err := add(planner.AggCall{Func: planner.AggCount, Arg: x, T: types.TInt64})
	if err != nil || name == "regr_count" {
		return cnt, err
	}
	parts := []expr.Expr{cnt}
	for _, p := range [][2]expr.Expr{{x, nil}, {y, nil}, {x, x}, {y, y}, {x, y}} {
		v := p[0]
		if p[1] != nil {
			if v, err = b.binaryOp("*", p[0], p[1]); err != nil {
				return nil, err
			}
		}
		s, err := add(planner.AggCall{Func: planner.AggSum, Arg: v, T: types.TFloat64})
		if err != nil {
			return nil, err
		}
		parts = append(parts, s)
	}
	return call("pg_regr_"+name, types.TFloat64, parts...), nil
}

// varianceStore is the storage scale of the NUMERIC variance and standard
// deviation of values of type t: 20 fraction digits (18 integer digits)
// for smallint, integer and NUMERIC of scale up to 6, more for NUMERIC of
// a larger scale; 12 (26 integer digits) for bigint, whose squares are
// larger. A result whose PostgreSQL digits do not fit is 22003, never
// rounded short (exec/expr pgaggfinal.go).
func varianceStore(t types.T) int32 {
	switch {
	case t.Kind == types.Int64:
		return 12
	case t.Kind == types.Numeric:
		return min(max(quotientStore, 2*storageScale(t)+8), maxStaticScale)
	}
	return quotientStore
}

// windowPGAgg binds aggregate name (one of parse.IsPGAgg) with arguments
// args over the window spec: its count and sum parts are window
// aggregates over the same frame; ac is the context of its arguments.
func (b *Binder) windowPGAgg(c, ac *ectx, name string, args []ast.ExprNode, spec ast.WindowSpec) (expr.Expr, error) {
	filter, args, err := b.winFilter(ac, args) // windowcollect.go
	if err != nil {
		return nil, err
	}
	bound := make([]expr.Expr, len(args))
	for i, a := range args {
		var err error
		if bound[i], err = b.bindExpr(ac, a); err != nil {
			return nil, err
		}
	}
	add := func(call planner.AggCall) (expr.Expr, error) {
		return b.windowOver(c, ac, string(call.Func), spec, planner.WinFunc{Kind: planner.WinAgg, Agg: call, T: call.T})
	}
	return b.composePGAgg(name, bound, false, filter, add)
}
