package bind

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Window functions are computed after grouping and HAVING, before the
// select list's Project: one planner.WindowAgg per distinct OVER clause,
// stacked, each appending its functions' columns. While the select list and
// ORDER BY are bound the Window nodes' input width is not known yet (more
// aggregates may appear), so a window function binds to a placeholder
// column winBase+k, renumbered by placeWindows.

const winBase = 1 << 30

// winState collects the window functions of one SELECT.
type winState struct {
	named namedWindows // the SELECT's WINDOW clause
	specs []winSpec
	calls []winCall
}

type winSpec struct {
	key         string
	partitionBy []expr.Expr
	orderBy     []planner.SortKey
}

type winCall struct {
	spec int
	fn   planner.WinFunc
	key  string
}

// containsWindow reports whether a window function call occurs in n
// (nested queries excluded).
func containsWindow(n ast.Node) bool {
	return contains(n, func(n ast.Node) bool { _, ok := n.(*ast.WindowFuncExpr); return ok })
}

// bindWindowFunc binds f OVER (...) in the select list or ORDER BY.
func (b *Binder) bindWindowFunc(c *ectx, n *ast.WindowFuncExpr) (expr.Expr, error) {
	if c.win == nil {
		msg := c.noWin
		if msg == "" {
			msg = "window functions are not allowed here"
		}
		return nil, sqlerr.New(sqlerr.WindowingError, "%s", msg)
	}
	name := strings.ToLower(n.Name)
	spec, err := c.win.named.resolve(n.Spec) // OVER w, OVER (w ...): namedwin.go
	if err != nil {
		return nil, err
	}
	resolved := *n
	resolved.Spec = spec
	n = &resolved
	switch {
	case n.IgnoreNull || n.FromLast:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "IGNORE NULLS and FROM LAST are not supported")
	}
	// Arguments, PARTITION BY and ORDER BY see what the select list sees,
	// without window functions of their own.
	ac := *c
	ac.win, ac.noWin = nil, "window function calls cannot be nested"
	fn := planner.WinFunc{T: types.TInt64}
	switch name {
	case "row_number", "rank", "dense_rank":
		if len(n.Args) != 0 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
		}
		fn.Kind = map[string]planner.WinFuncKind{"row_number": planner.WinRowNumber, "rank": planner.WinRank, "dense_rank": planner.WinDenseRank}[name]
	case "count", "sum", "avg", "min", "max":
		if n.Distinct {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "DISTINCT is not implemented for window functions")
		}
		if len(n.Args) != 1 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
		}
		call := planner.AggCall{Func: planner.AggFunc(name)}
		if name == "count" && isNonNullConst(n.Args[0]) { // count(*) arrives as count(1)
			call.Func, call.T = planner.AggCountStar, types.TInt64
		} else {
			arg, err := b.bindExpr(&ac, n.Args[0])
			if err != nil {
				return nil, err
			}
			if arg, err = b.coerce(arg, types.TText); err != nil {
				return nil, err
			}
			if call.T, err = aggType(name, arg); err != nil {
				return nil, err
			}
			if arg, err = b.aggArg(arg, name, false, call.T); err != nil {
				return nil, err
			}
			call.Arg = arg
		}
		fn.Kind, fn.Agg, fn.T = planner.WinAgg, call, call.T
	case "lag", "lead", "first_value", "last_value", "nth_value":
		if err := b.bindValueFunc(&ac, name, n, &fn); err != nil {
			return nil, err
		}
	case "bit_xor", "json_arrayagg", "json_objectagg", "group_concat": // array_agg, jsonb_agg, jsonb_object_agg, string_agg
		return b.bindWindowCollect(c, &ac, name, n) // windowcollect.go
	default:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"window function %s is not supported (supported: row_number, rank, dense_rank, count, sum, avg, min, max, lag, lead, first_value, last_value, nth_value, array_agg, string_agg, jsonb_agg, jsonb_object_agg)", name)
	}
	return b.windowOver(c, &ac, name, n.Spec, fn)
}

// windowOver binds the OVER clause spec of window function fn (named
// name), whose arguments are bound, with ac the context of its
// arguments, and returns the reference to its column.
func (b *Binder) windowOver(c, ac *ectx, name string, spec ast.WindowSpec, fn planner.WinFunc) (expr.Expr, error) {
	var ws winSpec
	var key strings.Builder
	if spec.PartitionBy != nil {
		for _, it := range spec.PartitionBy.Items {
			e, err := b.bindExpr(ac, it.Expr)
			if err != nil {
				return nil, err
			}
			if e, err = b.coerce(e, types.TText); err != nil {
				return nil, err
			}
			ws.partitionBy = append(ws.partitionBy, e)
			fmt.Fprintf(&key, "p %s:%s;", e, e.Type())
		}
	}
	if spec.OrderBy != nil {
		for _, o := range spec.OrderBy.Items {
			oe, nullsFirst := nullsOrder(o)
			e, err := b.windowOrderKey(ac, oe)
			if err != nil {
				return nil, err
			}
			if e, err = b.coerce(e, types.TText); err != nil {
				return nil, err
			}
			ws.orderBy = append(ws.orderBy, planner.SortKey{E: e, Desc: o.Desc, NullsFirst: nullsFirst})
			fmt.Fprintf(&key, "o %s:%s %v %v;", e, e.Type(), o.Desc, nullsFirst)
		}
	}
	if err := b.bindFrame(ac, spec.Frame, &fn, ws.orderBy); err != nil {
		return nil, err
	}
	ws.key = key.String()
	w := c.win
	si := len(w.specs)
	for i, s := range w.specs {
		if s.key == ws.key {
			si = i
			break
		}
	}
	if si == len(w.specs) {
		w.specs = append(w.specs, ws)
	}
	callKey := fmt.Sprintf("%s(%v) over %d", name, fn.Agg.Arg, si)
	if fn.Kind >= planner.WinAgg {
		callKey = fmt.Sprintf("%s(%v %v %v %v %d %v):%s over %d", name, fn.Agg.Arg, fn.Arg, fn.Default, fn.NNull, fn.N, fn.Frame, fn.T, si)
	}
	k := len(w.calls)
	for i, wc := range w.calls {
		if wc.key == callKey {
			k = i
			break
		}
	}
	if k == len(w.calls) {
		w.calls = append(w.calls, winCall{spec: si, fn: fn, key: callKey})
	}
	return &expr.ColRef{Idx: winBase + k, T: fn.T, Name: callKey}, nil
}

// placeWindows stacks one WindowAgg per OVER clause on in and renumbers the
// placeholder columns of exprs to the functions' columns.
func placeWindows(w *winState, in planner.Node, exprs []expr.Expr) (planner.Node, []expr.Expr) {
	pos := make([]int, len(w.calls))
	width := len(in.Schema())
	for si, s := range w.specs {
		node := &planner.WindowAgg{Input: in, PartitionBy: s.partitionBy, OrderBy: s.orderBy}
		node.Cols = append([]planner.Column(nil), in.Schema()...)
		for k, c := range w.calls {
			if c.spec != si {
				continue
			}
			pos[k] = width
			width++
			node.Funcs = append(node.Funcs, c.fn)
			name := c.key[:strings.IndexByte(c.key, '(')]
			node.Cols = append(node.Cols, planner.Column{Name: name, T: c.fn.T})
		}
		in = node
	}
	out := make([]expr.Expr, len(exprs))
	for i, e := range exprs {
		out[i] = mapCols(e, func(c *expr.ColRef) expr.Expr {
			if c.Idx < winBase {
				return c
			}
			r := *c
			k := c.Idx - winBase
			r.Idx = pos[k]
			r.Name = w.calls[k].key[:strings.IndexByte(w.calls[k].key, '(')]
			return &r
		})
	}
	return in, out
}

// windowOrderKey binds a key of a window's ORDER BY. TiDB reads an integer
// constant there (ORDER BY 1) as a select-list position; PostgreSQL reads a
// window's ORDER BY by SQL:1999 rules, where it is the constant itself,
// which orders nothing (rank() OVER (ORDER BY 1) is 1 for every row).
func (b *Binder) windowOrderKey(c *ectx, n ast.ExprNode) (expr.Expr, error) {
	if p, ok := n.(*ast.PositionExpr); ok && p.P == nil {
		return &expr.Const{D: types.Int(int64(p.N)), T: types.TInt32}, nil
	}
	return b.bindExpr(c, n)
}
