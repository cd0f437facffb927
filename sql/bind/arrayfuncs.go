package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Array constructors and functions. An array is a List of its element
// type's Arrow layout (types/elemarray.go): ARRAY[...] takes the
// elements' common type (text when all are untyped literals) and builds
// the array of it from the elements' values. The parser writes ARRAY[a, b] as
// pg_array_ctor(a, b) and a[j:k] as pg_slice(a, j, k).

// arrayFunc binds the array functions; ok is false for other names.
func (b *Binder) arrayFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	switch name {
	case "pg_array_ctor", "array_upper", "array_lower", "array_length", "pg_slice", "cardinality":
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
	switch name {
	case "pg_array_ctor":
		e, err := b.arrayCtor(args)
		return e, true, err
	case "pg_slice":
		if len(args) != 3 {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \":\"")
		}
		if t := args[0].Type(); t.Kind != types.TextArray {
			return nil, true, sqlerr.New(sqlerr.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", typeName(t))
		}
		for i := 1; i < 3; i++ {
			if args[i], err = b.coerce(args[i], types.TInt64); err != nil {
				return nil, true, err
			}
			if !args[i].Type().IsInteger() {
				return nil, true, sqlerr.New(sqlerr.DatatypeMismatch, "array subscript must have type integer")
			}
		}
		return call("array_slice", args[0].Type(), args...), true, nil
	case "cardinality":
		if len(args) != 1 {
			return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function cardinality with %d arguments does not exist", len(args))
		}
		if args[0], err = b.arrayArg(args[0], name); err != nil {
			return nil, true, err
		}
		return call("cardinality", types.TInt32, args...), true, nil
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

// arrayConcat binds || when a side is an array: an array || an array of
// the same type (an untyped literal side read as one) concatenates, an
// array || its element type appends and the element || the array
// prepends; ok is false when neither side is an array.
func (b *Binder) arrayConcat(l, r expr.Expr) (e expr.Expr, ok bool, err error) {
	la, ra := l.Type().Kind == types.TextArray, r.Type().Kind == types.TextArray
	if !la && !ra {
		return nil, false, nil
	}
	at := l.Type()
	if !la {
		at = r.Type()
	}
	elem := types.ArrayElem(at)
	if elem.Kind == types.Numeric {
		// numeric(p,s)[] || ...: numeric[], whose elements keep their scales.
		at = types.ArrayExprOf(types.T{Kind: types.Numeric, Scale: max(l.Type().Scale, r.Type().Scale)})
		elem = types.ArrayElem(at)
	}
	side := func(x expr.Expr) (expr.Expr, error) {
		switch t := x.Type(); {
		case t.Kind == types.TextArray && t != at && elem.Kind == types.Numeric && types.ArrayElem(t).Kind == types.Numeric:
			return b.castTo(x, at)
		case t.Kind == types.TextArray:
			if t != at {
				return nil, noOperator("||", l, r)
			}
			return x, nil
		case t.Kind == types.Unknown:
			return b.castTo(x, at)
		case t.Kind == elem.Kind || elem.IsInteger() && t.IsInteger() || elem.IsFloat() && t.IsNumeric() || elem.Kind == types.Numeric && t.IsInteger():
			if t != elem {
				if x, err = b.castTo(x, elem); err != nil {
					return nil, err
				}
			}
			return call("array_ctor", at, x), nil
		}
		return nil, noOperator("||", l, r)
	}
	if l, err = side(l); err != nil {
		return nil, true, err
	}
	if r, err = side(r); err != nil {
		return nil, true, err
	}
	return call("array_cat", at, l, r), true, nil
}

// arrayCtor binds ARRAY[a, b, ...]: the elements' common type (text if
// every element is an untyped literal or there are none), each element
// converted to it, the array of it.
func (b *Binder) arrayCtor(args []expr.Expr) (expr.Expr, error) {
	elem, have := types.TText, false
	for _, a := range args {
		t := a.Type()
		if t.Kind == types.Unknown {
			continue
		}
		if !have {
			elem, have = t, true
			continue
		}
		c, ok := types.CommonType(elem, t)
		if !ok {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "ARRAY types %s and %s cannot be matched", typeName(elem), typeName(t))
		}
		elem = c
	}
	if elem.Kind == types.TextArray {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "multidimensional arrays are not supported")
	}
	if !types.ArrayElemOK(elem) {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"ARRAY[...] of %s is not supported: the array types are those of boolean, the integer and float types, numeric, text, date, timestamp and uuid", typeName(elem))
	}
	// varchar(n)[] is text[]; an array of numeric(p,s) values is numeric[]
	// whose elements keep the scale s.
	elem = types.ArrayElem(types.ArrayExprOf(elem))
	var err error
	for i, a := range args {
		if args[i], err = b.coerce(a, elem); err != nil {
			return nil, err
		}
		if args[i].Type() != elem {
			if args[i], err = b.castTo(args[i], elem); err != nil {
				return nil, err
			}
		}
	}
	return call("array_ctor", types.ArrayExprOf(elem), args...), nil
}

// anyLiteralType is the type an untyped literal a (of type at) in x =
// ANY(a) is read as, x being of type xt: an array of x's type, as
// PostgreSQL reads it, where that type exists, else text[] (whose
// elements x is compared with by text).
func anyLiteralType(xt, at types.T) (types.T, error) {
	switch {
	case at.Kind != types.Unknown || xt.Kind == types.Unknown || xt.Kind == types.Text:
	case types.ArrayElemOK(xt):
		return types.ArrayExprOf(xt), nil
	}
	return types.TTextArray, nil
}

// anyOperand returns x as x = ANY(a) compares it with a's elements typed:
// an untyped literal read as the element type, an element type of the
// same layout (an integer with an integer array, a float with a float
// array, boolean, date, timestamp, text with text[]) as it is; ok is
// false when x must be compared by its text.
func anyOperand(x expr.Expr, at types.T) (expr.Expr, bool) {
	elem, t := types.ArrayElem(at), x.Type()
	switch {
	case t.Kind == types.Unknown:
		return nil, false
	case elem.Kind == types.Text || elem.Kind == types.UUID:
		return x, t.Kind == elem.Kind
	case elem.IsInteger() && t.IsInteger(), elem.IsFloat() && t.IsFloat():
		return x, true
	case elem.Kind == types.Bool || elem.Kind == types.Date || elem.Kind == types.Timestamp:
		return x, t.Kind == elem.Kind && t.TZ == elem.TZ
	case elem.Kind == types.Numeric:
		return x, t.Kind == types.Numeric || t.IsInteger()
	}
	return nil, false
}
