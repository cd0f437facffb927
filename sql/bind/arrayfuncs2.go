package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// More of PostgreSQL's array functions: array_append, array_prepend and
// array_cat (as || binds them, arrayConcat), array_position,
// array_positions, array_remove, array_replace, trim_array, array_dims and
// array_fill (exec/expr arrayfuncs2.go). A value argument takes the
// array's element type, as PostgreSQL's anycompatible resolution does for
// the types streamdb's arrays hold.

// arrayFunc2 binds these functions; ok is false for other names.
func (b *Binder) arrayFunc2(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	arity := map[string][2]int{"array_append": {2, 2}, "array_prepend": {2, 2}, "array_cat": {2, 2}, "array_position": {2, 3},
		"array_positions": {2, 2}, "array_remove": {2, 2}, "array_replace": {3, 3}, "trim_array": {2, 2}, "array_dims": {1, 1},
		"array_fill": {2, 3}}
	want, known := arity[name]
	if !known {
		return nil, false, nil
	}
	if s := n.Schema.L; s != "" && s != SchemaCatalog {
		return nil, true, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", n.Schema.O)
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	if len(args) < want[0] || len(args) > want[1] {
		return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args))
	}
	e, err = b.bindArrayFunc2(name, args)
	return e, true, err
}

func (b *Binder) bindArrayFunc2(name string, args []expr.Expr) (expr.Expr, error) {
	var err error
	if name == "array_fill" {
		if len(args) == 3 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "array_fill with lower bounds is not supported")
		}
		if args[0], err = b.coerce(args[0], types.TText); err != nil {
			return nil, err
		}
		t := args[0].Type()
		if t.Kind == types.Text {
			t = types.TText
		}
		if !types.ArrayElemOK(t) || t.Kind == types.TextArray {
			return nil, noFunction(name, args)
		}
		if args[1], err = b.coerce(args[1], types.ArrayOf(types.Int32)); err != nil {
			return nil, err
		}
		if at := args[1].Type(); at.Kind != types.TextArray || !types.ArrayElem(at).IsInteger() {
			return nil, noFunction(name, args)
		}
		return call(name, types.ArrayExprOf(t), args...), nil
	}
	ai := 0
	if name == "array_prepend" {
		ai = 1
	}
	if name == "array_cat" {
		for i := range args {
			if args[i], err = b.arrayArg(args[i], name); err != nil {
				return nil, err
			}
		}
		if args[0].Type() != args[1].Type() {
			return nil, noFunction(name, args)
		}
		return call("array_cat", args[0].Type(), args...), nil
	}
	if args[ai], err = b.arrayArg(args[ai], name); err != nil {
		return nil, err
	}
	at := args[ai].Type()
	elem := types.ArrayElem(at)
	elemArg := func(i int) error {
		x := args[i]
		if x, err = b.coerce(x, elem); err != nil {
			return err
		}
		switch t := x.Type(); {
		case t == elem:
		case t.Kind == elem.Kind || elem.IsInteger() && t.IsInteger() || elem.IsFloat() && t.IsNumeric():
			if x, err = b.castTo(x, elem); err != nil {
				return err
			}
		default:
			return noFunction(name, args)
		}
		args[i] = x
		return nil
	}
	intArg := func(i int) error {
		if args[i], err = b.coerce(args[i], types.TInt32); err != nil {
			return err
		}
		if !args[i].Type().IsInteger() {
			return noFunction(name, args)
		}
		return nil
	}
	switch name {
	case "array_append", "array_prepend":
		if err := elemArg(1 - ai); err != nil {
			return nil, err
		}
		e := call("array_ctor", at, args[1-ai])
		if ai == 0 {
			return call("array_cat", at, args[0], e), nil
		}
		return call("array_cat", at, e, args[1]), nil
	case "array_position", "array_positions", "array_remove":
		if err := elemArg(1); err != nil {
			return nil, err
		}
		if len(args) == 3 {
			if err := intArg(2); err != nil {
				return nil, err
			}
		}
		switch name {
		case "array_position":
			return call(name, types.TInt32, args...), nil
		case "array_positions":
			return call(name, types.ArrayOf(types.Int32), args...), nil
		}
		return call(name, at, args...), nil
	case "array_replace":
		if err := elemArg(1); err != nil {
			return nil, err
		}
		if err := elemArg(2); err != nil {
			return nil, err
		}
		return call(name, at, args...), nil
	case "trim_array":
		if err := intArg(1); err != nil {
			return nil, err
		}
		return call(name, at, args...), nil
	}
	return call(name, types.TText, args...), nil // array_dims
}
