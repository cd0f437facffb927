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
//	a / b, avg(a)                 max(16, sa, sb) (see divScale)
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

// divScale is the display scale of a quotient whose operands are not both
// constants. PostgreSQL's select_div_scale also depends on the operands'
// leading digits (1.50/3 gets 20 digits, 7.0/2 gets 16); the binder cannot
// see values, so it assumes quotient and dividend have the same magnitude,
// the common case, and uses max(16, sa, sb).
func divScale(sa, sb int32) int32 { return max(divMinScale, sa, sb) }

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

// textScale is the display scale PostgreSQL's numeric input gives the text
// s ("1.50" → 2, "1.5e1" → 0, "2e-3" → 3); ok is false if s does not look
// like a plain number (parsing then reports the error).
func textScale(s string) (int32, bool) {
	i, n := 0, len(s)
	for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	for n > i && (s[n-1] == ' ' || s[n-1] == '\t' || s[n-1] == '\n' || s[n-1] == '\r') {
		n--
	}
	if i < n && (s[i] == '+' || s[i] == '-') {
		i++
	}
	frac, digits, dot := 0, 0, false
	for ; i < n; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
			if dot {
				frac++
			}
			continue
		case c == '.' && !dot:
			dot = true
			continue
		}
		break
	}
	if digits == 0 {
		return 0, false
	}
	exp := 0
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < n && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		if i == n {
			return 0, false
		}
		for ; i < n; i++ {
			if s[i] < '0' || s[i] > '9' || exp > 10000 {
				return 0, false
			}
			exp = exp*10 + int(s[i]-'0')
		}
		if neg {
			exp = -exp
		}
	}
	if i != n {
		return 0, false
	}
	return int32(max(frac-exp, 0)), true
}
