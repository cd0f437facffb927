package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// WinFrame is a window function's frame (plan.WindowFrame).
type WinFrame = plan.WindowFrame

// valueFuncString prints lag, lead, first_value, last_value or nth_value
// as written, with a frame that is not the default.
func valueFuncString(f plan.WindowFunc) string {
	name := map[plan.WindowFuncKind]string{plan.WinLag: "lag", plan.WinLead: "lead", plan.WinFirstValue: "first_value",
		plan.WinLastValue: "last_value", plan.WinNthValue: "nth_value"}[f.Kind]
	args := []string{f.Arg.String()}
	switch f.Kind {
	case plan.WinLag, plan.WinLead:
		n := fmt.Sprint(f.N)
		if f.NNull {
			n = "NULL"
		}
		args = append(args, n)
		if f.Default != nil {
			args = append(args, f.Default.String())
		}
		return name + "(" + strings.Join(args, ", ") + ")"
	case plan.WinNthValue:
		args = append(args, fmt.Sprint(f.N))
	}
	return name + "(" + strings.Join(args, ", ") + ")" + frameString(f.Frame)
}

// frameString is " ROWS BETWEEN ... AND ..." for a frame that is not the
// default, else "".
func frameString(f plan.WindowFrame) string {
	if f == plan.DefaultFrame {
		return ""
	}
	bound := func(b plan.FrameBound) string {
		switch b.Kind {
		case plan.BoundUnboundedPreceding:
			return "UNBOUNDED PRECEDING"
		case plan.BoundPreceding, plan.BoundFollowing:
			n := fmt.Sprint(b.N)
			if !f.Rows && !f.Groups {
				n = rangeOffsetString(b)
			}
			if b.Kind == plan.BoundPreceding {
				return n + " PRECEDING"
			}
			return n + " FOLLOWING"
		case plan.BoundCurrentRow:
			return "CURRENT ROW"
		}
		return "UNBOUNDED FOLLOWING"
	}
	mode := "RANGE"
	switch {
	case f.Rows:
		mode = "ROWS"
	case f.Groups:
		mode = "GROUPS"
	}
	return " " + mode + " BETWEEN " + bound(f.Start) + " AND " + bound(f.End)
}

// DefaultFrame is plan.DefaultFrame: RANGE UNBOUNDED PRECEDING to CURRENT ROW.
var DefaultFrame = plan.DefaultFrame

// Frame bound kinds (plan.FrameBoundKind).
const (
	BoundUnboundedPreceding = plan.BoundUnboundedPreceding
	BoundPreceding          = plan.BoundPreceding
	BoundCurrentRow         = plan.BoundCurrentRow
	BoundFollowing          = plan.BoundFollowing
	BoundUnboundedFollowing = plan.BoundUnboundedFollowing
)

// FrameBound is plan.FrameBound.
type FrameBound = plan.FrameBound

// rangeOffsetString prints a RANGE frame's offset (an integer, a float or
// a numeric scaled by 10^N or an interval, as plan.FrameBound.Off holds it).
func rangeOffsetString(b plan.FrameBound) string {
	d := b.Off
	switch {
	case d.D != (decimal128.Num{}) || b.N > 0:
		return types.NumericString(d.D, int32(b.N))
	case d.IV != (arrow.MonthDayNanoInterval{}):
		return "'" + types.TextOf(d, types.TInterval) + "'::interval"
	case d.F != 0:
		return fmt.Sprint(d.F)
	}
	return fmt.Sprint(d.I)
}
