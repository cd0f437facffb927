package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Column defaults (CREATE TABLE ... DEFAULT expr). The catalog keeps the
// expression's text as PostgreSQL prints it (storage.ColumnDef.Default);
// INSERT binds it wherever a column is left out or given DEFAULT.

// volatileFuncs are the functions whose value differs per row: a COPY
// evaluates a default once, so it refuses a default calling one.
var volatileFuncs = map[string]bool{"random": true, "gen_random_uuid": true, "clock_timestamp": true,
	"timeofday": true, "random_normal": true, "nextval": true, "uuid_generate_v4": true}

// ColumnDefault parses and binds a DEFAULT expression for column col of
// table, converted to the column's type. literal reports whether it is a
// literal (casts of constants only, no function call), which PostgreSQL
// stores folded; volatile whether it calls a function whose value
// differs per row.
func (b *Binder) ColumnDefault(text string, col storage.ColumnDef, table string) (e expr.Expr, literal, volatile bool, err error) {
	stmts, err := parse.ParseAll("SELECT " + text)
	if err != nil || len(stmts) != 1 {
		return nil, false, false, sqlerr.New(sqlerr.SyntaxError, "syntax error in DEFAULT expression of column %q: %s", col.Name, text)
	}
	q, ok := stmts[0].(*parse.Query)
	var sel *ast.SelectStmt
	if ok {
		sel, ok = q.Node.(*ast.SelectStmt)
	}
	if !ok || sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Fields == nil || len(sel.Fields.Fields) != 1 ||
		sel.Fields.Fields[0].Expr == nil || sel.OrderBy != nil || sel.Limit != nil {
		return nil, false, false, sqlerr.New(sqlerr.SyntaxError, "syntax error in DEFAULT expression of column %q: %s", col.Name, text)
	}
	n := sel.Fields.Fields[0].Expr
	v := &defaultCheck{literal: true}
	n.Accept(v)
	if v.err != nil {
		return nil, false, false, v.err
	}
	c := &ectx{sc: &scope{}, noAgg: "aggregate functions are not allowed in DEFAULT expressions"}
	raw, err := b.bindExpr(c, n)
	if err != nil {
		return nil, false, false, err
	}
	e, err = b.assign(raw, col, table)
	if err != nil {
		return nil, false, false, err
	}
	return e, v.literal, v.volatile, nil
}

// defaultCheck refuses what a DEFAULT expression may not hold, as
// PostgreSQL does, and notes whether it is a literal.
type defaultCheck struct {
	err      error
	literal  bool
	volatile bool
}

func (v *defaultCheck) Enter(n ast.Node) (ast.Node, bool) {
	if v.err != nil {
		return n, true
	}
	switch n := n.(type) {
	case *ast.ColumnNameExpr:
		v.err = sqlerr.New(sqlerr.FeatureNotSupported, "cannot use column reference in DEFAULT expression")
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		v.err = sqlerr.New(sqlerr.FeatureNotSupported, "cannot use subquery in DEFAULT expression")
	case *ast.AggregateFuncExpr, *ast.WindowFuncExpr:
		v.err = sqlerr.New(sqlerr.GroupingError, "aggregate functions are not allowed in DEFAULT expressions")
	case ast.ParamMarkerExpr:
		v.err = sqlerr.New(sqlerr.FeatureNotSupported, "there is no parameter $1")
	case *ast.FuncCallExpr:
		name := strings.ToLower(n.FnName.L)
		if name != "pg_cast" {
			v.literal = false
		}
		v.volatile = v.volatile || volatileFuncs[name]
	}
	return n, false
}

func (v *defaultCheck) Leave(n ast.Node) (ast.Node, bool) { return n, v.err == nil }

// DefaultExprs binds the defaults of def's columns; nil where a column has
// none (NULL). It is what INSERT uses for the columns it leaves out.
func (b *Binder) DefaultExprs(def *storage.TableDef) ([]expr.Expr, error) {
	var out []expr.Expr
	for i, c := range def.Columns {
		if c.Default == "" {
			continue
		}
		e, _, _, err := b.ColumnDefault(c.Default, c, def.Name)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make([]expr.Expr, len(def.Columns))
		}
		out[i] = e
	}
	return out, nil
}
