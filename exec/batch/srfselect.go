package batch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

func runProjectSRF(ctx *plan.Ctx, p *plan.ProjectSRF, emit func(arrow.RecordBatch) error) error {
	rec, err := collect(ctx, p.In)
	if err != nil || rec == nil {
		return err
	}
	defer rec.Release()
	argv := make([][]arrow.Array, len(p.Funcs))
	for f, args := range p.Args {
		for _, e := range args {
			a, err := expr.Eval(ctx.Expr, e, rec)
			if err != nil {
				return err
			}
			defer a.Release()
			argv[f] = append(argv[f], a)
		}
	}
	inTs, ts := p.In.Types(), p.Types()
	bs := make([]array.Builder, len(ts))
	for i, t := range ts {
		bs[i] = types.NewBuilder(ctx.Alloc(), t)
		defer bs[i].Release()
	}
	rows := 0
	vals := make([][]types.Datum, len(p.Funcs))
	for r := 0; r < int(rec.NumRows()); r++ {
		if err := ctx.Check(); err != nil {
			return err
		}
		n := 0
		for f, fn := range p.Funcs {
			args := make([]types.Datum, len(argv[f]))
			for i, a := range argv[f] {
				args[i] = types.DatumAt(a, r, p.Args[f][i].Type())
			}
			if vals[f], err = plan.SrfValues(fn, args, p.Ts[f]); err != nil {
				return err
			}
			n = max(n, len(vals[f]))
		}
		for j := 0; j < n; j++ {
			for c, t := range inTs {
				types.AppendDatum(bs[c], types.DatumAt(rec.Column(c), r, t), t)
			}
			for f, t := range p.Ts {
				d := types.Datum{Null: true}
				if j < len(vals[f]) {
					d = vals[f][j]
				}
				types.AppendDatum(bs[len(inTs)+f], d, t)
			}
		}
		rows += n
	}
	if rows == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(ts))
	for i, b := range bs {
		cols[i] = b.NewArray()
	}
	return emit(opkit.NewRecord(ts, cols, rows))
}
