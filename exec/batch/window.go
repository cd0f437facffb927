package batch

import (
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/over"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
)

// runWindow computes window functions (batch): it collects the input, gives
// every row its partition (a groupTable over PartitionBy), sorts the rows by
// partition then OrderBy, and walks each partition's peer groups (rows equal
// in every ORDER BY term). Aggregates reuse the hash aggregate's
// accumulators with the partition as the group: without ORDER BY they fold
// the whole partition; with it they fold peer group after peer group and
// every row of a peer group gets the running result (PostgreSQL's default
// frame, RANGE UNBOUNDED PRECEDING to CURRENT ROW). Output rows come in
// that sorted order.
func runWindow(ctx *plan.Ctx, p *plan.Window, emit func(arrow.RecordBatch) error) error {
	rec, err := collect(ctx, p.In)
	if err != nil || rec == nil {
		return err
	}
	defer rec.Release()
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}

	pids := make([]int32, n)
	parts := 1
	if len(p.PartitionBy) > 0 {
		keys := make([]arrow.Array, len(p.PartitionBy))
		defer opkit.ReleaseAll(keys)
		for i, k := range p.PartitionBy {
			if keys[i], err = expr.Eval(ctx.Expr, k, rec); err != nil {
				return err
			}
		}
		accum.CanonKeys(ctx.Expr, keys, p.PartitionBy)
		gt := accum.NewGroupTable(plan.ExprTypes(p.PartitionBy))
		gt.Lookup(keys, n, pids, true)
		parts = gt.Len()
	}
	okeys := make([]arrow.Array, len(p.OrderBy))
	defer opkit.ReleaseAll(okeys)
	cmps := make([]func(i, j int) int, len(p.OrderBy))
	for i, k := range p.OrderBy {
		if okeys[i], err = expr.Eval(ctx.Expr, k.E, rec); err != nil {
			return err
		}
		cmps[i] = comparator(okeys[i], k.E.Type(), k.Desc, k.NullsFirst)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	share := ctx.Heap()
	defer share.Release()
	share.Set(int64(n) * (4 + 8 + 4 + 1)) // pids, idx, spids, peer
	if err := ctx.Check(); err != nil {
		return err
	}
	stop := ctx.Stopper()
	sort.SliceStable(idx, func(a, b int) bool {
		if stop.Stopped() {
			return false // canceled: finish the sort at once; the result is dropped
		}
		x, y := idx[a], idx[b]
		if pids[x] != pids[y] {
			return pids[x] < pids[y]
		}
		for _, c := range cmps {
			if r := c(x, y); r != 0 {
				return r < 0
			}
		}
		return false
	})
	if err := ctx.Canceled(); err != nil {
		return err
	}
	// Sorted positions: spids[k] is the partition of the k-th row, peer[k]
	// whether it is a peer of the row before it (same partition, equal
	// ORDER BY terms; without ORDER BY a whole partition is one peer group).
	spids := make([]int32, n)
	peer := make([]bool, n)
	for k, i := range idx {
		spids[k] = pids[i]
		if k == 0 || spids[k-1] != spids[k] {
			continue
		}
		peer[k] = true
		for _, c := range cmps {
			if c(idx[k-1], i) != 0 {
				peer[k] = false
				break
			}
		}
	}

	inTs := p.In.Types()
	cols := make([]arrow.Array, 0, len(inTs)+len(p.Funcs))
	for c, t := range inTs {
		cols = append(cols, opkit.TakeArrayMem(ctx.Alloc(), rec.Column(c), idx, t))
	}
	fcols, err := over.Columns(ctx.OverEnv(), p.Funcs, p.OrderBy, rec, idx, pids, spids, peer, parts)
	if err != nil {
		opkit.ReleaseAll(cols)
		return err
	}
	return emit(opkit.NewRecord(p.Types(), append(cols, fcols...), n))
}

// runSingleRow passes the one row of a scalar subquery: NULLs when it has
// none, error 21000 when it has more.
func runSingleRow(ctx *plan.Ctx, p *plan.SingleRow, emit func(arrow.RecordBatch) error) error {
	rec, err := collect(ctx, p.In)
	if err != nil {
		return err
	}
	ts := p.Types()
	if rec != nil && rec.NumRows() == 0 {
		rec.Release()
		rec = nil
	}
	if rec == nil {
		cols := make([]arrow.Array, len(ts))
		for i, t := range ts {
			cols[i] = opkit.NewNullArrayMem(opkit.Mem, t, 1)
		}
		return emit(opkit.NewRecord(ts, cols, 1))
	}
	if rec.NumRows() > 1 {
		rec.Release()
		return sqlerr.New(sqlerr.CardinalityViolation, "more than one row returned by a subquery used as an expression")
	}
	return emit(rec)
}
