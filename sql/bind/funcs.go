package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// This file resolves operators and functions: it picks the signature the
// way PostgreSQL would and casts the operands to what expr's kernels expect.

func noOperator(op string, l, r expr.Expr) error {
	return sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s %s %s", typeName(l.Type()), op, typeName(r.Type()))
}

func call(name string, t types.T, args ...expr.Expr) *expr.Func {
	return &expr.Func{Name: name, Args: args, T: t}
}

// binaryOp resolves l op r for the comparison, arithmetic and logical operators.
func (b *Binder) binaryOp(op string, l, r expr.Expr) (expr.Expr, error) {
	var err error
	switch op {
	case "and", "or":
		what := strings.ToUpper(op)
		if l, err = b.requireBool(l, what); err != nil {
			return nil, err
		}
		if r, err = b.requireBool(r, what); err != nil {
			return nil, err
		}
		return call(op, types.TBool, l, r), nil
	case "||":
		return b.concatOp(l, r)
	}
	// An untyped literal or parameter takes the other operand's type.
	lt, rt := l.Type(), r.Type()
	switch {
	case lt.Kind == types.Unknown && rt.Kind == types.Unknown:
		if isCompare(op) {
			if l, err = b.coerce(l, types.TText); err == nil {
				r, err = b.coerce(r, types.TText)
			}
		} else {
			err = sqlerr.New("42725", "operator is not unique: unknown %s unknown", op)
		}
	case lt.Kind == types.Unknown:
		l, err = b.coercePeer(l, unknownPeer(op, rt))
	case rt.Kind == types.Unknown:
		r, err = b.coercePeer(r, unknownPeer(op, lt))
	}
	if err != nil {
		return nil, err
	}
	if isCompare(op) {
		return b.compareOp(op, l, r)
	}
	return b.arithOp(op, l, r)
}

// unknownPeer is the type an unknown operand of op takes next to a peer of
// type t (timestamp - '1 hour' reads the literal as an interval).
func unknownPeer(op string, t types.T) types.T {
	// Modifiers do not apply: word = 'x' compares as text, x = '1.234' as numeric;
	// next to character(n) the literal is bpchar, its trailing spaces dropped.
	switch t.Kind {
	case types.Text:
		t = types.T{Kind: types.Text, Pad: t.Pad}
	case types.Numeric:
		t = types.TNumeric
	}
	if (t.Kind == types.Timestamp || t.Kind == types.Date) && (op == "+" || op == "-") {
		return types.TInterval
	}
	if t.Kind == types.Interval && (op == "*" || op == "/") {
		return types.TFloat64
	}
	return t
}

func isCompare(op string) bool {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}

func (b *Binder) compareOp(op string, l, r expr.Expr) (expr.Expr, error) {
	if isJSONType(l.Type()) || isJSONType(r.Type()) {
		return b.jsonCompare(op, l, r)
	}
	if l.Type().Kind == types.Record || r.Type().Kind == types.Record {
		return b.recordCompare(op, l, r)
	}
	t, ok := commonType(l.Type(), r.Type())
	if !ok {
		return nil, noOperator(op, l, r)
	}
	var err error
	if l, err = b.toSameRepr(l, t); err != nil {
		return nil, err
	}
	if r, err = b.toSameRepr(r, t); err != nil {
		return nil, err
	}
	return call(op, types.TBool, l, r), nil
}

// toSameRepr casts e to t unless its values already have t's representation
// (all integers are int64; text and varchar are strings).
func (b *Binder) toSameRepr(e expr.Expr, t types.T) (expr.Expr, error) {
	et := e.Type()
	if et.IsInteger() && t.IsInteger() || et.Kind == types.Text && t.Kind == types.Text ||
		et.Kind == types.Numeric && t.Kind == types.Numeric && et.Scale == t.Scale {
		return e, nil
	}
	return b.castTo(e, t)
}

// arithOp resolves + - * / % (operands already typed).
func (b *Binder) arithOp(op string, l, r expr.Expr) (expr.Expr, error) {
	lt, rt := l.Type(), r.Type()
	var err error
	if lt.IsNumeric() && rt.IsNumeric() {
		switch {
		case lt.IsFloat() || rt.IsFloat():
			if op == "%" {
				return nil, noOperator(op, l, r)
			}
			res := types.TFloat64
			if lt.Kind == types.Float32 && rt.Kind == types.Float32 {
				res = types.TFloat32
			}
			return b.widened(op, l, r, types.TFloat64, res)
		case lt.Kind == types.Numeric || rt.Kind == types.Numeric:
			return b.numericArith(op, l, r)
		default:
			res := lt
			if numRank(rt.Kind) > numRank(lt.Kind) {
				res = rt
			}
			return b.widened(op, l, r, types.TInt64, res)
		}
	}
	lk, rk := lt.Kind, rt.Kind
	if lk == types.Time || rk == types.Time || lk == types.TimeTZ || rk == types.TimeTZ {
		return b.timeArith(op, l, r)
	}
	switch {
	case lk == types.Timestamp && rk == types.Interval && (op == "+" || op == "-"):
		return call(op, lt, l, r), nil // timestamptz stays timestamptz
	case lk == types.Interval && rk == types.Timestamp && op == "+":
		return call(op, rt, r, l), nil
	case lk == types.Date && rk == types.Interval && (op == "+" || op == "-"):
		return call(op, types.TTimestamp, &expr.Cast{E: l, T: types.TTimestamp}, r), nil
	case lk == types.Interval && rk == types.Date && op == "+":
		return call(op, types.TTimestamp, &expr.Cast{E: r, T: types.TTimestamp}, l), nil
	case lk == types.Date && rt.IsInteger() && (op == "+" || op == "-"):
		if r, err = b.castTo(r, types.TInt64); err != nil {
			return nil, err
		}
		return call(op, types.TDate, l, r), nil
	case lt.IsInteger() && rk == types.Date && op == "+":
		if l, err = b.castTo(l, types.TInt64); err != nil {
			return nil, err
		}
		return call(op, types.TDate, r, l), nil
	case lk == types.Timestamp && rk == types.Timestamp && op == "-":
		return call(op, types.TInterval, l, r), nil
	case lk == types.Date && rk == types.Timestamp && op == "-":
		return call(op, types.TInterval, &expr.Cast{E: l, T: types.TTimestamp}, r), nil
	case lk == types.Timestamp && rk == types.Date && op == "-":
		return call(op, types.TInterval, l, &expr.Cast{E: r, T: types.TTimestamp}), nil
	case lk == types.Interval && rk == types.Interval && (op == "+" || op == "-"):
		return call(op, types.TInterval, l, r), nil
	case lk == types.Interval && rt.IsNumeric() && (op == "*" || op == "/"):
		if r, err = b.castTo(r, types.TFloat64); err != nil {
			return nil, err
		}
		return call(op, types.TInterval, l, r), nil
	case lt.IsNumeric() && rk == types.Interval && op == "*":
		if l, err = b.castTo(l, types.TFloat64); err != nil {
			return nil, err
		}
		return call(op, types.TInterval, r, l), nil
	case lk == types.Date && rk == types.Date && op == "-":
		return call(op, types.TInt32, l, r), nil // days between them
	}
	return nil, noOperator(op, l, r)
}

// timeArith resolves PostgreSQL's operators on time and timetz: a time
// of day plus or minus an interval's time part (wrapping at midnight),
// time - time (an interval), and a date plus a time of day (a timestamp;
// with timetz a timestamptz). Elsewhere time acts as PostgreSQL's implicit
// cast to interval makes it act: timestamp ± time, date - time.
func (b *Binder) timeArith(op string, l, r expr.Expr) (expr.Expr, error) {
	lt, rt := l.Type(), r.Type()
	lk, rk := lt.Kind, rt.Kind
	isTime := func(k types.Kind) bool { return k == types.Time || k == types.TimeTZ }
	switch {
	case isTime(lk) && rk == types.Interval && (op == "+" || op == "-"):
		return call(op, lt, l, r), nil
	case lk == types.Interval && isTime(rk) && op == "+":
		return call(op, rt, r, l), nil
	case lk == types.Time && rk == types.Time && op == "-":
		return call(op, types.TInterval, l, r), nil
	case lk == types.Date && rk == types.TimeTZ && op == "+":
		return call(op, types.TTimestampTZ, &expr.Cast{E: l, T: types.TTimestamp}, r), nil
	case lk == types.TimeTZ && rk == types.Date && op == "+":
		return call(op, types.TTimestampTZ, &expr.Cast{E: r, T: types.TTimestamp}, l), nil
	case lk == types.Time && (rk == types.Date || rk == types.Timestamp) && op == "+":
		return b.arithOp(op, r, &expr.Cast{E: l, T: types.TInterval})
	case (lk == types.Date || lk == types.Timestamp) && rk == types.Time:
		return b.arithOp(op, l, &expr.Cast{E: r, T: types.TInterval})
	case lk == types.Time && rk == types.Time && op == "+":
		// time + interval and interval + time both fit with either operand cast.
		return nil, sqlerr.New(sqlerr.AmbiguousFunction, "operator is not unique: time without time zone + time without time zone")
	case lk == types.Time && rt.IsNumeric() && (op == "*" || op == "/"):
		return b.arithOp(op, &expr.Cast{E: l, T: types.TInterval}, r)
	case lt.IsNumeric() && rk == types.Time && op == "*":
		return b.arithOp(op, l, &expr.Cast{E: r, T: types.TInterval})
	}
	return nil, noOperator(op, l, r)
}

// coercePeer gives an untyped operand the type t of its peer; a string
// literal read as unconstrained NUMERIC keeps its written display scale
// (x + '1.50' adds a numeric with two digits, as in PostgreSQL).
func (b *Binder) coercePeer(e expr.Expr, t types.T) (expr.Expr, error) {
	if k, ok := e.(*expr.Const); ok && t == types.TNumeric && !k.D.Null {
		return b.numericLiteral(k)
	}
	return b.coerce(e, t)
}

// numericLiteral reads the string constant k as NUMERIC with the display
// scale its text gives.
func (b *Binder) numericLiteral(k *expr.Const) (expr.Expr, error) {
	s, ok := textScale(k.D.S)
	if !ok || s > maxStaticScale {
		return b.castTo(k, types.TNumeric) // reports bad input; else trims
	}
	t := numType(s)
	d, err := types.ParseText(k.D.S, t)
	if err != nil {
		return nil, err
	}
	return &expr.Const{D: d, T: t}, nil
}

// numericArith resolves + - * / % with a NUMERIC operand and the other
// numeric or integer. The result's display scale follows numeric.go.
func (b *Binder) numericArith(op string, l, r expr.Expr) (expr.Expr, error) {
	var err error
	if l, err = b.intToNumeric(l); err != nil {
		return nil, err
	}
	if r, err = b.intToNumeric(r); err != nil {
		return nil, err
	}
	lt, rt := l.Type(), r.Type()
	var t types.T
	switch op {
	case "*":
		t = numericResult(lt, rt, func(sa, sb int32) int32 { return sa + sb })
		if sa, ok := dscale(lt); ok && t.Prec > 0 {
			if sb, _ := dscale(rt); sa+sb > maxStaticScale {
				// Past the places a static scale holds: unconstrained, whose
				// product carries its display scale when it is exact at the
				// places held and is 22003 otherwise (never rounded).
				t = types.T{Kind: types.Numeric, Scale: maxStaticScale}
			}
		}
	case "/":
		if e, ok, err := foldDiv(l, r); ok {
			return e, err
		}
		t = quotientType(lt, rt)
	default: // + - %
		t = numericResult(lt, rt, func(sa, sb int32) int32 { return max(sa, sb) })
	}
	return call(op, t, l, r), nil
}

// intToNumeric converts an integer operand to NUMERIC at scale 0.
func (b *Binder) intToNumeric(e expr.Expr) (expr.Expr, error) {
	if e.Type().IsInteger() {
		return b.castTo(e, numType(0))
	}
	return e, nil
}

// explicitCast is x::t and CAST(x AS t). Unlike the implicit and
// assignment conversions castTo also serves, a string literal cast to
// VARCHAR(n) is truncated (types.CastDatum), and a cast to unconstrained
// NUMERIC keeps the source's display scale ('1.50'::numeric prints 1.50).
func (b *Binder) explicitCast(e expr.Expr, t types.T) (expr.Expr, error) {
	from := e.Type()
	k, isConst := e.(*expr.Const)
	literal := isConst && from.Kind == types.Unknown && !k.D.Null
	switch {
	case t == types.TNumeric && literal:
		return b.numericLiteral(k)
	case t == types.TNumeric:
		if s, ok := dscale(from); ok {
			t = numType(s)
		}
	case t.Kind == types.Text && literal:
		d, err := types.CastDatum(k.D, types.TText, t)
		if err != nil {
			return nil, err
		}
		return &expr.Const{D: d, T: t}, nil
	}
	return b.castTo(e, t)
}

// outputText converts e to its output-function text, which concat()
// uses: the same as a cast to text except for boolean, which prints t/f
// where the cast spells the word out.
func (b *Binder) outputText(e expr.Expr) (expr.Expr, error) {
	if e.Type().Kind != types.Bool {
		return b.castTo(e, types.TText)
	}
	text := func(s string) expr.Expr { return &expr.Const{D: types.Str(s), T: types.TText} }
	if k, ok := e.(*expr.Const); ok {
		switch {
		case k.D.Null:
			return &expr.Const{D: types.Null, T: types.TText}, nil
		case k.D.I != 0:
			return text("t"), nil
		}
		return text("f"), nil
	}
	not := call("not", types.TBool, e)
	return &expr.Case{Whens: []expr.When{{Cond: e, Then: text("t")}, {Cond: not, Then: text("f")}}, T: types.TText}, nil
}

// widened computes op with both operands cast to the kernel type k, then
// casts the result to res (so integer results are range checked).
func (b *Binder) widened(op string, l, r expr.Expr, k, res types.T) (expr.Expr, error) {
	var err error
	if l, err = b.castTo(l, k); err != nil {
		return nil, err
	}
	if r, err = b.castTo(r, k); err != nil {
		return nil, err
	}
	var e expr.Expr = call(op, k, l, r)
	if res != k {
		e = &expr.Cast{E: e, T: res}
	}
	return e, nil
}

func (b *Binder) negate(e expr.Expr) (expr.Expr, error) {
	t := e.Type()
	switch {
	case t.Kind == types.Unknown:
		return nil, sqlerr.New("42725", "operator is not unique: - unknown")
	case t.IsInteger() && t.Kind != types.Int64:
		e, _ = b.castTo(e, types.TInt64)
		return &expr.Cast{E: call("neg", types.TInt64, e), T: t}, nil
	case t.IsNumeric() || t.Kind == types.Interval:
		return call("neg", t, e), nil
	}
	return nil, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: - %s", typeName(t))
}

func (b *Binder) likeOp(op string, l, r expr.Expr) (expr.Expr, error) {
	var err error
	if l.Type().Kind == types.Bytea {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s on bytea is not supported", strings.ToUpper(op))
	}
	if l, err = b.coerce(l, types.TText); err != nil {
		return nil, err
	}
	if r, err = b.coerce(r, types.TText); err != nil {
		return nil, err
	}
	if l.Type().Kind != types.Text || r.Type().Kind != types.Text {
		pgop := "~~"
		if op == "ilike" {
			pgop = "~~*"
		}
		return nil, noOperator(pgop, l, r)
	}
	return call(op, types.TBool, l, r), nil
}

// concatOp is text || text; one side may be any non-text type, which is
// converted to its text form (PostgreSQL's textanycat).
func (b *Binder) concatOp(l, r expr.Expr) (expr.Expr, error) {
	if e, ok, err := b.arrayConcat(l, r); ok {
		return e, err
	}
	lt, rt := l.Type(), r.Type()
	if lt.Kind == types.Bytea && (rt.Kind == types.Bytea || rt.Kind == types.Unknown) ||
		rt.Kind == types.Bytea && lt.Kind == types.Unknown { // byteacat
		var err error
		if l, err = b.coerce(l, types.TBytea); err != nil {
			return nil, err
		}
		if r, err = b.coerce(r, types.TBytea); err != nil {
			return nil, err
		}
		return call("||", types.TBytea, l, r), nil
	}
	if lt.Kind != types.Text && lt.Kind != types.Unknown && rt.Kind != types.Text && rt.Kind != types.Unknown {
		return nil, noOperator("||", l, r)
	}
	var err error
	if l, err = b.castTo(l, types.TText); err != nil {
		return nil, err
	}
	if r, err = b.castTo(r, types.TText); err != nil {
		return nil, err
	}
	return call("||", types.TText, l, r), nil
}

// isPipes tells a || b (which the parser also turns into concat) from a
// call concat(a, b): an operator starts where its first operand does.
func isPipes(n *ast.FuncCallExpr) bool {
	return n.FnName.L == "concat" && len(n.Args) == 2 &&
		n.Args[0].OriginTextPosition() == n.OriginTextPosition()
}

// castType reads the type string of pg_cast(x, 'type').
func castType(n ast.ExprNode) (types.T, error) {
	v, ok := n.(ast.ValueExpr)
	if !ok {
		return types.T{}, sqlerr.New(sqlerr.SyntaxError, "pg_cast needs a type name literal")
	}
	s, ok := v.GetValue().(string)
	if !ok {
		return types.T{}, sqlerr.New(sqlerr.SyntaxError, "pg_cast needs a type name literal")
	}
	return parse.ParseTypeName(s)
}

func noFunction(name string, args []expr.Expr) error {
	ts := make([]string, len(args))
	for i, a := range args {
		ts[i] = typeName(a.Type())
	}
	return sqlerr.New(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, strings.Join(ts, ", "))
}

func (b *Binder) bindFunc(c *ectx, n *ast.FuncCallExpr) (expr.Expr, error) {
	n, err := namedArgs(n) // namedargs.go
	if err != nil {
		return nil, err
	}
	if e, ok, err := b.pgFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.sessionFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.windowGroupFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.arrayFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.arrayFunc2(c, n); ok { // arrayfuncs2.go
		return e, err
	}
	if e, ok, err := b.quoteFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.sizeFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.setConfigFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.driverFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.jsonFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.pgTypeofFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.powFunc(c, n); ok {
		return e, err
	}
	if e, ok, err := b.pgScalarFunc(c, n); ok {
		return e, err
	}
	name := n.FnName.L
	switch name {
	case "trim":
		return b.trimFunc(c, n)
	case "pg_array_subquery":
		if sub := arraySubquery(n); sub != nil {
			if ref, ok := b.scalars[sub]; ok && ref.sc == c.sc && c.agg == nil {
				return ref.value(), nil
			}
			return nil, sqlerr.New(sqlerr.FeatureNotSupported,
				"ARRAY(subquery) is supported only in WHERE and in the select list of a query without GROUP BY or aggregates")
		}
	case "tumble_end":
		if len(n.Args) != 2 {
			break
		}
		// The window's start plus its size: bound from the start's own
		// node, TUMBLE_END(ts, size) is grouped under GROUP BY TUMBLE(ts,
		// size) as TUMBLE_START(ts, size) is.
		start, err := b.bindExpr(c, &ast.FuncCallExpr{FnName: ast.NewCIStr("tumble_start"), Args: n.Args})
		if err != nil {
			return nil, err
		}
		size, err := b.bindExpr(c, n.Args[1])
		if err != nil {
			return nil, err
		}
		if size.Type().Kind != types.Interval {
			break
		}
		return b.binaryOp("+", start, size)
	case "pg_agg_filter": // array_agg(x) FILTER (WHERE cond), from the dialect layer
		if len(n.Args) == 2 {
			return b.bindAggFilter(c, n.Args[0], n.Args[1])
		}
	case "pg_filter": // FILTER (WHERE cond), from the dialect layer: CASE WHEN pg_filter(cond) ...
		if len(n.Args) != 1 {
			break
		}
		return b.bindBool(c, n.Args[0], "FILTER")
	case "pg_row1": // ROW(x), from the dialect layer
		if len(n.Args) != 1 {
			break
		}
		return b.bindRow(c, &ast.RowExpr{Values: n.Args})
	case "pg_cast":
		if len(n.Args) != 2 {
			break
		}
		t, err := castType(n.Args[1])
		if err != nil {
			return nil, err
		}
		e, err := b.bindExpr(c, n.Args[0])
		if err != nil {
			return nil, err
		}
		return b.explicitCast(e, t)
	case "pg_interval":
		if len(n.Args) != 1 {
			break
		}
		if v, ok := n.Args[0].(ast.ValueExpr); ok {
			if s, ok := v.GetValue().(string); ok {
				d, err := types.ParseText(s, types.TInterval)
				if err != nil {
					return nil, err
				}
				return &expr.Const{D: d, T: types.TInterval}, nil
			}
		}
		return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error in interval literal")
	case "extract":
		if len(n.Args) != 2 {
			break
		}
		unit, ok := n.Args[0].(*ast.TimeUnitExpr)
		if !ok {
			break
		}
		src, err := b.bindExpr(c, n.Args[1])
		if err != nil {
			return nil, err
		}
		field := &expr.Const{D: types.Str(strings.ToLower(unit.Unit.String())), T: types.TText}
		return b.extract(name, field, src)
	case "pg_extract": // EXTRACT(field FROM x), from the dialect layer
		if len(n.Args) != 2 {
			break
		}
		field, src, err := b.bindPair(c, n.Args[0], n.Args[1])
		if err != nil {
			return nil, err
		}
		if field, err = b.coerce(field, types.TText); err != nil {
			return nil, err
		}
		return b.extract("extract", field, src)
	case "pg_field": // (expr).field, from the dialect layer
		if len(n.Args) != 2 {
			break
		}
		name, err := castKind(n.Args[1])
		if err != nil {
			return nil, err
		}
		e, err := b.bindExpr(c, n.Args[0])
		if err != nil {
			return nil, err
		}
		return fieldSelect(e, name)
	case "current_timestamp", "localtimestamp":
		if len(n.Args) == 0 {
			return call("now", types.TTimestamp), nil
		}
	}
	if name == "concat" && isPipes(n) {
		l, r, err := b.bindPair(c, n.Args[0], n.Args[1])
		if err != nil {
			return nil, err
		}
		return b.concatOp(l, r)
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, err
	}
	return b.resolveFunc(name, args)
}

// bindArgs binds a call's arguments, in order.
func (b *Binder) bindArgs(c *ectx, nodes []ast.ExprNode) ([]expr.Expr, error) {
	args := make([]expr.Expr, len(nodes))
	for i, a := range nodes {
		var err error
		if args[i], err = b.bindExpr(c, a); err != nil {
			return nil, err
		}
	}
	return args, nil
}

// resolveFunc picks the signature of a built-in function for bound arguments.
func (b *Binder) resolveFunc(name string, args []expr.Expr) (expr.Expr, error) {
	var err error
	// arg casts args[i] (untyped or of a type with an implicit cast) to t.
	arg := func(i int, t types.T) bool {
		if err != nil {
			return false
		}
		at := args[i].Type()
		if at.Kind == types.Text && t.Kind == types.Text {
			return true
		}
		if at.Kind != types.Unknown && at.Kind != t.Kind {
			ok := at.IsNumeric() && t.IsNumeric() && numRank(at.Kind) < numRank(t.Kind) ||
				at.Kind == types.Date && t.Kind == types.Timestamp
			if !ok {
				return false
			}
		}
		args[i], err = b.castTo(args[i], t)
		return err == nil
	}
	n := len(args)
	switch name {
	case "lower", "upper":
		if n == 1 && arg(0, types.TText) {
			return call(name, types.TText, args...), nil
		}
	case "octet_length":
		if n == 1 && (args[0].Type().Kind == types.Bytea || arg(0, types.TText)) {
			return call("octet_length", types.TInt32, args...), nil
		}
	case "length", "char_length", "character_length":
		if n == 1 && name == "length" && args[0].Type().Kind == types.Bytea {
			return call("octet_length", types.TInt32, args...), nil // length(bytea) counts bytes
		}
		if n == 1 && arg(0, types.TText) {
			return call("length", types.TInt32, args...), nil
		}
	case "substr", "substring":
		if (n == 2 || n == 3) && arg(0, types.TText) && arg(1, types.TInt64) && (n == 2 || arg(2, types.TInt64)) {
			return call("substr", types.TText, args...), nil
		}
	case "concat":
		for i := range args {
			if args[i], err = b.outputText(args[i]); err != nil {
				return nil, err
			}
		}
		return call("concat", types.TText, args...), nil
	case "abs":
		if n == 1 {
			t := args[0].Type()
			switch {
			case t.Kind == types.Unknown || t.IsFloat():
				if arg(0, types.TFloat64) {
					return call(name, types.TFloat64, args...), nil
				}
			case t.IsInteger():
				return b.widenedFunc(name, args[0], t)
			case t.Kind == types.Numeric:
				return call(name, t, args...), nil
			}
		}
	case "round", "trunc", "floor", "ceil", "ceiling":
		if name == "ceiling" {
			name = "ceil"
		}
		if n == 2 && (name == "round" || name == "trunc") {
			if args[0].Type().Kind != types.Numeric && !arg(0, types.TNumeric) || !arg(1, types.TInt64) {
				break
			}
			// The result has the digits asked for, when that is a constant.
			t := types.T{Kind: types.Numeric, Scale: args[0].Type().Scale}
			if k, ok := args[1].(*expr.Const); ok && !k.D.Null {
				t = numType(int32(min(max(k.D.I, 0), maxStaticScale)))
				if c, ok := args[0].(*expr.Cast); ok && name == "round" && c.E.Type().IsFloat() && c.T.Kind == types.Numeric && c.T.Prec == 0 && k.D.I >= 0 && k.D.I <= maxStaticScale {
					// round(f::numeric, n): PostgreSQL rounds f's exact
					// decimal digits once, at n, as a cast of f to
					// numeric(38,n) does; held at 16 places, a cast to
					// numeric could not hold them all (22003).
					var err error
					if args[0], err = b.castTo(c.E, t); err != nil {
						return nil, err
					}
				}
			}
			return call(name, t, args...), nil
		}
		if n == 1 {
			// round(integer) resolves to round(double precision), the
			// preferred type of its category, as in PostgreSQL.
			if args[0].Type().Kind == types.Numeric {
				return call(name, numType(0), args...), nil
			}
			if arg(0, types.TFloat64) {
				return call(name, types.TFloat64, args...), nil
			}
		}
	case "coalesce", "nullif", "greatest", "least":
		if n == 0 || name == "nullif" && n != 2 {
			break
		}
		t, err := b.unify(args, strings.ToUpper(name))
		if err != nil {
			return nil, err
		}
		for i := range args {
			if args[i], err = b.castTo(args[i], t); err != nil {
				return nil, err
			}
		}
		if name == "greatest" || name == "least" {
			return b.extremum(name, args)
		}
		return call(name, t, args...), nil
	case "now":
		if n == 0 {
			return call("now", types.TTimestamp), nil
		}
	case "gen_random_uuid":
		if n == 0 {
			if b.View { // a replay after a restart would draw other values
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "gen_random_uuid() is not supported in a materialized view")
			}
			return call(name, types.TUUID), nil
		}
	case "date_trunc":
		ts := types.TTimestamp
		if n == 2 && args[1].Type().TZ {
			ts = types.TTimestampTZ // date_trunc(text, timestamptz) is timestamptz
		}
		if n == 2 && arg(0, types.TText) && arg(1, ts) {
			return call(name, ts, args...), nil
		}
	case "date_part":
		if n == 2 && arg(0, types.TText) {
			e, err := b.extract(name, args[0], args[1])
			if err != nil {
				return nil, err
			}
			return &expr.Cast{E: e, T: types.TFloat64}, nil
		}
	case "tumble", "tumble_start":
		// GROUP BY TUMBLE(ts, size) groups by the window's start, which
		// TUMBLE_START(ts, size) is, so it matches the grouping key in the
		// select list (as in Flink's group windows); see also tumble_end.
		if n == 2 && arg(0, types.TTimestamp) && arg(1, types.TInterval) {
			return call("tumble_start", types.TTimestamp, args...), nil
		}
	case "btrim", "ltrim", "rtrim":
		if n == 1 && arg(0, types.TText) {
			return call(name, types.TText, args[0], &expr.Const{D: types.Str(" "), T: types.TText}), nil
		}
		if n == 2 && arg(0, types.TText) && arg(1, types.TText) {
			return call(name, types.TText, args...), nil
		}
	case "replace":
		if n == 3 && arg(0, types.TText) && arg(1, types.TText) && arg(2, types.TText) {
			return call(name, types.TText, args...), nil
		}
	case "split_part":
		if n == 3 && arg(0, types.TText) && arg(1, types.TText) && arg(2, types.TInt64) {
			return call(name, types.TText, args...), nil
		}
	case "to_char":
		if n != 2 {
			break
		}
		switch k := args[0].Type().Kind; {
		case k == types.Timestamp || k == types.Date:
			if arg(0, types.TTimestamp) && arg(1, types.TText) {
				return call(name, types.TText, args...), nil
			}
		case args[0].Type().IsInteger():
			if arg(0, types.TInt64) && arg(1, types.TText) {
				return call("to_char_num", types.TText, args...), nil
			}
		case k == types.Float32 || k == types.Float64 || k == types.Numeric:
			if arg(1, types.TText) {
				return call("to_char_num", types.TText, args...), nil
			}
		case k == types.Interval:
			if err == nil {
				return nil, types.ErrToCharType(args[0].Type())
			}
		}
	case "regexp_match":
		if (n == 2 || n == 3) && arg(0, types.TText) && arg(1, types.TText) && (n == 2 || arg(2, types.TText)) {
			return call(name, types.TTextArray, args...), nil
		}
	case "regexp_replace":
		if (n == 3 || n == 4) && arg(0, types.TText) && arg(1, types.TText) && arg(2, types.TText) && (n == 3 || arg(3, types.TText)) {
			return call(name, types.TText, args...), nil
		}
	case "pg_subscript": // a[k], from the dialect layer
		if n != 2 {
			break
		}
		if t := args[0].Type(); t.Kind != types.TextArray {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", typeName(t))
		}
		if !arg(1, types.TInt64) {
			if err != nil {
				return nil, err
			}
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "array subscript must have type integer")
		}
		// An element of int2[] is a smallint, read from the list's values.
		return call("subscript", types.ArrayElem(args[0].Type()), args...), nil
	case "count", "sum", "avg", "min", "max":
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "aggregate %s is not supported here", name)
	}
	if err != nil {
		return nil, err
	}
	return nil, noFunction(name, args)
}

// widenedFunc applies a one-argument integer function in int64 and casts
// the result back to the argument's type.
func (b *Binder) widenedFunc(name string, a expr.Expr, t types.T) (expr.Expr, error) {
	a, err := b.castTo(a, types.TInt64)
	if err != nil {
		return nil, err
	}
	var e expr.Expr = call(name, types.TInt64, a)
	if t != types.TInt64 {
		e = &expr.Cast{E: e, T: t}
	}
	return e, nil
}

// extract is EXTRACT(field FROM src) → numeric.
func (b *Binder) extract(name string, field, src expr.Expr) (expr.Expr, error) {
	src, err := b.coerce(src, types.TTimestamp)
	if err != nil {
		return nil, err
	}
	switch src.Type().Kind {
	case types.Timestamp, types.Date, types.Interval:
	default:
		return nil, noFunction(name, []expr.Expr{field, src})
	}
	t := types.TNumeric
	if k, ok := field.(*expr.Const); ok && !k.D.Null {
		if err := types.CheckExtract(k.D.S, src.Type()); err != nil {
			return nil, err
		}
		t = types.ExtractType(k.D.S, src.Type())
	}
	return call("extract", t, field, src), nil
}

// extremum rewrites GREATEST/LEAST (NULLs ignored) into nested CASEs, as
// there is no kernel for them: greatest(a, b) is
// CASE WHEN b IS NULL OR a >= b THEN a ELSE b END.
func (b *Binder) extremum(name string, args []expr.Expr) (expr.Expr, error) {
	op := ">="
	if name == "least" {
		op = "<="
	}
	acc := args[0]
	for _, next := range args[1:] {
		cmp, err := b.compareOp(op, acc, next)
		if err != nil {
			return nil, err
		}
		cond := call("or", types.TBool, call("is_null", types.TBool, next), cmp)
		acc = &expr.Case{Whens: []expr.When{{Cond: cond, Then: acc}}, Else: next, T: acc.Type()}
	}
	return acc, nil
}

// fieldSelect is (e).name: a field of a record (types.Record), as
// PostgreSQL's FieldSelect.
func fieldSelect(e expr.Expr, name string) (expr.Expr, error) {
	t := e.Type()
	if t.Kind != types.Record {
		return nil, sqlerr.New(sqlerr.WrongObjectType, "column notation .%s applied to type %s, which is not a composite type", name, typeName(t))
	}
	k := types.FieldIndex(t, name)
	if k < 0 {
		if t.String() != "record" {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column \"%s\" not found in data type %s", name, t)
		}
		return nil, sqlerr.New(sqlerr.UndefinedColumn, "could not identify column \"%s\" in record data type", name)
	}
	return call("field_select", types.RecordFields(t)[k].T, e, &expr.Const{D: types.Int(int64(k)), T: types.TInt64}), nil
}
