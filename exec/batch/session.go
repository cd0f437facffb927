package batch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/exec/session"
)

// runSession runs a session window aggregate in a batch query: every input
// row into the sessions, then every session out.
func runSession(ctx *plan.Ctx, p *plan.SessionAgg, emit func(arrow.RecordBatch) error) error {
	if err := plan.CheckSessionAggs(p.Aggs); err != nil {
		return err
	}
	o := session.New(plan.SessionSpec(p), ctx.Alloc())
	share := ctx.Heap()
	defer share.Release()
	if err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if err := o.Fold(ctx.Expr, rec); err != nil {
			return err
		}
		share.Set(o.Bytes())
		return ctx.Check()
	}); err != nil {
		return err
	}
	gids := o.All()
	const chunk = 64 << 10
	for len(gids) > 0 {
		part := gids[:min(len(gids), chunk)]
		gids = gids[len(part):]
		if err := ctx.Canceled(); err != nil {
			return err
		}
		rec, err := o.Build(part)
		if err != nil {
			return err
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}
