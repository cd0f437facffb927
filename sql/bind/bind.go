// Package bind is the binder (semantic analysis): it resolves the names in
// a TiDB parser AST (as rewritten by sql/parse) against the catalog, types
// every expression with PostgreSQL 15's rules, and produces a logical plan
// of package planner with expressions of package exec/expr.
//
// Contract: every expression in the plan is fully typed; untyped literals
// and parameters get their type from context (a bad literal fails here,
// with PostgreSQL's SQLSTATE); operator operands are cast to the types the
// kernels expect (see expr.Func). Errors are *sqlerr.Error.
//
// A SELECT becomes, bottom up:
//
//	FROM (Scan, Join, subquery) → Filter (WHERE) → Aggregate → Filter (HAVING)
//	→ Project (select list, then hidden ORDER BY columns) → Aggregate (DISTINCT)
//	→ Sort → Project (drops hidden columns) → Limit
package bind

import (
	"github.com/pingcap/tidb/pkg/parser/test_driver"
	"math"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Catalog resolves table names. Names are lower-case unless quoted.
type Catalog interface {
	Table(name string) (*storage.TableDef, bool)
}

// Binder binds statements. It is not safe for concurrent use.
type Binder struct {
	Cat Catalog
	// Params holds the types of $1..$n: preset ones (from the client's Parse
	// OIDs, TUnknown if unspecified) are used; unknown ones are inferred from
	// context (k = $1 with k bigint gives bigint, otherwise text) and
	// written back.
	Params []types.T
	// User is the session's role: current_user and session_user ("" where
	// no session binds, as in DDL, makes them undefined).
	User string
	// LimitParams maps the offset of a LIMIT/OFFSET "?" marker to its
	// parameter's index (parse.Query.LimitParams); ParamValues are the
	// parameters' values when the statement is executed (nil when it is
	// only described): LIMIT $1 takes its value at bind time.
	LimitParams map[int]int
	ParamValues []types.Datum
	// View says the query is a materialized view's: subqueries used as
	// values that need grouping (correlated ones, ARRAY(subquery)) are
	// refused there (0A000), their operators being batch-only.
	View bool
	// AvgDistinctAtAvgScale binds avg(DISTINCT x) of a NUMERIC x as views
	// created before storage.KeyFormatAvgDistinct hold it: x cast to the
	// average's type before it is de-duplicated (aggArg).
	AvgDistinctAtAvgScale bool
	// Session answers pg_backend_pid() and has_*_privilege(); nil where
	// no session runs the statement (they are then NULL).
	Session SessionInfo

	// rowArgs holds each ROW(...) constructor's arguments before untyped
	// literals were made text: two constructors compare pair by pair, each
	// literal typed by its peer (composite.go).
	rowArgs map[*expr.Func][]expr.Expr
	// aggFilter is the FILTER condition of the collecting aggregate being
	// bound (aggfilter.go), taken by it.
	aggFilter expr.Expr

	// outer is the scope of the query whose subquery is being bound (the
	// subquery's FROM scope resolves names there too); outerRefs counts
	// names resolved that way, which is how a subquery is found correlated.
	outer     *scope
	outerRefs int
	// lateral is the enclosing query's scope while a correlated
	// subquery's FROM is bound: its set-returning functions may read it
	// (srflateral.go).
	lateral *scope
	// scalars places the uncorrelated scalar subqueries of the query being
	// bound (see bindScalarSubqueries).
	scalars map[*ast.SubqueryExpr]scalarRef
	// viewDepth counts the plain views being expanded (views.go).
	viewDepth int
	// valueSubquery is set while a subquery used as a value is bound: its
	// select list may use the outer query's columns (corrdomain.go).
	valueSubquery bool
}

// BindQuery binds a SELECT, a set operation (UNION [ALL]) or a parenthesized query.
func (b *Binder) BindQuery(n ast.ResultSetNode) (planner.Node, error) {
	p, err := b.bindResultSet(n, false)
	if err != nil {
		return nil, err
	}
	b.finishParams()
	return p, nil
}

// finishParams types the parameters context did not decide as text.
func (b *Binder) finishParams() {
	for i, t := range b.Params {
		if t.Kind == types.Unknown {
			b.Params[i] = types.TText
		}
	}
}

// bindResultSet binds a query. keepUnknown leaves untyped literals in the
// select list untyped (for UNION members, whose types are unified later).
func (b *Binder) bindResultSet(n ast.Node, keepUnknown bool) (planner.Node, error) {
	switch n := n.(type) {
	case *ast.SelectStmt:
		return b.bindSelect(n, keepUnknown)
	case *ast.SetOprStmt:
		if n.With != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "WITH is not supported")
		}
		return b.bindSetOpr(n.SelectList, n.OrderBy, n.Limit)
	case *ast.SetOprSelectList:
		if n.With != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "WITH is not supported")
		}
		return b.bindSetOpr(n, n.OrderBy, n.Limit)
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "queries of this form are not supported")
}

// selItem is one output column of a select list before projection.
type selItem struct {
	node ast.ExprNode // nil for a column expanded from *
	col  int          // input column for a * item
	name string
	e    expr.Expr
}

func (b *Binder) bindSelect(s *ast.SelectStmt, keepUnknown bool) (planner.Node, error) {
	switch {
	case s.With != nil:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "WITH is not supported")
	case s.Kind != ast.SelectStmtKindSelect:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "VALUES and TABLE as queries are not supported")
	case s.LockInfo != nil && s.LockInfo.LockType != ast.SelectLockNone:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SELECT ... FOR UPDATE is not supported")
	}
	named, err := resolveNamedWindows(s.WindowSpecs)
	if err != nil {
		return nil, err
	}
	// FROM
	var in planner.Node
	var sc *scope
	if s.From == nil {
		in, sc = &planner.Values{Rows: [][]expr.Expr{{}}}, &scope{}
	} else {
		var err error
		if in, sc, err = b.bindFrom(s.From.TableRefs); err != nil {
			return nil, err
		}
	}
	if b.outer != nil {
		sc.outer, sc.outerRefs = b.outer, &b.outerRefs
	}
	base := &ectx{sc: sc}
	// Uncorrelated scalar subqueries in WHERE and (without grouping) in the
	// select list become hidden columns of the FROM input.
	scalarIn := []ast.Node{s.Where}
	if s.GroupBy == nil && s.Having == nil && !hasAggOrWindow(s.Fields) {
		existsAsCount(s.Fields) // EXISTS in the select list (existssel.go)
		for _, f := range s.Fields.Fields {
			if f.Expr != nil {
				scalarIn = append(scalarIn, f.Expr)
			}
		}
	} else {
		// Subqueries in aggregates' arguments and FILTER (aggsub.go).
		aggs, err := b.aggArgSubqueries(s)
		if err != nil {
			return nil, err
		}
		scalarIn = append(scalarIn, aggs...)
	}
	wc := base.inputCtx("aggregate functions are not allowed in WHERE")
	wc.noWin = "window functions are not allowed in WHERE"
	in, where, err := b.filterBeforeValueSubqueries(wc, in, s.Where, scalarIn) // wherefirst.go
	if err != nil {
		return nil, err
	}
	if in, err = b.bindScalarSubqueries(sc, in, scalarIn...); err != nil {
		return nil, err
	}
	if where != nil {
		if in, err = b.bindWhere(wc, in, where); err != nil {
			return nil, err
		}
	}

	// Set-returning functions of the select list (srfselect.go).
	if in, err = b.bindSelectSRFs(base, s, in); err != nil {
		return nil, err
	}

	// Select list, with * expanded.
	var items []selItem
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			cols, err := starCols(sc, f.WildCard.Table.O)
			if err != nil {
				return nil, err
			}
			for _, i := range cols {
				items = append(items, selItem{col: i, name: sc.cols[i].Name})
			}
			continue
		}
		name := f.AsName.O
		if name == "" {
			name = outputName(f.Expr)
		}
		items = append(items, selItem{node: f.Expr, name: name})
	}

	// Grouping: GROUP BY, HAVING or an aggregate anywhere above WHERE.
	c := base
	grouped := s.GroupBy != nil || s.Having != nil
	for _, it := range items {
		grouped = grouped || it.node != nil && containsAgg(it.node)
	}
	if s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			grouped = grouped || containsAgg(o.Expr)
		}
	}
	if grouped {
		agg := &aggState{}
		if s.GroupBy != nil {
			if s.GroupBy.Rollup {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ROLLUP is not supported")
			}
			for _, g := range s.GroupBy.Items {
				if f, ok := isGroupWindow(g.Expr); ok {
					if agg.window != nil {
						return nil, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY takes at most one SESSION or HOP window")
					}
					w, err := b.bindGroupWindow(base, f)
					if err != nil {
						return nil, err
					}
					agg.window = w
					if w.kind == "hop" {
						if in, err = b.addGroupWindow(agg, w, in); err != nil {
							return nil, err
						}
					}
					continue
				}
				e, err := b.bindGroupItem(base, items, g.Expr)
				if err != nil {
					return nil, err
				}
				if agg.window != nil && agg.window.tvf[0] != "" && (e.String() == agg.window.tvf[0] || e.String() == agg.window.tvf[1]) {
					continue // SESSION(table, ...)'s window_start/window_end
				}
				tw, err := sessionTVF(in, e)
				if err != nil {
					return nil, err
				}
				if tw != nil {
					if agg.window != nil {
						return nil, sqlerr.New(sqlerr.FeatureNotSupported, "GROUP BY takes at most one SESSION or HOP window")
					}
					agg.window = tw
					continue
				}
				agg.addGroup(e)
			}
			if w := agg.window; w != nil && w.kind == "session" {
				// The session's start and end come last (planner).
				if in, err = b.addGroupWindow(agg, w, in); err != nil {
					return nil, err
				}
			}
		}
		c = &ectx{sc: sc, agg: agg}
	}
	var win *winState
	hasWin := false
	for _, it := range items {
		hasWin = hasWin || it.node != nil && containsWindow(it.node)
	}
	if s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			hasWin = hasWin || containsWindow(o.Expr)
		}
	}
	if hasWin {
		win = &winState{named: named}
		wc := *c
		wc.win = win
		c = &wc
	}
	for i := range items {
		it := &items[i]
		var err error
		if it.node == nil {
			it.e, err = b.bindStarCol(c, it.col)
		} else {
			it.e, err = b.bindExpr(c, it.node)
		}
		if err != nil {
			return nil, err
		}
		if !keepUnknown {
			if it.e, err = b.coerce(it.e, types.TText); err != nil {
				return nil, err
			}
		}
	}
	var having expr.Expr
	if s.Having != nil {
		var err error
		hc := *c
		hc.win, hc.noWin = nil, "window functions are not allowed in HAVING"
		if having, err = b.bindBool(&hc, s.Having.Expr, "HAVING"); err != nil {
			return nil, err
		}
	}
	if err := b.checkNamedWindows(c, s.WindowSpecs); err != nil {
		return nil, err
	}
	exprs := make([]expr.Expr, len(items))
	cols := make([]planner.Column, len(items))
	for i, it := range items {
		exprs[i] = it.e
		cols[i] = planner.Column{Name: it.name, T: it.e.Type()}
	}

	// ORDER BY terms resolve to select-list columns or become hidden ones.
	var keys []planner.SortKey
	if s.OrderBy != nil {
		for _, o := range s.OrderBy.Items {
			oe, nullsFirst := nullsOrder(o)
			idx, err := b.orderTarget(c, items, oe)
			if err != nil {
				return nil, err
			}
			if idx < 0 {
				if s.Distinct {
					return nil, sqlerr.New("42P10", "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
				}
				e, err := b.bindExpr(c, oe)
				if err != nil {
					return nil, err
				}
				if e, err = b.coerce(e, types.TText); err != nil {
					return nil, err
				}
				idx = indexOfExpr(exprs, e)
				if idx < 0 {
					idx = len(exprs)
					exprs = append(exprs, e)
					cols = append(cols, planner.Column{Name: "?column?", T: e.Type()})
				}
			}
			keys = append(keys, sortKey(idx, cols[idx], o.Desc, nullsFirst))
		}
	}

	if c.agg != nil {
		if err := noRecordKeys(c.agg.group); err != nil {
			return nil, err
		}
		a := &planner.Aggregate{Input: in, GroupBy: c.agg.group, Aggs: c.agg.aggs, Cols: c.agg.columns()}
		if w := c.agg.window; w != nil && w.kind == "session" {
			a.Window = &planner.Window{Kind: "session", TimeOf: w.ts, Gap: w.gap}
		}
		in = a
		if having != nil {
			in = &planner.Filter{Input: in, Pred: having}
		}
	}
	if win != nil && len(win.calls) > 0 {
		in, exprs = placeWindows(win, in, exprs)
	} else if c.agg == nil {
		// HOP(table, ...) in FROM: its window columns come from a Hop.
		if in, exprs, err = hopTVF(in, exprs); err != nil {
			return nil, err
		}
	}
	var out planner.Node = &planner.Project{Input: in, Exprs: exprs, Cols: cols}
	if s.Distinct {
		if out, err = distinct(out); err != nil {
			return nil, err
		}
	}
	if len(keys) > 0 {
		if err := sortable(keys); err != nil {
			return nil, err
		}
		out = &planner.Sort{Input: out, Keys: keys}
	}
	if len(exprs) > len(items) {
		out = trim(out, len(items))
	}
	return b.bindLimit(out, s.Limit)
}

// starCols lists the columns * (table "") or table.* expands to.
func starCols(sc *scope, table string) ([]int, error) {
	if table == "" {
		if len(sc.star) == 0 {
			return nil, sqlerr.New(sqlerr.SyntaxError, "SELECT * with no tables specified is not valid")
		}
		return sc.star, nil
	}
	var out []int
	for i, c := range sc.cols {
		if c.Table == table {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", table)
	}
	return out, nil
}

// bindStarCol binds input column i as a select-list item.
func (b *Binder) bindStarCol(c *ectx, i int) (expr.Expr, error) {
	col := c.sc.cols[i].Column
	e := &expr.ColRef{Idx: i, T: col.T, Name: qualName(col)}
	if c.agg == nil {
		return e, nil
	}
	key := e.String()
	for g, k := range c.agg.groupKey {
		if k == key {
			return &expr.ColRef{Idx: g, T: col.T, Name: k}, nil
		}
	}
	return nil, sqlerr.New(sqlerr.GroupingError,
		"column %q must appear in the GROUP BY clause or be used in an aggregate function", qualName(col))
}

// bindGroupItem binds one GROUP BY term with PostgreSQL's rules: an integer
// is a select-list position; a bare name is an input column if there is one,
// else a select-list alias; anything else is an expression over the input.
func (b *Binder) bindGroupItem(c *ectx, items []selItem, n ast.ExprNode) (expr.Expr, error) {
	const noAgg = "aggregate functions are not allowed in GROUP BY"
	in := c.inputCtx(noAgg)
	bindItem := func(it selItem) (expr.Expr, error) {
		if it.node == nil {
			col := c.sc.cols[it.col].Column
			return &expr.ColRef{Idx: it.col, T: col.T, Name: qualName(col)}, nil
		}
		if containsAgg(it.node) {
			return nil, sqlerr.New(sqlerr.GroupingError, noAgg)
		}
		e, err := b.bindExpr(in, it.node)
		if err != nil {
			return nil, err
		}
		return b.coerce(e, types.TText)
	}
	if pos, ok, err := position(n, len(items), "GROUP BY"); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return bindItem(items[pos])
	}
	if cn, ok := n.(*ast.ColumnNameExpr); ok && cn.Name.Table.O == "" {
		if _, err := c.sc.resolve("", cn.Name.Name.O); err != nil && sqlerr.Code(err) == sqlerr.UndefinedColumn {
			for _, it := range items {
				if it.name == cn.Name.Name.O {
					return bindItem(it)
				}
			}
		}
	}
	e, err := b.bindExpr(in, n)
	if err != nil {
		return nil, err
	}
	return b.coerce(e, types.TText)
}

// position reads an integer constant (or TiDB's PositionExpr) as a 1-based
// select-list position; ok is false for other expressions.
func position(n ast.ExprNode, count int, clause string) (int, bool, error) {
	var pos int64
	switch x := n.(type) {
	case *ast.PositionExpr:
		if x.P != nil {
			return 0, false, sqlerr.New(sqlerr.FeatureNotSupported, "%s position parameters are not supported", clause)
		}
		pos = int64(x.N)
	case ast.ValueExpr:
		switch v := x.GetValue().(type) {
		case int64:
			pos = v
		case uint64:
			pos = int64(min(v, math.MaxInt32))
		default:
			return 0, false, nil
		}
	default:
		return 0, false, nil
	}
	if pos < 1 || pos > int64(count) {
		return 0, false, sqlerr.New("42P10", "%s position %d is not in select list", clause, pos)
	}
	return int(pos - 1), true, nil
}

// orderTarget resolves an ORDER BY term naming a select-list column (by
// position or output name); -1 means it is an expression over the input.
func (b *Binder) orderTarget(c *ectx, items []selItem, n ast.ExprNode) (int, error) {
	if pos, ok, err := position(n, len(items), "ORDER BY"); ok || err != nil {
		return pos, err
	}
	cn, ok := n.(*ast.ColumnNameExpr)
	if !ok || cn.Name.Table.O != "" {
		return -1, nil
	}
	found := -1
	for i, it := range items {
		if it.name != cn.Name.Name.O {
			continue
		}
		if found >= 0 && items[found].e.String() != it.e.String() {
			return 0, sqlerr.New(sqlerr.AmbiguousColumn, "ORDER BY %q is ambiguous", cn.Name.Name.O)
		}
		if found < 0 {
			found = i
		}
	}
	return found, nil
}

func indexOfExpr(es []expr.Expr, e expr.Expr) int {
	key := e.String()
	for i, x := range es {
		if x.String() == key && x.Type() == e.Type() {
			return i
		}
	}
	return -1
}

// sortKey orders by column idx.
func sortKey(idx int, col planner.Column, desc, nullsFirst bool) planner.SortKey {
	return planner.SortKey{E: &expr.ColRef{Idx: idx, T: col.T, Name: col.Name}, Desc: desc, NullsFirst: nullsFirst}
}

// nullsOrder returns the sort expression of an ORDER BY item and where its
// NULLs go: as the item's NULLS FIRST/LAST says (the dialect layer wraps the
// expression in pg_nulls_first/pg_nulls_last), else PostgreSQL's default,
// NULLs larger than any value (last ascending, first descending).
func nullsOrder(o *ast.ByItem) (ast.ExprNode, bool) {
	if f, ok := o.Expr.(*ast.FuncCallExpr); ok && len(f.Args) == 1 {
		switch f.FnName.L {
		case "pg_nulls_first":
			return f.Args[0], true
		case "pg_nulls_last":
			return f.Args[0], false
		}
	}
	return o.Expr, o.Desc
}

// distinct is SELECT DISTINCT: an Aggregate grouping by every column.
func distinct(in planner.Node) (planner.Node, error) {
	cols := in.Schema()
	group := make([]expr.Expr, len(cols))
	for i, c := range cols {
		group[i] = &expr.ColRef{Idx: i, T: c.T, Name: c.Name}
	}
	if err := noRecordKeys(group); err != nil {
		return nil, err
	}
	return &planner.Aggregate{Input: in, GroupBy: group, Cols: cols}, nil
}

// noRecordKeys refuses keys that have no equality: json. (Records group by
// their text key, planner.textKeys.)
func noRecordKeys(keys []expr.Expr) error {
	for _, k := range keys {
		switch k.Type().Kind {
		case types.JSON: // PostgreSQL's json has no = (jsonb has)
			return sqlerr.New(sqlerr.UndefinedFunction, "could not identify an equality operator for type json")
		}
	}
	return nil
}

// trim keeps the first n columns of in.
func trim(in planner.Node, n int) planner.Node {
	cols := in.Schema()[:n]
	exprs := make([]expr.Expr, n)
	for i, c := range cols {
		exprs[i] = &expr.ColRef{Idx: i, T: c.T, Name: c.Name}
	}
	return &planner.Project{Input: in, Exprs: exprs, Cols: cols}
}

func (b *Binder) bindLimit(in planner.Node, l *ast.Limit) (planner.Node, error) {
	if l == nil {
		return in, nil
	}
	out := &planner.Limit{Input: in, Count: -1}
	var err error
	if l.Count != nil {
		if out.Count, err = b.limitValue(l.Count, "LIMIT", "2201W"); err != nil {
			return nil, err
		}
		if out.Count == math.MaxInt64 { // LIMIT ALL (see parse's limitClause)
			out.Count = -1
		}
	}
	if l.Offset != nil {
		if out.Offset, err = b.limitValue(l.Offset, "OFFSET", "2201X"); err != nil {
			return nil, err
		}
	}
	if out.Count < 0 && out.Offset == 0 {
		return in, nil
	}
	return out, nil
}

// limitValue reads a LIMIT or OFFSET value. The dialect layer writes a
// negative value as its two's complement (TiDB takes only unsigned
// numbers there), so anything above MaxInt64 is negative: negCode's error.
func (b *Binder) limitValue(n ast.ExprNode, what, negCode string) (int64, error) {
	if pm, ok := n.(*test_driver.ParamMarkerExpr); ok {
		return b.limitParam(pm, what, negCode)
	}
	if v, ok := n.(ast.ValueExpr); ok {
		var x int64
		switch u := v.GetValue().(type) {
		case int64:
			x = u
		case uint64:
			x = int64(u)
		default:
			return 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s must be an integer constant", what)
		}
		if x < 0 {
			return 0, sqlerr.New(negCode, "%s must not be negative", what)
		}
		return x, nil
	}
	return 0, sqlerr.New(sqlerr.FeatureNotSupported, "%s must be an integer constant", what)
}

// limitParam reads LIMIT $n or OFFSET $n: the parameter is a bigint; its
// value is known when the statement executes. Described only, the clause
// is no limit. NULL is no limit (LIMIT) or 0 (OFFSET), as in PostgreSQL.
func (b *Binder) limitParam(pm *test_driver.ParamMarkerExpr, what, negCode string) (int64, error) {
	idx, ok := b.LimitParams[pm.Offset]
	if !ok {
		return 0, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \"?\"")
	}
	p := b.param(idx)
	if p.Type().Kind == types.Unknown {
		b.Params[idx] = types.TInt64
	} else if k := p.Type().Kind; k != types.Int64 && k != types.Int32 && k != types.Int16 {
		return 0, sqlerr.New(sqlerr.DatatypeMismatch, "argument of %s must be type bigint, not type %s", what, p.Type())
	}
	noValue := int64(0)
	if what == "LIMIT" {
		noValue = math.MaxInt64
	}
	if b.ParamValues != nil && idx >= len(b.ParamValues) {
		return 0, sqlerr.New(sqlerr.UndefinedParameter, "there is no parameter $%d", idx+1)
	}
	if b.ParamValues == nil || b.ParamValues[idx].Null {
		return noValue, nil
	}
	x := b.ParamValues[idx].I
	if x < 0 {
		return 0, sqlerr.New(negCode, "%s must not be negative", what)
	}
	return x, nil
}

// bindSetOpr binds UNION [ALL] chains; INTERSECT and EXCEPT are not supported.
func (b *Binder) bindSetOpr(list *ast.SetOprSelectList, order *ast.OrderByClause, limit *ast.Limit) (planner.Node, error) {
	var acc planner.Node
	for i, sel := range list.Selects {
		var op *ast.SetOprType
		switch s := sel.(type) {
		case *ast.SelectStmt:
			op = s.AfterSetOperator
		case *ast.SetOprSelectList:
			op = s.AfterSetOperator
		}
		p, err := b.bindResultSet(sel, true)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			acc = p
			continue
		}
		if op == nil || *op != ast.Union && *op != ast.UnionAll {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "INTERSECT and EXCEPT are not supported")
		}
		if acc, err = b.union(acc, p, *op == ast.UnionAll); err != nil {
			return nil, err
		}
	}
	// A single parenthesized query, or the unified result, gets text for
	// any column still untyped.
	cols := acc.Schema()
	for i, c := range cols {
		if c.T.Kind == types.Unknown {
			var err error
			if acc, err = b.retype(acc, i, types.TText); err != nil {
				return nil, err
			}
		}
	}
	if order != nil {
		cols = acc.Schema()
		items := make([]selItem, len(cols))
		for i, c := range cols {
			items[i] = selItem{name: c.Name, e: &expr.ColRef{Idx: i, T: c.T, Name: c.Name}}
		}
		var keys []planner.SortKey
		for _, o := range order.Items {
			oe, nullsFirst := nullsOrder(o)
			idx, err := b.orderTarget(nil, items, oe)
			if err != nil {
				return nil, err
			}
			if idx < 0 {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported,
					"invalid UNION/INTERSECT/EXCEPT ORDER BY clause: only result column names can be used")
			}
			keys = append(keys, sortKey(idx, cols[idx], o.Desc, nullsFirst))
		}
		if err := sortable(keys); err != nil {
			return nil, err
		}
		acc = &planner.Sort{Input: acc, Keys: keys}
	}
	return b.bindLimit(acc, limit)
}

// union combines two inputs, unifying column types.
func (b *Binder) union(l, r planner.Node, all bool) (planner.Node, error) {
	lc, rc := l.Schema(), r.Schema()
	if len(lc) != len(rc) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "each UNION query must have the same number of columns")
	}
	var err error
	for i := range lc {
		t, ok := commonType(lc[i].T, rc[i].T)
		if !ok {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "UNION types %s and %s cannot be matched", typeName(lc[i].T), typeName(rc[i].T))
		}
		if t.Kind == types.Unknown {
			t = types.TText
		}
		if l, err = b.retype(l, i, t); err != nil {
			return nil, err
		}
		if r, err = b.retype(r, i, t); err != nil {
			return nil, err
		}
	}
	cols := l.Schema()
	var inputs []planner.Node
	for _, n := range []planner.Node{l, r} {
		if u, ok := n.(*planner.UnionAll); ok && n == l { // UNION ALL is associative
			inputs = append(inputs, u.Inputs...)
		} else {
			inputs = append(inputs, n)
		}
	}
	var out planner.Node = &planner.UnionAll{Inputs: inputs, Cols: cols}
	if !all {
		return distinct(out)
	}
	return out, nil
}

// retype makes column i of n have type t: a top Project converts the
// expression itself (so literals fold); anything else gets a casting
// Project on top.
func (b *Binder) retype(n planner.Node, i int, t types.T) (planner.Node, error) {
	cols := n.Schema()
	if cols[i].T == t {
		return n, nil
	}
	var exprs []expr.Expr
	var input planner.Node
	if p, ok := n.(*planner.Project); ok {
		exprs, input = append([]expr.Expr(nil), p.Exprs...), p.Input
	} else {
		exprs, input = make([]expr.Expr, len(cols)), n
		for j, c := range cols {
			exprs[j] = &expr.ColRef{Idx: j, T: c.T, Name: c.Name}
		}
	}
	e, err := b.castTo(exprs[i], t)
	if err != nil {
		return nil, err
	}
	out := append([]planner.Column(nil), cols...)
	exprs[i], out[i].T = e, t
	return &planner.Project{Input: input, Exprs: exprs, Cols: out}, nil
}

// bindFrom binds a FROM clause (a tree of joins).
func (b *Binder) bindFrom(n ast.ResultSetNode) (planner.Node, *scope, error) {
	switch n := n.(type) {
	case *ast.Join:
		return b.bindJoin(n)
	case *ast.TableSource:
		return b.bindTableSource(n)
	}
	return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "FROM items of this kind are not supported")
}

func (b *Binder) bindTableSource(ts *ast.TableSource) (planner.Node, *scope, error) {
	// "AS x(a, b)" arrives as one alias with the column names after
	// parse.AliasColumnSep.
	alias, names, _ := strings.Cut(ts.AsName.O, parse.AliasColumnSep)
	switch src := ts.Source.(type) {
	case *ast.TableName:
		if def, ok := b.plainView(src); ok {
			p, cols, err := b.bindPlainView(def, src, alias)
			if err != nil {
				return nil, nil, err
			}
			if err := renameColumns(alias, cols, names); err != nil {
				return nil, nil, err
			}
			return p, newScope(cols), nil
		}
		node, sc, err := b.bindTable(src, alias)
		if err != nil || names == "" {
			return node, sc, err
		}
		scan := node.(*planner.Scan)
		if err := renameColumns(alias, scan.Cols, names); err != nil {
			return nil, nil, err
		}
		return scan, newScope(scan.Cols), nil
	case *ast.SelectStmt, *ast.SetOprStmt:
		if f := srfCall(src); f != nil {
			return b.bindSRF(f, alias, names)
		}
		// Without an alias (PostgreSQL 16, Flink, RisingWave) the
		// subquery's columns have no table name: they resolve unqualified
		// only, and no made-up name reaches plans, output or errors.
		prev, prevLat := b.outer, b.lateral // a subquery in FROM does not see the enclosing query (no LATERAL)
		b.outer, b.lateral = nil, nil
		p, err := b.bindResultSet(src, false)
		b.outer, b.lateral = prev, prevLat
		if err != nil {
			return nil, nil, err
		}
		cols := append([]planner.Column(nil), p.Schema()...)
		if err := renameColumns(alias, cols, names); err != nil {
			return nil, nil, err
		}
		for i := range cols {
			cols[i].Table = alias
		}
		return p, newScope(cols), nil
	case *ast.Join:
		return b.bindJoin(src)
	}
	return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "FROM items of this kind are not supported")
}

// renameColumns gives the first columns of a FROM item the names of its
// alias ("AS t(a, b)": names holds them, parse.AliasColumnSep between).
func renameColumns(alias string, cols []planner.Column, names string) error {
	if names == "" {
		return nil
	}
	list := strings.Split(names, parse.AliasColumnSep)
	if len(list) > len(cols) {
		return sqlerr.New(sqlerr.InvalidColumnReference, "table %q has %d columns available but %d columns specified", alias, len(cols), len(list))
	}
	for i, n := range list {
		cols[i].Name = n
	}
	return nil
}

func (b *Binder) bindTable(tn *ast.TableName, alias string) (planner.Node, *scope, error) {
	def, err := b.lookupTable(tn)
	if err != nil {
		return nil, nil, err
	}
	if alias == "" {
		alias = def.Name
	}
	scan := &planner.Scan{Table: def, Alias: alias}
	for _, c := range def.Columns {
		scan.Cols = append(scan.Cols, planner.Column{Name: c.Name, T: c.Type, Table: alias})
	}
	if tn.AsOf != nil {
		asOf, err := asOfClause(tn.AsOf.TsExpr)
		if err != nil {
			return nil, nil, err
		}
		if def.Kind != storage.KindView {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "AS OF is only supported for materialized views; %q is a table", def.Name)
		}
		scan.AsOf = asOf
	}
	return scan, newScope(scan.Cols), nil
}

// asOfClause reads AS OF TIMESTAMP pg_asof_savepoint('sp') / pg_asof_checkpoint(42).
func asOfClause(n ast.ExprNode) (planner.AsOf, error) {
	var out planner.AsOf
	f, ok := n.(*ast.FuncCallExpr)
	if ok && len(f.Args) == 1 {
		if v, isVal := f.Args[0].(ast.ValueExpr); isVal {
			switch x := v.GetValue().(type) {
			case string:
				if f.FnName.L == "pg_asof_savepoint" {
					out.Savepoint = x // folded by the dialect layer unless quoted
					return out, nil
				}
			case int64:
				if f.FnName.L == "pg_asof_checkpoint" && x > 0 {
					out.Checkpoint = uint64(x)
					return out, nil
				}
			case uint64:
				if f.FnName.L == "pg_asof_checkpoint" && x > 0 {
					out.Checkpoint = x
					return out, nil
				}
			}
		}
	}
	return out, sqlerr.New(sqlerr.FeatureNotSupported, "AS OF needs SAVEPOINT name or CHECKPOINT id")
}

// bindJoin binds a join tree; a Join with no Right is a single FROM item.
func (b *Binder) bindJoin(j *ast.Join) (planner.Node, *scope, error) {
	if j.Right == nil {
		return b.bindFrom(j.Left)
	}
	if isAsofJoin(j) {
		return b.bindAsofJoin(j) // asof.go
	}
	if isLookupJoin(j) {
		return b.bindLookupJoin(j) // lookup.go
	}
	if isVersionedJoin(j) {
		return b.bindVersionedJoin(j) // versioned.go
	}
	// The dialect layer writes FULL [OUTER] JOIN ... ON as TiDB's
	// STRAIGHT_JOIN ... ON, which PostgreSQL has no use for otherwise.
	full := j.StraightJoin
	left, ls, err := b.bindFrom(j.Left)
	if err != nil {
		return nil, nil, err
	}
	if n, sc, ok, err := b.bindLateralUnnest(j, left, ls); ok || err != nil {
		return n, sc, err // srfjoin.go
	}
	right, rs, err := b.bindFrom(j.Right)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range ls.cols {
		if l.Table != "" && rs.hasTable(l.Table) {
			return nil, nil, sqlerr.New("42712", "table name %q specified more than once", l.Table)
		}
	}
	rightJoin := j.Tp == ast.RightJoin
	if rightJoin {
		// Bound as a LEFT JOIN with the inputs swapped; a Project restores
		// the column order below.
		left, right, ls, rs = right, left, rs, ls
	}
	kind := planner.InnerJoin
	outer := j.Tp == ast.LeftJoin || j.Tp == ast.RightJoin || full
	if outer {
		kind = planner.LeftJoin
	}
	if full {
		kind = planner.FullJoin
	}

	sc := &scope{}
	sc.cols = append(append(sc.cols, ls.cols...), rs.cols...)
	nl := len(ls.cols)

	var on expr.Expr
	using := make([]string, 0, len(j.Using))
	for _, u := range j.Using {
		using = append(using, u.Name.O)
	}
	if j.NaturalJoin {
		for _, i := range ls.star {
			name := ls.cols[i].Name
			if _, err := rs.resolve("", name); err == nil {
				using = append(using, name)
			}
		}
	}
	var merged []int // internal left index of each USING column
	for _, name := range using {
		li, err := ls.resolve("", name)
		if err != nil {
			return nil, nil, usingErr(err, name, rightJoin)
		}
		ri, err := rs.resolve("", name)
		if err != nil {
			return nil, nil, usingErr(err, name, !rightJoin)
		}
		l := &expr.ColRef{Idx: li, T: ls.cols[li].T, Name: qualName(ls.cols[li].Column)}
		r := &expr.ColRef{Idx: nl + ri, T: rs.cols[ri].T, Name: qualName(rs.cols[ri].Column)}
		eq, err := b.compareOp("=", l, r)
		if err != nil {
			return nil, nil, err
		}
		on = andExpr(on, eq)
		sc.cols[nl+ri].usingHidden = true
		merged = append(merged, li)
	}
	if j.On != nil {
		pred, err := b.bindBool(&ectx{sc: sc, noAgg: "aggregate functions are not allowed in JOIN conditions",
			noWin: "window functions are not allowed in JOIN conditions"}, j.On.Expr, "JOIN/ON")
		if err != nil {
			return nil, nil, err
		}
		on = andExpr(on, pred)
	}
	if on == nil && outer && !j.NaturalJoin {
		return nil, nil, sqlerr.New(sqlerr.SyntaxError, "syntax error: outer join needs ON or USING")
	}
	var out planner.Node = &planner.Join{Left: left, Right: right, Kind: kind, On: on, Cols: sc.planCols()}
	// SELECT * shows the merged USING columns first, then the rest of the
	// left side, then the rest of the right side (sides as written).
	lstar, rstar, loff, roff := ls.star, rs.star, 0, nl
	if rightJoin {
		out = swapBack(out, sc, nl)
		lstar, rstar, loff, roff = rs.star, ls.star, 0, len(rs.cols)
		for i := range merged {
			merged[i] += len(rs.cols)
		}
	}
	isMerged := map[int]bool{}
	sc.star = append([]int(nil), merged...)
	for _, i := range merged {
		isMerged[i] = true
	}
	for _, i := range lstar {
		if i += loff; !isMerged[i] && !sc.cols[i].usingHidden {
			sc.star = append(sc.star, i)
		}
	}
	for _, i := range rstar {
		if i += roff; !isMerged[i] && !sc.cols[i].usingHidden {
			sc.star = append(sc.star, i)
		}
	}
	return out, sc, nil
}

func usingErr(err error, name string, right bool) error {
	side := "left"
	if right {
		side = "right"
	}
	if sqlerr.Code(err) == sqlerr.UndefinedColumn {
		return sqlerr.New(sqlerr.UndefinedColumn, "column %q specified in USING clause does not exist in %s table", name, side)
	}
	return err
}

// swapBack turns the output of a RIGHT JOIN bound as a LEFT JOIN of the
// swapped inputs (nr right-side columns first) back into left-then-right
// order, reordering sc in place to match.
func swapBack(n planner.Node, sc *scope, nr int) planner.Node {
	total := len(sc.cols)
	cols := make([]scopeCol, 0, total)
	cols = append(append(cols, sc.cols[nr:]...), sc.cols[:nr]...)
	exprs := make([]expr.Expr, total)
	for i := range cols {
		old := (i + nr) % total
		exprs[i] = &expr.ColRef{Idx: old, T: cols[i].T, Name: qualName(cols[i].Column)}
	}
	sc.cols = cols
	return &planner.Project{Input: n, Exprs: exprs, Cols: sc.planCols()}
}

func andExpr(a, b expr.Expr) expr.Expr {
	if a == nil {
		return b
	}
	return call("and", types.TBool, a, b)
}
