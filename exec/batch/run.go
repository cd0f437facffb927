package batch

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Run executes a batch plan, calling emit with each output batch (emit owns it).
func Run(ctx *plan.Ctx, p plan.Plan, emit func(arrow.RecordBatch) error) error {
	if err := plan.CheckBounded(p); err != nil {
		return err
	}
	if err := plan.Failpoint("query", "run"); err != nil { // tests: a batch query's failure or panic
		return err
	}
	return run(ctx, p, emit)
}

func run(ctx *plan.Ctx, p plan.Plan, emit func(arrow.RecordBatch) error) error {
	switch p := p.(type) {
	case *plan.ScanStream:
		return scanStream(ctx, p, emit)
	case *plan.ScanView:
		return plan.ReadView(ctx, p, emit)
	case *plan.Values:
		return runValues(ctx, p, emit)
	case *plan.Batches:
		for i, r := range p.Recs {
			if err := emit(r); err != nil {
				for _, rest := range p.Recs[i+1:] {
					rest.Release()
				}
				return err
			}
		}
		return nil
	case *plan.Filter:
		return run(ctx, p.In, func(rec arrow.RecordBatch) error {
			if err := ctx.Canceled(); err != nil {
				rec.Release()
				return err
			}
			out, err := expr.Filter(ctx.Expr, p.Pred, rec)
			rec.Release()
			if err != nil {
				return err
			}
			if out.NumRows() == 0 {
				out.Release()
				return nil
			}
			return emit(out)
		})
	case *plan.Project:
		ts := p.Types()
		return run(ctx, p.In, func(rec arrow.RecordBatch) error {
			if err := ctx.Canceled(); err != nil {
				rec.Release()
				return err
			}
			out, err := plan.ProjectColumns(ctx.Expr, p.Exprs, ts, rec)
			rec.Release()
			if err != nil {
				return err
			}
			return emit(out)
		})
	case *plan.Hop:
		return runHop(ctx, p, emit)
	case *plan.HashAgg:
		return runAgg(ctx, p, emit)
	case *plan.SessionAgg:
		return runSession(ctx, p, emit)
	case *plan.HashJoin:
		if p.Versioned != nil {
			return runVersioned(ctx, p, emit)
		}
		return runJoin(ctx, p, emit)
	case *plan.Sort:
		return runSort(ctx, p, emit)
	case *plan.Limit:
		return runLimit(ctx, p, emit)
	case *plan.Window:
		return runWindow(ctx, p, emit)
	case *plan.SingleRow:
		return runSingleRow(ctx, p, emit)
	case *plan.FuncScan:
		return runFuncScan(ctx, p, emit)
	case *plan.LateralFuncScan:
		return runLateralFuncScan(ctx, p, emit)
	case *plan.ProjectSRF:
		return runProjectSRF(ctx, p, emit)
	case *plan.Union:
		for _, in := range p.Ins {
			if err := ctx.Canceled(); err != nil {
				return err
			}
			if err := run(ctx, in, emit); err != nil {
				return err
			}
		}
		return nil
	}
	return sqlerr.New(sqlerr.Internal, "exec: unknown plan %T", p)
}

func scanStream(ctx *plan.Ctx, p *plan.ScanStream, emit func(arrow.RecordBatch) error) error {
	t, snap := p.Table, p.Snap
	if snap == nil {
		snap = ctx.Snap
	}
	if t.Kind == storage.KindSource {
		return scanConnector(ctx, t, emit)
	}
	// An index finds current rows; a versioned join's build side reads
	// every version (History), so it scans the log.
	if p.Index != nil && p.Rows == nil && !p.History {
		return scanTableIndex(ctx, p, emit)
	}
	if plan.Keyed(t) {
		if p.History {
			return scanKeyedHistory(ctx, t, snap, emit)
		}
		if p.Rows != nil {
			return emit(p.Rows.Record(ctx.Alloc()))
		}
		return plan.ScanKeyed(ctx, t, snap, emit)
	}
	return readLogBlocks(ctx, t, snap, emit)
}

// readLogBlocks passes each block of t's log as of snap to emit, which
// owns it: every partition, in offset order per partition.
func readLogBlocks(ctx *plan.Ctx, t *storage.TableDef, snap storage.Reader, emit func(arrow.RecordBatch) error) error {
	for part := 0; part < max(1, t.Partitions); part++ {
		start, end, err := plan.ReadRange(ctx, t, part, snap)
		if err != nil {
			return err
		}
		if err := ctx.DB.Log().ReadAt(snap, ctx.Alloc(), t.ID, uint32(part), start, end, plan.OldLayoutRead(t, func(_ uint64, rec arrow.RecordBatch) error {
			if err := ctx.Check(); err != nil {
				rec.Release()
				return err
			}
			return emit(rec)
		})); err != nil {
			return err
		}
	}
	return nil
}

func runValues(ctx *plan.Ctx, p *plan.Values, emit func(arrow.RecordBatch) error) error {
	bls := make([]array.Builder, len(p.Ts))
	for i, t := range p.Ts {
		bls[i] = types.NewBuilder(ctx.Alloc(), t)
	}
	cols := make([]arrow.Array, len(p.Ts))
	defer func() {
		for _, b := range bls {
			b.Release()
		}
	}()
	for _, row := range p.Rows {
		for i, e := range row {
			d, err := expr.EvalConst(ctx.Expr, e)
			if err != nil {
				return err
			}
			types.AppendDatum(bls[i], d, p.Ts[i])
		}
	}
	for i, b := range bls {
		cols[i] = b.NewArray()
	}
	return emit(opkit.NewRecord(p.Ts, cols, len(p.Rows)))
}

func runLimit(ctx *plan.Ctx, p *plan.Limit, emit func(arrow.RecordBatch) error) error {
	skip, left := p.Offset, p.Count
	if left == 0 {
		return nil
	}
	done := errors.New("limit reached") // this limit's own stop signal
	err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		if err := ctx.Canceled(); err != nil {
			rec.Release()
			return err
		}
		n := rec.NumRows()
		lo := int64(0)
		if skip > 0 {
			lo = min(skip, n)
			skip -= lo
		}
		hi := n
		if left >= 0 && hi-lo > left {
			hi = lo + left
		}
		if lo == hi {
			rec.Release()
			if left == 0 {
				return done
			}
			return nil
		}
		out := rec
		if lo != 0 || hi != n {
			out = rec.NewSlice(lo, hi)
			rec.Release()
		}
		if left >= 0 {
			left -= hi - lo
		}
		if err := emit(out); err != nil {
			return err
		}
		if left == 0 {
			return done
		}
		return nil
	})
	if errors.Is(err, done) {
		return nil
	}
	return err
}
