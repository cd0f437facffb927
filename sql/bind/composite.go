package bind

import (
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Row values (types.Record): ROW(a, b) and (a, b) constructors, casts
// between record types, comparisons and IS [NOT] NULL as PostgreSQL has
// them (decision record docs/decisions/2026-12-07-composite-types.md).

// bindRow is ROW(a, ...) or (a, ...): an anonymous record whose fields are
// named f1, f2, ... (an untyped literal field is text, as in PostgreSQL).
func (b *Binder) bindRow(c *ectx, n *ast.RowExpr) (expr.Expr, error) {
	args := make([]expr.Expr, len(n.Values))
	raw := make([]expr.Expr, len(n.Values))
	fs := make([]types.RecordField, len(n.Values))
	for i, v := range n.Values {
		e, err := b.bindExpr(c, v)
		if err != nil {
			return nil, err
		}
		raw[i] = e
		if e, err = b.coerce(e, types.TText); err != nil {
			return nil, err
		}
		args[i] = e
		fs[i] = types.RecordField{Name: fmt.Sprintf("f%d", i+1), T: e.Type()}
	}
	f := call("row_ctor", types.RecordOf(fs), args...)
	if b.rowArgs == nil {
		b.rowArgs = map[*expr.Func][]expr.Expr{}
	}
	b.rowArgs[f] = raw
	return f, nil
}

// isRowCtor reports whether e is a ROW(...) constructor.
func isRowCtor(e expr.Expr) (*expr.Func, bool) {
	f, ok := e.(*expr.Func)
	return f, ok && f.Name == "row_ctor"
}

// recordCast converts record e to record type t field by field (each field
// by an explicit cast), as PostgreSQL's record-to-composite coercion: the
// arity must match (42846), and a NULL record stays NULL.
func (b *Binder) recordCast(e expr.Expr, t types.T) (expr.Expr, error) {
	from := e.Type()
	ff, tf := types.RecordFields(from), types.RecordFields(t)
	if len(ff) != len(tf) || from.Prec <= 0 || t.Prec <= 0 {
		err := sqlerr.New("42846", "cannot cast type %s to %s", typeName(from), typeName(t))
		switch {
		case len(ff) < len(tf):
			err.Detail = "Input has too few columns."
		case len(ff) > len(tf):
			err.Detail = "Input has too many columns."
		}
		return nil, err
	}
	if k, ok := e.(*expr.Const); ok {
		d, err := types.CastDatum(k.D, from, t)
		if err != nil {
			return nil, err
		}
		return &expr.Const{D: d, T: t}, nil
	}
	ctor, isCtor := isRowCtor(e)
	args := make([]expr.Expr, len(tf))
	for k, f := range tf {
		var fe expr.Expr
		if isCtor {
			fe = ctor.Args[k]
		} else {
			fe = call("field_select", ff[k].T, e, &expr.Const{D: types.Int(int64(k)), T: types.TInt64})
		}
		ce, err := b.explicitCast(fe, f.T)
		if err != nil {
			return nil, err
		}
		args[k] = ce
	}
	out := call("row_ctor", t, args...)
	if isCtor {
		return out, nil // a constructor is never NULL
	}
	return call("record_mask", t, out, e), nil
}

// recordCompare resolves l op r for records. Two ROW constructors compare
// pairwise with SQL's NULL rules (a = b is a1 = b1 AND a2 = b2 ...; <
// is lexicographic); other records compare whole, field by field with
// NULL fields equal (record_eq, record_cmp), after one side is cast to
// the other's type.
func (b *Binder) recordCompare(op string, l, r expr.Expr) (expr.Expr, error) {
	lc, lok := isRowCtor(l)
	rc, rok := isRowCtor(r)
	if lok && rok {
		if len(lc.Args) != len(rc.Args) {
			return nil, sqlerr.New(sqlerr.SyntaxError, "unequal number of entries in row expressions")
		}
		la, ra := lc.Args, rc.Args
		if raw, ok := b.rowArgs[lc]; ok {
			la = raw
		}
		if raw, ok := b.rowArgs[rc]; ok {
			ra = raw
		}
		return b.rowwiseCompare(op, la, ra)
	}
	lt, rt := l.Type(), r.Type()
	if lt.Kind != types.Record || rt.Kind != types.Record {
		return nil, noOperator(op, l, r)
	}
	if len(types.RecordFields(lt)) != len(types.RecordFields(rt)) {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, "cannot compare record types with different numbers of columns")
	}
	var err error
	switch {
	case lt == rt:
	case types.CompositeName(rt) != "" || types.IsStruct(rt) && types.CompositeName(lt) == "":
		l, err = b.recordCast(l, rt)
	default:
		r, err = b.recordCast(r, lt)
	}
	if err != nil {
		return nil, err
	}
	return call(op, types.TBool, l, r), nil
}

// rowwiseCompare is ROW(l...) op ROW(r...).
func (b *Binder) rowwiseCompare(op string, l, r []expr.Expr) (expr.Expr, error) {
	if len(l) == 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "comparing empty rows is not supported")
	}
	pair := func(op string, k int) (expr.Expr, error) { return b.binaryOp(op, l[k], r[k]) }
	join := func(name string, x, y expr.Expr) expr.Expr { return call(name, types.TBool, x, y) }
	switch op {
	case "=", "<>":
		var acc expr.Expr
		for k := range l {
			e, err := pair(op, k)
			if err != nil {
				return nil, err
			}
			if acc == nil {
				acc = e
			} else if op == "=" {
				acc = join("and", acc, e)
			} else {
				acc = join("or", acc, e)
			}
		}
		return acc, nil
	}
	// a < b: a1 < b1 OR (a1 = b1 AND (a2 < b2 OR ...)); the last pair
	// takes the operator itself (<= stays <=).
	strict := op[:1]
	last := len(l) - 1
	acc, err := pair(op, last)
	if err != nil {
		return nil, err
	}
	for k := last - 1; k >= 0; k-- {
		lt, err := pair(strict, k)
		if err != nil {
			return nil, err
		}
		eq, err := pair("=", k)
		if err != nil {
			return nil, err
		}
		acc = join("or", lt, join("and", eq, acc))
	}
	return acc, nil
}

// recordIsNull is r IS [NOT] NULL for a record: IS NULL when every field
// is NULL (or r itself is), IS NOT NULL when no field is, as PostgreSQL
// (so a record with some NULL fields is neither).
func recordIsNull(e expr.Expr, not bool) expr.Expr {
	name := "is_null"
	if not {
		name = "is_not_null"
	}
	fs := types.RecordFields(e.Type())
	if len(fs) == 0 {
		return call(name, types.TBool, e)
	}
	var acc expr.Expr
	for k, f := range fs {
		var fe expr.Expr
		if ctor, ok := isRowCtor(e); ok {
			fe = ctor.Args[k]
		} else {
			fe = call("field_select", f.T, e, &expr.Const{D: types.Int(int64(k)), T: types.TInt64})
		}
		t := call(name, types.TBool, fe)
		if acc == nil {
			acc = t
		} else {
			acc = call("and", types.TBool, acc, t)
		}
	}
	return acc
}
