package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// This file binds PostgreSQL 15's json and jsonb operators and functions
// (types/json.go has the values, exec/expr jsonfuncs.go the kernels).
// The dialect layer writes a json operator as DIV pg_jsonop('op') DIV
// (sql/parse jsonops.go); collapseJSONOps turns the three chain tokens
// back into the operator, which then binds at PostgreSQL's level of "any
// other operator" (pgPrec 1).

// collapseJSONOps replaces each "^", pg_jsonop('op'), "^" run of a
// flattened chain by the operator op.
func collapseJSONOps(toks []chainTok) []chainTok {
	out := toks[:0:0]
	for i := 0; i < len(toks); i++ {
		if i+2 < len(toks) && toks[i].op == "^" && toks[i+2].op == "^" {
			if op, ok := jsonOpMarker(toks[i+1].leaf); ok {
				out = append(out, chainTok{op: op})
				i += 2
				continue
			}
		}
		out = append(out, toks[i])
	}
	return out
}

func jsonOpMarker(n ast.ExprNode) (string, bool) {
	f, ok := n.(*ast.FuncCallExpr)
	if !ok || f.FnName.L != parse.JSONOpMarker || len(f.Args) != 1 {
		return "", false
	}
	v, ok := f.Args[0].(ast.ValueExpr)
	if !ok {
		return "", false
	}
	s, ok := v.GetValue().(string)
	return s, ok
}

func isJSONType(t types.T) bool { return t.Kind == types.JSON || t.Kind == types.JSONB }

// jsonOp resolves l op r for a json operator as PostgreSQL's operator
// catalog does: -> and ->> take text (a key) or integer (an index) on
// json and jsonb, #> and #>> a text[] path; @> <@ ? ?| ?& are jsonb's
// only. Anything else is 42883.
func (b *Binder) jsonOp(op string, l, r expr.Expr) (expr.Expr, error) {
	lt, rt := l.Type(), r.Type()
	var err error
	if lt.Kind == types.Unknown {
		if (op == "@>" || op == "<@") && rt.Kind == types.JSONB {
			if l, err = b.coerce(l, types.TJSONB); err != nil {
				return nil, err
			}
			lt = l.Type()
		} else {
			return nil, sqlerr.New("42725", "operator is not unique: unknown %s %s", op, typeName(rt))
		}
	}
	if !isJSONType(lt) {
		return nil, noOperator(op, l, r)
	}
	var want types.T
	res := types.TBool
	switch op {
	case "->", "->>":
		switch {
		case rt.Kind == types.Unknown || rt.Kind == types.Text:
			want = types.TText
		case rt.Kind == types.Int16 || rt.Kind == types.Int32:
			want = types.TInt32
		default:
			return nil, noOperator(op, l, r)
		}
		res = lt
		if op == "->>" {
			res = types.TText
		}
	case "#>", "#>>":
		want = types.TTextArray
		res = lt
		if op == "#>>" {
			res = types.TText
		}
	case "@>", "<@":
		want = types.TJSONB
	case "?":
		want = types.TText
	case "?|", "?&":
		want = types.TTextArray
	}
	if lt.Kind == types.JSON && res.Kind == types.Bool {
		return nil, noOperator(op, l, r)
	}
	if rt.Kind == types.Unknown {
		if r, err = b.coerce(r, want); err != nil {
			return nil, err
		}
	} else if want.Kind == types.TextArray && (rt.Kind != types.TextArray || rt.Prec != 0) ||
		want.Kind == types.JSONB && rt.Kind != types.JSONB ||
		want.Kind == types.Text && rt.Kind != types.Text {
		if !(want.Kind == types.TInt32.Kind && rt.IsInteger()) {
			return nil, noOperator(op, l, r)
		}
	}
	if want.Kind == types.Int32 {
		if r, err = b.castTo(r, types.TInt32); err != nil {
			return nil, err
		}
	}
	return call(op, res, l, r), nil
}

// jsonCompare is the comparison operators on jsonb, in PostgreSQL's btree
// order (types.JSONBCompare; = by value: 1.0 = 1); json has none.
func (b *Binder) jsonCompare(op string, l, r expr.Expr) (expr.Expr, error) {
	if l.Type().Kind != types.JSONB || r.Type().Kind != types.JSONB {
		return nil, noOperator(op, l, r)
	}
	switch op {
	case "=":
		return call("jsonb_eq", types.TBool, l, r), nil
	case "<>":
		return call("not", types.TBool, call("jsonb_eq", types.TBool, l, r)), nil
	}
	if name, ok := map[string]string{"<": "jsonb_lt", "<=": "jsonb_le", ">": "jsonb_gt", ">=": "jsonb_ge"}[op]; ok {
		return call(name, types.TBool, l, r), nil
	}
	return nil, noOperator(op, l, r)
}

// jsonFunc binds the json functions: jsonb_typeof, json_typeof,
// jsonb_array_length, to_jsonb, jsonb_build_object, jsonb_build_array.
// ok is false for other names.
func (b *Binder) jsonFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	switch name {
	case "jsonb_typeof", "json_typeof", "jsonb_array_length", "to_jsonb", "jsonb_build_object", "jsonb_build_array":
	default:
		return nil, false, nil
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	switch name {
	case "jsonb_typeof", "jsonb_array_length", "json_typeof":
		want := types.TJSONB
		if name == "json_typeof" {
			want = types.TJSON
		}
		if len(args) != 1 {
			return nil, true, noFunction(name, args)
		}
		if args[0], err = b.coerce(args[0], want); err != nil {
			return nil, true, err
		}
		if args[0].Type().Kind != want.Kind {
			return nil, true, noFunction(name, args)
		}
		res := types.TText
		if name == "jsonb_array_length" {
			res = types.TInt32
		}
		return call(name, res, args...), true, nil
	case "to_jsonb":
		if len(args) != 1 {
			return nil, true, noFunction(name, args)
		}
		if args[0].Type().Kind == types.Unknown {
			return nil, true, sqlerr.New("42P18", "could not determine polymorphic type because input has type unknown")
		}
		return call(name, types.TJSONB, args...), true, nil
	}
	for i := range args {
		if args[i], err = b.coerce(args[i], types.TText); err != nil {
			return nil, true, err
		}
		if args[i].Type().Kind == types.Record {
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "%s of a record is not supported", name)
		}
	}
	if name == "jsonb_build_object" {
		if len(args)%2 != 0 {
			return nil, true, &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Msg: "argument list must have even number of elements",
				Hint: "The arguments of jsonb_build_object() must consist of alternating keys and values."}
		}
		for i := 0; i < len(args); i += 2 {
			if k := args[i].Type().Kind; k == types.TextArray || k == types.JSON || k == types.JSONB {
				return nil, true, sqlerr.New(sqlerr.InvalidParameterValue, "key value must be scalar, not array, composite, or json")
			}
		}
	}
	return call(name, types.TJSONB, args...), true, nil
}

// jsonSRFType is the row type of a jsonb set-returning function: the
// elements of jsonb_array_elements[_text], the (key, value) records of
// jsonb_each[_text]. ok is false for other names.
func jsonSRFType(fn string) (types.T, bool) {
	switch fn {
	case "jsonb_array_elements":
		return types.TJSONB, true
	case "jsonb_array_elements_text":
		return types.TText, true
	case "jsonb_each":
		return types.RecordOf([]types.RecordField{{Name: "key", T: types.TText}, {Name: "value", T: types.TJSONB}}), true
	case "jsonb_each_text":
		return types.RecordOf([]types.RecordField{{Name: "key", T: types.TText}, {Name: "value", T: types.TText}}), true
	}
	return types.T{}, false
}

// sortable refuses ORDER BY a json value: json has no ordering in
// PostgreSQL (42883). jsonb sorts in its btree order (exec's comparator).
func sortable(keys []planner.SortKey) error {
	for _, k := range keys {
		if k.E.Type().Kind == types.JSON {
			return sqlerr.New(sqlerr.UndefinedFunction, "could not identify an ordering operator for type json")
		}
	}
	return nil
}

// jsonbEachTable is jsonb_each[_text](j) in FROM: the function's records
// (a FuncScan of one record column) split into the columns key and value.
func jsonbEachTable(fn string, args []expr.Expr, t types.T, lateral bool, alias, names string) (planner.Node, *scope, error) {
	table := fn
	if alias != "" {
		table = alias
	}
	fs := &planner.FuncScan{Func: fn, Args: args, Col: planner.Column{Name: fn, T: t}, Lateral: lateral}
	rec := &expr.ColRef{Idx: 0, T: t, Name: fn}
	var exprs []expr.Expr
	var cols []planner.Column
	for _, f := range types.RecordFields(t) {
		e, err := fieldSelect(rec, f.Name)
		if err != nil {
			return nil, nil, err
		}
		exprs = append(exprs, e)
		cols = append(cols, planner.Column{Name: f.Name, T: f.T, Table: table})
	}
	if err := renameColumns(alias, cols, names); err != nil {
		return nil, nil, err
	}
	return &planner.Project{Input: fs, Exprs: exprs, Cols: cols}, newScope(cols), nil
}
