package batch

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

func runLateralFuncScan(ctx *plan.Ctx, p *plan.LateralFuncScan, emit func(arrow.RecordBatch) error) error {
	rec, err := collect(ctx, p.In)
	if err != nil || rec == nil {
		return err
	}
	defer rec.Release()
	if p.Func == "unnest" {
		out, _, err := p.Expand(ctx.Expr, ctx.Alloc(), rec)
		if err != nil {
			return err
		}
		return emit(out)
	}
	argv := make([]arrow.Array, len(p.Args))
	for i, e := range p.Args {
		a, err := expr.Eval(ctx.Expr, e, rec)
		if err != nil {
			return err
		}
		defer a.Release()
		argv[i] = a
	}
	inTs, ts := p.In.Types(), p.Types()
	args := make([]types.Datum, len(p.Args))
	for r := 0; r < int(rec.NumRows()); r++ {
		if err := ctx.Check(); err != nil {
			return err
		}
		null := false
		for i, a := range argv {
			args[i] = types.DatumAt(a, r, p.Args[i].Type())
			null = null || args[i].Null
		}
		if null {
			continue
		}
		err := runSRF(ctx, p.Func, ts[len(inTs):], args, func(vals arrow.RecordBatch) error {
			defer vals.Release()
			m := int(vals.NumRows())
			cols := make([]arrow.Array, 0, len(ts))
			for c, t := range inTs {
				d := types.DatumAt(rec.Column(c), r, t)
				b := types.NewBuilder(ctx.Alloc(), t)
				for j := 0; j < m; j++ {
					types.AppendDatum(b, d, t)
				}
				cols = append(cols, b.NewArray())
				b.Release()
			}
			v := vals.Column(0)
			v.Retain()
			return emit(opkit.NewRecord(ts, append(cols, v), m))
		})
		if err != nil {
			return err
		}
	}
	return nil
}
