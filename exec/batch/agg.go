package batch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/plan"
)

// The hash aggregate of a batch query: the operator is exec/agg (aggop.go
// wires a job's).

// runAgg runs a hash aggregate in a batch query: it folds every input
// batch into the groups, whose estimated memory counts against the query's
// budget (checked after each batch), then emits every group.
func runAgg(ctx *plan.Ctx, p *plan.HashAgg, emit func(arrow.RecordBatch) error) error {
	a := agg.New(plan.AggSpecOf(p, false, nil), agg.Node{Mem: ctx.Alloc()})
	share := ctx.Heap()
	defer share.Release()
	if err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if err := a.Fold(ctx.Expr, rec, nil, false); err != nil {
			return err
		}
		share.Set(a.MemBytes())
		return ctx.Check()
	}); err != nil {
		return err
	}
	return a.EmitAll(func(rec arrow.RecordBatch) error {
		if err := ctx.Canceled(); err != nil {
			rec.Release()
			return err
		}
		return emit(rec)
	})
}
