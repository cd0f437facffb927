package exec

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/join"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// Interval and window joins freed by watermark: the operator's side is
// exec/join (time.go); here is how a join's rows end by watermark, found
// from the plan under it (joinTimeOf), and whether its inputs have a
// watermark at all (watermarked).

// joinTime is how a join's rows end by watermark (join.Time).
type joinTime = join.Time

// joinTimeOf finds how join n's rows end by watermark; nil if they do not.
// preds are the filters right over the join (over its pairs, as its
// residual): an inner join's pairs that fail them never show either.
//
// Outer, semi and anti joins read their residual (the ON condition) only:
// a filter over an outer join's output also sees its NULL-padded rows,
// and one over a semi or anti join sees the left columns alone.
func joinTimeOf(n *plan.HashJoin, preds []expr.Expr) *joinTime {
	if n.Kind != plan.JoinInner {
		preds = nil
	}
	if jt := windowJoinOf(n); jt != nil {
		return jt
	}
	return intervalJoinOf(n, preds)
}

// windowJoinOf: the join key pair that bounds windows on both sides with
// the earliest end.
func windowJoinOf(n *plan.HashJoin) *joinTime {
	var best *joinTime
	bestSides, bestAt := 0, int64(0)
	for k := range n.LeftKeys {
		if k >= len(n.RightKeys) || !isTime(n.LeftKeys[k].Type()) || !isTime(n.RightKeys[k].Type()) {
			continue
		}
		lo, lt, lok := boundThrough(n.Left, n.LeftKeys[k])
		ro, rt, rok := boundThrough(n.Right, n.RightKeys[k])
		if !lok || !rok || !lt.ok && !rt.ok {
			continue
		}
		jt := &joinTime{Kind: "window join", Key: k, Own: [2]int64{lo, ro}, Shift: [2]int64{lt.shift, rt.shift},
			Hop: [2]*hopLast{hopOfKey(n.Left, n.LeftKeys[k]), hopOfKey(n.Right, n.RightKeys[k])}}
		// A window of side s is closed once the watermark reaches
		// closes[s] after its bound.
		closes := [2]int64{lo - lt.shift, ro - rt.shift}
		sides, at := 1, closes[0]
		switch {
		case lt.ok && rt.ok:
			// Both sides close a window at the later of their closes, so
			// a row is freed exactly when its partners become late.
			sides, at = 2, max(closes[0], closes[1])
			jt.Free, jt.Late = [2]int64{at, at}, [2]int64{at, at}
			jt.Frees, jt.Lates = [2]bool{true, true}, [2]bool{true, true}
		case lt.ok:
			jt.Late[0], jt.Free[1] = at, at
			jt.Lates[0], jt.Frees[1] = true, true
		default:
			at = closes[1]
			jt.Late[1], jt.Free[0] = at, at
			jt.Lates[1], jt.Frees[0] = true, true
		}
		if best == nil || sides > bestSides || sides == bestSides && at < bestAt {
			best, bestSides, bestAt = jt, sides, at
		}
	}
	return best
}

func isTime(t types.T) bool { return t.Kind == types.Timestamp }

// timeTerm is a column of the residual's pairs plus a constant interval.
type timeTerm struct {
	col int
	off int64
}

func timeTermOf(e expr.Expr) (timeTerm, bool) {
	switch e := e.(type) {
	case *expr.ColRef:
		if isTime(e.T) {
			return timeTerm{col: e.Idx}, true
		}
	case *expr.Func:
		if len(e.Args) != 2 || e.Name != "+" && e.Name != "-" {
			break
		}
		c, ok := e.Args[0].(*expr.ColRef)
		iv, ok2 := intervalConst(e.Args[1])
		if !ok || !ok2 || !isTime(c.T) {
			break
		}
		if e.Name == "-" {
			iv = -iv
		}
		return timeTerm{col: c.Idx, off: iv}, true
	}
	return timeTerm{}, false
}

// intervalJoinOf finds a pair of time columns (one per side) that the
// residual bounds both ways.
func intervalJoinOf(n *plan.HashJoin, preds []expr.Expr) *joinTime {
	var cs []expr.Expr
	if n.Residual != nil {
		cs = conjuncts(n.Residual)
	}
	for _, p := range preds {
		cs = append(cs, conjuncts(p)...)
	}
	nl := len(n.Left.Types())
	type pair struct{ l, r int }
	// x[p]: right.t <= left.t + x (a left row's latest partner);
	// y[p]: left.t <= right.t + y (a right row's).
	x, y := map[pair]int64{}, map[pair]int64{}
	var order []pair
	for _, c := range cs {
		f, ok := c.(*expr.Func)
		if !ok || len(f.Args) != 2 {
			continue
		}
		a, aok := timeTermOf(f.Args[0])
		b, bok := timeTermOf(f.Args[1])
		if !aok || !bok {
			continue
		}
		le := false // the conjunct says a <= b (or a < b)
		switch f.Name {
		case "<=", "<":
			le = true
		case ">=", ">":
		default:
			continue
		}
		if a.col >= nl {
			a, b, le = b, a, !le
		}
		if a.col >= nl || b.col < nl {
			continue // both on one side
		}
		p := pair{a.col, b.col - nl}
		if _, seen := x[p]; !seen {
			if _, seen := y[p]; !seen {
				order = append(order, p)
			}
		}
		if le {
			// left.t + a.off <= right.t + b.off
			v := b.off - a.off
			if old, ok := y[p]; !ok || v < old {
				y[p] = v
			}
		} else {
			// right.t + b.off <= left.t + a.off
			v := a.off - b.off
			if old, ok := x[p]; !ok || v < old {
				x[p] = v
			}
		}
	}
	for _, p := range order {
		xv, xok := x[p]
		yv, yok := y[p]
		if !xok || !yok {
			continue
		}
		lt, rt := traceColumn(n.Left, p.l), traceColumn(n.Right, p.r)
		if !lt.ok && !rt.ok {
			continue
		}
		// A row of side s is late when its time is behind its own
		// watermark, W + shift[s]; a left row's partners (right.t <=
		// left.t + x) are all late once left.t + x is behind the right
		// side's, a right row's (left.t <= right.t + y) once right.t + y
		// is behind the left side's.
		jt := &joinTime{Kind: "interval join", Col: [2]int{p.l, p.r}, Shift: [2]int64{lt.shift, rt.shift}}
		if lt.ok {
			jt.Late[0], jt.Lates[0] = 1-lt.shift, true
			jt.Free[1], jt.Frees[1] = yv+jt.Late[0], true
		}
		if rt.ok {
			jt.Late[1], jt.Lates[1] = 1-rt.shift, true
			jt.Free[0], jt.Frees[0] = xv+jt.Late[1], true
		}
		return jt
	}
	return nil
}

// watermarked says whether every source under g has a watermark: a
// join's watermark is the least of its inputs', so a join with an input
// without one never frees anything and keeps no freeing list.
func watermarked(g *gnode) bool {
	if g.kind == nSource {
		return g.src.Watermark != nil && !g.changelog
	}
	for _, e := range g.ins {
		if !watermarked(e.from) {
			return false
		}
	}
	return len(g.ins) > 0
}
