package exec

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// ProjectSRF runs the set-returning functions of a select list per row of
// In, in lockstep as PostgreSQL 10+ does: an input row gives as many rows
// as its longest function result, the shorter ones padded with NULL, In's
// columns repeated; a row whose functions all give nothing (a NULL or
// empty array) gives no row. Its columns are In's, then one per function.
//
//	unnest(array)                    the elements (text, or the integer
//	                                 type of an int2vector/int2[])
//	generate_subscripts(array, dim)  1..length of dimension 1 (int4);
//	                                 other dimensions give no rows
//	_pg_expandarray(array)           a record (x, n) per element: the
//	                                 element and its index (int4)
//
// The input is a catalog-sized relation (the select lists drivers send
// over pg_index), read whole as LateralFuncScan's.
type ProjectSRF struct {
	In    Plan
	Funcs []string
	Args  [][]expr.Expr
	Ts    []types.T
}

func (p *ProjectSRF) Types() []types.T {
	return append(append([]types.T(nil), p.In.Types()...), p.Ts...)
}

func runProjectSRF(ctx *Ctx, p *ProjectSRF, emit func(arrow.RecordBatch) error) error {
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
		bs[i] = types.NewBuilder(ctx.alloc(), t)
		defer bs[i].Release()
	}
	rows := 0
	vals := make([][]types.Datum, len(p.Funcs))
	for r := 0; r < int(rec.NumRows()); r++ {
		if err := ctx.check(); err != nil {
			return err
		}
		n := 0
		for f, fn := range p.Funcs {
			args := make([]types.Datum, len(argv[f]))
			for i, a := range argv[f] {
				args[i] = types.DatumAt(a, r, p.Args[f][i].Type())
			}
			if vals[f], err = srfValues(fn, args, p.Ts[f]); err != nil {
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
	return emit(newRecord(ts, cols, rows))
}

// srfValues lists the rows of one select-list function for one input row.
func srfValues(fn string, args []types.Datum, t types.T) ([]types.Datum, error) {
	if len(args) == 1 && !args[0].Null && strings.HasPrefix(fn, "jsonb_") {
		return types.JSONRows(fn, args[0].S)
	}
	if len(args) == 0 || args[0].Null || args[0].A == nil {
		return nil, nil
	}
	a := args[0].A
	switch fn {
	case "unnest":
		out := make([]types.Datum, len(a.Elems))
		for i, s := range a.Elems {
			if a.IsNull(i) {
				out[i] = types.Datum{Null: true}
				continue
			}
			d, err := types.ParseText(s, t)
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	case "_pg_expandarray":
		// information_schema._pg_expandarray(array): a record (x, n) per
		// element, x the element and n its index.
		xt := types.RecordFields(t)[0].T
		out := make([]types.Datum, len(a.Elems))
		for i, s := range a.Elems {
			x := types.Datum{Null: true}
			if !a.IsNull(i) {
				var err error
				if x, err = types.ParseText(s, xt); err != nil {
					return nil, err
				}
			}
			out[i] = types.Datum{R: &types.RecordValue{Fields: []types.Datum{x, types.Int(int64(i + 1))}}}
		}
		return out, nil
	case "generate_subscripts":
		if args[1].Null || args[1].I != 1 {
			return nil, nil
		}
		out := make([]types.Datum, len(a.Elems))
		for i := range out {
			out[i] = types.Int(int64(i + 1))
		}
		return out, nil
	}
	return nil, nil
}
