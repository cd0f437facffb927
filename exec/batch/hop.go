package batch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/hop"
	"github.com/streamdb/streamdb/exec/plan"
)

// runHop expands the batches of a batch query.
func runHop(ctx *plan.Ctx, p *plan.Hop, emit func(arrow.RecordBatch) error) error {
	var buf hop.Buf
	return run(ctx, p.In, func(rec arrow.RecordBatch) error {
		if err := ctx.Canceled(); err != nil {
			rec.Release()
			return err
		}
		defer rec.Release()
		return plan.CutForExpand([]plan.Plan{p}, rec, func(part arrow.RecordBatch, _, _ int) error {
			out, _, err := p.Expand(ctx.Expr, ctx.Alloc(), &buf, part)
			if err != nil {
				return err
			}
			return emit(out)
		})
	})
}
