package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	if p.Func == "unnest" {
		out, _, err := p.expand(ctx.Expr, ctx.alloc(), rec)
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

// expand runs unnest over the rows of rec as a stateless stage (FROM t,
// unnest(t.a) AS u(x) in a batch query or a materialized view): each
// element of a row's array gives an output row, rec's row followed by the
// element; a NULL or empty array gives none. src holds, for each output
// row, the input row it came from (a retraction retracts its rows).
func (p *LateralFuncScan) expand(ectx *expr.Ctx, mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	arg, err := expr.Eval(ectx, p.Args[0], rec)
	if err != nil {
		return nil, nil, err
	}
	defer arg.Release()
	at := p.Args[0].Type()
	vb := types.NewBuilder(mem, p.T)
	defer vb.Release()
	var src []int
	for r := 0; r < int(rec.NumRows()); r++ {
		vals, err := srfValues(p.Func, []types.Datum{types.DatumAt(arg, r, at)}, p.T)
		if err != nil {
			return nil, nil, err
		}
		for _, v := range vals {
			src = append(src, r)
			types.AppendDatum(vb, v, p.T)
		}
	}
	inTs := p.In.Types()
	out := takeRecordMem(mem, rec, src, inTs)
	cols := make([]arrow.Array, 0, len(inTs)+1)
	for _, c := range out.Columns() {
		c.Retain()
		cols = append(cols, c)
	}
	out.Release()
	cols = append(cols, vb.NewArray())
	return newRecord(p.Types(), cols, len(src)), src, nil
}
