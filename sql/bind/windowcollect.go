package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// The collecting aggregates as window functions: array_agg(x) OVER w,
// string_agg(s, d) OVER w, jsonb_agg(x) OVER w and jsonb_object_agg(k, v)
// OVER w. Each is composed, as in a GROUP BY (stringagg.go, jsonagg.go),
// of array_agg over the frame and count over the frame; that array_agg is
// exec/accum's arrayAggAcc, which lists the values in the order the window
// kernels feed them: the frame's rows in the window's ORDER BY (in a view,
// peers and the rows of a partition without ORDER BY in the order of their
// encoding; PostgreSQL leaves both undefined). ORDER BY inside the call is
// refused by the parser, DISTINCT here, both as in PostgreSQL.

// winFilter takes FILTER (WHERE cond) of a window aggregate call from its
// arguments, where the dialect layer writes it: the first argument as
// pg_win_filter(cond, x). It returns the bound condition (nil: none) and
// the arguments without it.
func (b *Binder) winFilter(ac *ectx, args []ast.ExprNode) (expr.Expr, []ast.ExprNode, error) {
	if len(args) == 0 {
		return nil, args, nil
	}
	f, ok := args[0].(*ast.FuncCallExpr)
	if !ok || f.FnName.L != "pg_win_filter" || len(f.Args) != 2 {
		return nil, args, nil
	}
	filter, err := b.bindBool(ac.inputCtx("aggregate functions are not allowed in FILTER"), f.Args[0], "FILTER")
	if err != nil {
		return nil, nil, err
	}
	return filter, append([]ast.ExprNode{f.Args[1]}, args[1:]...), nil
}

// bindWindowCollect binds the collecting aggregate call n, which the
// parser wrote as TiDB's name, over its window; ac is the context of its
// arguments.
func (b *Binder) bindWindowCollect(c, ac *ectx, name string, n *ast.WindowFuncExpr) (expr.Expr, error) {
	user := map[string]string{"bit_xor": "array_agg", "json_arrayagg": "jsonb_agg", "json_objectagg": "jsonb_object_agg"}[name]
	args := n.Args
	if name == "group_concat" {
		if user = groupConcatName(args); user != "string_agg" {
			args = args[:len(args)-1] // the marker separator
		}
	}
	if n.Distinct {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "DISTINCT is not implemented for window functions")
	}
	if parse.IsPGAgg(user) {
		return b.windowPGAgg(c, ac, user, args, n.Spec) // aggs_pg.go
	}
	want := 1
	if user == "string_agg" || user == "jsonb_object_agg" {
		want = 2
	}
	if len(args) != want {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", user, len(args))
	}
	filter, args, err := b.winFilter(ac, args)
	if err != nil {
		return nil, err
	}
	bound := make([]expr.Expr, len(args))
	for i, a := range args {
		var err error
		if bound[i], err = b.bindExpr(ac, a); err != nil {
			return nil, err
		}
		if bound[i], err = b.coerce(bound[i], types.TText); err != nil {
			return nil, err
		}
	}
	over := func(call planner.AggCall) (expr.Expr, error) {
		return b.windowOver(c, ac, string(call.Func), n.Spec, planner.WinFunc{Kind: planner.WinAgg, Agg: call, T: call.T})
	}
	arrayAgg := func(v expr.Expr, t types.T) (expr.Expr, error) {
		if filter != nil { // ROW(v), NULL where the filter drops the row (exec/accum arrayAggAcc)
			v = filteredRecord(filter, call("row_ctor", types.RecordOf([]types.RecordField{{Name: "x", T: v.Type()}}), v))
		}
		return over(planner.AggCall{Func: planner.AggArrayAgg, Arg: v, T: t})
	}
	switch user {
	case "array_agg":
		t := bound[0].Type()
		if err := arrayAggElem(t); err != nil {
			return nil, err
		}
		v := bound[0]
		if t.Kind != types.Text {
			v = call("elem_out", types.TText, v)
		}
		return arrayAgg(v, types.ArrayExprOf(t))
	case "string_agg":
		if bound[0].Type().Kind != types.Text || bound[1].Type().Kind != types.Text {
			return nil, noFunction("string_agg", bound)
		}
		cnt, err := over(planner.AggCall{Func: planner.AggCount, Arg: bound[0], T: types.TInt64})
		if err != nil {
			return nil, err
		}
		arr, err := arrayAgg(bound[0], types.TTextArray)
		if err != nil {
			return nil, err
		}
		return b.nullIfNone(cnt, call("array_to_string", types.TText, arr, bound[1]))
	}
	for _, a := range bound {
		if a.Type().Kind == types.Record {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s of a record is not supported", user)
		}
	}
	cnt, err := over(planner.AggCall{Func: planner.AggCount, Arg: filtered(filter, &expr.Const{D: types.Int(1), T: types.TInt64}), T: types.TInt64})
	if err != nil {
		return nil, err
	}
	varr, err := arrayAgg(&expr.Cast{E: call("to_jsonb", types.TJSONB, bound[len(bound)-1]), T: types.TText}, types.TTextArray)
	if err != nil {
		return nil, err
	}
	final := call("jsonb_agg_final", types.TJSONB, varr)
	if user == "jsonb_object_agg" {
		karr, err := arrayAgg(&expr.Cast{E: bound[0], T: types.TText}, types.TTextArray)
		if err != nil {
			return nil, err
		}
		final = call("jsonb_object_agg_final", types.TJSONB, karr, varr)
	}
	return b.nullIfNone(cnt, final)
}

// nullIfNone is CASE WHEN cnt = 0 THEN NULL ELSE e END: a collecting
// aggregate over no rows is NULL.
func (b *Binder) nullIfNone(cnt, e expr.Expr) (expr.Expr, error) {
	none, err := b.binaryOp("=", cnt, &expr.Const{D: types.Int(0), T: types.TInt64})
	if err != nil {
		return nil, err
	}
	return &expr.Case{Whens: []expr.When{{Cond: none, Then: &expr.Const{D: types.Null, T: e.Type()}}}, Else: e, T: e.Type()}, nil
}

// arrayAggElem refuses the element types array_agg does not collect.
func arrayAggElem(t types.T) error {
	if t.Kind == types.TextArray {
		return sqlerr.New(sqlerr.FeatureNotSupported, "array_agg of an array (a multidimensional array) is not supported")
	}
	if !types.ArrayElemOK(t) {
		return sqlerr.New(sqlerr.FeatureNotSupported, "array_agg of %s is not supported", typeName(t))
	}
	return nil
}
