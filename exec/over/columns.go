package over

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// Columns computes funcs over rec's rows sorted by idx
// (partition, then ORDER BY): pids[i] is row i's partition (of parts),
// spids[k] the k-th sorted row's, peer[k] whether that row is a peer of
// the one before it. The columns are in sorted order. Batch queries
// (exec/batch, runWindow) and the rank operator of a view (exec/rank, over the rows of the
// partitions that changed) share it.
func Columns(env *Env, funcs []Func, order []SortKey, rec arrow.RecordBatch, idx []int, pids, spids []int32, peer []bool, parts int) ([]arrow.Array, error) {
	n := len(idx)
	var cols []arrow.Array
	for _, f := range funcs {
		if err := env.check(); err != nil {
			opkit.ReleaseAll(cols)
			return nil, err
		}
		var err error
		var col arrow.Array
		frame := frameFunc(f.Frame.bounds)
		if f.Frame.Groups {
			frame = groupsFrame(f.Frame, spids, peer)
		} else if f.Frame.RangeOffset() {
			if frame, err = rangeFrame(env, f.Frame, order[0], rec, idx, spids, peer); err != nil {
				opkit.ReleaseAll(cols)
				return nil, err
			}
		}
		switch {
		case f.Kind == Agg && (f.Frame.RangeOffset() || f.Frame.Groups):
			col, err = windowAggSliding(env, f, rec, idx, spids, func(k, ps, pe, _, _ int) (int, int) { return frame(k, ps, pe, 0, 0) })
		case f.Kind == Agg && frameSliding(f.Frame):
			col, err = windowAggSliding(env, f, rec, idx, spids, frame)
		case f.Kind == Agg && frameRunning(f.Frame):
			col, err = windowAgg(env, f, rec, idx, pids, spids, make([]bool, n), parts, true) // every row its own peer group
		case f.Kind == Agg:
			col, err = windowAgg(env, f, rec, idx, pids, spids, peer, parts, len(order) > 0 && !f.Frame.WholePartition())
		case f.Kind >= Lag:
			col, err = windowValue(env, f, rec, idx, spids, peer, frame)
		default:
			col = windowRank(f.Kind, spids, peer)
		}
		if err != nil {
			opkit.ReleaseAll(cols)
			return nil, err
		}
		cols = append(cols, col)
	}
	return cols, nil
}

// windowRank computes row_number, rank or dense_rank over the sorted rows.
func windowRank(kind FuncKind, spids []int32, peer []bool) arrow.Array {
	bl := array.NewInt64Builder(opkit.Mem)
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
		case RowNumber:
			bl.UnsafeAppend(rowNum)
		case Rank:
			bl.UnsafeAppend(rank)
		default:
			bl.UnsafeAppend(dense)
		}
	}
	return bl.NewArray()
}

// windowAgg computes an aggregate over each row's frame, in sorted order.
func windowAgg(env *Env, f Func, rec arrow.RecordBatch, idx []int, pids, spids []int32, peer []bool, parts int, ordered bool) (arrow.Array, error) {
	acc := accum.New(f.Agg, false)
	acc.Grow(parts)
	var arg arrow.Array
	if f.Agg.Arg != nil {
		var err error
		if arg, err = expr.Eval(env.Expr, f.Agg.Arg, rec); err != nil {
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
	bl := types.NewBuilder(env.alloc(), f.T)
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
		sorted = opkit.TakeArrayMem(opkit.Mem, arg, idx, f.Agg.Arg.Type())
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
