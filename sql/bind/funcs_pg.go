package bind

import (
	"math"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// PostgreSQL's everyday scalar functions (issue 30): mathematics, text
// and date/time. Each name has PostgreSQL's overloads (pgSigs), tried as
// PostgreSQL's resolution does: first a signature every typed argument
// matches exactly, then the first, in PostgreSQL's order of preference,
// that implicit casts reach (sqrt(integer) is sqrt(double precision)).
// Overloads streamdb does not compute as PostgreSQL does (the numeric
// ones of sqrt, ln, log, exp) are refused with 0A000, not computed in
// double precision. The kernels are in exec/expr (pgscalar.go).

// pgSig is one overload: its parameter types, result and kernel name.
// With variadic the last parameter repeats; opt is how many trailing
// parameters may be left out (make_interval's defaults).
type pgSig struct {
	params   []types.T
	res      types.T
	kernel   string
	variadic bool
	opt      int
	refuse   bool // known to PostgreSQL, not computed here: 0A000
}

var (
	tF  = types.TFloat64
	tI4 = types.TInt32
	tI8 = types.TInt64
	tN  = types.TNumeric
	tS  = types.TText
)

func sig(res types.T, kernel string, params ...types.T) pgSig {
	return pgSig{params: params, res: res, kernel: kernel}
}

// floatAndNumeric is a function of double precision and of numeric
// (funcs_more.go: numericTransRes).
func floatAndNumeric(name string) []pgSig {
	numName := name + "_numeric"
	if name == "log10" {
		numName = "log10_numeric"
	}
	return []pgSig{sig(tF, name, tF), sig(numericTransRes(numName), numName, tN)}
}

var pgSigs = map[string][]pgSig{
	"sqrt": floatAndNumeric("sqrt"), "ln": floatAndNumeric("ln"), "exp": floatAndNumeric("exp"),
	"log":   append(floatAndNumeric("log10"), sig(numericTransRes("log_numeric"), "log_numeric", tN, tN)),
	"log10": floatAndNumeric("log10"),
	"cbrt":  {sig(tF, "cbrt", tF)}, "degrees": {sig(tF, "degrees", tF)}, "radians": {sig(tF, "radians", tF)},
	"sin": {sig(tF, "sin", tF)}, "cos": {sig(tF, "cos", tF)}, "tan": {sig(tF, "tan", tF)}, "cot": {sig(tF, "cot", tF)},
	"asin": {sig(tF, "asin", tF)}, "acos": {sig(tF, "acos", tF)}, "atan": {sig(tF, "atan", tF)},
	"atan2":        {sig(tF, "atan2", tF, tF)},
	"sign":         {sig(tF, "sign", tF), sig(tN, "sign_numeric", tN)},
	"random":       {sig(tF, "random")},
	"gcd":          {sig(tI4, "gcd", tI4, tI4), sig(tI8, "gcd", tI8, tI8), {params: []types.T{tN, tN}, res: tN, refuse: true}},
	"lcm":          {sig(tI4, "lcm", tI4, tI4), sig(tI8, "lcm", tI8, tI8), {params: []types.T{tN, tN}, res: tN, refuse: true}},
	"factorial":    {sig(types.NumericOf(types.MaxNumericPrecision, 0), "factorial", tI8)},
	"div":          {sig(types.NumericOf(types.MaxNumericPrecision, 0), "div", tN, tN)},
	"width_bucket": {sig(tI4, "width_bucket", tF, tF, tF, tI4)},

	"lpad": {sig(tS, "lpad", tS, tI4, tS), sig(tS, "lpad", tS, tI4)}, "rpad": {sig(tS, "rpad", tS, tI4, tS), sig(tS, "rpad", tS, tI4)},
	"left": {sig(tS, "left", tS, tI4)}, "right": {sig(tS, "right", tS, tI4)}, "repeat": {sig(tS, "repeat", tS, tI4)},
	"reverse": {sig(tS, "reverse", tS)}, "initcap": {sig(tS, "initcap", tS)}, "md5": {sig(tS, "md5", tS)},
	"translate": {sig(tS, "translate", tS, tS, tS)}, "chr": {sig(tS, "chr", tI4)},
	"to_hex":      {sig(tS, "to_hex32", tI4), sig(tS, "to_hex", tI8)},
	"ascii":       {sig(tI4, "ascii", tS)},
	"bit_length":  {sig(tI4, "bit_length", tS)},
	"strpos":      {sig(tI4, "strpos", tS, tS)},
	"starts_with": {sig(types.TBool, "starts_with", tS, tS)},

	"make_date":        {sig(types.TDate, "make_date", tI4, tI4, tI4)},
	"make_timestamp":   {sig(types.TTimestamp, "make_timestamp", tI4, tI4, tI4, tI4, tI4, tF)},
	"make_interval":    {{params: []types.T{tI4, tI4, tI4, tI4, tI4, tI4, tF}, res: types.TInterval, kernel: "make_interval", opt: 7}},
	"to_timestamp":     {sig(types.TTimestampTZ, "to_timestamp", tF), sig(types.TTimestampTZ, "to_timestamp_fmt", tS, tS)},
	"to_date":          {sig(types.TDate, "to_date", tS, tS)},
	"to_number":        {sig(tN, "to_number", tS, tS)},
	"age":              {sig(types.TInterval, "age", types.TTimestamp, types.TTimestamp), sig(types.TInterval, "age", types.TTimestamp)},
	"justify_hours":    {sig(types.TInterval, "justify_hours", types.TInterval)},
	"justify_days":     {sig(types.TInterval, "justify_days", types.TInterval)},
	"justify_interval": {sig(types.TInterval, "justify_interval", types.TInterval)},
	"isfinite":         {sig(types.TBool, "isfinite", types.TDate), sig(types.TBool, "isfinite", types.TTimestamp), sig(types.TBool, "isfinite", types.TInterval)},
	"clock_timestamp":  {sig(types.TTimestampTZ, "clock_timestamp")},
}

// pgScalarFunc binds the functions of this file; ok is false for others.
func (b *Binder) pgScalarFunc(c *ectx, n *ast.FuncCallExpr) (expr.Expr, bool, error) {
	name := n.FnName.L
	switch name {
	case "current_date":
		if len(n.Args) == 0 {
			return &expr.Cast{E: call("now", types.TTimestamp), T: types.TDate}, true, nil
		}
	case "localtime", "current_time":
		if len(n.Args) == 0 {
			var e expr.Expr = &expr.Cast{E: call("now", types.TTimestamp), T: types.TTime}
			if name == "current_time" {
				e = &expr.Cast{E: e, T: types.TTimeTZ}
			}
			return e, true, nil
		}
	case "pi":
		if len(n.Args) == 0 {
			return &expr.Const{D: types.Float(math.Pi), T: tF}, true, nil
		}
	case "position": // position(sub IN s) is strpos(s, sub)
		if len(n.Args) == 2 {
			args, err := b.bindArgs(c, []ast.ExprNode{n.Args[1], n.Args[0]})
			if err != nil {
				return nil, true, err
			}
			e, err := b.resolvePG("strpos", pgSigs["strpos"], args)
			return e, true, err
		}
	case "concat_ws", "format":
		if len(n.Args) == 0 {
			break
		}
		args, err := b.bindArgs(c, n.Args)
		if err != nil {
			return nil, true, err
		}
		if name == "concat_ws" && len(args) < 2 {
			return nil, true, noFunction(name, args)
		}
		if args[0], err = b.coerce(args[0], tS); err != nil {
			return nil, true, err
		}
		if args[0].Type().Kind != types.Text {
			return nil, true, noFunction(name, args)
		}
		for i := 1; i < len(args); i++ {
			if args[i], err = b.outputText(args[i]); err != nil {
				return nil, true, err
			}
		}
		return call(name, tS, args...), true, nil
	}
	sigs, ok := pgSigs[name]
	if !ok {
		return nil, false, nil
	}
	if b.View && (name == "random" || name == "clock_timestamp") {
		// A replay after a restart would draw other values.
		return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "%s() is not supported in a materialized view", name)
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	e, err := b.resolvePG(name, sigs, args)
	return e, true, err
}

// pgFits reports whether an argument of type at reaches parameter t:
// exactly, or (with implicit) by one of PostgreSQL's implicit casts.
func pgFits(at, t types.T, implicit bool) bool {
	switch {
	case at.Kind == types.Unknown:
		return implicit
	case at.Kind == t.Kind:
		return at.Kind != types.Timestamp || at.TZ == t.TZ || implicit
	case !implicit:
		return false
	case at.IsNumeric() && t.IsNumeric():
		return numRank(at.Kind) < numRank(t.Kind)
	}
	return at.Kind == types.Date && t.Kind == types.Timestamp
}

// resolvePG picks the overload of name for args and casts them to it.
func (b *Binder) resolvePG(name string, sigs []pgSig, args []expr.Expr) (expr.Expr, error) {
	for _, implicit := range []bool{false, true} {
		for _, s := range sigs {
			if len(args) > len(s.params) || len(args) < len(s.params)-s.opt {
				continue
			}
			fits := true
			for i, a := range args {
				if !pgFits(a.Type(), s.params[i], implicit) {
					fits = false
					break
				}
			}
			if !fits {
				continue
			}
			if s.refuse {
				ts := make([]string, len(s.params))
				for i, p := range s.params {
					ts[i] = typeName(p)
				}
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s(%s) is not supported (cast the arguments to double precision where PostgreSQL has that form)", name, strings.Join(ts, ", "))
			}
			return b.applyPG(name, s, args)
		}
	}
	return nil, noFunction(name, args)
}

// applyPG casts args to s's parameters and builds the call.
func (b *Binder) applyPG(name string, s pgSig, args []expr.Expr) (expr.Expr, error) {
	var err error
	for i, a := range args {
		p := s.params[i]
		switch {
		case p.Kind == types.Numeric:
			if a.Type().Kind == types.Unknown {
				a, err = b.coercePeer(a, types.TNumeric)
			} else {
				a, err = b.intToNumeric(a)
			}
		case p.Kind == types.Text && a.Type().Kind == types.Text:
		case p.IsInteger():
			a, err = b.castTo(a, tI8) // kernels read integers as int64
		case p.Kind == types.Timestamp && a.Type().Kind == types.Timestamp:
		default:
			a, err = b.castTo(a, p)
		}
		if err != nil {
			return nil, err
		}
		args[i] = a
	}
	s, args = moreArgs(s, args)
	switch name {
	case "lpad", "rpad":
		if len(args) == 2 {
			args = append(args, &expr.Const{D: types.Str(" "), T: tS})
		}
	case "make_interval":
		for len(args) < len(s.params)-1 {
			args = append(args, &expr.Const{D: types.Int(0), T: tI8})
		}
		if len(args) < len(s.params) {
			args = append(args, &expr.Const{D: types.Float(0), T: tF})
		}
	case "age":
		if len(args) == 1 { // age(x) is age(current_date, x)
			midnight := &expr.Cast{E: &expr.Cast{E: call("now", types.TTimestamp), T: types.TDate}, T: types.TTimestamp}
			args = []expr.Expr{midnight, args[0]}
		}
	case "sign":
		if s.kernel == "sign_numeric" {
			return b.numericSign(args[0])
		}
	case "gcd", "lcm":
		if s.res.Kind == types.Int32 { // computed in bigint; the cast range checks
			return &expr.Cast{E: call(s.kernel, tI8, args...), T: tI4}, nil
		}
	}
	return call(s.kernel, s.res, args...), nil
}

// numericSign is sign(numeric): -1, 0 or 1 at scale 0.
func (b *Binder) numericSign(x expr.Expr) (expr.Expr, error) {
	t := types.NumericOf(types.MaxNumericPrecision, 0)
	k := func(v string) expr.Expr {
		d, _ := types.ParseText(v, t)
		return &expr.Const{D: d, T: t}
	}
	zero := k("0")
	gt, err := b.compareOp(">", x, zero)
	if err != nil {
		return nil, err
	}
	lt, err := b.compareOp("<", x, zero)
	if err != nil {
		return nil, err
	}
	return &expr.Case{Whens: []expr.When{{Cond: gt, Then: k("1")}, {Cond: lt, Then: k("-1")}}, Else: zero, T: t}, nil
}
