package batch

import (
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// collect runs p and concatenates its output into one record (nil if empty).
func collect(ctx *plan.Ctx, p plan.Plan) (arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if err := run(ctx, p, func(rec arrow.RecordBatch) error {
		recs = append(recs, rec)
		return ctx.Check()
	}); err != nil {
		return nil, err
	}
	return concatRecords(ctx.Alloc(), p.Types(), recs)
}

// concatRecords concatenates recs into one record allocated from mem (nil
// if there are none; the one record retained if there is one).
func concatRecords(mem memory.Allocator, ts []types.T, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, len(ts))
	n := int64(0)
	for _, r := range recs {
		n += r.NumRows()
	}
	for c := range ts {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := types.Concatenate(parts, mem)
		if err != nil {
			opkit.ReleaseAll(cols)
			return nil, err
		}
		cols[c] = a
	}
	return opkit.NewRecord(ts, cols, int(n)), nil
}

func runSort(ctx *plan.Ctx, p *plan.Sort, emit func(arrow.RecordBatch) error) error {
	rec, err := collect(ctx, p.In)
	if err != nil || rec == nil {
		return err
	}
	defer rec.Release()
	n := int(rec.NumRows())
	keys := make([]arrow.Array, len(p.Keys))
	defer opkit.ReleaseAll(keys)
	for i, k := range p.Keys {
		if keys[i], err = expr.Eval(ctx.Expr, k.E, rec); err != nil {
			return err
		}
	}
	cmps := make([]func(i, j int) int, len(p.Keys))
	for k, key := range p.Keys {
		cmps[k] = comparator(keys[k], key.E.Type(), key.Desc, key.NullsFirst)
	}
	share := ctx.Heap()
	defer share.Release()
	share.Set(8 * int64(n))
	if err := ctx.Check(); err != nil {
		return err
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	stop := ctx.Stopper()
	sort.SliceStable(idx, func(a, b int) bool {
		if stop.Stopped() {
			return false // canceled: finish the sort at once; the result is dropped
		}
		for _, c := range cmps {
			if r := c(idx[a], idx[b]); r != 0 {
				return r < 0
			}
		}
		return false
	})
	if err := ctx.Canceled(); err != nil {
		return err
	}
	if p.Limit >= 0 && int64(len(idx)) > p.Limit {
		idx = idx[:p.Limit]
	}
	const chunk = 64 << 10
	ts := p.Types()
	for lo := 0; lo < len(idx); lo += chunk {
		if err := ctx.Canceled(); err != nil {
			return err
		}
		if err := emit(opkit.TakeRecordMem(ctx.Alloc(), rec, idx[lo:min(len(idx), lo+chunk)], ts)); err != nil {
			return err
		}
	}
	return nil
}

// comparator is opkit.Comparator.
func comparator(a arrow.Array, t types.T, desc, nullsFirst bool) func(i, j int) int {
	return opkit.Comparator(a, t, desc, nullsFirst)
}
