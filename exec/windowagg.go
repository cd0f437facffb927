package exec

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Window aggregates: an aggregate one of whose group keys is a window's
// bound closes its groups by the watermark.
//
// TUMBLE in FROM and the group window GROUP BY TUMBLE(ts, size) compute
// window_start and window_end with tumble_start/tumble_end (sql/parse
// windowTable); HOP and CUMULATE in FROM and GROUP BY HOP(...) add them
// in an expand stage (hop.go). windowCloseOf finds, through the
// projections, filters and unions under the aggregate, a group key that
// is a window's end (tumble_end(ts, size); tumble_start(...) [- interval]
// + interval; a Hop's window_end) or a window's start (tumble_start(ts,
// size): its end is size later; a Hop's window_start: size or max size
// later), whose row time ts a watermark bounds (eventtime.go: the
// WATERMARK FOR column, or it plus or minus a fixed interval d, whose
// watermark is the job's plus d). A group whose window end is at or
// before that watermark is closed: its final row is in the view, its
// state is deleted in the same epoch, and a row that would fall into it
// afterwards (its window end at or before the watermark on arrival) is
// late, dropped and counted. The same test on both sides makes closing
// exact: no row can reach a closed group. A window over a time no
// watermark bounds never closes: the aggregate is a plain grouping.

// windowClose is how an aggregate's groups close (opkit.WindowClose: the
// top-N per window closes its partitions likewise).
type windowClose = opkit.WindowClose

// windowCloseOf finds the group key that bounds an aggregate's windows
// over a time a watermark bounds, preferring the earliest close; nil if
// none does (the aggregate is then a plain grouping that never drops a
// row).
func windowCloseOf(p *plan.HashAgg) *windowClose {
	w, _ := windowCloseWhy(p)
	return w
}

// windowCloseWhy is windowCloseOf and, when that is nil but a key is a
// window's bound, why no watermark bounds that window's time.
func windowCloseWhy(p *plan.HashAgg) (*windowClose, *timeTrace) {
	var best *windowClose
	var why *timeTrace
	for i, k := range p.Keys {
		if k.Type().Kind != types.Timestamp {
			continue
		}
		off, t, ok := windowBound(p.In, k)
		if !ok {
			continue
		}
		if !t.ok {
			if why == nil {
				why = &t
			}
			continue
		}
		w := &windowClose{Key: i, Offset: off, Shift: t.shift, Hop: hopOfKey(p.In, k)}
		if best == nil || w.CloseAt(0) < best.CloseAt(0) {
			best = w
		}
	}
	return best, why
}

// hopOfKey is hopRowTime for a key that is a column of p's rows.
func hopOfKey(p plan.Plan, k expr.Expr) *hopLast {
	if r, ok := k.(*expr.ColRef); ok {
		return hopRowTime(p, r.Idx)
	}
	return nil
}

// windowBound reports whether e, over p's rows, is a window's bound (ok),
// how long after it the window ends, and where the window's time comes
// from (t.ok: a watermark bounds it).
func windowBound(p plan.Plan, e expr.Expr) (off int64, t timeTrace, ok bool) {
	switch e := e.(type) {
	case *expr.ColRef:
		switch p := p.(type) {
		case *plan.Project:
			if e.Idx < len(p.Exprs) {
				return windowBound(p.In, p.Exprs[e.Idx])
			}
		case *plan.Filter:
			return windowBound(p.In, e)
		case *plan.Hop:
			switch n := len(p.In.Types()); e.Idx {
			case n:
				return p.Size, traceTime(p.In, p.TS), true // window_start
			case n + 1:
				return 0, traceTime(p.In, p.TS), true // window_end
			default:
				return windowBound(p.In, e)
			}
		case *plan.Union:
			// Every branch a window of the same length; closed when every
			// branch's watermark has passed it.
			for i, in := range p.Ins {
				o, bt, bok := windowBound(in, e)
				if !bok || i > 0 && o != off {
					return 0, timeTrace{}, false
				}
				if i == 0 || t.ok && (!bt.ok || bt.shift < t.shift) {
					t = bt
				}
				off = o
			}
			return off, t, len(p.Ins) > 0
		}
	case *expr.Func:
		if off, ts, ok := windowOfFunc(e); ok {
			return off, traceTime(p, ts), true
		}
	}
	return 0, timeTrace{}, false
}

// windowOfFunc reads e as a window's bound computed from a row's time ts:
// the window ends off µs after it.
func windowOfFunc(e *expr.Func) (off int64, ts expr.Expr, ok bool) {
	if len(e.Args) != 2 {
		return 0, nil, false
	}
	switch e.Name {
	case "tumble_end":
		if _, ok := intervalConst(e.Args[1]); ok {
			return 0, e.Args[0], true
		}
	case "tumble_start":
		if size, ok := intervalConst(e.Args[1]); ok {
			return size, e.Args[0], true
		}
	case "-":
		// A hopping window's start: its end minus its size.
		size, ok := intervalConst(e.Args[1])
		if !ok {
			break
		}
		if f, ok := e.Args[0].(*expr.Func); ok && f.Name == "+" && len(f.Args) == 2 {
			if s, ok := intervalConst(f.Args[1]); ok && s == size {
				if o, ts, ok := windowOfFunc(f); ok && o == 0 {
					return size, ts, true
				}
			}
		}
	case "+":
		// A hopping or cumulating window's end: its start (the row's
		// last tumbling window's start, maybe minus some slides) plus
		// its size.
		if _, ok := intervalConst(e.Args[1]); !ok {
			break
		}
		start := e.Args[0]
		if f, ok := start.(*expr.Func); ok && f.Name == "-" && len(f.Args) == 2 {
			if _, ok := intervalConst(f.Args[1]); ok {
				start = f.Args[0]
			}
		}
		if f, ok := start.(*expr.Func); ok && f.Name == "tumble_start" && len(f.Args) == 2 {
			if _, ok := intervalConst(f.Args[1]); ok {
				return 0, f.Args[0], true
			}
		}
	}
	return 0, nil, false
}

// intervalConst is e's length in µs if e is a fixed-length interval constant.
func intervalConst(e expr.Expr) (int64, bool) {
	c, ok := e.(*expr.Const)
	if !ok || c.D.Null || c.T.Kind != types.Interval || c.D.IV.Months != 0 {
		return 0, false
	}
	return types.IntervalMicros(c.D.IV), true
}

// CheckEmitOnWindowClose refuses EMIT ON WINDOW CLOSE for a view whose rows
// do not come from a window aggregate over streams with a watermark: there
// would be no window to close.
func CheckEmitOnWindowClose(p plan.Plan) error {
	g, err := compile(p, 1)
	if err != nil {
		return err
	}
	switch root := g.root.from; {
	case root.kind == nSession:
		// Sessions close by the watermark of their time.
		if t := traceTime(root.session.In, root.session.Time); !t.ok {
			return errNeedsWatermark("EMIT ON WINDOW CLOSE", t)
		}
	case root.kind == nAgg:
		w, why := windowCloseWhy(root.agg)
		if w != nil {
			break
		}
		if why != nil {
			return errNeedsWatermark("EMIT ON WINDOW CLOSE", *why)
		}
		fallthrough
	default:
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"EMIT ON WINDOW CLOSE needs a view grouped by a window: GROUP BY window_start/window_end of TUMBLE, HOP or CUMULATE, or GROUP BY TUMBLE(ts, size)")
	}
	for _, s := range g.sources {
		if s.src.Watermark == nil || s.changelog {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"EMIT ON WINDOW CLOSE needs a watermark: %s has no WATERMARK FOR", s.src.Name)
		}
	}
	return nil
}
