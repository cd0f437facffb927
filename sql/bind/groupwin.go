package bind

import (
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Flink's group windows: GROUP BY [keys,] SESSION(ts, gap) with
// SESSION_START/SESSION_END, and GROUP BY [keys,] HOP(ts, slide, size)
// with HOP_START/HOP_END, in the select list (TUMBLE's are in funcs.go).
//
// SESSION adds two grouping expressions, the session's start and end,
// always last, and marks the Aggregate a session window (the planner makes
// it a session aggregate, exec/session.go). HOP puts a Hop under the
// Aggregate, which adds each window's start and end as two columns to
// one copy of the row per window it is in (as the HOP table function
// does, hopTVF), and groups by them. The _START/_END functions
// must repeat the GROUP BY call's arguments: anything else is 42803, as a
// column not grouped by is.

// sessionGroupName is SESSION( as the dialect layer passes it on (SESSION
// is a keyword of TiDB's grammar).
const sessionGroupName = "pg_session_window"

// groupWindow is the group window of a SELECT.
type groupWindow struct {
	kind        string // "session" or "hop"
	ts          expr.Expr
	gap         int64 // session
	slide, size int64 // hop
	key         string
	start, end  int // their grouping expressions' positions (hop; session: the last two)
	// tvf, for SESSION(table, ts, gap) in FROM: its window_start and
	// window_end columns, which then stand for the session's bounds.
	tvf [2]string
}

// isGroupWindow says GROUP BY item n is SESSION(...) or HOP(...).
func isGroupWindow(n ast.ExprNode) (*ast.FuncCallExpr, bool) {
	f, ok := n.(*ast.FuncCallExpr)
	if !ok {
		return nil, false
	}
	return f, f.FnName.L == sessionGroupName || f.FnName.L == "hop"
}

// bindGroupWindow binds GROUP BY SESSION(ts, gap) or HOP(ts, slide, size).
func (b *Binder) bindGroupWindow(c *ectx, f *ast.FuncCallExpr) (*groupWindow, error) {
	in := c.inputCtx("aggregate functions are not allowed in GROUP BY")
	if f.FnName.L == sessionGroupName {
		if len(f.Args) != 2 {
			return nil, sqlerr.New(sqlerr.SyntaxError, "SESSION takes (time column, gap)")
		}
		ts, us, err := b.windowArgs(in, "SESSION", f.Args[0], f.Args[1:])
		if err != nil {
			return nil, err
		}
		w := &groupWindow{kind: "session", ts: ts, gap: us[0]}
		w.key = windowKey("session", ts, us)
		return w, nil
	}
	if len(f.Args) != 3 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "HOP takes (time column, slide, size)")
	}
	ts, us, err := b.windowArgs(in, "HOP", f.Args[0], f.Args[1:])
	if err != nil {
		return nil, err
	}
	slide, size := us[0], us[1]
	if err := checkHop(slide, size); err != nil {
		return nil, err
	}
	return &groupWindow{kind: "hop", ts: ts, slide: slide, size: size, key: windowKey("hop", ts, us)}, nil
}

// maxHopWindows bounds size/slide, as the HOP table function does.
const maxHopWindows = 64

// checkHop refuses a slide that does not divide the size, or too many
// windows per row.
func checkHop(slide, size int64) error {
	if size%slide != 0 {
		return sqlerr.New(sqlerr.InvalidParameterValue, "HOP slide must divide its size")
	}
	if size/slide > maxHopWindows {
		return sqlerr.New(sqlerr.FeatureNotSupported, "HOP puts each row in %d windows; at most %d are supported", size/slide, maxHopWindows)
	}
	return nil
}

// windowArgs binds a group window's time column and its constant,
// positive, fixed-length intervals (µs).
func (b *Binder) windowArgs(c *ectx, what string, tsArg ast.ExprNode, ivArgs []ast.ExprNode) (expr.Expr, []int64, error) {
	ts, err := b.bindExpr(c, tsArg)
	if err != nil {
		return nil, nil, err
	}
	if k := ts.Type().Kind; k != types.Timestamp {
		return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, "%s's time column must be of type timestamp, not %s", what, typeName(ts.Type()))
	}
	us := make([]int64, len(ivArgs))
	for i, a := range ivArgs {
		e, err := b.bindExpr(c, a)
		if err != nil {
			return nil, nil, err
		}
		if e.Type().Kind != types.Interval {
			if e, err = b.coerce(e, types.TInterval); err != nil || e.Type().Kind != types.Interval {
				return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, "%s's sizes must be intervals, not %s", what, typeName(e.Type()))
			}
		}
		if !expr.IsConst(e) {
			return nil, nil, sqlerr.New(sqlerr.InvalidParameterValue, "%s's sizes must be constant intervals", what)
		}
		d, err := expr.EvalConst(&expr.Ctx{}, e)
		if err != nil {
			return nil, nil, err
		}
		if d.Null || d.IV.Months != 0 {
			return nil, nil, sqlerr.New(sqlerr.InvalidParameterValue, "%s's sizes must be fixed-length intervals (no months or years)", what)
		}
		if us[i] = types.IntervalMicros(d.IV); us[i] <= 0 {
			return nil, nil, sqlerr.New(sqlerr.InvalidParameterValue, "%s's sizes must be positive", what)
		}
	}
	return ts, us, nil
}

func windowKey(kind string, ts expr.Expr, us []int64) string {
	var b strings.Builder
	b.WriteString(kind + "(" + ts.String())
	for _, u := range us {
		b.WriteString(", " + strconv.FormatInt(u, 10) + "us")
	}
	return b.String() + ")"
}

func intervalConst(us int64) *expr.Const {
	return &expr.Const{D: types.Datum{IV: arrow.MonthDayNanoInterval{Nanoseconds: us * 1000}}, T: types.TInterval}
}

// addGroupWindow adds the window's grouping expressions (session: after
// every other, so call it last) and, for HOP, puts a Hop over in.
func (b *Binder) addGroupWindow(agg *aggState, w *groupWindow, in planner.Node) (planner.Node, error) {
	if w.kind == "session" {
		gap := intervalConst(w.gap)
		agg.group = append(agg.group, call("session_start", types.TTimestamp, w.ts, gap), call("session_end", types.TTimestamp, w.ts, gap))
		if w.tvf[0] != "" {
			agg.groupKey = append(agg.groupKey, w.tvf[0], w.tvf[1])
		} else {
			agg.groupKey = append(agg.groupKey, "\x00session_start", "\x00session_end")
		}
		w.start, w.end = len(agg.group)-2, len(agg.group)-1
		return in, nil
	}
	n := len(in.Schema())
	out := newHop(in, w.ts, w.slide, w.size, false)
	w.start = len(agg.group)
	agg.addGroup(&expr.ColRef{Idx: n, T: types.TTimestamp, Name: "window_start"})
	w.end = len(agg.group)
	agg.addGroup(&expr.ColRef{Idx: n + 1, T: types.TTimestamp, Name: "window_end"})
	return out, nil
}

// newHop is a Hop over in (a CUMULATE one with cumulate: slide is the
// step, size the max size): its columns, then window_start, window_end.
func newHop(in planner.Node, ts expr.Expr, slide, size int64, cumulate bool) *planner.Hop {
	cols := append(append([]planner.Column(nil), in.Schema()...),
		planner.Column{Name: "window_start", T: types.TTimestamp}, planner.Column{Name: "window_end", T: types.TTimestamp})
	return &planner.Hop{Input: in, TS: ts, Slide: slide, Size: size, Cumulate: cumulate, Cols: cols}
}

// hopTVF makes HOP(table, ts, slide, size) or CUMULATE(table, ts, step,
// max) in FROM a Hop. The dialect layer (sql/parse windowTable) made it
// the derived table SELECT *, pg_hop_start(ts, slide, size) AS
// window_start, pg_hop_end(ts, slide, size) AS window_end FROM table
// (pg_cumulate_start/_end for CUMULATE), whose two calls the binder
// leaves as hop_start/hop_end (cumulate_start/cumulate_end) placeholders:
// given the select list exprs over in, hopTVF returns a Hop over in and
// exprs with the placeholders replaced by its window columns (in's
// columns keep their positions). With no placeholder it returns in and
// exprs as they are.
func hopTVF(in planner.Node, exprs []expr.Expr) (planner.Node, []expr.Expr, error) {
	var hop *planner.Hop
	var key string
	out := exprs
	for i, e := range exprs {
		f, ok := e.(*expr.Func)
		if !ok {
			continue
		}
		kind, bound, ok := strings.Cut(f.Name, "_")
		if !ok || kind != "hop" && kind != "cumulate" || bound != "start" && bound != "end" {
			continue
		}
		slide, _ := intervalOf(f.Args[1])
		size, _ := intervalOf(f.Args[2])
		if hop == nil {
			hop = newHop(in, f.Args[0], slide, size, kind == "cumulate")
			key = windowKey(kind, f.Args[0], []int64{slide, size})
			out = slices.Clone(exprs)
		} else if windowKey(kind, f.Args[0], []int64{slide, size}) != key {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "one SELECT takes the bounds of one HOP or CUMULATE window")
		}
		n := len(in.Schema())
		if bound == "end" {
			n++
		}
		out[i] = &expr.ColRef{Idx: n, T: types.TTimestamp, Name: hop.Cols[n].Name}
	}
	if hop == nil {
		return in, exprs, nil
	}
	return hop, out, nil
}

// intervalOf is the µs of a bound interval constant.
func intervalOf(e expr.Expr) (int64, bool) {
	c, ok := e.(*expr.Const)
	if !ok || c.D.Null {
		return 0, false
	}
	return types.IntervalMicros(c.D.IV), true
}

// windowGroupFunc binds SESSION_START/SESSION_END/HOP_START/HOP_END (and
// refuses SESSION(...) outside GROUP BY); ok is false for other functions.
func (b *Binder) windowGroupFunc(c *ectx, n *ast.FuncCallExpr) (expr.Expr, bool, error) {
	name := n.FnName.L
	var kind string
	var end bool
	switch name {
	case sessionGroupName:
		return nil, true, sqlerr.New(sqlerr.GroupingError, "SESSION(...) is allowed only in GROUP BY")
	case "pg_session_start", "pg_session_end":
		// SESSION(table, ts, gap) in FROM (sql/parse windowTable): its
		// window_start and window_end, known once grouped (sessionTVF).
		ts, us, err := b.windowArgs(c.inputCtx("aggregate functions are not allowed in SESSION"), "SESSION", n.Args[0], n.Args[1:])
		if err != nil {
			return nil, true, err
		}
		return call(strings.TrimPrefix(name, "pg_"), types.TTimestamp, ts, intervalConst(us[0])), true, nil
	case "pg_hop_start", "pg_hop_end":
		// HOP(table, ts, slide, size) in FROM (sql/parse windowTable):
		// placeholders hopTVF makes a Hop's window columns.
		if len(n.Args) != 3 {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "HOP takes (table, time column, slide, size)")
		}
		ts, us, err := b.windowArgs(c.inputCtx("aggregate functions are not allowed in HOP"), "HOP", n.Args[0], n.Args[1:])
		if err != nil {
			return nil, true, err
		}
		if err := checkHop(us[0], us[1]); err != nil {
			return nil, true, err
		}
		return call(strings.TrimPrefix(name, "pg_"), types.TTimestamp, ts, intervalConst(us[0]), intervalConst(us[1])), true, nil
	case "pg_cumulate_start", "pg_cumulate_end":
		// CUMULATE(table, ts, step, max) in FROM (sql/parse windowTable):
		// placeholders hopTVF makes a CUMULATE Hop's window columns.
		if len(n.Args) != 3 {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "CUMULATE takes (table, time column, step, max size)")
		}
		ts, us, err := b.windowArgs(c.inputCtx("aggregate functions are not allowed in CUMULATE"), "CUMULATE", n.Args[0], n.Args[1:])
		if err != nil {
			return nil, true, err
		}
		if us[1]%us[0] != 0 {
			return nil, true, sqlerr.New(sqlerr.InvalidParameterValue, "CUMULATE step must divide its max size")
		}
		if us[1]/us[0] > maxHopWindows {
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "CUMULATE puts each row in up to %d windows; at most %d are supported", us[1]/us[0], maxHopWindows)
		}
		return call(strings.TrimPrefix(name, "pg_"), types.TTimestamp, ts, intervalConst(us[0]), intervalConst(us[1])), true, nil
	case "session_start", "session_end":
		kind, end = "session", name == "session_end"
	case "hop_start", "hop_end":
		kind, end = "hop", name == "hop_end"
	default:
		return nil, false, nil
	}
	upper := strings.ToUpper(name)
	if c.agg == nil || c.agg.window == nil || c.agg.window.kind != kind {
		return nil, true, sqlerr.New(sqlerr.GroupingError, "%s is allowed only in the select list, HAVING or ORDER BY of a query with GROUP BY %s(...)", upper, strings.ToUpper(kind))
	}
	w := c.agg.window
	if len(n.Args) < 1 {
		return nil, true, sqlerr.New(sqlerr.GroupingError, "%s must repeat the arguments of GROUP BY %s(...)", upper, strings.ToUpper(kind))
	}
	ts, us, err := b.windowArgs(c.inputCtx("aggregate function calls are not allowed in "+upper), upper, n.Args[0], n.Args[1:])
	if err != nil {
		return nil, true, err
	}
	if windowKey(kind, ts, us) != w.key {
		return nil, true, sqlerr.New(sqlerr.GroupingError, "%s(%s) does not match GROUP BY %s", upper, strings.TrimPrefix(windowKey(kind, ts, us), kind+"("), w.key)
	}
	idx := w.start
	if end {
		idx = w.end
	}
	return &expr.ColRef{Idx: idx, T: types.TTimestamp, Name: name}, true, nil
}

// sessionTVF recognises a grouping expression e that is the window_start
// or window_end column of SESSION(table, ts, gap) in FROM (the dialect
// layer made it a derived table computing pg_session_start/_end, bound to
// placeholders). It returns the session window, whose placeholders it
// takes out of the derived table (a session is known only once grouped),
// with start/end naming the two columns as grouping keys.
func sessionTVF(in planner.Node, e expr.Expr) (*groupWindow, error) {
	ref, ok := e.(*expr.ColRef)
	if !ok {
		return nil, nil
	}
	var preds []expr.Expr
	node := in
	for {
		f, ok := node.(*planner.Filter)
		if !ok {
			break
		}
		preds = append(preds, f.Pred)
		node = f.Input
	}
	p, ok := node.(*planner.Project)
	if !ok || ref.Idx >= len(p.Exprs) {
		return nil, nil
	}
	f, ok := p.Exprs[ref.Idx].(*expr.Func)
	if !ok || f.Name != "session_start" && f.Name != "session_end" {
		return nil, nil
	}
	tsIn, _ := f.Args[0].(*expr.ColRef)
	ks, ke, kt := -1, -1, -1
	for k, x := range p.Exprs {
		switch x := x.(type) {
		case *expr.Func:
			if (x.Name == "session_start" || x.Name == "session_end") && x.String() != "" {
				if x.Args[0].String() != f.Args[0].String() || x.Args[1].String() != f.Args[1].String() {
					continue
				}
				if x.Name == "session_start" {
					ks = k
				} else {
					ke = k
				}
			}
		case *expr.ColRef:
			if tsIn != nil && x.Idx == tsIn.Idx && kt < 0 {
				kt = k
			}
		}
	}
	if ks < 0 || ke < 0 || kt < 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SESSION(table, time column, gap) needs the table's columns and window_start, window_end as it makes them")
	}
	used := map[int]bool{}
	for _, pr := range preds {
		colRefsOf(pr, used)
	}
	if used[ks] || used[ke] {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a session's window_start and window_end are known only after grouping: filter on them in HAVING, not WHERE")
	}
	d := f.Args[1].(*expr.Const).D
	w := &groupWindow{kind: "session", ts: &expr.ColRef{Idx: kt, T: types.TTimestamp, Name: p.Cols[kt].Name}, gap: types.IntervalMicros(d.IV)}
	w.key = windowKey("session", w.ts, []int64{w.gap})
	// The columns as the select list names them (qualified as e is).
	prefix := strings.TrimSuffix(ref.String(), p.Cols[ref.Idx].Name)
	w.tvf = [2]string{prefix + p.Cols[ks].Name, prefix + p.Cols[ke].Name}
	// The placeholders are not computed per row.
	null := &expr.Const{D: types.Null, T: types.TTimestamp}
	p.Exprs[ks], p.Exprs[ke] = null, null
	return w, nil
}

// colRefsOf marks the columns e reads; an expression it does not know
// marks every column (-1 too), so callers stay on the safe side.
func colRefsOf(e expr.Expr, used map[int]bool) {
	switch e := e.(type) {
	case nil, *expr.Const, *expr.Param:
	case *expr.ColRef:
		used[e.Idx] = true
	case *expr.Cast:
		colRefsOf(e.E, used)
	case *expr.Func:
		for _, a := range e.Args {
			colRefsOf(a, used)
		}
	case *expr.Case:
		for _, w := range e.Whens {
			colRefsOf(w.Cond, used)
			colRefsOf(w.Then, used)
		}
		colRefsOf(e.Else, used)
	case *expr.InList:
		colRefsOf(e.E, used)
		for _, a := range e.List {
			colRefsOf(a, used)
		}
	default:
		for i := -1; i < 1<<12; i++ {
			used[i] = true
		}
	}
}
