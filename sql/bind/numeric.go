package bind

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// NUMERIC display scale. PostgreSQL keeps a display scale (dscale) with
// every numeric value: 1.50 prints two digits, 7.0/2 sixteen. streamdb
// stores a column of NUMERIC at one fixed scale (types package comment), so
// the binder gives each numeric expression a static display scale computed
// with PostgreSQL's rules where the operands' scales are known:
//
//	literal 1.50                  2 (the digits written after the point)
//	integer (cast to numeric)     0
//	NUMERIC(p,s) column           s
//	a + b, a - b, a % b           max(sa, sb)
//	a * b                         sa + sb
//	a / b, avg(a)                 per value (see quotientType)
//	sum(a), min(a), max(a), abs(a), -a   sa
//	round(a, n)                   n; round(a), floor(a), ceil(a): 0
//
// A type with a static display scale is NUMERIC(38, s) (types.NumericOf with
// MaxNumericPrecision, which no value can overflow): its values print with
// exactly s digits. Where the scale is not known (an unconstrained NUMERIC
// column, a float cast to numeric) the type stays unconstrained (Prec 0)
// and values print with trailing zeros trimmed. docs/decisions/2026-11-30-numeric-display-scale.md lists
// where this differs from PostgreSQL.

// maxStaticScale bounds a computed display scale: each digit of scale is a
// digit less for the integer part in a 38-digit decimal.
const maxStaticScale = 30

// divMinScale is the least scale of a quotient (PostgreSQL's NUMERIC_MIN_SIG_DIGITS).
const divMinScale = 16

// numType is NUMERIC whose values print with exactly scale fraction digits.
func numType(scale int32) types.T {
	return types.NumericOf(types.MaxNumericPrecision, min(max(scale, 0), maxStaticScale))
}

// dscale returns the static display scale of values of type t: 0 for the
// integers, s for NUMERIC(p,s); ok is false when values carry their own
// (unconstrained NUMERIC, floats, non-numbers).
func dscale(t types.T) (int32, bool) {
	switch {
	case t.IsInteger():
		return 0, true
	case t.Kind == types.Numeric && t.Prec > 0:
		return t.Scale, true
	}
	return 0, false
}

// storageScale is the scale t's values are held at once converted to
// numeric (an integer needs none).
func storageScale(t types.T) int32 {
	if t.Kind == types.Numeric {
		return t.Scale
	}
	return 0
}

// numericResult is the type of a numeric operation over operands of types
// a and b whose display scale, when both are known, is scale. Otherwise the
// result is unconstrained, stored at the larger of the operands' scales
// (at least UnconstrainedScale), which keeps 22 or more integer digits.
func numericResult(a, b types.T, scale func(sa, sb int32) int32) types.T {
	sa, okA := dscale(a)
	sb, okB := dscale(b)
	if okA && okB {
		return numType(scale(sa, sb))
	}
	s := max(storageScale(a), storageScale(b), types.UnconstrainedScale)
	return types.T{Kind: types.Numeric, Scale: min(s, maxStaticScale)}
}

// quotientType is the type of a / b (and of avg, sum / count) when they
// are not both constants: unconstrained NUMERIC, whose values carry the
// display scale PostgreSQL's select_div_scale gives them (16 significant
// digits from the quotient's first base-10000 digit, at least the
// operands' display scales; 1.50/3 gets 20, 7.0/2 16). It is held at
// quotientStore digits (more for operands held at more), which covers
// quotients down to 0.0001 and leaves 18 integer digits; avg(bigint) is
// held at 16, leaving the 22 integer digits a bigint sum's average needs.
func quotientType(a, b types.T) types.T {
	s := max(storageScale(a), storageScale(b), quotientStore)
	if a.Kind == types.Int64 {
		s = types.UnconstrainedScale
	}
	return types.T{Kind: types.Numeric, Scale: min(s, maxStaticScale)}
}

// avgType is the type of avg(a) for a numeric or integer a: a quotient
// (quotientType), except that an average of NUMERIC(p,s) values with more
// integer digits than a quotient's 20 places leave (p - s > 18) is held
// at fewer places, down to s and at least 16, so that every average of
// values of the type fits when p - s <= 22 (numeric(37,15) holds 22
// integer digits, as an unconstrained column does). Only for a declared
// precision below 38: NUMERIC(38,s) is also the type of every expression
// with a static display scale (numType), whose averages keep 20 places.
func avgType(a types.T) types.T {
	t := quotientType(a, types.TInt64)
	if a.Kind == types.Numeric && a.Prec > 0 && a.Prec < types.MaxNumericPrecision && a.Prec-a.Scale > types.MaxNumericPrecision-t.Scale {
		t.Scale = max(a.Scale, types.MaxNumericPrecision-(a.Prec-a.Scale), types.UnconstrainedScale)
	}
	return t
}

// quotientStore is the least storage scale of a quotient (quotientType).
const quotientStore = 20

// foldDiv divides two non-NULL numeric constants at bind time with
// PostgreSQL's exact result scale (types.DivScale), as PostgreSQL's planner
// folds them. ok is false if either operand is not such a constant.
func foldDiv(l, r expr.Expr) (expr.Expr, bool, error) {
	a, okA := l.(*expr.Const)
	c, okB := r.(*expr.Const)
	if !okA || !okB || a.D.Null || c.D.Null || a.T.Kind != types.Numeric || c.T.Kind != types.Numeric {
		return nil, false, nil
	}
	sa, sb := constScale(a), constScale(c)
	// Drop the stored zeros past each display scale so DivScale sees dscales.
	x, _ := types.Rescale(a.D.D, a.T.Scale, sa)
	y, _ := types.Rescale(c.D.D, c.T.Scale, sb)
	rs := min(types.DivScale(x, sa, y, sb), maxStaticScale)
	q, err := types.NumericDiv(x, sa, y, sb, rs)
	if err != nil {
		return nil, true, err
	}
	return &expr.Const{D: types.Datum{D: q}, T: numType(rs)}, true, nil
}

// constScale is a numeric constant's display scale: its type's if static,
// else the digits it needs.
func constScale(k *expr.Const) int32 {
	if s, ok := dscale(k.T); ok {
		return s
	}
	return types.DisplayScale(k.D.D, k.T.Scale)
}

// textScale is types.TextDScale.
func textScale(s string) (int32, bool) { return types.TextDScale(s) }
