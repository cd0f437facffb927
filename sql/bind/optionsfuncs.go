package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// What psql's \d of a foreign table (a source) reads about its options:
// pg_options_to_table(options) in FROM, and quote_ident / quote_literal.

// optionsToTable binds FROM pg_options_to_table(opts): one row per
// "name=value" element, split at the first "=" into option_name and
// option_value, as PostgreSQL's. It is unnest(opts) under a projection,
// so it may read the enclosing query as unnest does (srflateral.go).
func optionsToTable(opts expr.Expr, lateral bool, alias, names string) (planner.Node, *scope, error) {
	table := "pg_options_to_table"
	if alias != "" {
		table = alias
	}
	fs := &planner.FuncScan{Func: "unnest", Args: []expr.Expr{opts}, Col: planner.Column{Name: "option", T: types.TText}, Lateral: lateral}
	opt := &expr.ColRef{Idx: 0, T: types.TText, Name: "option"}
	name := call("split_part", types.TText, opt, &expr.Const{D: types.Str("="), T: types.TText}, &expr.Const{D: types.Int(1), T: types.TInt64})
	start := call("+", types.TInt64, &expr.Cast{E: call("length", types.TInt32, name), T: types.TInt64}, &expr.Const{D: types.Int(2), T: types.TInt64})
	value := call("substr", types.TText, opt, start)
	cols := []planner.Column{{Name: "option_name", T: types.TText, Table: table}, {Name: "option_value", T: types.TText, Table: table}}
	if err := renameColumns(alias, cols, names); err != nil {
		return nil, nil, err
	}
	return &planner.Project{Input: fs, Exprs: []expr.Expr{name, value}, Cols: cols}, newScope(cols), nil
}

// quoteFunc binds quote_literal(text) and quote_ident(text); ok is false
// for other names. quote_literal doubles quotes (and, with a backslash,
// doubles those and writes E'...', as PostgreSQL); quote_ident is
// PostgreSQL's (expr.QuoteIdent: a name other than lower case letters,
// digits and _ not starting with a digit, or a keyword PostgreSQL 15
// reserves, is quoted).
func (b *Binder) quoteFunc(c *ectx, n *ast.FuncCallExpr) (expr.Expr, bool, error) {
	name := n.FnName.L
	if name != "quote_literal" && name != "quote_ident" {
		return nil, false, nil
	}
	if s := n.Schema.L; s != "" && s != SchemaCatalog {
		return nil, true, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", n.Schema.O)
	}
	if len(n.Args) != 1 {
		return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
	}
	a, err := b.bindExpr(c, n.Args[0])
	if err != nil {
		return nil, true, err
	}
	if a.Type().Kind != types.Text {
		// quote_literal(anyelement) is quote_literal of its text.
		if a, err = b.castTo(a, types.TText); err != nil {
			return nil, true, err
		}
	}
	lit := func(s string) expr.Expr { return &expr.Const{D: types.Str(s), T: types.TText} }
	cat := func(xs ...expr.Expr) expr.Expr {
		out := xs[0]
		for _, x := range xs[1:] {
			out = call("||", types.TText, out, x)
		}
		return out
	}
	if name == "quote_literal" {
		q := call("replace", types.TText, a, lit("'"), lit("''"))
		plain := cat(lit("'"), q, lit("'"))
		esc := cat(lit("E'"), call("replace", types.TText, q, lit(`\`), lit(`\\`)), lit("'"))
		return &expr.Case{Whens: []expr.When{{Cond: call("like", types.TBool, a, lit(`%\\%`)), Then: esc}}, Else: plain, T: types.TText}, true, nil
	}
	return call("quote_ident", types.TText, a), true, nil
}
