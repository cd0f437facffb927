package planner

import "github.com/streamdb/streamdb/exec/expr"

// impliedEqualities returns the column equalities (columnEquality) that
// every arm of the disjunction c has among its conjuncts, so c implies
// them: (o.k = l.k AND x) OR (o.k = l.k AND y) implies o.k = l.k (TPC-H
// q19's shape). PostgreSQL factors such terms out of an OR
// (process_duplicate_ors); here they are added beside it, as join keys,
// and the OR stays as it is. Adding an implied condition to a WHERE keeps
// its rows: where it is false or NULL, so is every arm.
func impliedEqualities(c expr.Expr) []expr.Expr {
	arms := disjuncts(c)
	if len(arms) < 2 {
		return nil
	}
	var common []expr.Expr
	for _, e := range conjuncts(arms[0]) {
		if _, _, ok := columnEquality(e); ok {
			common = append(common, e)
		}
	}
	for _, arm := range arms[1:] {
		cs := conjuncts(arm)
		kept := common[:0:0]
		for _, e := range common {
			for _, a := range cs {
				if sameEquality(e, a) {
					kept = append(kept, e)
					break
				}
			}
		}
		common = kept
	}
	return common
}

func disjuncts(e expr.Expr) []expr.Expr {
	if f, ok := e.(*expr.Func); ok && f.Name == "or" && len(f.Args) == 2 {
		return append(disjuncts(f.Args[0]), disjuncts(f.Args[1])...)
	}
	return []expr.Expr{e}
}

// sameEquality reports whether a and b are the same x = y, either way round.
func sameEquality(a, b expr.Expr) bool {
	fa, ok1 := a.(*expr.Func)
	fb, ok2 := b.(*expr.Func)
	if !ok1 || !ok2 || fa.Name != "=" || fb.Name != "=" || len(fa.Args) != 2 || len(fb.Args) != 2 {
		return false
	}
	return sameExpr(fa.Args[0], fb.Args[0]) && sameExpr(fa.Args[1], fb.Args[1]) ||
		sameExpr(fa.Args[0], fb.Args[1]) && sameExpr(fa.Args[1], fb.Args[0])
}

// sameExpr reports whether a and b are the same expression over the same
// columns (false when unsure: CASE and IN lists are not compared).
func sameExpr(a, b expr.Expr) bool {
	switch a := a.(type) {
	case *expr.ColRef:
		b, ok := b.(*expr.ColRef)
		return ok && a.Idx == b.Idx && a.T == b.T
	case *expr.Const:
		b, ok := b.(*expr.Const)
		return ok && a.T == b.T && a.D == b.D
	case *expr.Param:
		b, ok := b.(*expr.Param)
		return ok && *a == *b
	case *expr.Cast:
		b, ok := b.(*expr.Cast)
		return ok && a.T == b.T && sameExpr(a.E, b.E)
	case *expr.Func:
		b, ok := b.(*expr.Func)
		if !ok || a.Name != b.Name || a.T != b.T || len(a.Args) != len(b.Args) {
			return false
		}
		for i := range a.Args {
			if !sameExpr(a.Args[i], b.Args[i]) {
				return false
			}
		}
		return true
	}
	return false
}
