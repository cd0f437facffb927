package exec

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// LateralFuncScan runs a set-returning function once per row of In, its
// arguments over In's columns: each output row is the input row followed
// by one of the function's values (a row whose arguments give no values,
// or has a NULL argument, gives no rows). It is how a set-returning
// function in the FROM of a correlated subquery reads the enclosing
// query's values: In is the distinct outer values (sql/bind/corrdomain.go),
// a catalog-sized input; the input row's columns are repeated per value.
type LateralFuncScan struct {
	In   Plan
	Func string
	Args []expr.Expr
	T    types.T
}

func (p *LateralFuncScan) Types() []types.T {
	return append(append([]types.T(nil), p.In.Types()...), p.T)
}

func runLateralFuncScan(ctx *Ctx, p *LateralFuncScan, emit func(arrow.RecordBatch) error) error {
	rec, err := collect(ctx, p.In)
	if err != nil || rec == nil {
		return err
	}
	defer rec.Release()
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
		if err := ctx.check(); err != nil {
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
				b := types.NewBuilder(ctx.alloc(), t)
				for j := 0; j < m; j++ {
					types.AppendDatum(b, d, t)
				}
				cols = append(cols, b.NewArray())
				b.Release()
			}
			v := vals.Column(0)
			v.Retain()
			return emit(newRecord(ts, append(cols, v), m))
		})
		if err != nil {
			return err
		}
	}
	return nil
}
