package batch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/join"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// runJoin builds a hash table over the right input, then streams the left
// input through it. Rows whose key has a NULL never match.
//
// Per left batch it lists the candidate pairs (equal keys, or every pair
// without keys), keeps those the residual accepts and then, by kind: inner
// emits the pairs; left and full also emit the unmatched left rows padded
// with NULLs; semi emits the left rows with a pair, anti those without.
// Right and full remember which right rows matched and, once the left input
// is done, emit the others with NULL left columns.
func runJoin(ctx *plan.Ctx, p *plan.HashJoin, emit func(arrow.RecordBatch) error) error {
	right, err := collect(ctx, p.Right)
	if err != nil {
		return err
	}
	if right != nil {
		defer right.Release()
	}
	nr := 0
	if right != nil {
		nr = int(right.NumRows())
	}
	lts, rts, outTs := p.Left.Types(), p.Right.Types(), p.Types()
	pairTs := append(append([]types.T(nil), lts...), rts...)
	mem := ctx.Alloc()
	share := ctx.Heap()
	defer share.Release()
	// head[g] is the first build row of group g; next[r] the following one.
	var gt *accum.GroupTable
	var head, next []int
	if len(p.RightKeys) > 0 && nr > 0 {
		keys := make([]arrow.Array, len(p.RightKeys))
		defer opkit.ReleaseAll(keys)
		for i, k := range p.RightKeys {
			if keys[i], err = expr.Eval(ctx.Expr, k, right); err != nil {
				return err
			}
		}
		accum.CanonKeys(ctx.Expr, keys, p.RightKeys)
		gt = accum.NewGroupTable(plan.ExprTypes(p.RightKeys))
		gids := make([]int32, nr)
		gt.Lookup(keys, nr, gids, true)
		head = make([]int, gt.Len())
		for i := range head {
			head[i] = -1
		}
		next = make([]int, nr)
		for r := nr - 1; r >= 0; r-- {
			if join.AnyNull(keys, r) {
				continue
			}
			next[r] = head[gids[r]]
			head[gids[r]] = r
		}
		share.Set(gt.ApproxBytes() + 8*int64(len(head)+len(next)))
	}
	var rightMatched []bool
	if p.Kind == plan.JoinRight || p.Kind == plan.JoinFull {
		rightMatched = make([]bool, nr)
		share.Set(share.N + int64(nr))
	}
	if err := ctx.Check(); err != nil {
		return err
	}
	li := make([]int, 0, JoinChunk)
	ri := make([]int, 0, JoinChunk)
	err = run(ctx, p.Left, func(left arrow.RecordBatch) error {
		defer left.Release()
		if err := ctx.Canceled(); err != nil {
			return err
		}
		n := int(left.NumRows())
		li, ri = li[:0], ri[:0]
		if len(p.LeftKeys) == 0 && p.Residual == nil && (p.Kind == plan.JoinSemi || p.Kind == plan.JoinAnti) {
			// (NOT) EXISTS of an uncorrelated subquery: no pairs needed.
			if (nr > 0) == (p.Kind == plan.JoinSemi) {
				left.Retain()
				return emit(left)
			}
			return nil
		}
		matched := make([]bool, n)
		// flush joins the listed pairs and emits them (semi and anti joins
		// only mark the matched left rows), then checks for cancellation
		// and the budget: one left batch against a big build side, or a
		// cross join, yields its output joinChunk pairs at a time.
		flush := func() error {
			pairs, err := joinRows(ctx, p, left, right, li, ri, pairTs, matched, rightMatched)
			li, ri = li[:0], ri[:0]
			if err != nil {
				return err
			}
			if pairs != nil {
				if p.Kind == plan.JoinSemi || p.Kind == plan.JoinAnti || pairs.NumRows() == 0 {
					pairs.Release()
				} else if err := emit(pairs); err != nil {
					return err
				}
			}
			return ctx.Check()
		}
		switch {
		case len(p.LeftKeys) == 0:
			for l := 0; l < n; l++ {
				for r := 0; r < nr; r++ {
					li, ri = append(li, l), append(ri, r)
					if len(li) == JoinChunk {
						if err := flush(); err != nil {
							return err
						}
					}
				}
			}
		case gt != nil:
			keys := make([]arrow.Array, len(p.LeftKeys))
			defer opkit.ReleaseAll(keys)
			for i, k := range p.LeftKeys {
				var err error
				if keys[i], err = expr.Eval(ctx.Expr, k, left); err != nil {
					return err
				}
			}
			accum.CanonKeys(ctx.Expr, keys, p.LeftKeys)
			gids := make([]int32, n)
			gt.Lookup(keys, n, gids, false)
			for l := 0; l < n; l++ {
				if gids[l] < 0 || join.AnyNull(keys, l) {
					continue
				}
				for r := head[gids[l]]; r >= 0; r = next[r] {
					li, ri = append(li, l), append(ri, r)
					if len(li) == JoinChunk {
						if err := flush(); err != nil {
							return err
						}
					}
				}
			}
		}
		if len(li) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		switch p.Kind {
		case plan.JoinSemi, plan.JoinAnti:
			var keep []int
			for l, m := range matched {
				if m == (p.Kind == plan.JoinSemi) {
					keep = append(keep, l)
				}
			}
			return emitRows(mem, left, keep, outTs, emit)
		case plan.JoinLeft, plan.JoinFull:
			for l, m := range matched {
				if !m {
					li, ri = append(li, l), append(ri, -1)
				}
			}
			if len(li) > 0 {
				return emit(pairRecord(mem, left, right, li, ri, lts, rts, outTs))
			}
		}
		return nil
	})
	if err != nil || rightMatched == nil {
		return err
	}
	li, ri = li[:0], ri[:0]
	for r, m := range rightMatched {
		if !m {
			li, ri = append(li, -1), append(ri, r)
		}
		if len(li) == JoinChunk || (r == nr-1 && len(li) > 0) {
			if err := emit(pairRecord(mem, nil, right, li, ri, lts, rts, outTs)); err != nil {
				return err
			}
			li, ri = li[:0], ri[:0]
			if err := ctx.Check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// JoinChunk bounds the pairs a join lists, and so the rows of an output
// batch, between two checks for cancellation and the memory budget.
const JoinChunk = 64 << 10

// emitRows emits rows keep of rec (all of it without copying when it is every row).
func emitRows(mem memory.Allocator, rec arrow.RecordBatch, keep []int, ts []types.T, emit func(arrow.RecordBatch) error) error {
	switch len(keep) {
	case 0:
		return nil
	case int(rec.NumRows()):
		rec.Retain()
		return emit(rec)
	}
	return emit(opkit.TakeRecordMem(mem, rec, keep, ts))
}

// joinRows builds the joined pairs, applies the residual predicate and marks
// the left rows (matched) and right rows (rightMatched, if not nil) that
// found a match.
func joinRows(ctx *plan.Ctx, p *plan.HashJoin, left, right arrow.RecordBatch, li, ri []int, pairTs []types.T, matched, rightMatched []bool) (arrow.RecordBatch, error) {
	if len(li) == 0 {
		return nil, nil
	}
	if p.Residual == nil && (p.Kind == plan.JoinSemi || p.Kind == plan.JoinAnti) {
		for _, l := range li {
			matched[l] = true
		}
		return nil, nil
	}
	lts := p.Left.Types()
	out := pairRecord(ctx.Alloc(), left, right, li, ri, lts, pairTs[len(lts):], pairTs)
	if p.Residual == nil {
		for i, l := range li {
			matched[l] = true
			if rightMatched != nil {
				rightMatched[ri[i]] = true
			}
		}
		return out, nil
	}
	mask, err := expr.Eval(ctx.Expr, p.Residual, out)
	if err != nil {
		out.Release()
		return nil, err
	}
	defer mask.Release()
	b := mask.(*array.Boolean)
	keep := make([]int, 0, len(li))
	for i, l := range li {
		if b.IsValid(i) && b.Value(i) {
			keep = append(keep, i)
			matched[l] = true
			if rightMatched != nil {
				rightMatched[ri[i]] = true
			}
		}
	}
	if len(keep) == len(li) {
		return out, nil
	}
	res := opkit.TakeRecordMem(ctx.Alloc(), out, keep, pairTs)
	out.Release()
	return res, nil
}

// pairRecord builds the rows (left li[i], right ri[i]); an index of -1, or
// a nil side, gives NULLs for that side's columns.
func pairRecord(mem memory.Allocator, left, right arrow.RecordBatch, li, ri []int, lts, rts, outTs []types.T) arrow.RecordBatch {
	cols := make([]arrow.Array, 0, len(outTs))
	for c, t := range lts {
		if left == nil {
			cols = append(cols, opkit.NewNullArrayMem(mem, t, len(li)))
			continue
		}
		cols = append(cols, opkit.TakeArrayMem(mem, left.Column(c), li, t))
	}
	for c, t := range rts {
		if right == nil {
			cols = append(cols, opkit.NewNullArrayMem(mem, t, len(ri)))
			continue
		}
		cols = append(cols, opkit.TakeArrayMem(mem, right.Column(c), ri, t))
	}
	return opkit.NewRecord(outTs, cols, len(li))
}
