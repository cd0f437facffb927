package bind

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Set-returning functions in the select list: unnest(array) and
// generate_subscripts(array, dim), as SQLAlchemy's get_pk_constraint sends
// them over pg_index.indkey. Each call that is a whole select-list item
// becomes a column of a ProjectSRF over the FROM input (after WHERE): an
// input row gives one row per element, its other columns repeated, and
// several functions run in lockstep (PostgreSQL 10+: the longest sets the
// row count, the others are padded with NULL). The item then reads that
// column. Elsewhere in an expression the functions do not exist (42883);
// with grouping, aggregates or windows, or in a materialized view, they
// are 0A000.

// selectSRFs lists the select-list items that are set-returning calls.
func selectSRFs(s *ast.SelectStmt) []*ast.FuncCallExpr {
	var out []*ast.FuncCallExpr
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			continue
		}
		e := f.Expr
		for {
			p, ok := e.(*ast.ParenthesesExpr)
			if !ok {
				break
			}
			e = p.Expr
		}
		if fc, ok := e.(*ast.FuncCallExpr); ok && (fc.FnName.L == "unnest" || fc.FnName.L == "generate_subscripts") {
			out = append(out, fc)
		}
	}
	return out
}

// bindSelectSRFs puts the select list's set-returning calls over in and
// records in c which column each call reads.
func (b *Binder) bindSelectSRFs(c *ectx, s *ast.SelectStmt, in planner.Node) (planner.Node, error) {
	calls := selectSRFs(s)
	if len(calls) == 0 {
		return in, nil
	}
	fn := calls[0].FnName.L
	switch {
	case b.View:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s() in the select list is not supported in a materialized view", fn)
	case s.GroupBy != nil || s.Having != nil || hasAggOrWindow(s.Fields):
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s() in the select list of a query with grouping, aggregates or window functions is not supported", fn)
	case len(c.sc.cols) != len(in.Schema()):
		return nil, fmt.Errorf("internal error: select-list %s(): scope and input differ", fn)
	}
	p := &planner.ProjectSRF{Input: in}
	c.srf = map[*ast.FuncCallExpr]int{}
	for _, call := range calls {
		name := call.FnName.L
		args := make([]expr.Expr, len(call.Args))
		for i, a := range call.Args {
			var err error
			if args[i], err = b.bindExpr(c, a); err != nil {
				return nil, err
			}
		}
		t, err := b.selectSRFArgs(name, args)
		if err != nil {
			return nil, err
		}
		col := planner.Column{Name: name, T: t}
		c.srf[call] = len(c.sc.cols)
		c.sc.cols = append(c.sc.cols, scopeCol{Column: col})
		p.Funcs = append(p.Funcs, name)
		p.Args = append(p.Args, args)
		p.Cols = append(p.Cols, col)
	}
	return p, nil
}

// selectSRFArgs checks and converts the arguments in place and returns
// the type of the function's rows.
func (b *Binder) selectSRFArgs(fn string, args []expr.Expr) (types.T, error) {
	want := 1
	if fn == "generate_subscripts" {
		want = 2
	}
	noFunc := func() error {
		ts := make([]string, len(args))
		for i, a := range args {
			ts[i] = typeName(a.Type())
		}
		return sqlerr.New(sqlerr.UndefinedFunction, "function %s(%s) does not exist", fn, strings.Join(ts, ", "))
	}
	if len(args) != want {
		return types.T{}, noFunc()
	}
	var err error
	if args[0].Type().Kind != types.TextArray {
		if args[0], err = b.coerce(args[0], types.TTextArray); err != nil {
			return types.T{}, err
		}
	}
	if args[0].Type().Kind != types.TextArray {
		return types.T{}, noFunc()
	}
	if fn == "unnest" {
		return types.ArrayElem(args[0].Type()), nil
	}
	if args[1], err = b.coerce(args[1], types.TInt32); err != nil {
		return types.T{}, err
	}
	if k := args[1].Type().Kind; k != types.Int16 && k != types.Int32 && k != types.Int64 {
		return types.T{}, noFunc()
	}
	return types.TInt32, nil
}
