package bind

import (
	"errors"
	"slices"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// errNeedsDomain says a correlated subquery's conditions cannot be split
// into equality keys (decorrelate): it is decorrelated over the domain of
// the outer values instead.
var errNeedsDomain = errors.New("correlated subquery needs its outer values' domain")

// decorrelateDomain decorrelates a subquery whose conditions on the outer
// query are not equalities, such as psql's
// ARRAY(SELECT rolname FROM pg_roles WHERE oid = ANY (pol.polroles)): the
// subquery is evaluated once per distinct combination of the outer
// columns it uses (the domain D), which is what running it per outer row
// computes, without running it per row:
//
//	Join left on o.d1 = d1 AND ...
//	  <outer>
//	  Aggregate [d1, ...] [count(*), max(v)] | [array_agg(v)]
//	    Join inner on corr(d, t)        -- corr with the outer columns read from D
//	      D = Aggregate [o.d1, ...] (<outer>)   -- distinct outer values
//	      t
//
// The cross join of D with the subquery's input is the cost: |D| x |t|
// rows are filtered. The catalog queries that need this (psql's) join a
// handful of policies or publications with the roles; a large outer query
// over a large subquery pays the product. An outer value that is NULL
// finds no group (the join is on =), so the subquery gives its value for
// no rows there, NULL or '{}'.
func (b *Binder) decorrelateDomain(in planner.Node, nO int, s *subquery, sel expr.Expr, array bool) (*planner.Aggregate, expr.Expr, error) {
	var outer []int
	if s.corr != nil {
		walkCols(s.corr, func(c *expr.ColRef) {
			if c.Idx < nO && !slices.Contains(outer, c.Idx) {
				outer = append(outer, c.Idx)
			}
		})
	}
	// The select list numbers the subquery's columns first, then the
	// outer query's (selOuter).
	nI := len(s.right.Schema())
	useOuter := func(e expr.Expr) {
		walkCols(e, func(c *expr.ColRef) {
			if c.Idx >= nI && !slices.Contains(outer, c.Idx-nI) {
				outer = append(outer, c.Idx-nI)
			}
		})
	}
	if s.aggs == nil {
		useOuter(sel)
	}
	for _, a := range s.aggs {
		if a.Arg != nil {
			useOuter(a.Arg)
		}
	}
	for _, o := range lateralArgs(s.right) {
		if !slices.Contains(outer, o) {
			outer = append(outer, o)
		}
	}
	slices.Sort(outer)
	k := len(outer)
	inCols := in.Schema()
	domain := &planner.Aggregate{Input: in}
	at := map[int]int{}
	// key is how an outer column is grouped: a text[] (psql's
	// pol.polroles) by its text form, which array_out makes unambiguous,
	// and read back with ::text[] where the conditions use it.
	key := func(e expr.Expr) expr.Expr {
		if e.Type().Kind == types.TextArray {
			return &expr.Cast{E: e, T: types.TText}
		}
		return e
	}
	for i, oc := range outer {
		g := key(&expr.ColRef{Idx: oc, T: inCols[oc].T, Name: inCols[oc].Name})
		domain.GroupBy = append(domain.GroupBy, g)
		domain.Cols = append(domain.Cols, planner.Column{Name: inCols[oc].Name, T: g.Type()})
		at[oc] = i
	}
	// outerRef reads outer column o from the domain row.
	outerRef := func(c *expr.ColRef, o int) expr.Expr {
		r := *c
		r.Idx = at[o]
		if c.T.Kind == types.TextArray {
			r.T = types.TText
			return &expr.Cast{E: &r, T: c.T}
		}
		return &r
	}
	var cond expr.Expr
	if s.corr != nil {
		cond = mapCols(s.corr, func(c *expr.ColRef) expr.Expr {
			if c.Idx >= nO {
				r := *c
				r.Idx = c.Idx - nO + k
				return &r
			}
			return outerRef(c, c.Idx)
		})
	}
	var input planner.Node = &planner.Join{Left: domain, Right: s.right, Kind: planner.InnerJoin, On: cond,
		Cols: append(append([]planner.Column(nil), domain.Cols...), s.right.Schema()...)}
	if s.lateral {
		// The function runs per domain row instead (srflateral.go).
		r, err := lateralOver(s.right, domain, func(c *expr.ColRef) expr.Expr { return outerRef(c, c.Idx) })
		if err != nil {
			return nil, nil, err
		}
		if input = r; cond != nil {
			input = &planner.Filter{Input: r, Pred: cond}
		}
	}
	// toCross renumbers an expression over the subquery's columns (then
	// the outer query's) for the cross join.
	toCross := func(e expr.Expr) expr.Expr {
		return mapCols(e, func(c *expr.ColRef) expr.Expr {
			if c.Idx >= nI {
				return outerRef(c, c.Idx-nI)
			}
			r := *c
			r.Idx += k
			return &r
		})
	}
	if s.aggs == nil {
		sel = toCross(sel)
	}
	if array && len(s.order) > 0 {
		keys := make([]planner.SortKey, len(s.order))
		for i, o := range s.order {
			keys[i] = planner.SortKey{E: toCross(o.E), Desc: o.Desc, NullsFirst: o.NullsFirst}
		}
		// array_agg takes the rows in the order they come.
		input = &planner.Sort{Input: input, Keys: keys}
	}
	agg := &planner.Aggregate{Input: input}
	var on expr.Expr
	for i, oc := range outer {
		t := domain.Cols[i].T
		agg.GroupBy = append(agg.GroupBy, &expr.ColRef{Idx: i, T: t, Name: inCols[oc].Name})
		agg.Cols = append(agg.Cols, planner.Column{Name: "?column?", T: t})
		eq, err := b.binaryOp("=", key(&expr.ColRef{Idx: oc, T: inCols[oc].T, Name: inCols[oc].Name}), &expr.ColRef{Idx: nO + i, T: t, Name: "?column?"})
		if err != nil {
			return nil, nil, err
		}
		on = andExpr(on, eq)
	}
	if array {
		ac, col := subArrayAgg(sel)
		agg.Aggs, agg.Cols = []planner.AggCall{ac}, append(agg.Cols, col)
		return agg, on, nil
	}
	if s.aggs != nil {
		// One row per domain value: count(*) marks the values that have
		// rows, then the subquery's aggregates (subqueryagg.go).
		agg.Aggs = append(agg.Aggs, planner.AggCall{Func: planner.AggCountStar, T: types.TInt64})
		agg.Cols = append(agg.Cols, planner.Column{Name: "n", T: types.TInt64})
		for _, a := range s.aggs {
			if a.Arg != nil {
				a.Arg = toCross(a.Arg)
			}
			agg.Aggs = append(agg.Aggs, a)
			agg.Cols = append(agg.Cols, planner.Column{Name: "?column?", T: a.T})
		}
		return agg, on, nil
	}
	if sel.Type().Kind == types.TextArray || sel.Type().Kind == types.Unknown {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "correlated subqueries used as values are not supported for a value of type %s", typeName(sel.Type()))
	}
	agg.Aggs = []planner.AggCall{{Func: planner.AggCountStar, T: types.TInt64}, {Func: planner.AggMax, Arg: sel, T: sel.Type()}}
	agg.Cols = append(agg.Cols, planner.Column{Name: "n", T: types.TInt64}, planner.Column{Name: "?column?", T: sel.Type()})
	return agg, on, nil
}
