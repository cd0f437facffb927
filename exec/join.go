package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
)

// runJoin builds a hash table over the right input, then streams the left
// input through it. Rows whose key has a NULL never match.
func runJoin(ctx *Ctx, p *HashJoin, emit func(arrow.RecordBatch) error) error {
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
	// head[g] is the first build row of group g; next[r] the following one.
	var gt *groupTable
	var head, next []int
	if len(p.RightKeys) > 0 && nr > 0 {
		keys := make([]arrow.Array, len(p.RightKeys))
		defer releaseAll(keys)
		for i, k := range p.RightKeys {
			if keys[i], err = expr.Eval(ctx.Expr, k, right); err != nil {
				return err
			}
		}
		gt = newGroupTable(exprTypes(p.RightKeys))
		gids := make([]int32, nr)
		gt.lookup(keys, nr, gids, true)
		head = make([]int, gt.Len())
		for i := range head {
			head[i] = -1
		}
		next = make([]int, nr)
		for r := nr - 1; r >= 0; r-- {
			if anyNull(keys, r) {
				continue
			}
			next[r] = head[gids[r]]
			head[gids[r]] = r
		}
	}
	var li, ri []int
	return run(ctx, p.Left, func(left arrow.RecordBatch) error {
		defer left.Release()
		if err := ctx.canceled(); err != nil {
			return err
		}
		n := int(left.NumRows())
		li, ri = li[:0], ri[:0]
		switch {
		case len(p.LeftKeys) == 0:
			for l := 0; l < n; l++ {
				for r := 0; r < nr; r++ {
					li, ri = append(li, l), append(ri, r)
				}
			}
		case gt != nil:
			keys := make([]arrow.Array, len(p.LeftKeys))
			defer releaseAll(keys)
			for i, k := range p.LeftKeys {
				var err error
				if keys[i], err = expr.Eval(ctx.Expr, k, left); err != nil {
					return err
				}
			}
			gids := make([]int32, n)
			gt.lookup(keys, n, gids, false)
			for l := 0; l < n; l++ {
				if gids[l] < 0 || anyNull(keys, l) {
					continue
				}
				for r := head[gids[l]]; r >= 0; r = next[r] {
					li, ri = append(li, l), append(ri, r)
				}
			}
		}
		var matched []bool
		if p.Kind == JoinLeft {
			matched = make([]bool, n)
		}
		out, err := joinRows(ctx, p, left, right, li, ri, lts, rts, outTs, matched)
		if err != nil {
			return err
		}
		if p.Kind == JoinLeft {
			li, ri = li[:0], ri[:0]
			for l, m := range matched {
				if !m {
					li, ri = append(li, l), append(ri, -1)
				}
			}
			if len(li) > 0 {
				if out != nil {
					if err := emit(out); err != nil {
						return err
					}
				}
				out = pairRecord(left, right, li, ri, lts, rts, outTs)
			}
		}
		if out == nil || out.NumRows() == 0 {
			if out != nil {
				out.Release()
			}
			return nil
		}
		return emit(out)
	})
}

// joinRows builds the joined pairs, applies the residual predicate and marks
// the left rows that found a match.
func joinRows(ctx *Ctx, p *HashJoin, left, right arrow.RecordBatch, li, ri []int, lts, rts, outTs []typesT, matched []bool) (arrow.RecordBatch, error) {
	if len(li) == 0 {
		return nil, nil
	}
	out := pairRecord(left, right, li, ri, lts, rts, outTs)
	if p.Residual == nil {
		for _, l := range li {
			if matched != nil {
				matched[l] = true
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
			if matched != nil {
				matched[l] = true
			}
		}
	}
	if len(keep) == len(li) {
		return out, nil
	}
	res := takeRecord(out, keep, outTs)
	out.Release()
	return res, nil
}

func pairRecord(left, right arrow.RecordBatch, li, ri []int, lts, rts, outTs []typesT) arrow.RecordBatch {
	cols := make([]arrow.Array, 0, len(outTs))
	for c, t := range lts {
		cols = append(cols, takeArray(left.Column(c), li, t))
	}
	for c, t := range rts {
		if right == nil {
			bl := newNullArray(t, len(ri))
			cols = append(cols, bl)
			continue
		}
		cols = append(cols, takeArray(right.Column(c), ri, t))
	}
	return newRecord(outTs, cols, len(li))
}

func anyNull(keys []arrow.Array, i int) bool {
	for _, k := range keys {
		if k.IsNull(i) {
			return true
		}
	}
	return false
}
