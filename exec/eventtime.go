package exec

import (
	"fmt"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
)

// Which watermark bounds an operator's time.
//
// A job's watermark W is one event time for all its rows (watermark.go):
// the least, over the streams under an operator, of their largest
// WATERMARK FOR column value minus its delay. It bounds the WATERMARK FOR
// columns only: a row arriving later has ts >= W unless it is late. An
// operator that closes windows, frees join rows or drops late rows by W
// must therefore act on a time that W bounds: a stream's WATERMARK FOR
// column, read through projections (renames), filters, unions, HOP and
// CUMULATE expansions and set-returning functions, which pass its values
// on unchanged and as they come, plus or minus a fixed interval d: then
// its own watermark is W + d (ts - INTERVAL '2' HOUR closes two hours
// later than ts). Anything else has no watermark: another timestamp
// column, a column computed from one (other than ± a fixed interval), a
// column read from a materialized view's changelog, from a join's output
// (a pair appears when its later row comes, however old the other's
// time), an aggregate's (but the key that closes a window aggregate's
// groups, whose rows come while their window is open) or a window
// function's. An operator over such a
// time never closes and never drops a row: a window aggregate is a plain
// grouping (its view equals the batch query), a top-N per window keeps
// every window, a session window never ends, an interval or window join
// keeps the rows whose partners' time is unbounded. EMIT ON WINDOW CLOSE,
// which needs windows to close, is refused (0A000) naming the column and
// the watermark it lacks (docs/decisions/2026-12-06-watermark-bounds.md).

// timeTrace is where an operator's time expression comes from.
type timeTrace struct {
	ok    bool
	shift int64  // ok: the time is the watermark column plus shift µs
	why   string // !ok: why no watermark bounds it
}

// timeBound reports whether e, a timestamp over p's rows, is bounded by
// the watermark its rows arrive with, and how far ahead of it: a row
// not behind its time's own watermark has e >= W + shift.
func timeBound(p plan.Plan, e expr.Expr) (shift int64, ok bool) {
	t := traceTime(p, e)
	return t.shift, t.ok
}

func unbounded(format string, args ...any) timeTrace {
	return timeTrace{why: fmt.Sprintf(format, args...)}
}

// traceTime follows e, over p's rows, down to a stream column.
func traceTime(p plan.Plan, e expr.Expr) timeTrace {
	switch x := e.(type) {
	case *expr.ColRef:
		return traceColumn(p, x.Idx)
	case *expr.Func:
		if len(x.Args) != 2 || x.Name != "+" && x.Name != "-" {
			break
		}
		a, b := x.Args[0], x.Args[1]
		iv, ok := intervalConst(b)
		if !ok && x.Name == "+" {
			a, b = b, a // interval + ts
			iv, ok = intervalConst(b)
		}
		if !ok {
			break
		}
		t := traceTime(p, a)
		if x.Name == "-" {
			iv = -iv
		}
		t.shift += iv
		return t
	}
	return unbounded("%s is not a column with a watermark, plus or minus a fixed interval", traceExprPlan(p, e))
}

// traceColumn follows column i of p's rows.
func traceColumn(p plan.Plan, i int) timeTrace {
	switch p := p.(type) {
	case *plan.ScanStream:
		t := p.Table
		if i >= len(t.Columns) {
			break
		}
		if t.Watermark == nil {
			return unbounded("%s.%s has no watermark: %s has no WATERMARK FOR", t.Name, t.Columns[i].Name, t.Name)
		}
		if t.Column(t.Watermark.Column) != i {
			return unbounded("%s.%s has no watermark: the watermark of %s is on %s (WATERMARK FOR %s)",
				t.Name, t.Columns[i].Name, t.Name, t.Watermark.Column, t.Watermark.Column)
		}
		return timeTrace{ok: true}
	case *plan.ScanView:
		if i < len(p.View.Columns) {
			return unbounded("%s.%s has no watermark: it is read from a materialized view's changes", p.View.Name, p.View.Columns[i].Name)
		}
	case *plan.Project:
		if i < len(p.Exprs) {
			return traceTime(p.In, p.Exprs[i])
		}
	case *plan.Filter:
		return traceColumn(p.In, i)
	case *plan.Sort:
		if p.Limit < 0 {
			return traceColumn(p.In, i)
		}
	case *plan.Hop:
		if i < len(p.In.Types()) {
			return traceColumn(p.In, i)
		}
	case *plan.LateralFuncScan:
		if i < len(p.In.Types()) {
			return traceColumn(p.In, i)
		}
	case *plan.ProjectSRF:
		if i < len(p.In.Types()) {
			return traceColumn(p.In, i)
		}
	case *plan.Union:
		var out timeTrace
		for k, in := range p.Ins {
			t := traceColumn(in, i)
			if !t.ok {
				return t
			}
			if k == 0 || t.shift < out.shift {
				out = t // the least bound holds for every branch
			}
		}
		return out
	case *plan.HashAgg:
		// A window aggregate's rows for a window come until the barrier
		// whose watermark closes it, and the operators after it judge
		// them by the watermark before that one: its closing key is
		// ahead of that watermark (Nexmark q7 joins it with its stream).
		if w := windowCloseOf(p); w != nil && i == w.Key {
			return timeTrace{ok: true, shift: w.Shift - w.Offset + 1}
		}
	case *plan.HashJoin:
		return unbounded("%s has no watermark: it is read through a join, whose rows come when their later side does", traceColumnName(p, i))
	}
	return unbounded("%s has no watermark: it is computed by %s", traceColumnName(p, i), planName(p))
}

// traceColumnName names column i of p's rows by where it comes from.
func traceColumnName(p plan.Plan, i int) string {
	return traceExprPlan(p, &expr.ColRef{Idx: i})
}

// traceExprPlan renders e, over p's rows, with its columns named by the
// stream or view column they come from.
func traceExprPlan(p plan.Plan, e expr.Expr) string {
	return renderWith(e, func(c *expr.ColRef) string {
		switch q := p.(type) {
		case *plan.ScanStream:
			if c.Idx < len(q.Table.Columns) {
				return q.Table.Name + "." + q.Table.Columns[c.Idx].Name
			}
		case *plan.ScanView:
			if c.Idx < len(q.View.Columns) {
				return q.View.Name + "." + q.View.Columns[c.Idx].Name
			}
		case *plan.Project:
			if c.Idx < len(q.Exprs) {
				return traceExprPlan(q.In, q.Exprs[c.Idx])
			}
		case *plan.Filter:
			return traceExprPlan(q.In, c)
		case *plan.Hop:
			if c.Idx < len(q.In.Types()) {
				return traceExprPlan(q.In, c)
			}
		case *plan.HashJoin:
			if nl := len(q.Left.Types()); c.Idx < nl {
				return traceExprPlan(q.Left, c)
			} else if q.Kind != plan.JoinSemi && q.Kind != plan.JoinAnti {
				return traceExprPlan(q.Right, &expr.ColRef{Idx: c.Idx - nl})
			}
		case *plan.Union:
			if len(q.Ins) > 0 {
				return traceExprPlan(q.Ins[0], c)
			}
		}
		return fmt.Sprintf("column %d", c.Idx+1)
	})
}

// errNeedsWatermark refuses an operator that must close by a watermark
// (EMIT ON WINDOW CLOSE) over a time t has none for.
func errNeedsWatermark(what string, t timeTrace) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"%s needs a watermark on the window's time column: %s; window over a column declared with WATERMARK FOR (or that column plus or minus a fixed interval)", what, t.why)
}
