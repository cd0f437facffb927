package plan

import (
	"context"
	"errors"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/over"
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

// Canceled returns 57014 once the query's context is done. It is cheap (a
// channel poll), so operators call it once per batch and inside long loops.
func (ctx *Ctx) Canceled() error {
	select {
	case <-ctx.Context.Done():
		return ContextError(ctx.Context)
	default:
		return nil
	}
}

// Check is canceled, then the memory budget's check (after each batch).
func (ctx *Ctx) Check() error {
	if err := ctx.Canceled(); err != nil {
		return err
	}
	if ctx.Mem != nil {
		return ctx.Mem.Check()
	}
	return nil
}

// Alloc is the allocator of the query's arrays.
func (ctx *Ctx) Alloc() memory.Allocator {
	if ctx.Mem != nil {
		return ctx.Mem.Allocator()
	}
	return opkit.Mem
}

// Heap returns a share of the budget for an operator's Go-heap structures.
func (ctx *Ctx) Heap() *HeapShare { return &HeapShare{b: ctx.Mem} }

// ContextError is the 57014 error of a done context: a deadline is a
// statement timeout, anything else a cancel request.
func ContextError(c context.Context) error {
	if errors.Is(c.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(c), context.DeadlineExceeded) {
		return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to statement timeout")
	}
	return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
}

// ProjectColumns evaluates exprs over rec into a new record of types ts.
func ProjectColumns(ctx *expr.Ctx, exprs []expr.Expr, ts []types.T, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(exprs))
	for i, e := range exprs {
		a, err := expr.Eval(ctx, e, rec)
		if err != nil {
			opkit.ReleaseAll(cols)
			return nil, err
		}
		cols[i] = a
	}
	return opkit.NewRecord(ts, cols, int(rec.NumRows())), nil
}

// ReadRange is the part of t's log a statement reads: up to the live end
// without a snapshot; with one, where the views it may read with it are: at
// the committed cut if a running job reads the stream, else everything the
// snapshot holds.
func ReadRange(ctx *Ctx, t *storage.TableDef, part int, snap storage.Reader) (start, end uint64, err error) {
	start, end, _, err = ctx.DB.Log().Bounds(t.ID, uint32(part))
	if err != nil || snap == nil {
		return start, end, err
	}
	cut, err := ctx.DB.Epochs().CommittedCut(snap)
	if err != nil {
		return 0, 0, err
	}
	end = math.MaxUint64
	if c, ok := cut[storage.LogPart{Table: t.ID, Part: uint32(part)}]; ok {
		end = c
	}
	return start, end, nil
}

// Stopper polls the query's cancellation from inside a loop that cannot
// return an error (a sort's comparison; opkit.Stopper).
func (ctx *Ctx) Stopper() *opkit.Stopper { return &opkit.Stopper{Canceled: ctx.Canceled} }

// OverEnv is what the window kernels (exec/over) need of the query.
func (ctx *Ctx) OverEnv() *over.Env {
	env := &over.Env{Expr: ctx.Expr, Mem: ctx.Alloc(), Canceled: ctx.Canceled, Check: ctx.Check}
	if ctx.Mem != nil {
		env.Grow = ctx.Mem.Grow
	}
	return env
}
