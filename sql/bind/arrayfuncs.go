package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Array constructors and functions. text[] is the one array type, so
// ARRAY[...] takes text elements (and untyped literals); other element
// types are 0A000 rather than silently text. The parser writes
// ARRAY[a, b] as pg_array_ctor(a, b).

// arrayFunc binds the array functions; ok is false for other names.
func (b *Binder) arrayFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	switch name {
	case "pg_array_ctor", "array_upper", "array_lower", "array_length":
	default:
		return nil, false, nil
	}
	if s := n.Schema.L; s != "" && s != SchemaCatalog {
		return nil, true, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", n.Schema.O)
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	if name == "pg_array_ctor" {
		for i, a := range args {
			if args[i], err = b.coerce(a, types.TText); err != nil {
				return nil, true, err
			}
			if k := args[i].Type().Kind; k != types.Text {
				return nil, true, sqlerr.New(sqlerr.FeatureNotSupported,
					"ARRAY[...] of %s is not supported: text[] is the only array type (cast the elements to text)", typeName(args[i].Type()))
			}
		}
		return call("array_ctor", types.TTextArray, args...), true, nil
	}
	if len(args) != 2 {
		return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args))
	}
	if args[0], err = b.arrayArg(args[0], name); err != nil {
		return nil, true, err
	}
	if args[1], err = b.coerce(args[1], types.TInt32); err != nil {
		return nil, true, err
	}
	if !args[1].Type().IsInteger() {
		return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function %s(text[], %s) does not exist", name, typeName(args[1].Type()))
	}
	return call(name, types.TInt32, args...), true, nil
}

// arrayArg checks that e is a text[] (an untyped literal is read as one).
func (b *Binder) arrayArg(e expr.Expr, fn string) (expr.Expr, error) {
	e, err := b.coerce(e, types.TTextArray)
	if err != nil {
		return nil, err
	}
	if e.Type().Kind != types.TextArray {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s(%s) does not exist", fn, typeName(e.Type()))
	}
	return e, nil
}

// arrayConcat binds || when a side is an array: text[] || text[] (an
// untyped literal side read as an array) concatenates, text[] || text
// appends and text || text[] prepends; ok is false when neither side is
// an array.
func (b *Binder) arrayConcat(l, r expr.Expr) (e expr.Expr, ok bool, err error) {
	la, ra := l.Type().Kind == types.TextArray, r.Type().Kind == types.TextArray
	if !la && !ra {
		return nil, false, nil
	}
	side := func(x expr.Expr) (expr.Expr, error) {
		switch x.Type().Kind {
		case types.TextArray:
			return x, nil
		case types.Unknown:
			return b.castTo(x, types.TTextArray)
		case types.Text:
			return call("array_ctor", types.TTextArray, x), nil
		}
		return nil, noOperator("||", l, r)
	}
	if l, err = side(l); err != nil {
		return nil, true, err
	}
	if r, err = side(r); err != nil {
		return nil, true, err
	}
	return call("array_cat", types.TTextArray, l, r), true, nil
}
