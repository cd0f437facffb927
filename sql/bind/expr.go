package bind

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// ectx is what an expression is bound against.
type ectx struct {
	sc *scope
	// noAgg, if set, is the error message for an aggregate call here
	// (e.g. "aggregate functions are not allowed in WHERE").
	noAgg string
	// agg is set when binding above an Aggregate (select list, HAVING and
	// ORDER BY of a grouped query): expressions must be grouping
	// expressions or built from aggregates and grouping expressions.
	agg *aggState
	// win collects window function calls (select list and ORDER BY); where
	// it is nil, noWin (if set) is the error message for one.
	win   *winState
	noWin string
	// srf maps a select-list set-returning call to the column of the
	// ProjectSRF that computes it (srfselect.go).
	srf map[*ast.FuncCallExpr]int
}

// inputCtx binds against the Aggregate's input (grouping expressions and
// aggregate arguments).
func (c *ectx) inputCtx(noAgg string) *ectx { return &ectx{sc: c.sc, noAgg: noAgg} }

// BindExpr binds a scalar expression whose column references resolve
// against scope. Aggregates are not allowed.
func (b *Binder) BindExpr(e ast.ExprNode, scope []planner.Column) (expr.Expr, error) {
	x, err := b.bindExpr(&ectx{sc: newScope(scope), noAgg: "aggregate functions are not allowed here"}, e)
	if err != nil {
		return nil, err
	}
	return b.coerce(x, types.TText)
}

func (b *Binder) bindExpr(c *ectx, n ast.ExprNode) (expr.Expr, error) {
	if c.agg != nil && !isLiteral(n) {
		if e, ok := c.agg.matchGroup(b, c, n); ok {
			return e, nil
		}
	}
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return b.bindExpr(c, n.Expr)
	case ast.ParamMarkerExpr:
		return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \"?\"")
	case ast.ValueExpr:
		return literal(n)
	case *ast.ColumnNameExpr:
		return b.bindColumn(c, n.Name)
	case *ast.BinaryOperationExpr:
		return b.bindBinary(c, n)
	case *ast.UnaryOperationExpr:
		return b.bindUnary(c, n)
	case *ast.FuncCallExpr:
		if i, ok := c.srf[n]; ok {
			col := c.sc.cols[i]
			return &expr.ColRef{Idx: i, T: col.T, Name: col.Name}, nil
		}
		return b.bindFunc(c, n)
	case *ast.AggregateFuncExpr:
		return b.bindAgg(c, n)
	case *ast.PatternRegexpExpr:
		return b.bindRegex(c, n)
	case *ast.PatternLikeOrIlikeExpr:
		if n.Escape != '\\' {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "LIKE ... ESCAPE is not supported")
		}
		l, r, err := b.bindPair(c, n.Expr, n.Pattern)
		if err != nil {
			return nil, err
		}
		op := "like"
		if !n.IsLike {
			op = "ilike"
		}
		e, err := b.likeOp(op, l, r)
		if err != nil || !n.Not {
			return e, err
		}
		return &expr.Func{Name: "not", Args: []expr.Expr{e}, T: types.TBool}, nil
	case *ast.IsNullExpr:
		e, err := b.bindExpr(c, n.Expr)
		if err != nil {
			return nil, err
		}
		if e, err = b.coerce(e, types.TText); err != nil {
			return nil, err
		}
		if e.Type().Kind == types.Record {
			return recordIsNull(e, n.Not), nil
		}
		name := "is_null"
		if n.Not {
			name = "is_not_null"
		}
		return &expr.Func{Name: name, Args: []expr.Expr{e}, T: types.TBool}, nil
	case *ast.IsTruthExpr:
		e, err := b.bindBool(c, n.Expr, "IS TRUE")
		if err != nil {
			return nil, err
		}
		name := map[[2]bool]string{{true, false}: "is_true", {true, true}: "is_not_true",
			{false, false}: "is_false", {false, true}: "is_not_false"}[[2]bool{n.True != 0, n.Not}]
		return &expr.Func{Name: name, Args: []expr.Expr{e}, T: types.TBool}, nil
	case *ast.BetweenExpr:
		return b.bindBetween(c, n)
	case *ast.PatternInExpr:
		return b.bindIn(c, n)
	case *ast.CaseExpr:
		return b.bindCase(c, n)
	case *ast.DefaultExpr:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "DEFAULT is not allowed in this context")
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		return b.bindSubqueryExpr(c, n)
	case *ast.WindowFuncExpr:
		return b.bindWindowFunc(c, n)
	case *ast.RowExpr:
		return b.bindRow(c, n)
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "expressions of this kind are not supported")
}

func isLiteral(n ast.ExprNode) bool {
	_, ok := n.(ast.ValueExpr)
	return ok
}

// literal types a constant as PostgreSQL does: integers are int4, int8 or
// numeric by size; decimals and exponent forms are numeric; strings and
// NULL are unknown until context decides.
func literal(v ast.ValueExpr) (expr.Expr, error) {
	switch x := v.GetValue().(type) {
	case nil:
		return &expr.Const{D: types.Null, T: types.TUnknown}, nil
	case int64:
		if v.GetType().GetFlag()&mysql.IsBooleanFlag != 0 {
			return &expr.Const{D: types.Boolean(x != 0), T: types.TBool}, nil
		}
		return intConst(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return intConst(int64(x)), nil
		}
		return numericConst(strconv.FormatUint(x, 10), false)
	case float64: // written with an exponent (1e-200)
		return numericConst(strconv.FormatFloat(x, 'f', -1, 64), true)
	case string:
		return &expr.Const{D: types.Str(x), T: types.TUnknown}, nil
	case fmt.Stringer: // the parser driver's decimal
		return numericConst(x.String(), false)
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "literals of this kind are not supported")
}

func intConst(v int64) *expr.Const {
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		return &expr.Const{D: types.Int(v), T: types.TInt32}
	}
	return &expr.Const{D: types.Int(v), T: types.TInt64}
}

// numericConst is a numeric literal whose scale is the digits written after
// the point (s in plain decimal; exp: it was written with an exponent).
//
// PostgreSQL's numeric holds any literal exactly; ours has 38 digits. A
// literal too small for them (it would round to zero: 1e-39, 1e-200) or,
// written with an exponent, too large (1.5e300) is typed double precision
// instead, so that 1e-200::float8 is 1e-200 and not 0 or an error. A
// literal of more than 38 integer digits written out in full is still
// refused (22003): as a double it would silently lose digits.
func numericConst(s string, exp bool) (expr.Expr, error) {
	scale := int32(0)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		scale = int32(len(s) - i - 1)
	}
	t := numType(scale)
	n, err := decimal128.FromString(s, 38, t.Scale)
	if err == nil && (n != (decimal128.Num{}) || strings.Trim(s, "0.") == "") {
		return &expr.Const{D: types.Datum{D: n}, T: t}, nil
	}
	if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f != 0 && (err == nil || exp) {
		return &expr.Const{D: types.Float(f), T: types.TFloat64}, nil
	}
	if err != nil {
		return nil, sqlerr.New(sqlerr.NumericOutOfRange, "numeric literal %s is out of range", s)
	}
	return &expr.Const{D: types.Datum{D: n}, T: t}, nil
}

// paramIndex returns N-1 for an identifier $N.
func paramIndex(name string) (int, bool) {
	if len(name) < 2 || name[0] != '$' {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil || n < 1 || n > 65535 {
		return 0, false
	}
	return n - 1, true
}

func (b *Binder) param(idx int) expr.Expr {
	for len(b.Params) <= idx {
		b.Params = append(b.Params, types.TUnknown)
	}
	p := &expr.Param{Idx: idx, T: b.Params[idx]}
	if t := p.T; t.Kind == types.Numeric && t.Prec == 0 && idx < len(b.ParamValues) && !b.ParamValues[idx].Null {
		// A numeric parameter's value is known when the statement runs
		// (it is bound for each execution): as PostgreSQL's value carries
		// its display scale, $1 - d with $1 = 1 has d's scale, not an
		// unconstrained one that prints trimmed (48601.512 for 48601.5120).
		// The scale is the digits written (1.50: 2), in text and binary
		// format alike, as PostgreSQL's numeric_in and numeric_recv keep it.
		return &expr.Cast{E: p, T: numType(min(types.DScaleOf(b.ParamValues[idx], t), t.Scale))}
	}
	return p
}

func (b *Binder) bindColumn(c *ectx, cn *ast.ColumnName) (expr.Expr, error) {
	if cn.Table.O == "" {
		if idx, ok := paramIndex(cn.Name.O); ok {
			return b.param(idx), nil
		}
	}
	i, err := c.sc.resolve(cn.Table.O, cn.Name.O)
	if err != nil {
		return nil, err
	}
	col := c.sc.column(i)
	if c.agg != nil {
		// matchGroup already failed for this column.
		return nil, sqlerr.New(sqlerr.GroupingError,
			"column %q must appear in the GROUP BY clause or be used in an aggregate function", qualName(col))
	}
	return &expr.ColRef{Idx: i, T: col.T, Name: qualName(col)}, nil
}

// coerce gives an untyped literal or parameter the type t; typed
// expressions are returned unchanged.
func (b *Binder) coerce(e expr.Expr, t types.T) (expr.Expr, error) {
	if e.Type().Kind != types.Unknown || t.Kind == types.Unknown {
		return e, nil
	}
	return b.castTo(e, t)
}

// castTo converts e to t, folding constants so that bad literals fail at
// bind time as in PostgreSQL.
func (b *Binder) castTo(e expr.Expr, t types.T) (expr.Expr, error) {
	from := e.Type()
	if from == t {
		return e, nil
	}
	if from.Kind == types.Record && t.Kind == types.Record {
		return b.recordCast(e, t)
	}
	switch x := e.(type) {
	case *expr.Param:
		if from.Kind == types.Unknown {
			b.Params[x.Idx] = t
			return &expr.Param{Idx: x.Idx, T: t}, nil
		}
	case *expr.Const:
		if x.D.Null {
			return &expr.Const{D: types.Null, T: t}, nil
		}
		if from.Kind == types.Unknown {
			d, err := types.ParseText(x.D.S, t)
			if err != nil {
				return nil, err
			}
			return &expr.Const{D: d, T: t}, nil
		}
		if types.CanCast(from, t) {
			d, err := types.CastDatum(x.D, from, t)
			if err != nil && from.IsFloat() && t.Kind == types.Numeric && t.Prec == 0 && sqlerr.Code(err) == sqlerr.NumericOutOfRange {
				// Digits past the places numeric holds: an error only if
				// no round(x, n) takes the cast as its argument (bindFunc).
				return &expr.Cast{E: e, T: t}, nil
			}
			if err != nil {
				return nil, err
			}
			return &expr.Const{D: d, T: t}, nil
		}
	}
	if !types.CanCast(from, t) {
		return nil, sqlerr.New("42846", "cannot cast type %s to %s", typeName(from), typeName(t))
	}
	return &expr.Cast{E: e, T: t}, nil
}

// bindBool binds a condition; what names the clause for the error.
func (b *Binder) bindBool(c *ectx, n ast.ExprNode, what string) (expr.Expr, error) {
	e, err := b.bindExpr(c, n)
	if err != nil {
		return nil, err
	}
	return b.requireBool(e, what)
}

func (b *Binder) requireBool(e expr.Expr, what string) (expr.Expr, error) {
	e, err := b.coerce(e, types.TBool)
	if err != nil {
		return nil, err
	}
	if e.Type().Kind != types.Bool {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, "argument of %s must be type boolean, not type %s", what, typeName(e.Type()))
	}
	return e, nil
}

func (b *Binder) bindPair(c *ectx, l, r ast.ExprNode) (expr.Expr, expr.Expr, error) {
	le, err := b.bindExpr(c, l)
	if err != nil {
		return nil, nil, err
	}
	re, err := b.bindExpr(c, r)
	if err != nil {
		return nil, nil, err
	}
	return le, re, nil
}

var binOps = map[opcode.Op]string{
	opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">=",
	opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/", opcode.Mod: "%",
	opcode.LogicAnd: "and", opcode.LogicOr: "or",
}

func (b *Binder) bindBinary(c *ectx, n *ast.BinaryOperationExpr) (expr.Expr, error) {
	if _, ok := chainOp(n.Op); ok {
		if toks, bit := flattenChain(n, nil); bit {
			// Regrouped by PostgreSQL's precedence (bitwise.go), json
			// operators included (jsonops.go).
			p := &chainBinder{b: b, c: c, toks: collapseJSONOps(toks)}
			return p.expr(0)
		}
	}
	if n.Op == opcode.NullEQ {
		return b.bindNotDistinct(c, n)
	}
	op, ok := binOps[n.Op]
	if !ok {
		return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near %q", n.Op.String())
	}
	l, r, err := b.bindPair(c, n.L, n.R)
	if err != nil {
		return nil, err
	}
	return b.binaryOp(op, l, r)
}

func (b *Binder) bindUnary(c *ectx, n *ast.UnaryOperationExpr) (expr.Expr, error) {
	switch n.Op {
	case opcode.Plus:
		return b.bindExpr(c, n.V)
	case opcode.Minus:
		// A negative number literal is one constant, as in PostgreSQL.
		if v, ok := n.V.(ast.ValueExpr); ok {
			switch x := v.GetValue().(type) {
			case int64:
				if v.GetType().GetFlag()&mysql.IsBooleanFlag == 0 {
					return intConst(-x), nil
				}
			case uint64:
				if x <= math.MaxInt64+1 {
					return intConst(int64(-x)), nil
				}
			}
		}
		e, err := b.bindExpr(c, n.V)
		if err != nil {
			return nil, err
		}
		if k, ok := e.(*expr.Const); ok && k.T.Kind == types.Numeric && !k.D.Null {
			return &expr.Const{D: types.Datum{D: k.D.D.Negate()}, T: k.T}, nil
		}
		return b.negate(e)
	case opcode.BitNeg:
		e, err := b.bindExpr(c, n.V)
		if err != nil {
			return nil, err
		}
		return b.bitNot(e)
	case opcode.Not, opcode.Not2:
		e, err := b.bindBool(c, n.V, "NOT")
		if err != nil {
			return nil, err
		}
		return &expr.Func{Name: "not", Args: []expr.Expr{e}, T: types.TBool}, nil
	}
	return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near %q", n.Op.String())
}

func (b *Binder) bindBetween(c *ectx, n *ast.BetweenExpr) (expr.Expr, error) {
	e, err := b.bindExpr(c, n.Expr)
	if err != nil {
		return nil, err
	}
	lo, hi, err := b.bindPair(c, n.Left, n.Right)
	if err != nil {
		return nil, err
	}
	op1, op2, join := ">=", "<=", "and"
	if n.Not {
		op1, op2, join = "<", ">", "or"
	}
	a, err := b.binaryOp(op1, e, lo)
	if err != nil {
		return nil, err
	}
	z, err := b.binaryOp(op2, e, hi)
	if err != nil {
		return nil, err
	}
	return &expr.Func{Name: join, Args: []expr.Expr{a, z}, T: types.TBool}, nil
}

func (b *Binder) bindIn(c *ectx, n *ast.PatternInExpr) (expr.Expr, error) {
	if n.Sel != nil {
		return b.bindSubqueryExpr(c, n)
	}
	all := make([]expr.Expr, 0, len(n.List)+1)
	for _, x := range append([]ast.ExprNode{n.Expr}, n.List...) {
		e, err := b.bindExpr(c, x)
		if err != nil {
			return nil, err
		}
		all = append(all, e)
	}
	t, err := b.unify(all, "IN")
	if err != nil {
		return nil, err
	}
	for i, e := range all {
		if all[i], err = b.castTo(e, t); err != nil {
			return nil, err
		}
	}
	if t.Kind == types.JSONB { // jsonb's = is by value (1.0 = 1), not the bytes InList hashes
		var or expr.Expr
		for _, e := range all[1:] {
			eq := call("jsonb_eq", types.TBool, all[0], e)
			if or == nil {
				or = eq
			} else {
				or = call("or", types.TBool, or, eq)
			}
		}
		if n.Not {
			or = call("not", types.TBool, or)
		}
		return or, nil
	}
	return &expr.InList{E: all[0], List: all[1:], Not: n.Not}, nil
}

// unify resolves the common type of a set of expressions (PostgreSQL's
// UNION/CASE rules, simplified): unknowns yield, all-unknown is text.
func (b *Binder) unify(es []expr.Expr, what string) (types.T, error) {
	t := types.TUnknown
	for _, e := range es {
		et := e.Type()
		if et.Kind == types.Unknown {
			continue
		}
		if t.Kind == types.Unknown {
			t = et
			continue
		}
		c, ok := commonType(t, et)
		if !ok {
			return t, sqlerr.New(sqlerr.DatatypeMismatch, "%s types %s and %s cannot be matched", what, typeName(t), typeName(et))
		}
		t = c
	}
	if t.Kind == types.Unknown {
		t = types.TText
	}
	return t, nil
}

func (b *Binder) bindCase(c *ectx, n *ast.CaseExpr) (expr.Expr, error) {
	var operand expr.Expr
	if n.Value != nil {
		var err error
		if operand, err = b.bindExpr(c, n.Value); err != nil {
			return nil, err
		}
	}
	out := &expr.Case{}
	results := make([]expr.Expr, 0, len(n.WhenClauses)+1)
	for _, w := range n.WhenClauses {
		var cond expr.Expr
		var err error
		if operand != nil {
			v, err := b.bindExpr(c, w.Expr)
			if err != nil {
				return nil, err
			}
			if cond, err = b.binaryOp("=", operand, v); err != nil {
				return nil, err
			}
		} else if cond, err = b.bindBool(c, w.Expr, "CASE/WHEN"); err != nil {
			return nil, err
		}
		then, err := b.bindExpr(c, w.Result)
		if err != nil {
			return nil, err
		}
		out.Whens = append(out.Whens, expr.When{Cond: cond, Then: then})
		results = append(results, then)
	}
	if n.ElseClause != nil {
		e, err := b.bindExpr(c, n.ElseClause)
		if err != nil {
			return nil, err
		}
		out.Else = e
		results = append(results, e)
	}
	t, err := b.unify(results, "CASE")
	if err != nil {
		return nil, err
	}
	out.T = t
	for i := range out.Whens {
		if out.Whens[i].Then, err = b.castTo(out.Whens[i].Then, t); err != nil {
			return nil, err
		}
	}
	if out.Else != nil {
		if out.Else, err = b.castTo(out.Else, t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// outputName is the column name PostgreSQL gives a select-list expression
// without an alias.
func outputName(n ast.ExprNode) string {
	name, _ := figureName(n)
	return name
}

// figureName is outputName with the strength PostgreSQL's FigureColname
// gives the name: 2 for a column, function or other real name, 1 for a
// type name a cast or CASE supplies, 0 for ?column?. A cast keeps its
// operand's name only when that is a real one: '1'::int::text is "text",
// c::int is "c".
func figureName(n ast.ExprNode) (string, int) {
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return figureName(n.Expr)
	case *ast.SubqueryExpr: // its column's name, even ?column?
		return figureName1(n), 2
	case *ast.CaseExpr:
		return "case", 1
	case *ast.RowExpr: // ROW(a, b), (a, b): named as a function, as PostgreSQL
		return "row", 2
	case *ast.FuncCallExpr:
		if n.FnName.L == "pg_row1" { // ROW(x)
			return "row", 2
		}
		if n.FnName.L == "pg_cast" {
			if len(n.Args) != 2 {
				return "?column?", 0
			}
			if inner, s := figureName(n.Args[0]); s == 2 {
				return inner, 2
			}
			if t, err := castType(n.Args[1]); err == nil {
				return pgTypeName(t), 1
			}
			return "?column?", 0
		}
	}
	if name := figureName1(n); name != "?column?" {
		return name, 2
	}
	return "?column?", 0
}

// collectName is the name of aggregate or window function f, called with
// args, as the user wrote it: the parser writes string_agg, array_agg,
// jsonb_agg and jsonb_object_agg as TiDB's aggregates.
func collectName(f string, args []ast.ExprNode) string {
	switch f = strings.ToLower(f); f {
	case "group_concat":
		return groupConcatName(args)
	case "json_arrayagg":
		return "jsonb_agg"
	case "json_objectagg":
		return "jsonb_object_agg"
	case "bit_xor":
		return "array_agg"
	}
	return f
}

// figureName1 names the expressions figureName leaves to it (parentheses,
// casts and CASE are figureName's).
func figureName1(n ast.ExprNode) string {
	switch n := n.(type) {
	case *ast.ColumnNameExpr:
		if _, ok := paramIndex(n.Name.Name.O); ok && n.Name.Table.O == "" {
			return "?column?"
		}
		return n.Name.Name.O
	case *ast.AggregateFuncExpr:
		if _, fn, ok := withinGroup(n); ok {
			return fn
		}
		return collectName(n.F, n.Args)
	case *ast.WindowFuncExpr:
		return collectName(n.Name, n.Args)
	case *ast.SubqueryExpr:
		// PostgreSQL names (SELECT x ...) after its one column.
		if s, ok := n.Query.(*ast.SelectStmt); ok && s.Fields != nil && len(s.Fields.Fields) == 1 && s.Fields.Fields[0].WildCard == nil {
			if f := s.Fields.Fields[0]; f.AsName.O != "" {
				return f.AsName.O
			}
			return outputName(s.Fields.Fields[0].Expr)
		}
	case *ast.FuncCallExpr:
		switch name := n.FnName.L; name {
		case "pg_agg_filter": // agg(...) FILTER (WHERE cond) is named after agg
			if len(n.Args) == 2 {
				return outputName(n.Args[1])
			}
		case "pg_interval":
			return "interval"
		case "pg_field": // (expr).field is named after the field
			if len(n.Args) == 2 {
				if f, err := castKind(n.Args[1]); err == nil {
					return f
				}
			}
		case "pg_array_subquery", "pg_array_ctor":
			return "array"
		case "pg_extract":
			return "extract"
		case "pg_subscript": // a[k] is named after a
			if len(n.Args) > 0 {
				return outputName(n.Args[0])
			}
		case "json_memberof": // x = ANY (array), as the parser writes it
			return "?column?"
		case "concat":
			if isPipes(n) {
				return "?column?"
			}
			return name
		case "substr", "substring":
			return name
		default:
			return name
		}
	}
	return "?column?"
}

// distinctMarker is the call sql/parse writes IS DISTINCT FROM with:
// a <=> pg_is_distinct_from() <=> b.
const distinctMarker = "pg_is_distinct_from"

// bindNotDistinct binds <=>, which sql/parse writes for a IS NOT DISTINCT
// FROM b, and a IS DISTINCT FROM b written as (a <=> marker) <=> b:
//
//	CASE WHEN a IS NULL THEN b IS NULL WHEN b IS NULL THEN false ELSE a = b END
//
// (negated for IS DISTINCT FROM), with = over the operands' common type, so
// it is true, false, never NULL. The operands are evaluated more than once.
func (b *Binder) bindNotDistinct(c *ectx, n *ast.BinaryOperationExpr) (expr.Expr, error) {
	left, negate := n.L, false
	if in, ok := left.(*ast.BinaryOperationExpr); ok && in.Op == opcode.NullEQ {
		if f, ok := in.R.(*ast.FuncCallExpr); ok && f.FnName.L == distinctMarker && len(f.Args) == 0 {
			left, negate = in.L, true
		}
	}
	if f, ok := left.(*ast.FuncCallExpr); ok && f.FnName.L == distinctMarker {
		return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \"DISTINCT\"")
	}
	l, r, err := b.bindPair(c, left, n.R)
	if err != nil {
		return nil, err
	}
	eq, err := b.binaryOp("=", l, r)
	if err != nil {
		return nil, err
	}
	isNull := func(e expr.Expr) (expr.Expr, error) {
		e, err := b.coerce(e, types.TText) // an untyped NULL or literal
		if err != nil {
			return nil, err
		}
		return &expr.Func{Name: "is_null", Args: []expr.Expr{e}, T: types.TBool}, nil
	}
	ln, err := isNull(l)
	if err != nil {
		return nil, err
	}
	rn, err := isNull(r)
	if err != nil {
		return nil, err
	}
	boolConst := func(v bool) expr.Expr {
		d := types.Int(0)
		if v {
			d = types.Int(1)
		}
		return &expr.Const{D: d, T: types.TBool}
	}
	var bothNull expr.Expr = rn
	if negate {
		bothNull = &expr.Func{Name: "not", Args: []expr.Expr{rn}, T: types.TBool}
		eq = &expr.Func{Name: "not", Args: []expr.Expr{eq}, T: types.TBool}
	}
	return &expr.Case{Whens: []expr.When{{Cond: ln, Then: bothNull}, {Cond: rn, Then: boolConst(negate)}},
		Else: eq, T: types.TBool}, nil
}
