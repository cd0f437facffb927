package exec

import (
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
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
func runWindow(ctx *Ctx, p *Window, emit func(arrow.RecordBatch) error) error {
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
		defer releaseAll(keys)
		for i, k := range p.PartitionBy {
			if keys[i], err = expr.Eval(ctx.Expr, k, rec); err != nil {
				return err
			}
		}
		canonKeys(ctx.Expr, keys, p.PartitionBy)
		gt := newGroupTable(exprTypes(p.PartitionBy))
		gt.Lookup(keys, n, pids, true)
		parts = gt.Len()
	}
	okeys := make([]arrow.Array, len(p.OrderBy))
	defer releaseAll(okeys)
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
	share := ctx.heap()
	defer share.release()
	share.set(int64(n) * (4 + 8 + 4 + 1)) // pids, idx, spids, peer
	if err := ctx.check(); err != nil {
		return err
	}
	stop := ctx.stopper()
	sort.SliceStable(idx, func(a, b int) bool {
		if stop.stopped() {
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
	if err := ctx.canceled(); err != nil {
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
		cols = append(cols, takeArrayMem(ctx.alloc(), rec.Column(c), idx, t))
	}
	fcols, err := windowColumns(ctx, p, rec, idx, pids, spids, peer, parts)
	if err != nil {
		releaseAll(cols)
		return err
	}
	return emit(newRecord(p.Types(), append(cols, fcols...), n))
}

// windowColumns computes p's functions over rec's rows sorted by idx
// (partition, then ORDER BY): pids[i] is row i's partition (of parts),
// spids[k] the k-th sorted row's, peer[k] whether that row is a peer of
// the one before it. The columns are in sorted order. Batch queries
// (runWindow) and the rank node of a view (rankop.go, over the rows of the
// partitions that changed) share it.
func windowColumns(ctx *Ctx, p *Window, rec arrow.RecordBatch, idx []int, pids, spids []int32, peer []bool, parts int) ([]arrow.Array, error) {
	n := len(idx)
	var cols []arrow.Array
	for _, f := range p.Funcs {
		if err := ctx.check(); err != nil {
			releaseAll(cols)
			return nil, err
		}
		var err error
		var col arrow.Array
		frame := frameFunc(f.Frame.bounds)
		if f.Frame.Groups {
			frame = groupsFrame(f.Frame, spids, peer)
		} else if f.Frame.RangeOffset() {
			if frame, err = rangeFrame(ctx, f.Frame, p.OrderBy[0], rec, idx, spids, peer); err != nil {
				releaseAll(cols)
				return nil, err
			}
		}
		switch {
		case f.Kind == WinAgg && (f.Frame.RangeOffset() || f.Frame.Groups):
			col, err = windowAggSliding(ctx, f, rec, idx, spids, func(k, ps, pe, _, _ int) (int, int) { return frame(k, ps, pe, 0, 0) })
		case f.Kind == WinAgg && frameSliding(f.Frame):
			col, err = windowAggSliding(ctx, f, rec, idx, spids, frame)
		case f.Kind == WinAgg && frameRunning(f.Frame):
			col, err = windowAgg(ctx, f, rec, idx, pids, spids, make([]bool, n), parts, true) // every row its own peer group
		case f.Kind == WinAgg:
			col, err = windowAgg(ctx, f, rec, idx, pids, spids, peer, parts, len(p.OrderBy) > 0 && !f.Frame.WholePartition())
		case f.Kind >= WinLag:
			col, err = windowValue(ctx, f, rec, idx, spids, peer, frame)
		default:
			col = windowRank(f.Kind, spids, peer)
		}
		if err != nil {
			releaseAll(cols)
			return nil, err
		}
		cols = append(cols, col)
	}
	return cols, nil
}

// windowRank computes row_number, rank or dense_rank over the sorted rows.
func windowRank(kind WindowFuncKind, spids []int32, peer []bool) arrow.Array {
	bl := array.NewInt64Builder(memoryPool)
	defer bl.Release()
	bl.Reserve(len(spids))
	var rowNum, rank, dense int64
	for k := range spids {
		if k == 0 || spids[k-1] != spids[k] {
			rowNum, rank, dense = 0, 0, 0
		}
		rowNum++
		if !peer[k] {
			rank, dense = rowNum, dense+1
		}
		switch kind {
		case WinRowNumber:
			bl.UnsafeAppend(rowNum)
		case WinRank:
			bl.UnsafeAppend(rank)
		default:
			bl.UnsafeAppend(dense)
		}
	}
	return bl.NewArray()
}

// windowAgg computes an aggregate over each row's frame, in sorted order.
func windowAgg(ctx *Ctx, f WindowFunc, rec arrow.RecordBatch, idx []int, pids, spids []int32, peer []bool, parts int, ordered bool) (arrow.Array, error) {
	acc := newAccum(f.Agg, false)
	acc.Grow(parts)
	var arg arrow.Array
	if f.Agg.Arg != nil {
		var err error
		if arg, err = expr.Eval(ctx.Expr, f.Agg.Arg, rec); err != nil {
			return nil, err
		}
		defer arg.Release()
	}
	check, _ := acc.(interface{ CheckResult(int32) error })
	result := func(g int32) (types.Datum, error) {
		if check != nil {
			if err := check.CheckResult(g); err != nil {
				return types.Datum{}, err
			}
		}
		return acc.Result(g), nil
	}
	n := len(idx)
	bl := types.NewBuilder(ctx.alloc(), f.T)
	defer bl.Release()
	bl.Reserve(n)
	if !ordered {
		if err := acc.Update(pids, arg, nil); err != nil {
			return nil, err
		}
		// One result per partition, then one per row.
		res := make([]types.Datum, parts)
		for g := range res {
			d, err := result(int32(g))
			if err != nil {
				return nil, err
			}
			res[g] = d
		}
		for _, g := range spids {
			types.AppendDatum(bl, res[g], f.T)
		}
		return bl.NewArray(), nil
	}
	var sorted arrow.Array
	if arg != nil {
		sorted = takeArray(arg, idx, f.Agg.Arg.Type())
		defer sorted.Release()
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && peer[hi] {
			hi++
		}
		var part arrow.Array
		if sorted != nil {
			part = array.NewSlice(sorted, int64(lo), int64(hi))
		}
		err := acc.Update(spids[lo:hi], part, nil)
		if part != nil {
			part.Release()
		}
		if err != nil {
			return nil, err
		}
		d, err := result(spids[lo])
		if err != nil {
			return nil, err
		}
		for k := lo; k < hi; k++ {
			types.AppendDatum(bl, d, f.T)
		}
		lo = hi
	}
	return bl.NewArray(), nil
}

// runSingleRow passes the one row of a scalar subquery: NULLs when it has
// none, error 21000 when it has more.
func runSingleRow(ctx *Ctx, p *SingleRow, emit func(arrow.RecordBatch) error) error {
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
			cols[i] = newNullArray(t, 1)
		}
		return emit(newRecord(ts, cols, 1))
	}
	if rec.NumRows() > 1 {
		rec.Release()
		return sqlerr.New(sqlerr.CardinalityViolation, "more than one row returned by a subquery used as an expression")
	}
	return emit(rec)
}
