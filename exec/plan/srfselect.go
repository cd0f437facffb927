package plan

import (
	"strings"

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

// srfValues lists the rows of one select-list function for one input row.
func SrfValues(fn string, args []types.Datum, t types.T) ([]types.Datum, error) {
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
