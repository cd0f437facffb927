package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Snapshots resolves what a plan reads besides live streams and views:
// AS OF snapshots (the snapshot's database and the id the view had in it)
// and system tables.
type Snapshots interface {
	Snapshot(a AsOf, view string) (storage.Reader, uint64, error)
	SystemRows(table string) (arrow.RecordBatch, error)
}

// ViewGatherer is implemented by the Snapshots of reads in cluster mode:
// a distributed view's rows are gathered from every node that holds a part
// of it, at one committed cluster epoch, and the read runs over them
// (gathered false: the view is read here as usual).
type ViewGatherer interface {
	GatherView(view *storage.TableDef) (recs []arrow.RecordBatch, gathered bool, err error)
}

// Physical lowers a logical plan to the exec plan that runs it: joins get
// their equality keys extracted for hashing, ORDER BY + LIMIT become a top-N.
func Physical(n Node, snaps Snapshots) (plan.Plan, error) {
	switch n := n.(type) {
	case *Scan:
		if n.Table.Kind == storage.KindSystem {
			if snaps == nil {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "system tables cannot be read here")
			}
			rec, err := snaps.SystemRows(n.Table.Name)
			if err != nil {
				return nil, err
			}
			return &plan.Batches{Recs: []arrow.RecordBatch{rec}, Ts: colTypes(n.Cols)}, nil
		}
		if n.Table.Kind == storage.KindView {
			if n.AsOf == (AsOf{}) {
				if g, ok := snaps.(ViewGatherer); ok {
					recs, gathered, err := g.GatherView(n.Table)
					if err != nil {
						return nil, err
					}
					if gathered {
						return &plan.Batches{Recs: recs, Ts: colTypes(n.Cols)}, nil
					}
				}
				return &plan.ScanView{View: n.Table}, nil
			}
			if snaps == nil {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "AS OF is not supported here")
			}
			snap, id, err := snaps.Snapshot(n.AsOf, n.Table.Name)
			if err != nil {
				return nil, err
			}
			v := *n.Table
			v.ID = id
			return &plan.ScanView{View: &v, Snap: snap}, nil
		}
		if n.AsOf != (AsOf{}) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "AS OF applies to materialized views, and %q is a table", n.Table.Name)
		}
		return &plan.ScanStream{Table: n.Table, Reads: n.Reads}, nil
	case *Values:
		ts := make([]typesT, len(n.Cols))
		for i, c := range n.Cols {
			ts[i] = c.T
		}
		return &plan.Values{Rows: n.Rows, Ts: ts}, nil
	case *Filter:
		input, pred := sinkWhereEqualities(n)
		if pred == nil {
			return Physical(input, snaps)
		}
		if s, ok := input.(*Scan); ok && readsIndexes(snaps) {
			if l := chooseIndex(s, pred); l != nil {
				if s.Table.Kind == storage.KindStream {
					return &plan.Filter{In: &plan.ScanStream{Table: s.Table, Index: l}, Pred: pred}, nil
				}
				return &plan.Filter{In: &plan.ScanView{View: s.Table, Index: l}, Pred: pred}, nil
			}
		}
		in, err := Physical(input, snaps)
		if err != nil {
			return nil, err
		}
		return &plan.Filter{In: in, Pred: pred}, nil
	case *Project:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		for _, e := range n.Exprs {
			if hasSessionBound(e) {
				if kind := hopBoundKind(e); kind != "" {
					return nil, sqlerr.New(sqlerr.FeatureNotSupported, "pg_%[1]s_start and pg_%[1]s_end are the %[2]s table function's own: write %[2]s(table, time column, %[3]s) in FROM",
						kind, strings.ToUpper(kind), map[string]string{"hop": "slide, size", "cumulate": "step, max size"}[kind])
				}
				return nil, sqlerr.New(sqlerr.FeatureNotSupported,
					"the window_start and window_end of SESSION(table, time column, gap) exist only grouped: GROUP BY [keys,] window_start, window_end")
			}
		}
		return &plan.Project{In: in, Exprs: n.Exprs}, nil
	case *Aggregate:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		keys, back := arrayGroupKeys(n.GroupBy)
		if back != nil && n.Window != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "grouping by an array or a record in a SESSION window is not supported")
		}
		agg := &plan.HashAgg{In: in, Keys: keys}
		for _, a := range n.Aggs {
			if a.Arg != nil && a.Arg.Type().Kind == types.TextArray && a.Func != AggCount {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "aggregates other than count over arrays are not supported")
			}
			arg := a.Arg
			if a.Distinct && a.Func == AggCount && arg != nil {
				// count(DISTINCT r) counts r's equality classes: the
				// text key grouping uses ('24:00:00' = '1 day' in a record).
				if name := textKeyFunc(arg.Type()); name != "" {
					arg = &expr.Func{Name: name, Args: []expr.Expr{arg}, T: types.TText}
				}
			}
			agg.Aggs = append(agg.Aggs, plan.AggSpec{Kind: aggKind(a.Func), Distinct: a.Distinct, Arg: arg, T: a.T, Frac: a.Frac, Desc: a.Desc, Sorted: a.Sorted, Order: a.Order})
		}
		if w := n.Window; w != nil && w.Kind == "session" {
			// GROUP BY keys, SESSION(ts, gap): the binder put the session's
			// start and end last among the grouping expressions.
			if err := plan.CheckSessionAggs(agg.Aggs); err != nil {
				return nil, err
			}
			k := len(n.GroupBy)
			if k < 2 || !isFunc(n.GroupBy[k-2], "session_start") || !isFunc(n.GroupBy[k-1], "session_end") {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SESSION windows with correlated subqueries are not supported")
			}
			return &plan.SessionAgg{In: in, Keys: n.GroupBy[:len(n.GroupBy)-2], Time: w.TimeOf, Gap: w.Gap, Aggs: agg.Aggs}, nil
		}
		if back != nil {
			return &plan.Project{In: agg, Exprs: back(n.Cols)}, nil
		}
		return agg, nil
	case *Join:
		if n.Kind == InnerJoin && !n.Lookup && n.Versioned == nil {
			if r := reorderInnerJoins(n); r != Node(n) {
				return Physical(r, snaps)
			}
		}
		return physicalJoin(n, snaps)
	case *Sort:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		s := &plan.Sort{In: in, Limit: -1}
		for _, k := range n.Keys {
			s.Keys = append(s.Keys, plan.SortKey{E: k.E, Desc: k.Desc, NullsFirst: k.NullsFirst})
		}
		return s, nil
	case *Limit:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		if s, ok := in.(*plan.Sort); ok && s.Limit < 0 && n.Count >= 0 {
			top := *s
			top.Limit = n.Offset + n.Count
			in = &top
		}
		return &plan.Limit{In: in, Offset: n.Offset, Count: n.Count}, nil
	case *WindowAgg:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		w := &plan.Window{In: in, PartitionBy: n.PartitionBy}
		for _, k := range n.OrderBy {
			w.OrderBy = append(w.OrderBy, plan.SortKey{E: k.E, Desc: k.Desc, NullsFirst: k.NullsFirst})
		}
		for _, f := range n.Funcs {
			wf := plan.WindowFunc{Kind: plan.WindowFuncKind(f.Kind), T: f.T, Arg: f.Arg, N: f.N, NNull: f.NNull, Default: f.Default, Frame: f.Frame}
			if f.Kind == WinAgg {
				a := f.Agg
				wf.Agg = plan.AggSpec{Kind: aggKind(a.Func), Distinct: a.Distinct, Arg: a.Arg, T: a.T}
			}
			w.Funcs = append(w.Funcs, wf)
		}
		return w, nil
	case *FuncScan:
		if n.Lateral {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s() in FROM with arguments from the enclosing query (LATERAL) is supported only in a subquery used as a value", n.Func)
		}
		return &plan.FuncScan{Func: n.Func, Args: n.Args, T: n.Col.T}, nil
	case *LateralFuncScan:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		return &plan.LateralFuncScan{In: in, Func: n.Func, Args: n.Args, T: n.Col.T, Outer: n.Outer}, nil
	case *ProjectSRF:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		p := &plan.ProjectSRF{In: in, Funcs: n.Funcs, Args: n.Args}
		for _, c := range n.Cols {
			p.Ts = append(p.Ts, c.T)
		}
		return p, nil
	case *SingleRow:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		return &plan.SingleRow{In: in}, nil
	case *Hop:
		in, err := Physical(n.Input, snaps)
		if err != nil {
			return nil, err
		}
		return &plan.Hop{In: in, TS: n.TS, Slide: n.Slide, Size: n.Size, Cumulate: n.Cumulate}, nil
	case *UnionAll:
		u := &plan.Union{}
		for _, c := range n.Inputs {
			p, err := Physical(c, snaps)
			if err != nil {
				return nil, err
			}
			u.Ins = append(u.Ins, p)
		}
		return u, nil
	}
	return nil, sqlerr.New(sqlerr.Internal, "planner: unknown node %T", n)
}

func aggKind(f AggFunc) plan.AggKind {
	switch f {
	case AggCountStar:
		return plan.AggCountStar
	case AggCount:
		return plan.AggCount
	case AggSum:
		return plan.AggSum
	case AggAvg:
		return plan.AggAvg
	case AggMin:
		return plan.AggMin
	case AggArrayAgg:
		return plan.AggArrayAgg
	case AggPercentileCont:
		return plan.AggPercentileCont
	case AggPercentileDisc:
		return plan.AggPercentileDisc
	case AggMode:
		return plan.AggMode
	}
	return plan.AggMax
}

// physicalJoin splits ON into equality keys (left expr = right expr) and a residual.
func physicalJoin(n *Join, snaps Snapshots) (plan.Plan, error) {
	l, err := Physical(n.Left, snaps)
	if err != nil {
		return nil, err
	}
	r, err := Physical(n.Right, snaps)
	if err != nil {
		return nil, err
	}
	if n.Versioned != nil {
		// A batch query's build side is the table's history (its versions).
		if s, ok := r.(*plan.ScanStream); ok {
			h := *s
			h.History = true
			r = &h
		}
	}
	j := &plan.HashJoin{Left: l, Right: r, Kind: joinKinds[n.Kind], Lookup: n.Lookup, Versioned: n.Versioned}
	nl := len(n.Left.Schema())
	var residual []expr.Expr
	for _, c := range conjuncts(n.On) {
		f, ok := c.(*expr.Func)
		if ok && f.Name == "=" && len(f.Args) == 2 {
			a, b := f.Args[0], f.Args[1]
			if name := textKeyFunc(a.Type()); name != "" {
				// Arrays and records join on their text keys, equal
				// exactly when the values are (the join tables hold
				// scalar keys).
				a = &expr.Func{Name: name, Args: []expr.Expr{a}, T: types.TText}
				b = &expr.Func{Name: name, Args: []expr.Expr{b}, T: types.TText}
			}
			sa, sb := side(a, nl), side(b, nl)
			if sa == sideLeft && sb == sideRight {
				j.LeftKeys, j.RightKeys = append(j.LeftKeys, a), append(j.RightKeys, shift(b, -nl))
				continue
			}
			if sa == sideRight && sb == sideLeft {
				j.LeftKeys, j.RightKeys = append(j.LeftKeys, b), append(j.RightKeys, shift(a, -nl))
				continue
			}
		}
		residual = append(residual, c)
	}
	for _, c := range residual {
		if j.Residual == nil {
			j.Residual = c
		} else {
			j.Residual = &expr.Func{Name: "and", Args: []expr.Expr{j.Residual, c}, T: c.Type()}
		}
	}
	return j, nil
}

// sinkWhereEqualities moves the conjuncts of f's predicate that equate
// two expressions over columns (columnEquality) as deep into its input as they go (sinkEqualities), and
// returns the rewritten input with the conjuncts left for the filter above
// it, in their order (nil: none). `FROM a, b WHERE a.k = b.k` is bound as
// a cross join under a filter, also with IN/EXISTS/NOT IN subqueries or a
// scalar subquery in between, and would otherwise pair every row of a with
// every row of b. Only those equalities move; other conjuncts (temporal
// filters among them) stay where they were written.
func sinkWhereEqualities(f *Filter) (Node, expr.Expr) {
	cs := conjuncts(f.Pred)
	var eqs []expr.Expr
	for _, c := range cs {
		if _, _, ok := columnEquality(c); ok {
			eqs = append(eqs, c)
		}
	}
	// Equalities an OR implies go down too; the OR stays here, and an
	// implied equality that finds no join is dropped (orkeys.go).
	for _, c := range cs {
		eqs = append(eqs, impliedEqualities(c)...)
	}
	if len(eqs) == 0 {
		return f.Input, f.Pred
	}
	input, back := sinkEqualities(f.Input, eqs)
	kept := make(map[expr.Expr]bool, len(back))
	for _, c := range back {
		kept[c] = true
	}
	var rest []expr.Expr
	for _, c := range cs {
		if _, _, ok := columnEquality(c); !ok || kept[c] {
			rest = append(rest, c)
		}
	}
	return input, and(rest)
}

// sinkEqualities places the column equalities ps (over n's columns) as
// deep in n as they can go: through filters, projections of columns, the
// left input of semi and anti joins (whose output is that input's rows)
// and of left joins, down to the inner join whose two inputs they connect,
// where they join its ON and physicalJoin makes them hash keys; one that
// equates two columns of one input goes on into that input. For these
// nodes a predicate above and below are the same. It returns n rewritten
// and the equalities it could not place (unchanged), which belong above n.
func sinkEqualities(n Node, ps []expr.Expr) (Node, []expr.Expr) {
	if len(ps) == 0 {
		return n, nil
	}
	switch n := n.(type) {
	case *Filter:
		in, back := sinkEqualities(n.Input, ps)
		return &Filter{Input: in, Pred: n.Pred}, back
	case *Project:
		through, back := splitWhere(ps, func(p expr.Expr) (expr.Expr, bool) { return throughProject(p, n.Exprs) })
		np := *n
		np.Input = sinkOrFilter(n.Input, through)
		return &np, back
	case *Join:
		if n.Versioned != nil {
			return n, ps // a filter over its build side would change which version is chosen
		}
		nl := len(n.Left.Schema())
		switch n.Kind {
		case InnerJoin:
			return equiKeysIntoJoin(n, ps), nil
		case SemiJoin, AntiJoin, LeftJoin:
			left, back := splitWhere(ps, func(p expr.Expr) (expr.Expr, bool) {
				return p, n.Kind != LeftJoin || side(p, nl) == sideLeft
			})
			nj := *n
			nj.Left = sinkOrFilter(n.Left, left)
			return &nj, back
		}
	}
	return n, ps
}

// splitWhere returns the ps that move, as move rewrites them, and those
// that stay.
func splitWhere(ps []expr.Expr, move func(expr.Expr) (expr.Expr, bool)) (moved, stay []expr.Expr) {
	for _, p := range ps {
		if q, ok := move(p); ok {
			moved = append(moved, q)
		} else {
			stay = append(stay, p)
		}
	}
	return moved, stay
}

// sinkOrFilter places ps in n, under a filter if they go no deeper.
func sinkOrFilter(n Node, ps []expr.Expr) Node {
	n, back := sinkEqualities(n, ps)
	if len(back) > 0 {
		return &Filter{Input: n, Pred: and(back)}
	}
	return n
}

// equiKeysIntoJoin adds the column equalities ps (over the inner join j's
// columns) to j: those between its inputs to its ON, those within one input
// into that input (sinkOrFilter).
func equiKeysIntoJoin(j *Join, ps []expr.Expr) *Join {
	nl := len(j.Left.Schema())
	var on, left, right []expr.Expr
	for _, c := range ps {
		switch side(c, nl) {
		case sideLeft:
			left = append(left, c)
		case sideRight:
			right = append(right, shift(c, -nl))
		default:
			on = append(on, c)
		}
	}
	nj := *j
	nj.Left = sinkOrFilter(j.Left, left)
	nj.Right = sinkOrFilter(j.Right, right)
	if j.On != nil {
		on = append([]expr.Expr{j.On}, on...)
	}
	nj.On = and(on)
	return &nj
}

// throughProject rewrites the column equality p over a projection's
// output to one over its input, if both columns are projected columns.
func throughProject(p expr.Expr, exprs []expr.Expr) (expr.Expr, bool) {
	ok := true
	q := mapCols(p, func(i int) int {
		c, isCol := exprs[i].(*expr.ColRef)
		if !isCol {
			ok = false
			return i
		}
		return c.Idx
	})
	return q, ok
}

// columnEquality matches `x = y` where x and y are expressions over
// columns that can be join keys: columns, constants, casts, CASE and
// functions over them, each side with a column. Functions whose value is
// not fixed by their arguments (now()) or that may fail (notKeyFuncs) keep
// a conjunct where it was written.
func columnEquality(e expr.Expr) (x, y expr.Expr, ok bool) {
	f, isFunc := e.(*expr.Func)
	if !isFunc || f.Name != "=" || len(f.Args) != 2 {
		return nil, nil, false
	}
	if !keyExpr(f.Args[0]) || !keyExpr(f.Args[1]) || side(f.Args[0], 0) == sideNone || side(f.Args[1], 0) == sideNone {
		return nil, nil, false
	}
	return f.Args[0], f.Args[1], true
}

// notKeyFuncs are the functions whose value a row does not determine, and
// those that fail on some operands (division by zero): a key is evaluated
// for every row of its input, before conditions written beside it such as
// l.q <> 0 in WHERE l.q <> 0 AND o.k = 10 / l.q.
var notKeyFuncs = map[string]bool{"now": true, "random": true, "clock_timestamp": true, "gen_random_uuid": true,
	"/": true, "%": true, "mod": true, "div": true, "power": true, "single_value": true,
	// issue 30's scalar functions that fail on some operands (sql/bind/funcs_pg.go)
	"sqrt": true, "ln": true, "log10": true, "exp": true, "sin": true, "cos": true, "tan": true, "cot": true,
	"asin": true, "acos": true, "degrees": true, "radians": true, "gcd": true, "lcm": true, "factorial": true,
	"width_bucket": true, "chr": true, "repeat": true, "lpad": true, "rpad": true, "format": true,
	"make_date": true, "make_timestamp": true, "make_interval": true, "to_timestamp": true, "age": true,
	"justify_hours": true, "justify_days": true, "justify_interval": true,
	"to_char_num": true, "to_number": true, "to_date": true, "to_timestamp_fmt": true}

// keyExpr reports whether e's value is determined by the columns it reads
// (PostgreSQL hashes any such expression: o.k = coalesce(l.k, 0) and
// o.s = substr(l.s, 1, 2) are hash joins there).
func keyExpr(e expr.Expr) bool {
	switch e := e.(type) {
	case *expr.ColRef, *expr.Const, *expr.Param:
		return true
	case *expr.Cast:
		return keyExpr(e.E)
	case *expr.Func:
		if notKeyFuncs[e.Name] {
			return false
		}
		for _, a := range e.Args {
			if !keyExpr(a) {
				return false
			}
		}
		return true
	case *expr.Case:
		for _, w := range e.Whens {
			if !keyExpr(w.Cond) || !keyExpr(w.Then) {
				return false
			}
		}
		return e.Else == nil || keyExpr(e.Else)
	case *expr.InList:
		if !keyExpr(e.E) {
			return false
		}
		for _, a := range e.List {
			if !keyExpr(a) {
				return false
			}
		}
		return true
	}
	return false
}

// and joins conjuncts with AND (nil for none).
func and(cs []expr.Expr) expr.Expr {
	var out expr.Expr
	for _, c := range cs {
		if out == nil {
			out = c
		} else {
			out = &expr.Func{Name: "and", Args: []expr.Expr{out, c}, T: c.Type()}
		}
	}
	return out
}

var joinKinds = [...]plan.JoinKind{
	InnerJoin: plan.JoinInner, LeftJoin: plan.JoinLeft, RightJoin: plan.JoinRight,
	FullJoin: plan.JoinFull, SemiJoin: plan.JoinSemi, AntiJoin: plan.JoinAnti,
}

// JoinKindName is how plans print a join kind.
func JoinKindName(k plan.JoinKind) string {
	return [...]string{"Inner", "Left", "Right", "Full", "Semi", "Anti"}[k]
}

func conjuncts(e expr.Expr) []expr.Expr {
	if e == nil {
		return nil
	}
	if f, ok := e.(*expr.Func); ok && f.Name == "and" {
		return append(conjuncts(f.Args[0]), conjuncts(f.Args[1])...)
	}
	return []expr.Expr{e}
}

const (
	sideNone = iota
	sideLeft
	sideRight
	sideBoth
)

// side says which join input the columns of e come from.
func side(e expr.Expr, nl int) int {
	s := sideNone
	walk(e, func(x expr.Expr) {
		c, ok := x.(*expr.ColRef)
		if !ok {
			return
		}
		cs := sideLeft
		if c.Idx >= nl {
			cs = sideRight
		}
		if s == sideNone {
			s = cs
		} else if s != cs {
			s = sideBoth
		}
	})
	return s
}

func children(e expr.Expr) []expr.Expr {
	switch e := e.(type) {
	case *expr.Cast:
		return []expr.Expr{e.E}
	case *expr.Func:
		return e.Args
	case *expr.Case:
		var out []expr.Expr
		for _, w := range e.Whens {
			out = append(out, w.Cond, w.Then)
		}
		if e.Else != nil {
			out = append(out, e.Else)
		}
		return out
	case *expr.InList:
		return append([]expr.Expr{e.E}, e.List...)
	}
	return nil
}

func walk(e expr.Expr, fn func(expr.Expr)) {
	fn(e)
	for _, c := range children(e) {
		walk(c, fn)
	}
}

// shift returns e with every column index moved by d.
func shift(e expr.Expr, d int) expr.Expr {
	return mapCols(e, func(i int) int { return i + d })
}

// mapCols returns e with every column index i replaced by to(i).
func mapCols(e expr.Expr, to func(int) int) expr.Expr {
	switch e := e.(type) {
	case *expr.ColRef:
		c := *e
		c.Idx = to(c.Idx)
		return &c
	case *expr.Cast:
		return &expr.Cast{E: mapCols(e.E, to), T: e.T}
	case *expr.Func:
		f := &expr.Func{Name: e.Name, T: e.T, Args: make([]expr.Expr, len(e.Args))}
		for i, a := range e.Args {
			f.Args[i] = mapCols(a, to)
		}
		return f
	case *expr.Case:
		c := &expr.Case{T: e.T}
		for _, w := range e.Whens {
			c.Whens = append(c.Whens, expr.When{Cond: mapCols(w.Cond, to), Then: mapCols(w.Then, to)})
		}
		if e.Else != nil {
			c.Else = mapCols(e.Else, to)
		}
		return c
	case *expr.InList:
		in := &expr.InList{E: mapCols(e.E, to), Not: e.Not}
		for _, x := range e.List {
			in.List = append(in.List, mapCols(x, to))
		}
		return in
	}
	return e
}

// Explain prints a physical plan as an indented tree.
func Explain(p plan.Plan) string {
	var b strings.Builder
	explain(&b, p, 0)
	return b.String()
}

func explain(b *strings.Builder, p plan.Plan, depth int) {
	pad := strings.Repeat("  ", depth)
	line := func(format string, args ...any) { fmt.Fprintf(b, pad+format+"\n", args...) }
	switch p := p.(type) {
	case *plan.ScanStream:
		if p.Index != nil {
			line("IndexScan %s using %s: %s", p.Table.Name, p.Index.Index.Name, p.Index.Desc)
		} else if plan.Keyed(p.Table) {
			line("ChangelogScan %s", p.Table.Name) // a table with a primary key: its rows retract
		} else {
			line("StreamScan %s", p.Table.Name)
		}
	case *plan.ScanView:
		if p.Index != nil {
			line("IndexScan %s using %s: %s", p.View.Name, p.Index.Index.Name, p.Index.Desc)
		} else {
			line("ViewScan %s", p.View.Name)
		}
	case *plan.Values:
		line("Values rows=%d", len(p.Rows))
	case *plan.FuncScan:
		line("FunctionScan %s(%s)", p.Func, exprList(p.Args))
	case *plan.Filter:
		line("Filter %s", p.Pred)
		explain(b, p.In, depth+1)
	case *plan.Project:
		line("Project %s", exprList(p.Exprs))
		explain(b, p.In, depth+1)
	case *plan.HashAgg:
		var aggs []string
		for _, a := range p.Aggs {
			aggs = append(aggs, aggString(a))
		}
		line("HashAggregate keys=[%s] aggs=[%s]%s", exprList(p.Keys), strings.Join(aggs, ", "), appendOnlyInput(p.In))
		explain(b, p.In, depth+1)
	case *plan.SessionAgg:
		var aggs []string
		for _, a := range p.Aggs {
			aggs = append(aggs, aggString(a))
		}
		line("SessionAggregate keys=[%s] time=%s gap=%dus aggs=[%s]", exprList(p.Keys), p.Time, p.Gap, strings.Join(aggs, ", "))
		explain(b, p.In, depth+1)
	case *plan.HashJoin:
		kind := JoinKindName(p.Kind)
		res := ""
		if p.Residual != nil {
			res = " residual=" + p.Residual.String()
		}
		if v := p.Versioned; v != nil {
			line("VersionedJoin %s left=[%s] right=[%s] time=$%d as of $%d%s", kind, exprList(p.LeftKeys), exprList(p.RightKeys), v.BuildTime, v.ProbeTime, appendOnlySides(p))
		} else if p.Lookup {
			// Batch queries run it as the hash join it is over the table's
			// current rows; views run the lookup (plan.HashJoin.Lookup).
			line("LookupJoin %s left=[%s] right=[%s]%s%s", kind, exprList(p.LeftKeys), exprList(p.RightKeys), res, appendOnlySides(p))
		} else {
			line("HashJoin %s left=[%s] right=[%s]%s%s", kind, exprList(p.LeftKeys), exprList(p.RightKeys), res, appendOnlySides(p))
		}
		explain(b, p.Left, depth+1)
		explain(b, p.Right, depth+1)
	case *plan.Sort:
		var keys []string
		for _, k := range p.Keys {
			s := k.E.String()
			if k.Desc {
				s += " DESC"
			}
			keys = append(keys, s)
		}
		if p.Limit >= 0 {
			line("TopN %d [%s]%s", p.Limit, strings.Join(keys, ", "), appendOnlyInput(p.In))
		} else {
			line("Sort [%s]", strings.Join(keys, ", "))
		}
		explain(b, p.In, depth+1)
	case *plan.Limit:
		line("Limit offset=%d count=%d", p.Offset, p.Count)
		explain(b, p.In, depth+1)
	case *plan.Window:
		var funcs []string
		for _, f := range p.Funcs {
			funcs = append(funcs, winFuncString(f))
		}
		line("Window partition=[%s] order=[%s] funcs=[%s]%s", exprList(p.PartitionBy), sortKeyList(p.OrderBy), strings.Join(funcs, ", "), appendOnlyInput(p.In))
		explain(b, p.In, depth+1)
	case *plan.SingleRow:
		line("SingleRow")
		explain(b, p.In, depth+1)
	case *plan.LateralFuncScan:
		line("LateralFunctionScan %s(%s)", p.Func, exprList(p.Args))
		explain(b, p.In, depth+1)
	case *plan.ProjectSRF:
		var fs []string
		for i, f := range p.Funcs {
			fs = append(fs, f+"("+exprList(p.Args[i])+")")
		}
		line("ProjectSet %s", strings.Join(fs, ", "))
		explain(b, p.In, depth+1)
	case *plan.Hop:
		if p.Cumulate {
			line("Cumulate time=%s step=%dus max=%dus", p.TS, p.Slide, p.Size)
		} else {
			line("Hop time=%s slide=%dus size=%dus", p.TS, p.Slide, p.Size)
		}
		explain(b, p.In, depth+1)
	case *plan.Union:
		line("UnionAll")
		for _, in := range p.Ins {
			explain(b, in, depth+1)
		}
	}
}

// appendOnlyInput marks a stateful operator whose input only inserts rows
// (exec.AppendOnly): run continuously, a top-N keeps only each partition's
// top rows and min/max only each group's extreme.
func appendOnlyInput(in plan.Plan) string {
	if exec.AppendOnly(in) {
		return " input=append-only"
	}
	return ""
}

// appendOnlySides marks the sides of a join that only insert rows.
func appendOnlySides(j *plan.HashJoin) string {
	l, r := exec.AppendOnly(j.Left), exec.AppendOnly(j.Right)
	switch {
	case l && r:
		return " append-only=left,right"
	case l:
		return " append-only=left"
	case r:
		return " append-only=right"
	}
	return ""
}

func aggString(a plan.AggSpec) string {
	name := [...]string{"count(*)", "count", "sum", "avg", "min", "max", "array_agg", "percentile_cont", "percentile_disc", "mode"}[a.Kind]
	switch a.Kind {
	case plan.AggPercentileCont, plan.AggPercentileDisc:
		name = fmt.Sprintf("%s(%g)", name, a.Frac)
	case plan.AggMode:
		name += "()"
	}
	if a.Kind >= plan.AggPercentileCont {
		dir := ""
		if a.Desc {
			dir = " DESC"
		}
		return name + " WITHIN GROUP (ORDER BY " + a.Arg.String() + dir + ")"
	}
	if a.Arg != nil {
		d := ""
		if a.Distinct {
			d = "DISTINCT "
		}
		return name + "(" + d + SortedArgString(a.Arg, a.Order) + ")"
	}
	return name
}

// SortedArgString prints the argument of an aggregate: for a sorted
// array_agg over ROW(keys..., x) with ORDER BY directions dirs, "x ORDER
// BY keys".
func SortedArgString(arg expr.Expr, dirs []plan.AggOrder) string {
	if f, ok := arg.(*expr.Func); ok && len(dirs) > 0 && f.Name == "row_ctor" && len(f.Args) == len(dirs)+1 {
		return f.Args[len(dirs)].String() + " ORDER BY " + orderString(f.Args, dirs)
	}
	return arg.String()
}

// orderString prints the ORDER BY keys inside an aggregate call.
func orderString(keys []expr.Expr, dirs []plan.AggOrder) string {
	var b strings.Builder
	for i, o := range dirs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(keys[i].String())
		if o.Desc {
			b.WriteString(" DESC")
		}
		if o.NullsFirst != o.Desc {
			b.WriteString(map[bool]string{true: " NULLS FIRST", false: " NULLS LAST"}[o.NullsFirst])
		}
	}
	return b.String()
}

func winFuncString(f plan.WindowFunc) string {
	switch f.Kind {
	case plan.WinRowNumber:
		return "row_number()"
	case plan.WinRank:
		return "rank()"
	case plan.WinDenseRank:
		return "dense_rank()"
	case plan.WinAgg:
		return aggString(f.Agg) + frameString(f.Frame)
	}
	return valueFuncString(f)
}

func sortKeyList(ks []plan.SortKey) string {
	var keys []string
	for _, k := range ks {
		s := k.E.String()
		if k.Desc {
			s += " DESC"
		}
		keys = append(keys, s)
	}
	return strings.Join(keys, ", ")
}

func exprList(es []expr.Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}

func colTypes(cs []Column) []typesT {
	ts := make([]typesT, len(cs))
	for i, c := range cs {
		ts[i] = c.T
	}
	return ts
}

// hopBoundKind says whether e calls a placeholder of HOP(table, ...) or
// CUMULATE(table, ...) in FROM left where the binder could not make it a
// Hop (sql/bind hopTVF): "hop", "cumulate", or "" if not.
func hopBoundKind(e expr.Expr) string {
	if c, ok := e.(*expr.Cast); ok {
		return hopBoundKind(c.E)
	}
	f, ok := e.(*expr.Func)
	if !ok {
		return ""
	}
	switch f.Name {
	case "hop_start", "hop_end":
		return "hop"
	case "cumulate_start", "cumulate_end":
		return "cumulate"
	}
	for _, a := range f.Args {
		if k := hopBoundKind(a); k != "" {
			return k
		}
	}
	return ""
}

// hasSessionBound says e computes a session's or a HOP or CUMULATE
// window's bound row by row: the placeholders of SESSION(table, ...),
// HOP(table, ...) or CUMULATE(table, ...) in FROM left where the binder
// could not make them a session window or a Hop (sql/bind groupwin.go).
func hasSessionBound(e expr.Expr) bool {
	switch e := e.(type) {
	case *expr.Func:
		switch e.Name {
		case "session_start", "session_end", "hop_start", "hop_end", "cumulate_start", "cumulate_end":
			return true
		}
		for _, a := range e.Args {
			if hasSessionBound(a) {
				return true
			}
		}
	case *expr.Cast:
		return hasSessionBound(e.E)
	}
	return false
}

func isFunc(e expr.Expr, name string) bool {
	f, ok := e.(*expr.Func)
	return ok && f.Name == name
}

// arrayGroupKeys replaces each array or record among keys by its text key
// (array_key, record_key: equal exactly when the values are equal), as the group
// tables hold scalar keys. back, nil when no key is an array, returns the
// projection over the aggregate's output (cols: the keys, then the
// aggregates) that turns those keys back into arrays.
func arrayGroupKeys(keys []expr.Expr) (out []expr.Expr, back func(cols []Column) []expr.Expr) {
	out = keys
	for i, k := range keys {
		name := textKeyFunc(k.Type())
		if name == "" {
			continue
		}
		if back == nil {
			out = append([]expr.Expr(nil), keys...)
			back = func(cols []Column) []expr.Expr {
				ps := make([]expr.Expr, 0, len(cols))
				for j, k := range keys {
					if textKeyFunc(k.Type()) != "" {
						ps = append(ps, &expr.Cast{E: &expr.ColRef{Idx: j, T: types.TText}, T: k.Type()})
						continue
					}
					ps = append(ps, &expr.ColRef{Idx: j, T: k.Type()})
				}
				for j := len(keys); j < len(cols); j++ {
					ps = append(ps, &expr.ColRef{Idx: j, T: cols[j].T, Name: cols[j].Name})
				}
				return ps
			}
		}
		out[i] = &expr.Func{Name: name, Args: []expr.Expr{k}, T: types.TText}
	}
	return out, back
}

// textKeyFunc names the function that gives a value of type t the text
// key grouping and joins use (array_key, record_key); "" for a type the
// group and join tables hold as it is.
func textKeyFunc(t types.T) string {
	switch t.Kind {
	case types.TextArray:
		return "array_key"
	case types.Record:
		return "record_key"
	}
	return ""
}
