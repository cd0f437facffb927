package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// ASOF joins (the dialect layer marks them, sql/parse asof.go):
//
//	l ASOF [LEFT] JOIN r ON l.k = r.k [AND ...] AND l.ts >= r.ts
//
// match each row of l with the rows of r that have equal keys and, among
// those the inequality accepts, the greatest r.ts (>=, >) or the least
// (<=, <). Ties count: every right row at that ts matches (an equi-join on
// the best ts), so the result does not depend on arrival order. A left row
// without a match is dropped (ASOF JOIN) or padded with NULLs (ASOF LEFT
// JOIN).
//
// It is bound as plain operators, so batch queries and views run it with
// the join and top-N machinery they already have, incrementally and with
// its checkpointed state:
//
//	Project (l's and r's columns)
//	  Filter rank = 1
//	    WindowAgg rank() OVER (PARTITION BY every column of l ORDER BY r.ts DESC|ASC)
//	      Join [Left] ON the equalities AND the inequality
//
// Partitioning by every left column keeps duplicate left rows apart only
// in count: n equal left rows with m tied best partners are n*m rows of
// rank 1, as the definition above gives. A new right row that becomes a
// left row's better match changes its partition's ranks: the rank node
// retracts the old pair and emits the new one; a deleted right row brings
// the next best back.

// isAsofMarker reports whether n is the marker call.
func isAsofMarker(n ast.Node) bool {
	f, ok := n.(*ast.FuncCallExpr)
	return ok && f.FnName.L == parse.AsofMarker && len(f.Args) == 0
}

// isAsofJoin reports whether the dialect layer marked j as an ASOF join.
func isAsofJoin(j *ast.Join) bool {
	return j.Right != nil && j.On != nil && contains(j.On.Expr, isAsofMarker)
}

// andConjuncts flattens the top-level ANDs of n (parentheses included).
func andConjuncts(n ast.ExprNode, out []ast.ExprNode) []ast.ExprNode {
	switch x := n.(type) {
	case *ast.ParenthesesExpr:
		return andConjuncts(x.Expr, out)
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.LogicAnd {
			return andConjuncts(x.R, andConjuncts(x.L, out))
		}
	}
	return append(out, n)
}

// errAsofOn is the error for an ON condition an ASOF join cannot take.
func errAsofOn(what string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"ASOF JOIN's ON condition must be equalities between the two sides AND exactly one inequality (>=, >, <=, <) between them: %s", what)
}

// bindAsofJoin binds an ASOF join (see above).
func (b *Binder) bindAsofJoin(j *ast.Join) (planner.Node, *scope, error) {
	kind := planner.InnerJoin
	switch {
	case j.StraightJoin || j.Tp == ast.RightJoin:
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "ASOF RIGHT and FULL joins are not supported")
	case j.NaturalJoin || len(j.Using) > 0:
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "ASOF JOIN ... USING is not supported; write ASOF JOIN ... ON")
	case j.Tp == ast.LeftJoin:
		kind = planner.LeftJoin
	}
	left, ls, err := b.bindFrom(j.Left)
	if err != nil {
		return nil, nil, err
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
	nl, nr := len(ls.cols), len(rs.cols)
	sc := &scope{}
	sc.cols = append(append(sc.cols, ls.cols...), rs.cols...)
	sc.star = append(sc.star, ls.star...)
	for _, i := range rs.star {
		sc.star = append(sc.star, nl+i)
	}

	c := &ectx{sc: sc, noAgg: "aggregate functions are not allowed in JOIN conditions",
		noWin: "window functions are not allowed in JOIN conditions"}
	var on, order expr.Expr
	desc, marker := false, false
	for _, cj := range andConjuncts(j.On.Expr, nil) {
		if isAsofMarker(cj) {
			marker = true
			continue
		}
		for {
			p, ok := cj.(*ast.ParenthesesExpr)
			if !ok {
				break
			}
			cj = p.Expr
		}
		bin, ok := cj.(*ast.BinaryOperationExpr)
		if !ok || contains(cj, isAsofMarker) {
			return nil, nil, errAsofOn("found another condition")
		}
		op, ok := map[opcode.Op]string{opcode.EQ: "=", opcode.GE: ">=", opcode.GT: ">", opcode.LE: "<=", opcode.LT: "<"}[bin.Op]
		if !ok {
			return nil, nil, errAsofOn("found another condition")
		}
		l, r, err := b.bindPair(c, bin.L, bin.R)
		if err != nil {
			return nil, nil, err
		}
		ls, rsd := exprSide(l, nl, nr), exprSide(r, nl, nr)
		switch {
		case ls == sideL && rsd == sideR:
		case ls == sideR && rsd == sideL:
			l, r = r, l
			op = map[string]string{"=": "=", ">=": "<=", ">": "<", "<=": ">=", "<": ">"}[op]
		default:
			return nil, nil, errAsofOn("each side of a condition must read the columns of one side of the join")
		}
		cmp, err := b.compareOp(op, l, r)
		if err != nil {
			return nil, nil, err
		}
		if op != "=" {
			if order != nil {
				return nil, nil, errAsofOn("found more than one inequality")
			}
			order, desc = r, op == ">=" || op == ">"
		}
		on = andExpr(on, cmp)
	}
	if !marker {
		return nil, nil, errAsofOn("found OR")
	}
	if order == nil {
		return nil, nil, errAsofOn("found no inequality")
	}

	cols := sc.planCols()
	join := &planner.Join{Left: left, Right: right, Kind: kind, On: on, Cols: cols}
	win := &planner.WindowAgg{Input: join, OrderBy: []planner.SortKey{{E: order, Desc: desc, NullsFirst: false}},
		Funcs: []planner.WinFunc{{Kind: planner.WinRank, T: types.TInt64}}}
	for i := 0; i < nl; i++ {
		win.PartitionBy = append(win.PartitionBy, &expr.ColRef{Idx: i, T: cols[i].T, Name: qualName(cols[i])})
	}
	win.Cols = append(append([]planner.Column(nil), cols...), planner.Column{Name: "asof_rank", T: types.TInt64})
	rank := &expr.ColRef{Idx: nl + nr, T: types.TInt64, Name: "asof_rank"}
	first, err := b.compareOp("=", rank, &expr.Const{D: types.Int(1), T: types.TInt64})
	if err != nil {
		return nil, nil, err
	}
	proj := &planner.Project{Input: &planner.Filter{Input: win, Pred: first}, Cols: cols}
	for i, col := range cols {
		proj.Exprs = append(proj.Exprs, &expr.ColRef{Idx: i, T: col.T, Name: qualName(col)})
	}
	return proj, sc, nil
}

const (
	sideNone = iota
	sideL
	sideR
	sideBoth
)

// exprSide tells which side of a join of nl left and nr right columns e
// reads: sideNone for neither (a constant), sideBoth for both or for a
// column of an enclosing query.
func exprSide(e expr.Expr, nl, nr int) int {
	used := map[int]bool{}
	colRefsOf(e, used)
	s := sideNone
	for i := range used {
		switch {
		case i >= 0 && i < nl && (s == sideNone || s == sideL):
			s = sideL
		case i >= nl && i < nl+nr && (s == sideNone || s == sideR):
			s = sideR
		default:
			return sideBoth
		}
	}
	return s
}
