package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/streamdb/streamdb/types"

	"github.com/streamdb/streamdb/exec"
)

// WinFrame is a window function's frame (exec.WindowFrame).
type WinFrame = exec.WindowFrame

// valueFuncString prints lag, lead, first_value, last_value or nth_value
// as written, with a frame that is not the default.
func valueFuncString(f exec.WindowFunc) string {
	name := map[exec.WindowFuncKind]string{exec.WinLag: "lag", exec.WinLead: "lead", exec.WinFirstValue: "first_value",
		exec.WinLastValue: "last_value", exec.WinNthValue: "nth_value"}[f.Kind]
	args := []string{f.Arg.String()}
	switch f.Kind {
	case exec.WinLag, exec.WinLead:
		n := fmt.Sprint(f.N)
		if f.NNull {
			n = "NULL"
		}
		args = append(args, n)
		if f.Default != nil {
			args = append(args, f.Default.String())
		}
		return name + "(" + strings.Join(args, ", ") + ")"
	case exec.WinNthValue:
		args = append(args, fmt.Sprint(f.N))
	}
	return name + "(" + strings.Join(args, ", ") + ")" + frameString(f.Frame)
}

// frameString is " ROWS BETWEEN ... AND ..." for a frame that is not the
// default, else "".
func frameString(f exec.WindowFrame) string {
	if f == exec.DefaultFrame {
		return ""
	}
	bound := func(b exec.FrameBound) string {
		switch b.Kind {
		case exec.BoundUnboundedPreceding:
			return "UNBOUNDED PRECEDING"
		case exec.BoundPreceding, exec.BoundFollowing:
			n := fmt.Sprint(b.N)
			if !f.Rows && !f.Groups {
				n = rangeOffsetString(b)
			}
			if b.Kind == exec.BoundPreceding {
				return n + " PRECEDING"
			}
			return n + " FOLLOWING"
		case exec.BoundCurrentRow:
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

// DefaultFrame is exec.DefaultFrame: RANGE UNBOUNDED PRECEDING to CURRENT ROW.
var DefaultFrame = exec.DefaultFrame

// Frame bound kinds (exec.FrameBoundKind).
const (
	BoundUnboundedPreceding = exec.BoundUnboundedPreceding
	BoundPreceding          = exec.BoundPreceding
	BoundCurrentRow         = exec.BoundCurrentRow
	BoundFollowing          = exec.BoundFollowing
	BoundUnboundedFollowing = exec.BoundUnboundedFollowing
)

// FrameBound is exec.FrameBound.
type FrameBound = exec.FrameBound

// rangeOffsetString prints a RANGE frame's offset (an integer, a float or
// a numeric scaled by 10^N or an interval, as exec.FrameBound.Off holds it).
func rangeOffsetString(b exec.FrameBound) string {
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
