package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Set-returning functions in FROM: generate_series over integers or
// timestamps and unnest of a text[]. The parser writes such a FROM item as
// the derived table (SELECT pg_srf_<name>(args)); it binds to a FuncScan.
// As other FROM items, the arguments see no columns of the query (no
// LATERAL): constants, parameters and expressions over them. The column
// is named as PostgreSQL names it: the alias's column list, else the
// alias, else the function.

// srfCall returns the call of a derived table that stands for a
// set-returning function, or nil.
func srfCall(src ast.ResultSetNode) *ast.FuncCallExpr {
	s, ok := src.(*ast.SelectStmt)
	if !ok || s.From != nil || s.Where != nil || s.Fields == nil || len(s.Fields.Fields) != 1 {
		return nil
	}
	f, ok := s.Fields.Fields[0].Expr.(*ast.FuncCallExpr)
	if !ok || !strings.HasPrefix(f.FnName.L, "pg_srf_") {
		return nil
	}
	return f
}

// bindSRF binds a set-returning function's FROM item.
func (b *Binder) bindSRF(f *ast.FuncCallExpr, alias, names string) (planner.Node, *scope, error) {
	fn := strings.TrimPrefix(f.FnName.L, "pg_srf_")
	if b.View {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s() in FROM is not supported in a materialized view", fn)
	}
	// Inside a subquery the arguments may read the enclosing query
	// (srflateral.go): b.outer while the subquery is first bound,
	// b.lateral while its FROM is bound again as a correlated one.
	osc := b.outer
	if osc == nil {
		osc = b.lateral
	}
	prev := b.outer
	b.outer = nil
	args := make([]expr.Expr, len(f.Args))
	sc := newScope(nil)
	if osc != nil {
		sc.outer, sc.outerRefs = osc, &b.outerRefs
	}
	refs := b.outerRefs
	c := &ectx{sc: sc, noAgg: "aggregate functions are not allowed in functions in FROM", noWin: "window functions are not allowed in functions in FROM"}
	var err error
	for i, a := range f.Args {
		if args[i], err = b.bindExpr(c, a); err != nil {
			break
		}
	}
	b.outer = prev
	lateral := b.outerRefs != refs
	if code := sqlerr.Code(err); (code == sqlerr.UndefinedColumn || code == sqlerr.UndefinedTable) && osc != nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"%s() in FROM with arguments from another FROM item (LATERAL) is not supported", fn)
	}
	if err != nil {
		return nil, nil, err
	}
	if lateral {
		for _, a := range args {
			if refersBeyond(a, len(osc.cols)) {
				return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "subqueries that reference a query two or more levels out are not supported")
			}
		}
	}
	scanFn, args, err := b.srfAsUnnest(fn, args)
	if err != nil {
		return nil, nil, err
	}
	t, err := b.srfArgs(scanFn, args)
	if err != nil {
		return nil, nil, err
	}
	if fn == "pg_options_to_table" {
		return optionsToTable(args[0], lateral, alias, names)
	}
	if t.Kind == types.Record {
		return jsonbEachTable(fn, args, t, lateral, alias, names)
	}
	col, err := srfColumn(fn, t, alias, names)
	if err != nil {
		return nil, nil, err
	}
	return &planner.FuncScan{Func: scanFn, Args: args, Col: col, Lateral: lateral}, newScope([]planner.Column{col}), nil
}

// srfColumn names a set-returning function's column as PostgreSQL does:
// the alias's column list, else the alias, else the function.
func srfColumn(fn string, t types.T, alias, names string) (planner.Column, error) {
	col := planner.Column{Name: fn, T: t, Table: fn}
	if alias != "" {
		col.Name, col.Table = alias, alias
	}
	if _, ok := jsonSRFType(fn); ok {
		col.Name = "value" // the function's OUT parameter names its column
	}
	cols := []planner.Column{col}
	err := renameColumns(alias, cols, names)
	return cols[0], err
}

// srfArgs checks and converts the arguments in place and returns the
// type of the function's rows.
func (b *Binder) srfArgs(fn string, args []expr.Expr) (types.T, error) {
	noFunc := func() error {
		ts := make([]string, len(args))
		for i, a := range args {
			ts[i] = typeName(a.Type())
		}
		return sqlerr.New(sqlerr.UndefinedFunction, "function %s(%s) does not exist", fn, strings.Join(ts, ", "))
	}
	var err error
	if t, ok := jsonSRFType(fn); ok {
		if len(args) != 1 {
			return types.T{}, noFunc()
		}
		if args[0], err = b.coerce(args[0], types.TJSONB); err != nil {
			return types.T{}, err
		}
		if args[0].Type().Kind != types.JSONB {
			return types.T{}, noFunc()
		}
		return t, nil
	}
	switch fn {
	case "regexp_matches":
		return b.regexpMatchesArgs(args)
	case "unnest", "pg_options_to_table":
		if len(args) != 1 {
			return types.T{}, noFunc()
		}
		if args[0], err = b.coerce(args[0], types.TTextArray); err != nil {
			return types.T{}, err
		}
		if args[0].Type().Kind != types.TextArray {
			return types.T{}, noFunc()
		}
		if fn == "unnest" {
			return types.ArrayElem(args[0].Type()), nil // PostgreSQL's anyarray unnest: the element type
		}
		return types.TText, nil
	case "generate_series":
		if len(args) != 2 && len(args) != 3 {
			return types.T{}, noFunc()
		}
		isTime := func(e expr.Expr) bool { k := e.Type().Kind; return k == types.Timestamp || k == types.Date }
		if isTime(args[0]) || isTime(args[1]) {
			if len(args) != 3 {
				return types.T{}, noFunc()
			}
			for i := range args[:2] {
				if args[i], err = b.castTo(args[i], types.TTimestamp); err != nil {
					return types.T{}, err
				}
			}
			if args[2], err = b.coerce(args[2], types.TInterval); err != nil {
				return types.T{}, err
			}
			if args[2].Type().Kind != types.Interval {
				return types.T{}, noFunc()
			}
			return types.TTimestamp, nil
		}
		t := types.TInt32
		for i := range args {
			if args[i], err = b.coerce(args[i], types.TInt32); err != nil {
				return types.T{}, err
			}
			k := args[i].Type()
			if !k.IsInteger() {
				return types.T{}, noFunc()
			}
			if k.Kind == types.Int64 {
				t = types.TInt64
			}
		}
		for i := range args {
			if args[i], err = b.castTo(args[i], types.TInt64); err != nil {
				return types.T{}, err
			}
		}
		return t, nil
	}
	return types.T{}, noFunc()
}
