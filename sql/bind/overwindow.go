package bind

import (
	"math"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// valueFuncs are the window functions that return their argument at
// another row: lag/lead by an offset from the current row, the others at a
// position in the frame.
var valueFuncs = map[string]planner.WinFuncKind{"lag": planner.WinLag, "lead": planner.WinLead,
	"first_value": planner.WinFirstValue, "last_value": planner.WinLastValue, "nth_value": planner.WinNthValue}

// bindValueFunc binds lag(x [, offset [, default]]), lead(...),
// first_value(x), last_value(x) and nth_value(x, n) into fn. The offset and
// n must be integer constants (PostgreSQL also takes an expression per
// row: refused). The default and x meet at their common type, as
// PostgreSQL's anycompatible arguments do.
func (b *Binder) bindValueFunc(c *ectx, name string, n *ast.WindowFuncExpr, fn *planner.WinFunc) error {
	fn.Kind = valueFuncs[name]
	lo, hi := 1, 1
	switch fn.Kind {
	case planner.WinLag, planner.WinLead:
		hi = 3
	case planner.WinNthValue:
		lo, hi = 2, 2
	}
	if len(n.Args) < lo || len(n.Args) > hi || n.Distinct {
		return sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
	}
	arg, err := b.bindExpr(c, n.Args[0])
	if err != nil {
		return err
	}
	args := []expr.Expr{arg}
	if len(n.Args) == 3 {
		def, err := b.bindExpr(c, n.Args[2])
		if err != nil {
			return err
		}
		args = append(args, def)
	}
	t, err := b.unify(args, strings.ToUpper(name))
	if err != nil {
		return sqlerr.New(sqlerr.UndefinedFunction, "function %s(%s, integer, %s) does not exist", name, typeName(args[0].Type()), typeName(args[1].Type()))
	}
	for i := range args {
		if args[i], err = b.castTo(args[i], t); err != nil {
			return err
		}
	}
	fn.Arg, fn.T = args[0], t
	if len(args) == 2 {
		fn.Default = args[1]
	}
	if fn.Kind == planner.WinLag || fn.Kind == planner.WinLead {
		fn.N = 1
	}
	if len(n.Args) >= 2 {
		what := "the offset of " + name
		if fn.Kind == planner.WinNthValue {
			what = "the position of nth_value"
		}
		v, null, err := b.windowInt(c, n.Args[1], what, false)
		if err != nil {
			return err
		}
		fn.N, fn.NNull = v, null
	}
	return nil
}

// windowInt reads an integer constant argument of a window function or
// frame (NULL reports null). A ROWS or GROUPS frame offset (frame) takes
// any numeric type, converted to bigint as PostgreSQL's assignment cast
// does (1.5 PRECEDING is 2 PRECEDING, numeric rounding half away from
// zero); a function's argument is an integer literal (sql/parse refuses
// every other lag/lead/nth_value offset, as PostgreSQL resolves lag(x,
// integer) only).
func (b *Binder) windowInt(c *ectx, n ast.ExprNode, what string, frame bool) (v int64, null bool, err error) {
	e, err := b.bindExpr(c, n)
	if err != nil {
		return 0, false, err
	}
	if e, err = b.coerce(e, types.TInt64); err != nil {
		return 0, false, err
	}
	if k := e.Type().Kind; frame && (k == types.Numeric || k == types.Float32 || k == types.Float64) {
		if e, err = b.castTo(e, types.TInt64); err != nil {
			return 0, false, err
		}
	}
	if _, isConst := e.(*expr.Const); !isConst && frame && expr.IsConst(e) {
		// An offset expression (2 - 1 PRECEDING): PostgreSQL evaluates it once.
		d, err := expr.EvalConst(&expr.Ctx{}, e)
		if err != nil {
			return 0, false, err
		}
		e = &expr.Const{D: d, T: e.Type()}
	}
	k, ok := e.(*expr.Const)
	if ok && k.D.Null {
		return 0, true, nil
	}
	switch e.Type().Kind {
	case types.Int16, types.Int32, types.Int64:
		if ok {
			return k.D.I, false, nil
		}
		return 0, false, sqlerr.New(sqlerr.FeatureNotSupported, "%s must be a constant (an expression per row is not supported)", what)
	}
	return 0, false, sqlerr.New(sqlerr.DatatypeMismatch, "%s must be type integer, not type %s", what, typeName(e.Type()))
}

// bindFrame binds a frame clause (nil: the default frame) with
// PostgreSQL's checks. ROWS frames take any bounds; RANGE frames take an
// offset over one ORDER BY key (rangeBound); GROUPS frames count peer
// groups with integer offsets and need an ORDER BY (42P20). Aggregates
// take every frame: a RANGE frame without offsets that the running and
// whole-partition folds do not compute runs as the GROUPS frame of the same
// ends.
func (b *Binder) bindFrame(c *ectx, f *ast.FrameClause, fn *planner.WinFunc, order []planner.SortKey) error {
	fn.Frame = planner.DefaultFrame
	if f == nil {
		return nil
	}
	var fr planner.WinFrame
	switch f.Type {
	case ast.Rows:
		fr.Rows = true
	case ast.Ranges:
	default:
		if len(order) == 0 {
			return sqlerr.New(sqlerr.WindowingError, "GROUPS mode requires an ORDER BY clause")
		}
		fr.Groups = true
	}
	var err error
	if fr.Start, err = b.frameBound(c, f.Extent.Start, fr.Rows || fr.Groups, "starting", order); err != nil {
		return err
	}
	if fr.End, err = b.frameBound(c, f.Extent.End, fr.Rows || fr.Groups, "ending", order); err != nil {
		return err
	}
	s, e := fr.Start.Kind, fr.End.Kind
	switch {
	case s == planner.BoundUnboundedFollowing:
		return sqlerr.New(sqlerr.WindowingError, "frame start cannot be UNBOUNDED FOLLOWING")
	case e == planner.BoundUnboundedPreceding:
		return sqlerr.New(sqlerr.WindowingError, "frame end cannot be UNBOUNDED PRECEDING")
	case s == planner.BoundCurrentRow && e == planner.BoundPreceding:
		return sqlerr.New(sqlerr.WindowingError, "frame starting from current row cannot have preceding rows")
	case s == planner.BoundFollowing && (e == planner.BoundPreceding || e == planner.BoundCurrentRow):
		return sqlerr.New(sqlerr.WindowingError, "frame starting from following row cannot have preceding rows")
	}
	if r := fr; fr.Groups && !offsetBound(fr.Start) && !offsetBound(fr.End) {
		// Without offsets a GROUPS frame is the RANGE frame of the same
		// ends: run it as one where the RANGE kernels take it.
		r.Groups = false
		if fn.Kind != planner.WinAgg || aggFrame(r) {
			fr = r
		}
	}
	if fn.Kind == planner.WinAgg && !aggFrame(fr) && !fr.Rows && !fr.Groups {
		// A RANGE frame without offsets is made of peer groups: the GROUPS
		// frame of the same ends is the same frame, which the kernels take.
		// Without ORDER BY every row is a peer: the frame is the partition.
		if len(order) > 0 {
			fr.Groups = true
		} else {
			fr = planner.DefaultFrame
		}
	}
	fn.Frame = fr
	return nil
}

// offsetBound says b is n PRECEDING or n FOLLOWING.
func offsetBound(b planner.FrameBound) bool {
	return b.Kind == planner.BoundPreceding || b.Kind == planner.BoundFollowing
}

// frameBound binds one end of a frame.
func (b *Binder) frameBound(c *ectx, fb ast.FrameBound, rows bool, what string, order []planner.SortKey) (planner.FrameBound, error) {
	switch {
	case fb.Type == ast.CurrentRow:
		return planner.FrameBound{Kind: planner.BoundCurrentRow}, nil
	case fb.UnBounded && fb.Type == ast.Preceding:
		return planner.FrameBound{Kind: planner.BoundUnboundedPreceding}, nil
	case fb.UnBounded:
		return planner.FrameBound{Kind: planner.BoundUnboundedFollowing}, nil
	}
	if f, ok := fb.Expr.(*ast.FuncCallExpr); ok && fb.Unit != ast.TimeUnitInvalid && f.FnName.L == "pg_frame_offset" && len(f.Args) == 1 {
		// An offset expression the dialect layer wrapped (sql/parse frameOffsetPiece).
		fb.Expr, fb.Unit = f.Args[0], ast.TimeUnitInvalid
	}
	switch {
	case !rows:
		return b.rangeBound(c, fb, what, order)
	}
	v, null, err := b.windowInt(c, fb.Expr, "the frame "+what+" offset", true)
	switch {
	case err != nil:
		return planner.FrameBound{}, err
	case null:
		return planner.FrameBound{}, sqlerr.New(sqlerr.NullValueNotAllowed, "frame %s offset must not be null", what)
	case v < 0:
		return planner.FrameBound{}, sqlerr.New("22013", "frame %s offset must not be negative", what)
	}
	k := planner.BoundPreceding
	if fb.Type == ast.Following {
		k = planner.BoundFollowing
	}
	return planner.FrameBound{Kind: k, N: v}, nil
}

// valueFuncName names the value functions in plans.
var valueFuncName = map[planner.WinFuncKind]string{planner.WinLag: "lag", planner.WinLead: "lead",
	planner.WinFirstValue: "first_value", planner.WinLastValue: "last_value", planner.WinNthValue: "nth_value"}

// aggFrame reports whether the window aggregates compute frame f (see
// exec's windowAgg and windowAggSliding): every ROWS and GROUPS frame,
// RANGE frames with an offset, the default and the whole partition.
func aggFrame(f planner.WinFrame) bool {
	return f.Rows || f.Groups || f.WholePartition() || f == planner.DefaultFrame || f.RangeOffset()
}

// rangeBound binds n PRECEDING or n FOLLOWING of a RANGE frame: one ORDER
// BY key (42P20 otherwise, as PostgreSQL), of an integer type with an
// integer offset, a floating-point type or numeric with a numeric offset,
// or timestamp, timestamptz, date, time or timetz with an interval offset
// (INTERVAL '1' HOUR).
func (b *Binder) rangeBound(c *ectx, fb ast.FrameBound, what string, order []planner.SortKey) (planner.FrameBound, error) {
	if len(order) != 1 {
		return planner.FrameBound{}, sqlerr.New(sqlerr.WindowingError, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
	}
	kt := order[0].E.Type()
	var off expr.Expr
	if fb.Unit != ast.TimeUnitInvalid {
		// The dialect layer writes every interval literal before PRECEDING
		// or FOLLOWING as INTERVAL 'text' MICROSECOND (TiDB's grammar
		// takes no other expression there): text is the whole interval.
		v, ok := fb.Expr.(ast.ValueExpr)
		s, isStr := "", false
		if ok {
			switch x := v.GetValue().(type) {
			case string:
				s, isStr = x, true
			case int64:
				s, isStr = strconv.FormatInt(x, 10), true
			}
		}
		if !isStr {
			return planner.FrameBound{}, sqlerr.New(sqlerr.FeatureNotSupported, "the frame %s offset must be a constant", what)
		}
		d, err := types.ParseText(s, types.TInterval)
		if err != nil {
			return planner.FrameBound{}, err
		}
		off = &expr.Const{D: d, T: types.TInterval}
	} else {
		var err error
		if off, err = b.bindExpr(c, fb.Expr); err != nil {
			return planner.FrameBound{}, err
		}
	}
	if !expr.IsConst(off) {
		return planner.FrameBound{}, sqlerr.New(sqlerr.FeatureNotSupported, "the frame %s offset must be a constant (an expression per row is not supported)", what)
	}
	ok := false
	ot := off.Type().Kind
	intOff := ot == types.Int16 || ot == types.Int32 || ot == types.Int64
	var want types.T
	switch kt.Kind {
	case types.Int16, types.Int32, types.Int64:
		ok, want = intOff, types.TInt64
	case types.Float32, types.Float64:
		ok, want = intOff || ot == types.Numeric || ot == types.Float32 || ot == types.Float64, types.TFloat64
	case types.Numeric:
		ok, want = intOff || ot == types.Numeric, types.TNumeric
	case types.Timestamp, types.Date, types.Time, types.TimeTZ:
		ok, want = ot == types.Interval, types.TInterval
	default:
		return planner.FrameBound{}, sqlerr.New(sqlerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s", typeName(kt))
	}
	if !ok {
		return planner.FrameBound{}, sqlerr.New(sqlerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", typeName(kt), typeName(off.Type()))
	}
	if ot == types.Numeric {
		want = off.Type() // keep the offset's own digits
	}
	off, err := b.castTo(off, want)
	if err != nil {
		return planner.FrameBound{}, err
	}
	d, err := expr.EvalConst(&expr.Ctx{}, off)
	if err != nil {
		return planner.FrameBound{}, err
	}
	neg := false
	switch want.Kind {
	case types.Int64:
		neg = d.I < 0
	case types.Float64:
		neg = d.F < 0 || math.IsNaN(d.F)
	case types.Numeric:
		neg = d.D.Sign() < 0
	case types.Interval:
		if kt.Kind == types.Time || kt.Kind == types.TimeTZ {
			neg = d.IV.Nanoseconds < 0 // in_range(time[tz], interval) reads only the time part
		} else {
			neg = types.IntervalMicros(d.IV) < 0
		}
	}
	switch {
	case d.Null:
		return planner.FrameBound{}, sqlerr.New(sqlerr.NullValueNotAllowed, "frame %s offset must not be null", what)
	case neg:
		return planner.FrameBound{}, sqlerr.New("22013", "invalid preceding or following size in window function")
	}
	scale := int64(0)
	if want.Kind == types.Numeric {
		scale = int64(want.Scale)
	}
	k := planner.BoundPreceding
	if fb.Type == ast.Following {
		k = planner.BoundFollowing
	}
	return planner.FrameBound{Kind: k, Off: d, N: scale}, nil
}
