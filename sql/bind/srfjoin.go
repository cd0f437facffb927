package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// unnest of a column of an earlier FROM item: FROM t, unnest(t.a) AS u(x)
// (PostgreSQL's implicit LATERAL for a function in FROM). The join binds
// to a LateralFuncScan over the left side: each left row followed by each
// element of its array, no row for a NULL or empty array, as the cross
// join with a lateral function gives. It is stateless, so a materialized
// view runs it as a stage beside filters and projections (a retracted row
// retracts its elements). Only unnest with one argument, joined by a comma,
// CROSS JOIN or an inner JOIN ... ON (the condition filters the rows),
// reads the left side, and LEFT JOIN LATERAL ... ON true (a NULL element
// for a NULL or empty array; other LEFT conditions are 0A000); other functions keep
// binding as FROM items that see no other FROM item.

// bindLateralUnnest binds j as a LateralFuncScan when its right side is
// unnest(x) and x reads columns of left (scope ls); ok is false when it is
// not such a join (the caller binds it as any other).
func (b *Binder) bindLateralUnnest(j *ast.Join, left planner.Node, ls *scope) (planner.Node, *scope, bool, error) {
	ts, isTS := j.Right.(*ast.TableSource)
	if !isTS || len(j.Using) > 0 || j.NaturalJoin {
		return nil, nil, false, nil
	}
	f := srfCall(ts.Source)
	if f == nil || strings.TrimPrefix(f.FnName.L, "pg_srf_") != "unnest" || len(f.Args) != 1 {
		return nil, nil, false, nil
	}
	c := &ectx{sc: ls, noAgg: "aggregate functions are not allowed in functions in FROM", noWin: "window functions are not allowed in functions in FROM"}
	prevOuter := b.outer
	b.outer = nil
	refs := b.outerRefs
	arg, err := b.bindExpr(c, f.Args[0])
	b.outer = prevOuter
	if err != nil || b.outerRefs != refs {
		return nil, nil, false, nil // not over the left side: bound as a FROM item of its own
	}
	reads := false
	walkCols(arg, func(*expr.ColRef) { reads = true })
	if !reads {
		return nil, nil, false, nil
	}
	outer := j.Tp == ast.LeftJoin && !j.StraightJoin && j.On != nil
	if (j.Tp != ast.CrossJoin || j.StraightJoin) && !outer {
		return nil, nil, true, sqlerr.New(sqlerr.FeatureNotSupported,
			"unnest() over a column of another FROM item is supported only in a comma, CROSS or inner join, or LEFT JOIN LATERAL ... ON true")
	}
	args := []expr.Expr{arg}
	if _, err := b.srfArgs("unnest", args); err != nil {
		return nil, nil, true, err
	}
	t := types.ArrayElem(args[0].Type()) // the element type, as PostgreSQL's anyarray unnest
	alias, names, _ := strings.Cut(ts.AsName.O, parse.AliasColumnSep)
	col, err := srfColumn("unnest", t, alias, names)
	if err != nil {
		return nil, nil, true, err
	}
	for _, l := range ls.cols {
		if l.Table != "" && l.Table == col.Table {
			return nil, nil, true, sqlerr.New("42712", "table name %q specified more than once", l.Table)
		}
	}
	sc := &scope{}
	sc.cols = append(append(sc.cols, ls.cols...), scopeCol{Column: col})
	sc.star = append(append(sc.star, ls.star...), len(ls.cols))
	var pred expr.Expr
	if j.On != nil { // JOIN LATERAL unnest(t.a) AS x ON cond: the rows that pass cond
		if pred, err = b.bindBool(&ectx{sc: sc, noAgg: "aggregate functions are not allowed in JOIN conditions",
			noWin: "window functions are not allowed in JOIN conditions"}, j.On.Expr, "JOIN/ON"); err != nil {
			return nil, nil, true, err
		}
	}
	if outer && !isTrue(pred) {
		return nil, nil, true, sqlerr.New(sqlerr.FeatureNotSupported,
			"LEFT JOIN LATERAL unnest() is supported only with ON true")
	}
	var out planner.Node = &planner.LateralFuncScan{Input: left, Func: "unnest", Args: args, Col: col, Outer: outer}
	if pred != nil && !outer {
		out = &planner.Filter{Input: out, Pred: pred}
	}
	return out, sc, true, nil
}

// isTrue reports whether e is the constant TRUE (ON true).
func isTrue(e expr.Expr) bool {
	c, ok := e.(*expr.Const)
	return ok && c.T.Kind == types.Bool && !c.D.Null && c.D.I != 0
}
