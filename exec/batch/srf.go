package batch

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// srfBatch is the number of rows per batch a FuncScan emits.
const srfBatch = 64 << 10

func runFuncScan(ctx *plan.Ctx, p *plan.FuncScan, emit func(arrow.RecordBatch) error) error {
	args := make([]types.Datum, len(p.Args))
	for i, e := range p.Args {
		d, err := expr.EvalConst(ctx.Expr, e)
		if err != nil {
			return err
		}
		if d.Null {
			return nil
		}
		args[i] = d
	}
	return runSRF(ctx, p.Func, p.Types(), args, emit)
}

// runSRF emits the rows of set-returning function fn (one column of type
// ts[0]) for arguments that are not NULL.
func runSRF(ctx *plan.Ctx, fn string, ts []types.T, args []types.Datum, emit func(arrow.RecordBatch) error) error {
	switch fn {
	case "unnest":
		return unnest(ctx, ts, args[0].A, emit)
	case "jsonb_array_elements", "jsonb_array_elements_text", "jsonb_each", "jsonb_each_text", "regexp_matches":
		var rows []types.Datum
		var err error
		if fn == "regexp_matches" {
			rows, err = plan.SrfValues(fn, args, ts[0])
		} else {
			rows, err = types.JSONRows(fn, args[0].S)
		}
		if err != nil || len(rows) == 0 {
			return err
		}
		b := types.NewBuilder(ctx.Alloc(), ts[0])
		defer b.Release()
		for _, d := range rows {
			types.AppendDatum(b, d, ts[0])
		}
		return emit(opkit.NewRecord(ts, []arrow.Array{b.NewArray()}, len(rows)))
	case "generate_series":
		if ts[0].Kind == types.Timestamp {
			return seriesTimestamps(ctx, ts, args, emit)
		}
		return seriesInts(ctx, ts, args, emit)
	}
	return sqlerr.New(sqlerr.Internal, "exec: unknown set-returning function %s", fn)
}

// unnest emits the elements of a (held as their text) as values of the
// element type ts[0].
func unnest(ctx *plan.Ctx, ts []types.T, a *types.Array, emit func(arrow.RecordBatch) error) error {
	b := types.NewBuilder(ctx.Alloc(), ts[0])
	defer b.Release()
	for i, s := range a.Elems {
		switch {
		case a.IsNull(i):
			b.AppendNull()
		case ts[0].Kind == types.Text:
			types.AppendDatum(b, types.Str(s), ts[0])
		default:
			d, err := types.ParseText(s, ts[0])
			if err != nil {
				return err
			}
			types.AppendDatum(b, d, ts[0])
		}
		if b.Len() == srfBatch || i == len(a.Elems)-1 {
			if err := ctx.Check(); err != nil {
				return err
			}
			n := b.Len()
			if err := emit(opkit.NewRecord(ts, []arrow.Array{b.NewArray()}, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

func seriesInts(ctx *plan.Ctx, ts []types.T, args []types.Datum, emit func(arrow.RecordBatch) error) error {
	start, stop, step := args[0].I, args[1].I, int64(1)
	if len(args) == 3 {
		step = args[2].I
	}
	if step == 0 {
		return sqlerr.New(sqlerr.InvalidParameterValue, "step size cannot equal zero")
	}
	out := make([]int64, 0, srfBatch)
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		if err := ctx.Check(); err != nil {
			return err
		}
		b := types.NewBuilder(ctx.Alloc(), ts[0])
		defer b.Release()
		for _, v := range out {
			types.AppendDatum(b, types.Int(v), ts[0])
		}
		n := len(out)
		out = out[:0]
		return emit(opkit.NewRecord(ts, []arrow.Array{b.NewArray()}, n))
	}
	for v := start; step > 0 && v <= stop || step < 0 && v >= stop; {
		out = append(out, v)
		if len(out) == srfBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		next := v + step
		if (step > 0) != (next > v) { // past the type's range: the series ends
			break
		}
		v = next
	}
	return flush()
}

func seriesTimestamps(ctx *plan.Ctx, ts []types.T, args []types.Datum, emit func(arrow.RecordBatch) error) error {
	start, stop, step := args[0].I, args[1].I, args[2].IV
	if step == (arrow.MonthDayNanoInterval{}) {
		return sqlerr.New(sqlerr.InvalidParameterValue, "step size cannot equal zero")
	}
	// The direction is the step's at the start (PostgreSQL compares the
	// interval with zero the same way: months as 30 days).
	up := types.AddInterval(start, step) > start
	b := types.NewBuilder(ctx.Alloc(), ts[0])
	defer b.Release()
	// Each term is the previous one plus step, as PostgreSQL computes it
	// (so Jan 31 + 1 month + 1 month is Mar 28).
	for v, prev := start, start; ; prev, v = v, types.AddInterval(v, step) {
		if up && v > stop || !up && v < stop || v != start && (up && v <= prev || !up && v >= prev) {
			break // past stop, or a step that does not move this way here
		}
		types.AppendDatum(b, types.Int(v), ts[0])
		if b.Len() == srfBatch {
			if err := ctx.Check(); err != nil {
				return err
			}
			if err := emit(opkit.NewRecord(ts, []arrow.Array{b.NewArray()}, srfBatch)); err != nil {
				return err
			}
		}
	}
	if n := b.Len(); n > 0 {
		return emit(opkit.NewRecord(ts, []arrow.Array{b.NewArray()}, n))
	}
	return nil
}
