package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/agg"
)

// The hash aggregate of a batch query: the operator is exec/agg (aggop.go
// wires a job's).

// runAgg runs a hash aggregate in a batch query: it folds every input
// batch into the groups, whose estimated memory counts against the query's
// budget (checked after each batch), then emits every group.
func runAgg(ctx *Ctx, p *HashAgg, emit func(arrow.RecordBatch) error) error {
	a := agg.New(aggSpecOf(p, false, nil), agg.Node{Mem: ctx.alloc()})
	share := ctx.heap()
	defer share.release()
	if err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if err := a.Fold(ctx.Expr, rec, nil, false); err != nil {
			return err
		}
		share.set(a.MemBytes())
		return ctx.check()
	}); err != nil {
		return err
	}
	return a.EmitAll(func(rec arrow.RecordBatch) error {
		if err := ctx.canceled(); err != nil {
			rec.Release()
			return err
		}
		return emit(rec)
	})
}
