package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// powFunc binds power(a, b) and its alias pow(a, b) as a ^ b; ok is false
// for other names.
func (b *Binder) powFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	if name != "power" && name != "pow" {
		return nil, false, nil
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	if len(args) != 2 {
		return nil, true, noFunction(name, args)
	}
	e, err = b.powerOp(args[0], args[1])
	if err != nil && e == nil && powerOperands(args[0].Type(), args[1].Type()) == nil {
		err = noFunction(name, args)
	}
	return e, true, err
}

// powerOperands is the type PostgreSQL resolves a ^ b (and power(a, b)) to
// for operands of types l and r: numeric when one is numeric and neither a
// float, double precision for any other pair of numbers or untyped
// literals (float8 is the preferred numeric type: 2 ^ 3 and '2' ^ '3' are
// double precision), nil when there is no such operator (42883).
func powerOperands(l, r types.T) *types.T {
	num := func(t types.T) bool { return t.IsNumeric() || t.Kind == types.Unknown }
	if !num(l) || !num(r) {
		return nil
	}
	t := types.TFloat64
	if (l.Kind == types.Numeric || r.Kind == types.Numeric) && !l.IsFloat() && !r.IsFloat() {
		t = types.TNumeric
	}
	return &t
}

// powerOp binds l ^ r: double precision ^ double precision, or numeric ^
// numeric whose display scale is PostgreSQL's for an integer exponent,
// max(16, the base's) (NUMERIC_MIN_SIG_DIGITS;
// docs/decisions/2026-12-02-pg-typeof-power-like-trim-comma.md).
func (b *Binder) powerOp(l, r expr.Expr) (expr.Expr, error) {
	pt := powerOperands(l.Type(), r.Type())
	if pt == nil {
		return nil, noOperator("^", l, r)
	}
	t := *pt
	if t.Kind == types.Numeric {
		sa, ok := dscale(l.Type())
		if !ok {
			sa = types.UnconstrainedScale
		}
		t = numType(max(divMinScale, sa))
	}
	var err error
	in := t
	if in.Kind == types.Numeric {
		in = types.TNumeric
		if lt := l.Type(); lt.Kind == types.Numeric {
			in = lt
		}
	}
	if l, err = b.castTo(l, in); err != nil {
		return nil, err
	}
	in = t
	if in.Kind == types.Numeric {
		in = types.TNumeric
		if rt := r.Type(); rt.Kind == types.Numeric {
			in = rt
		}
	}
	if r, err = b.castTo(r, in); err != nil {
		return nil, err
	}
	return call("power", t, l, r), nil
}

// pgTypeofFunc binds pg_typeof(any): the name of its argument's type as
// PostgreSQL prints a regtype (no type modifier: numeric, character
// varying; an untyped literal or NULL is unknown). The type is known when
// the statement is bound, so the call is a constant of type text (streamdb
// has no regtype; docs/decisions/2026-12-02-pg-typeof-power-like-trim-comma.md).
// ok is false for other names.
func (b *Binder) pgTypeofFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	if n.FnName.L != "pg_typeof" {
		return nil, false, nil
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	if len(args) != 1 {
		return nil, true, noFunction(n.FnName.L, args)
	}
	return &expr.Const{D: types.Str(typeName(args[0].Type())), T: types.TText}, true, nil
}
