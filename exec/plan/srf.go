package plan

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// FuncScan is a set-returning function in FROM: its arguments are
// evaluated once (constants and parameters: FROM items see no other
// columns), and its rows come in batches of srfBatch.
//
//	generate_series(start, stop [, step])  integers (the arguments' type),
//	                                       step 1 by default, 0 is 22023
//	generate_series(start, stop, step)     timestamps by an interval step
//	unnest(array)                          the elements of a text[]
//	regexp_matches(s, re [, flags])        a text[] per match (SrfValues)
//	jsonb_array_elements[_text](j)         the elements of a jsonb array
//	jsonb_each[_text](j)                   (key, value) records of a jsonb object
//
// A NULL argument gives no rows, as in PostgreSQL.
type FuncScan struct {
	Func string
	Args []expr.Expr
	T    types.T
}

func (p *FuncScan) Types() []types.T { return []types.T{p.T} }

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

// SrfValues lists the rows of one select-list function for one input row.
func SrfValues(fn string, args []types.Datum, t types.T) ([]types.Datum, error) {
	if fn == "regexp_matches" {
		for _, a := range args {
			if a.Null {
				return nil, nil
			}
		}
		return expr.RegexpMatches(args[0].S, args[1].S, flagsArg(args))
	}
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
	// Outer (unnest only) gives a row whose array is NULL or empty one
	// output row with a NULL element: LEFT JOIN LATERAL ... ON true.
	Outer bool
}

func (p *LateralFuncScan) Types() []types.T {
	return append(append([]types.T(nil), p.In.Types()...), p.T)
}

// expand runs unnest over the rows of rec as a stateless stage (FROM t,
// unnest(t.a) AS u(x) in a batch query or a materialized view): each
// element of a row's array gives an output row, rec's row followed by the
// element; a NULL or empty array gives none. src holds, for each output
// row, the input row it came from (a retraction retracts its rows).
func (p *LateralFuncScan) Expand(ectx *expr.Ctx, mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	arg, err := expr.Eval(ectx, p.Args[0], rec)
	if err != nil {
		return nil, nil, err
	}
	defer arg.Release()
	at := p.Args[0].Type()
	if lst, ok := arg.(*array.List); ok && p.Func == "unnest" && p.T == types.ArrayElem(at) {
		return p.expandList(mem, rec, lst)
	}
	// The other arguments (regexp_matches' pattern and flags).
	rest := make([]arrow.Array, len(p.Args)-1)
	for i, e := range p.Args[1:] {
		if rest[i], err = expr.Eval(ectx, e, rec); err != nil {
			return nil, nil, err
		}
		defer rest[i].Release()
	}
	vb := types.NewBuilder(mem, p.T)
	defer vb.Release()
	var src []int
	args := make([]types.Datum, len(p.Args))
	for r := 0; r < int(rec.NumRows()); r++ {
		args[0] = types.DatumAt(arg, r, at)
		for i, a := range rest {
			args[i+1] = types.DatumAt(a, r, p.Args[i+1].Type())
		}
		vals, err := SrfValues(p.Func, args, p.T)
		if err != nil {
			return nil, nil, err
		}
		for _, v := range vals {
			src = append(src, r)
			types.AppendDatum(vb, v, p.T)
		}
		if len(vals) == 0 && p.Outer {
			src = append(src, r)
			vb.AppendNull()
		}
	}
	return p.withValues(mem, rec, src, vb.NewArray()), src, nil
}

// expandList is expand of unnest over an array column: the output rows'
// elements are taken from the list's values, typed, with no per-element
// boxing.
func (p *LateralFuncScan) expandList(mem memory.Allocator, rec arrow.RecordBatch, lst *array.List) (arrow.RecordBatch, []int, error) {
	n := int(rec.NumRows())
	end := 0
	if n > 0 {
		_, e := lst.ValueOffsets(n - 1)
		end = int(e)
	}
	src, pos := make([]int, 0, end), make([]int, 0, end)
	for r := 0; r < n; r++ {
		s, e := lst.ValueOffsets(r)
		if lst.IsNull(r) || s == e {
			if p.Outer {
				src = append(src, r)
				pos = append(pos, -1) // a NULL element
			}
			continue
		}
		for j := int(s); j < int(e); j++ {
			src = append(src, r)
			pos = append(pos, j)
		}
	}
	return p.withValues(mem, rec, src, opkit.TakeArrayMem(mem, lst.ListValues(), pos, p.T)), src, nil
}

// withValues is the output of expand: the rows src of rec, each followed by
// its value in vals (owned by the result).
func (p *LateralFuncScan) withValues(mem memory.Allocator, rec arrow.RecordBatch, src []int, vals arrow.Array) arrow.RecordBatch {
	inTs := p.In.Types()
	out := opkit.TakeRecordMem(mem, rec, src, inTs)
	cols := make([]arrow.Array, 0, len(inTs)+1)
	for _, c := range out.Columns() {
		c.Retain()
		cols = append(cols, c)
	}
	out.Release()
	return opkit.NewRecord(p.Types(), append(cols, vals), len(src))
}

// flagsArg is the optional third argument of a regular expression function.
func flagsArg(args []types.Datum) string {
	if len(args) > 2 {
		return args[2].S
	}
	return ""
}
