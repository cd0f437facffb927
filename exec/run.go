package exec

import (
	"context"
	"errors"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Ctx is what running a plan needs.
type Ctx struct {
	Context context.Context
	DB      *storage.DB
	Expr    *expr.Ctx
	// Mem is the query's memory budget (nil: unaccounted). Expr.Mem should
	// be its Allocator so that expression results count too.
	Mem *Budget
	// Snap is the statement's read view: one Pebble snapshot through which
	// it reads every view and stream, so it sees one committed epoch of
	// all of them (nil: the live database).
	Snap storage.Reader
}

// Run executes a batch plan, calling emit with each output batch (emit owns it).
func Run(ctx *Ctx, p Plan, emit func(arrow.RecordBatch) error) error {
	if err := CheckBounded(p); err != nil {
		return err
	}
	if err := Failpoint("query", "run"); err != nil { // tests: a batch query's failure or panic
		return err
	}
	return run(ctx, p, emit)
}

// canceled returns 57014 once the query's context is done. It is cheap (a
// channel poll), so operators call it once per batch and inside long loops.
func (ctx *Ctx) canceled() error {
	select {
	case <-ctx.Context.Done():
		return ContextError(ctx.Context)
	default:
		return nil
	}
}

// check is canceled, then the memory budget's check (after each batch).
func (ctx *Ctx) check() error {
	if err := ctx.canceled(); err != nil {
		return err
	}
	if ctx.Mem != nil {
		return ctx.Mem.Check()
	}
	return nil
}

// alloc is the allocator of the query's arrays.
func (ctx *Ctx) alloc() memory.Allocator {
	if ctx.Mem != nil {
		return ctx.Mem.Allocator()
	}
	return memoryPool
}

// heap returns a share of the budget for an operator's Go-heap structures.
func (ctx *Ctx) heap() *heapShare { return &heapShare{b: ctx.Mem} }

// ContextError is the 57014 error of a done context: a deadline is a
// statement timeout, anything else a cancel request.
func ContextError(c context.Context) error {
	if errors.Is(c.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(c), context.DeadlineExceeded) {
		return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to statement timeout")
	}
	return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
}

func run(ctx *Ctx, p Plan, emit func(arrow.RecordBatch) error) error {
	switch p := p.(type) {
	case *ScanStream:
		return scanStream(ctx, p, emit)
	case *ScanView:
		return scanView(ctx, p, emit)
	case *Values:
		return runValues(ctx, p, emit)
	case *Batches:
		for i, r := range p.Recs {
			if err := emit(r); err != nil {
				for _, rest := range p.Recs[i+1:] {
					rest.Release()
				}
				return err
			}
		}
		return nil
	case *Filter:
		return run(ctx, p.In, func(rec arrow.RecordBatch) error {
			if err := ctx.canceled(); err != nil {
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
	case *Project:
		ts := p.Types()
		return run(ctx, p.In, func(rec arrow.RecordBatch) error {
			if err := ctx.canceled(); err != nil {
				rec.Release()
				return err
			}
			out, err := project(ctx.Expr, p.Exprs, ts, rec)
			rec.Release()
			if err != nil {
				return err
			}
			return emit(out)
		})
	case *Hop:
		return runHop(ctx, p, emit)
	case *HashAgg:
		return runAgg(ctx, p, emit)
	case *SessionAgg:
		return runSession(ctx, p, emit)
	case *HashJoin:
		if p.Versioned != nil {
			return runVersioned(ctx, p, emit)
		}
		return runJoin(ctx, p, emit)
	case *Sort:
		return runSort(ctx, p, emit)
	case *Limit:
		return runLimit(ctx, p, emit)
	case *Window:
		return runWindow(ctx, p, emit)
	case *SingleRow:
		return runSingleRow(ctx, p, emit)
	case *FuncScan:
		return runFuncScan(ctx, p, emit)
	case *LateralFuncScan:
		return runLateralFuncScan(ctx, p, emit)
	case *ProjectSRF:
		return runProjectSRF(ctx, p, emit)
	case *Union:
		for _, in := range p.Ins {
			if err := ctx.canceled(); err != nil {
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

// project evaluates exprs over rec into a new record of types ts.
func project(ctx *expr.Ctx, exprs []expr.Expr, ts []types.T, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(exprs))
	for i, e := range exprs {
		a, err := expr.Eval(ctx, e, rec)
		if err != nil {
			releaseAll(cols)
			return nil, err
		}
		cols[i] = a
	}
	return newRecord(ts, cols, int(rec.NumRows())), nil
}

// readRange is the part of t's log a statement reads: up to the live end
// without a snapshot; with one, where the views it may read with it are: at
// the committed cut if a running job reads the stream, else everything the
// snapshot holds.
func readRange(ctx *Ctx, t *storage.TableDef, part int, snap storage.Reader) (start, end uint64, err error) {
	start, end, _, err = ctx.DB.LogBounds(t.ID, uint32(part))
	if err != nil || snap == nil {
		return start, end, err
	}
	cut, err := ctx.DB.CommittedCut(snap)
	if err != nil {
		return 0, 0, err
	}
	end = math.MaxUint64
	if c, ok := cut[storage.LogPart{Table: t.ID, Part: uint32(part)}]; ok {
		end = c
	}
	return start, end, nil
}

func scanStream(ctx *Ctx, p *ScanStream, emit func(arrow.RecordBatch) error) error {
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
	if Keyed(t) {
		if p.History {
			return scanKeyedHistory(ctx, t, snap, emit)
		}
		if p.Rows != nil {
			return emit(p.Rows.Record(ctx.alloc()))
		}
		return scanKeyed(ctx, t, snap, emit)
	}
	return readLogBlocks(ctx, t, snap, emit)
}

// readLogBlocks passes each block of t's log as of snap to emit, which
// owns it: every partition, in offset order per partition.
func readLogBlocks(ctx *Ctx, t *storage.TableDef, snap storage.Reader, emit func(arrow.RecordBatch) error) error {
	for part := 0; part < max(1, t.Partitions); part++ {
		start, end, err := readRange(ctx, t, part, snap)
		if err != nil {
			return err
		}
		if err := ctx.DB.ReadLogAt(snap, ctx.alloc(), t.ID, uint32(part), start, end, oldLayoutRead(t, func(_ uint64, rec arrow.RecordBatch) error {
			if err := ctx.check(); err != nil {
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

func runValues(ctx *Ctx, p *Values, emit func(arrow.RecordBatch) error) error {
	bls := make([]arrowBuilder, len(p.Ts))
	for i, t := range p.Ts {
		bls[i] = types.NewBuilder(ctx.alloc(), t)
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
	return emit(newRecord(p.Ts, cols, len(p.Rows)))
}

func runLimit(ctx *Ctx, p *Limit, emit func(arrow.RecordBatch) error) error {
	skip, left := p.Offset, p.Count
	if left == 0 {
		return nil
	}
	done := errors.New("limit reached") // this limit's own stop signal
	err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		if err := ctx.canceled(); err != nil {
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
