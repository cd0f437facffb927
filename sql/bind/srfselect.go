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

// Set-returning functions in the select list: unnest(array),
// generate_subscripts(array, dim) and information_schema._pg_expandarray(array),
// as SQLAlchemy's get_pk_constraint and pgjdbc's getPrimaryKeys send them
// over pg_index.indkey. Each call in a select-list item (the whole item,
// or inside it, as (_pg_expandarray(k)).n) becomes a column of a
// ProjectSRF over the FROM input (after WHERE): an input row gives one row
// per element, its other columns repeated, and several functions run in
// lockstep (PostgreSQL 10+: the longest sets the row count, the others are
// padded with NULL). The call then reads that column. Elsewhere (WHERE, a
// nested query's own clauses) the functions do not exist (42883); inside
// CASE or COALESCE, or with grouping, aggregates or windows, they are
// 0A000; so is any in a materialized view but a single unnest, which
// binds to the LateralFuncScan that unnest in FROM binds to (srfjoin.go).

// isSelectSRF reports whether n calls a set-returning function of the
// select list: unnest and generate_subscripts (in pg_catalog, on the
// search path) or information_schema._pg_expandarray (not on it).
func isSelectSRF(n *ast.FuncCallExpr) bool {
	switch n.FnName.L {
	case "unnest", "generate_subscripts", "string_to_table", "regexp_split_to_table", "regexp_matches", "jsonb_array_elements", "jsonb_array_elements_text", "jsonb_each", "jsonb_each_text":
		return n.Schema.L == "" || n.Schema.L == SchemaCatalog
	case "_pg_expandarray":
		return n.Schema.L == SchemaInfoSchema
	}
	return false
}

// selectSRFs lists the set-returning calls of the select list, in order,
// outside nested queries and outside the arguments of another such call.
func selectSRFs(s *ast.SelectStmt) ([]*ast.FuncCallExpr, error) {
	v := &srfFinder{}
	for _, f := range s.Fields.Fields {
		if f.WildCard == nil && f.Expr != nil {
			f.Expr.Accept(v)
		}
	}
	return v.calls, v.err
}

// srfFinder collects set-returning calls; within is the CASE or COALESCE
// being walked, if any.
type srfFinder struct {
	calls  []*ast.FuncCallExpr
	within []string
	err    error
}

func (v *srfFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n := n.(type) {
	case *ast.SubqueryExpr, *ast.SelectStmt, *ast.SetOprStmt:
		return n, true
	case *ast.CaseExpr:
		v.within = append(v.within, "CASE")
	case *ast.FuncCallExpr:
		if isSelectSRF(n) {
			if len(v.within) > 0 && v.err == nil {
				v.err = sqlerr.New(sqlerr.FeatureNotSupported, "set-returning functions are not allowed in %s", v.within[len(v.within)-1])
			}
			v.calls = append(v.calls, n)
			return n, true
		}
		if n.FnName.L == "coalesce" {
			v.within = append(v.within, "COALESCE")
		}
	}
	return n, false
}

func (v *srfFinder) Leave(n ast.Node) (ast.Node, bool) {
	switch n := n.(type) {
	case *ast.CaseExpr:
		v.within = v.within[:len(v.within)-1]
	case *ast.FuncCallExpr:
		if n.FnName.L == "coalesce" {
			v.within = v.within[:len(v.within)-1]
		}
	}
	return n, true
}

// bindSelectSRFs puts the select list's set-returning calls over in and
// records in c which column each call reads.
func (b *Binder) bindSelectSRFs(c *ectx, s *ast.SelectStmt, in planner.Node) (planner.Node, error) {
	calls, err := selectSRFs(s)
	if err != nil || len(calls) == 0 {
		return in, err
	}
	fn := calls[0].FnName.L
	switch {
	case b.View && (len(calls) > 1 || fn != "unnest" && fn != "regexp_matches" && srfOverArray[fn] == ""):
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
		scanFn, args, err := b.srfAsUnnest(name, args)
		if err != nil {
			return nil, err
		}
		t, err := b.selectSRFArgs(scanFn, args)
		if err != nil {
			return nil, err
		}
		col := planner.Column{Name: name, T: t}
		c.srf[call] = len(c.sc.cols)
		c.sc.cols = append(c.sc.cols, scopeCol{Column: col})
		p.Funcs = append(p.Funcs, scanFn)
		p.Args = append(p.Args, args)
		p.Cols = append(p.Cols, col)
	}
	if b.View {
		// One unnest: its rows are those of unnest in FROM over the
		// input, which a view runs as a stateless stage (srfjoin.go).
		return &planner.LateralFuncScan{Input: in, Func: p.Funcs[0], Args: p.Args[0], Col: p.Cols[0]}, nil
	}
	return p, nil
}

// selectSRFArgs checks and converts the arguments in place and returns
// the type of the function's rows.
func (b *Binder) selectSRFArgs(fn string, args []expr.Expr) (types.T, error) {
	if fn == "regexp_matches" {
		return b.regexpMatchesArgs(args)
	}
	want := 1
	if fn == "_pg_expandarray" {
		fn = "information_schema._pg_expandarray"
	}
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
	if t, ok := jsonSRFType(fn); ok {
		var err error
		if args[0], err = b.coerce(args[0], types.TJSONB); err != nil {
			return types.T{}, err
		}
		if args[0].Type().Kind != types.JSONB {
			return types.T{}, noFunc()
		}
		return t, nil
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
	switch fn {
	case "unnest":
		return types.ArrayElem(args[0].Type()), nil
	case "information_schema._pg_expandarray":
		return types.RecordOf([]types.RecordField{{Name: "x", T: types.ArrayElem(args[0].Type())}, {Name: "n", T: types.TInt32}}), nil
	}
	if args[1], err = b.coerce(args[1], types.TInt32); err != nil {
		return types.T{}, err
	}
	if k := args[1].Type().Kind; k != types.Int16 && k != types.Int32 && k != types.Int64 {
		return types.T{}, noFunc()
	}
	return types.TInt32, nil
}
