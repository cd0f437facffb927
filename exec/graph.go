package exec

import (
	"fmt"
	"strings"

	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/plan"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// A continuous plan compiles to a graph. Its nodes are the sources (a
// stream's log, or a view's changelog), the stateful operators (aggregate,
// join, rank) and unions; the sink is the graph's one consumer outside it.
// Stateless Filter/Project stages ride on the edges: the producer applies
// them, then hashes the rows by the consumer's key to pick its instance, so
// every stateful operator is partitioned by its own key (key groups). A
// HOP expand stage (hop.go) rides on edges likewise.

type nodeKind uint8

const (
	nSource nodeKind = iota
	nAgg
	nJoin
	nRank
	nUnion
	nTemporal // a temporal filter (temporal.go)
	nSession  // a session window aggregate (session.go)
)

// gnode is a node of a job's graph.
type gnode struct {
	kind nodeKind
	op   uint32 // stateful operators: the id their state is stored under
	// nSource: the stream or view read; a view is read through its
	// changelog. One source serves every scan of the same table.
	src       *storage.TableDef
	changelog bool
	// reads: the columns of a connector source its scans read (their
	// plan.ScanStream.Reads, together); nil: every column. scans counts
	// the scans.
	reads []bool
	scans int
	agg   *plan.HashAgg
	join  *plan.HashJoin
	// joinPreds: the filters right over a join, over its pairs as its
	// residual is; they bound an interval join as the residual does.
	joinPreds []expr.Expr
	rank      *rankSpec
	temporal  *temporalSpec
	session   *plan.SessionAgg
	ins       []*gedge // inputs (a join: left, right)
	outs      []*gedge // a source's consumers (every other node has one)
	par       int      // parallel instances
	// retracts says the node's output may retract rows it emitted.
	retracts bool
}

// gedge carries the rows of from, with stages applied, to a consumer;
// keys (over the staged rows) pick the consumer's instance.
type gedge struct {
	from   *gnode
	stages []plan.Plan // Filter/Project/Hop, bottom-up
	keys   []expr.Expr
	to     *gnode // nil: the sink
	in     int    // which input of to
}

// graph is a compiled continuous plan.
type graph struct {
	nodes   []*gnode // inputs before their consumers
	sources []*gnode
	root    *gedge // into the sink
}

// byPosition says the rows e carries are a stream's rows, one per source
// position (the sink keys a view of them by it): no HOP stage copies them.
func (e *gedge) byPosition() bool {
	if e.from.kind != nSource || e.from.changelog {
		return false
	}
	for _, st := range e.stages {
		switch st.(type) {
		case *plan.Hop, *plan.LateralFuncScan:
			return false
		}
	}
	return true
}

// stateful says the graph has a stateful operator.
func (g *graph) stateful() bool {
	for _, n := range g.nodes {
		if n.kind == nAgg || n.kind == nJoin || n.kind == nRank || n.kind == nTemporal || n.kind == nSession {
			return true
		}
	}
	return false
}

// rankSpec is a rank node: ORDER BY ... LIMIT (Window nil: emit the rows at
// positions [lo, hi) of the order) or window functions over partitions
// (emit the rows with their functions' values; hi bounds the first
// function's value when an outer filter does).
type rankSpec struct {
	window    *plan.Window
	partition []expr.Expr
	order     []plan.SortKey
	lo, hi    int64        // hi < 0: unbounded
	win       *windowClose // a partition key that bounds windows (top-N per window)
}

// compile turns a plan into a graph, or refuses it with 0A000 naming what
// the runtime cannot run continuously.
func compile(p plan.Plan, parallelism int) (*graph, error) {
	c := &compiler{par: max(1, parallelism), byTable: map[uint64]*gnode{}}
	root, err := c.edge(p)
	if err != nil {
		return nil, err
	}
	g := &graph{nodes: c.nodes, root: root}
	if err := checkVersionedSides(c.nodes); err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		if n.kind == nSource {
			g.sources = append(g.sources, n)
		}
	}
	// Stateful operators are numbered children first, left to right, so a
	// plan keeps its ids as long as its shape is kept (one aggregate: 0).
	var op uint32
	for _, n := range g.nodes {
		if n.kind == nAgg || n.kind == nJoin || n.kind == nRank || n.kind == nTemporal || n.kind == nSession {
			n.op = op
			op++
		}
	}
	return g, nil
}

type compiler struct {
	par     int
	nodes   []*gnode
	byTable map[uint64]*gnode
}

// edge compiles p into the node below its stateless stages.
func (c *compiler) edge(p plan.Plan) (*gedge, error) {
	var stages []plan.Plan // top-down
	for {
		switch n := p.(type) {
		case *plan.Filter:
			if hasNow(n.Pred) {
				break // a temporal filter is a node
			}
			stages = append(stages, n)
			p = n.In
			continue
		case *plan.Project:
			if err := refuseNow(n.Exprs...); err != nil {
				return nil, err
			}
			stages = append(stages, n)
			p = n.In
			continue
		case *plan.Hop:
			if err := refuseNow(n.TS); err != nil {
				return nil, err
			}
			stages = append(stages, n)
			p = n.In
			continue
		case *plan.LateralFuncScan:
			if n.Func != "unnest" && n.Func != "regexp_matches" {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s() in FROM is not supported in a materialized view", n.Func)
			}
			if err := refuseNow(n.Args...); err != nil {
				return nil, err
			}
			stages = append(stages, n)
			p = n.In
			continue
		case *plan.Sort:
			if n.Limit < 0 {
				p = n.In // a view has no order: ORDER BY alone changes nothing
				continue
			}
		case *plan.SingleRow:
			// A scalar subquery over a global aggregate always has its
			// one row, so it is the aggregate.
			if oneRow(n.In) {
				p = n.In
				continue
			}
		}
		break
	}
	from, err := c.node(p)
	if err != nil {
		return nil, err
	}
	e := &gedge{from: from}
	for i := len(stages) - 1; i >= 0; i-- {
		e.stages = append(e.stages, stages[i])
	}
	if from.kind == nJoin {
		for i := len(stages) - 1; i >= 0; i-- {
			f, ok := stages[i].(*plan.Filter)
			if !ok {
				break
			}
			from.joinPreds = append(from.joinPreds, f.Pred)
		}
	}
	if from.kind == nRank && from.rank.window != nil {
		from.rank.hi = rankBound(from.rank.window, e.stages)
	}
	if from.kind == nSource {
		from.outs = append(from.outs, e)
	}
	return e, nil
}

func (c *compiler) add(n *gnode) *gnode {
	c.nodes = append(c.nodes, n)
	return n
}

func (c *compiler) input(to *gnode, in int, p plan.Plan, keys []expr.Expr) error {
	e, err := c.edge(p)
	if err != nil {
		return err
	}
	e.to, e.in, e.keys = to, in, keys
	to.ins = append(to.ins, e)
	if e.from.retracts {
		to.retracts = true
	}
	return nil
}

func (c *compiler) node(p plan.Plan) (*gnode, error) {
	switch n := p.(type) {
	case *plan.ScanStream:
		g := c.source(n.Table, plan.Keyed(n.Table)) // a keyed table's log is a changelog
		g.addReads(n.Reads)
		return g, nil
	case *plan.ScanView:
		if n.Snap != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "continuous queries cannot read AS OF snapshots")
		}
		return c.source(n.View, true), nil
	case *plan.Filter: // edge passes the others
		return c.temporal(n)
	case *plan.HashAgg:
		if err := refuseNow(n.Keys...); err != nil {
			return nil, err
		}
		for _, a := range n.Aggs {
			if err := refuseNow(a.Arg); err != nil {
				return nil, err
			}
		}
		g := &gnode{kind: nAgg, agg: n, par: 1}
		if len(n.Keys) > 0 {
			g.par = c.par
		}
		if err := c.input(g, 0, n.In, n.Keys); err != nil {
			return nil, err
		}
		g.retracts = true // groups change: update_before/update_after
		return c.add(g), nil
	case *plan.SessionAgg:
		return c.sessionNode(n)
	case *plan.HashJoin:
		if err := refuseNow(append(append([]expr.Expr{n.Residual}, n.LeftKeys...), n.RightKeys...)...); err != nil {
			return nil, err
		}
		g := &gnode{kind: nJoin, join: n, par: 1}
		if n.Versioned != nil {
			return c.versioned(g)
		}
		if len(n.LeftKeys) > 0 {
			g.par = c.par
		}
		if err := c.input(g, 0, n.Left, n.LeftKeys); err != nil {
			return nil, err
		}
		if n.Lookup && g.ins[0].from.retracts {
			return nil, errLookupRetracts
		}
		if err := c.input(g, 1, n.Right, n.RightKeys); err != nil {
			return nil, err
		}
		if n.Lookup {
			// Left rows only come, and a change of the right side emits
			// nothing: the output only inserts (lookupjoin.go).
			g.retracts = false
			return c.add(g), nil
		}
		if n.Kind != plan.JoinInner {
			g.retracts = true // a NULL-padded row is retracted when its first match comes
		}
		return c.add(g), nil
	case *plan.Limit:
		s, ok := n.In.(*plan.Sort)
		if !ok || s.Limit < 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "continuous queries need ORDER BY with LIMIT or OFFSET (without it the rows kept are arbitrary)")
		}
		hi := int64(-1)
		if n.Count >= 0 {
			hi = n.Offset + n.Count
		}
		return c.rank(&rankSpec{order: s.Keys, lo: n.Offset, hi: hi}, s.In, nil)
	case *plan.Sort: // with a limit (edge drops the others)
		return c.rank(&rankSpec{order: n.Keys, lo: 0, hi: n.Limit}, n.In, nil)
	case *plan.Window:
		for _, f := range n.Funcs {
			if err := refuseNow(f.Arg, f.Default, f.Agg.Arg); err != nil {
				return nil, err
			}
		}
		spec := &rankSpec{window: n, partition: n.PartitionBy, order: n.OrderBy, hi: -1}
		// Top-N per window: a partition key that bounds windows frees the
		// window's partition by the watermark (lateranks.go).
		spec.win = rankWindowOf(n.In, n.PartitionBy)
		return c.rank(spec, n.In, n.PartitionBy)
	case *plan.SingleRow: // edge passes the ones it can run
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "continuous queries support scalar subqueries over a global aggregate only (one that always returns one row)")
	case *plan.Union:
		g := &gnode{kind: nUnion, par: 1}
		for i, in := range n.Ins {
			if err := c.input(g, i, in, nil); err != nil {
				return nil, err
			}
		}
		return c.add(g), nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "continuous queries do not support %s", planName(p))
}

func (c *compiler) rank(spec *rankSpec, in plan.Plan, keys []expr.Expr) (*gnode, error) {
	if err := refuseNow(spec.partition...); err != nil {
		return nil, err
	}
	for _, k := range spec.order {
		if err := refuseNow(k.E); err != nil {
			return nil, err
		}
	}
	g := &gnode{kind: nRank, rank: spec, par: 1, retracts: true}
	if len(keys) > 0 {
		g.par = c.par
	}
	if err := c.input(g, 0, in, keys); err != nil {
		return nil, err
	}
	return c.add(g), nil
}

// temporal compiles a filter with a temporal conjunct into a temporal node
// over its input, its other conjuncts a stage below it. It is one
// instance: its rows are not keyed.
func (c *compiler) temporal(f *plan.Filter) (*gnode, error) {
	spec, rest, err := splitTemporal(f)
	if err != nil {
		return nil, err
	}
	in := f.In
	if rest != nil {
		in = &plan.Filter{In: f.In, Pred: rest}
	}
	g := &gnode{kind: nTemporal, temporal: spec, par: 1, retracts: true}
	if err := c.input(g, 0, in, nil); err != nil {
		return nil, err
	}
	return c.add(g), nil
}

func (c *compiler) source(t *storage.TableDef, changelog bool) *gnode {
	if n := c.byTable[t.ID]; n != nil {
		return n
	}
	n := c.add(&gnode{kind: nSource, src: t, changelog: changelog, par: max(1, t.Partitions), retracts: changelog})
	c.byTable[t.ID] = n
	return n
}

// addReads adds the columns a scan of n reads (nil: every column).
func (n *gnode) addReads(reads []bool) {
	n.scans++
	switch {
	case n.scans == 1:
		n.reads = append([]bool(nil), reads...) // nil stays nil
	case n.reads == nil:
	case reads == nil:
		n.reads = nil
	default:
		for i, r := range reads {
			if i < len(n.reads) {
				n.reads[i] = n.reads[i] || r
			}
		}
	}
}

// oneRow says p always has exactly one row: a global aggregate under
// projections.
func oneRow(p plan.Plan) bool {
	for {
		switch n := p.(type) {
		case *plan.Project:
			p = n.In
			continue
		case *plan.HashAgg:
			return len(n.Keys) == 0
		}
		return false
	}
}

func planName(p plan.Plan) string {
	switch p.(type) {
	case *plan.Window:
		return "window functions"
	case *plan.SingleRow:
		return "scalar subqueries"
	case *plan.Values, *plan.Batches:
		return "queries without a stream or view (VALUES, system tables)"
	case *plan.Limit:
		return "LIMIT"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", p), "*plan.")
}

// rankBound finds, in the stages above a window node, a filter that bounds
// its first function's value (rn <= 10, rn < 4, rn = 1), so the node only
// emits the rows that can pass it. The filter itself stays in place.
func rankBound(w *plan.Window, stages []plan.Plan) int64 {
	if len(w.Funcs) != 1 || !rankFuncsOnly(w) {
		return -1
	}
	col := len(w.In.Types()) // the function's column
	bound := int64(-1)
	for _, st := range stages {
		switch st := st.(type) {
		case *plan.Project:
			next := -1
			for i, e := range st.Exprs {
				if r, ok := e.(*expr.ColRef); ok && r.Idx == col {
					next = i
					break
				}
			}
			if next < 0 {
				return bound
			}
			col = next
		case *plan.Filter:
			for _, cj := range conjuncts(st.Pred) {
				if b, ok := boundOf(cj, col); ok && (bound < 0 || b < bound) {
					bound = b
				}
			}
		}
	}
	return bound
}

func conjuncts(e expr.Expr) []expr.Expr {
	if f, ok := e.(*expr.Func); ok && f.Name == "and" && len(f.Args) == 2 {
		return append(conjuncts(f.Args[0]), conjuncts(f.Args[1])...)
	}
	return []expr.Expr{e}
}

// boundOf reads col <= c, col < c, col = c (or mirrored) as an upper bound.
func boundOf(e expr.Expr, col int) (int64, bool) {
	f, ok := e.(*expr.Func)
	if !ok || len(f.Args) != 2 {
		return 0, false
	}
	op := f.Name
	a, b := f.Args[0], f.Args[1]
	if !isCol(a, col) {
		a, b = b, a
		op = map[string]string{"<=": ">=", ">=": "<=", "<": ">", ">": "<", "=": "="}[op]
	}
	if !isCol(a, col) {
		return 0, false
	}
	d, err := expr.EvalConst(&expr.Ctx{Mem: memoryPool}, b)
	if err != nil || d.Null || !b.Type().IsInteger() {
		return 0, false
	}
	switch op {
	case "<=", "=":
		return d.I, true
	case "<":
		return d.I - 1, true
	}
	return 0, false
}

func isCol(e expr.Expr, col int) bool {
	for {
		switch x := e.(type) {
		case *expr.ColRef:
			return x.Idx == col
		case *expr.Cast:
			e = x.E
			continue
		}
		return false
	}
}

// StateOperators names the stateful operators of a continuous plan by their
// stable ids, each with a fingerprint of what its state means: its kind,
// and its keys and aggregates with every column traced to the stream or
// view column it comes from. Restoring state into a plan requires equal
// fingerprints for equal ids, so sum(a) -> sum(b) is refused even when the
// types agree.
func StateOperators(p plan.Plan) (map[string]string, error) {
	g, err := compile(p, 1)
	if err != nil {
		return nil, err
	}
	ops := map[string]string{}
	for _, n := range g.nodes {
		var name string
		var b strings.Builder
		in := func(i int) func(expr.Expr) string {
			return func(e expr.Expr) string { return traceExpr(e, n.ins[i]) }
		}
		switch n.kind {
		case nAgg:
			name = "aggregate"
			tr := in(0)
			b.WriteString("keys(")
			for i, k := range n.agg.Keys {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s %s", tr(k), k.Type())
			}
			b.WriteString(") aggs(")
			for i, a := range n.agg.Aggs {
				if i > 0 {
					b.WriteString(", ")
				}
				fn := aggNames[a.Kind]
				if a.Distinct {
					fn += " distinct"
				}
				fn += accum.OrderedSetTrace(a)
				if a.Arg != nil {
					fn += "(" + tr(a.Arg) + " " + a.Arg.Type().String() + ")"
				}
				b.WriteString(fn + " -> " + a.T.String())
			}
			b.WriteString(")")
		case nJoin:
			name = "join"
			if n.join.Lookup {
				name = "lookup join"
			} else if v := n.join.Versioned; v != nil {
				name = fmt.Sprintf("versioned join probe time %d build time %d", v.ProbeTime, v.BuildTime)
			}
			fmt.Fprintf(&b, "kind %d left(%s) right(%s) keys(", n.join.Kind, typeList(n.join.Left.Types()), typeList(n.join.Right.Types()))
			for i := range n.join.LeftKeys {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s = %s", in(0)(n.join.LeftKeys[i]), in(1)(n.join.RightKeys[i]))
			}
			b.WriteString(")")
		case nRank:
			name = "rank"
			tr := in(0)
			b.WriteString("rows(" + typeList(n.ins[0].from.outTypes(n.ins[0])) + ") partition(")
			for i, k := range n.rank.partition {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(tr(k))
			}
			b.WriteString(")")
		case nSession:
			name = "session"
			tr := in(0)
			b.WriteString("keys(")
			for i, k := range n.session.Keys {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s %s", tr(k), k.Type())
			}
			fmt.Fprintf(&b, ") time(%s) gap(%d) aggs(", tr(n.session.Time), n.session.Gap)
			for i, a := range n.session.Aggs {
				if i > 0 {
					b.WriteString(", ")
				}
				fn := aggNames[a.Kind]
				if a.Arg != nil {
					fn += "(" + tr(a.Arg) + " " + a.Arg.Type().String() + ")"
				}
				b.WriteString(fn + " -> " + a.T.String())
			}
			b.WriteString(")")
		case nTemporal:
			name = "temporal"
			fmt.Fprintf(&b, "rows(%s) deadline(%s) inclusive(%v)", typeList(n.ins[0].from.outTypes(n.ins[0])), in(0)(n.temporal.Deadline), n.temporal.Inclusive)
		default:
			continue
		}
		ops[fmt.Sprintf("%s#%d", name, n.op)] = b.String()
	}
	return ops, nil
}

// outTypes is the types of the rows e carries.
func (n *gnode) outTypes(e *gedge) []types.T {
	if len(e.stages) > 0 {
		return e.stages[len(e.stages)-1].Types()
	}
	switch n.kind {
	case nSource:
		return plan.ColumnTypes(n.src)
	case nAgg:
		return n.agg.Types()
	case nSession:
		return n.session.Types()
	case nJoin:
		return n.join.Types()
	case nRank:
		if n.rank.window != nil {
			return n.rank.window.Types()
		}
		return n.ins[0].from.outTypes(n.ins[0])
	case nUnion, nTemporal:
		return n.ins[0].from.outTypes(n.ins[0])
	}
	return nil
}

func typeList(ts []types.T) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

// traceExpr renders e, an expression over the rows edge e carries, with
// each column replaced by where it comes from: a stream or view column, or
// an output of a stateful operator.
func traceExpr(x expr.Expr, e *gedge) string {
	return traceThrough(x, e.stages, e.from)
}

func traceThrough(x expr.Expr, stages []plan.Plan, from *gnode) string {
	// Replace from the outermost stage down.
	var sub func(x expr.Expr, depth int) string
	sub = func(x expr.Expr, depth int) string {
		r, ok := x.(*expr.ColRef)
		if !ok {
			return renderWith(x, func(c *expr.ColRef) string { return sub(c, depth) })
		}
		for d := depth; d >= 0; d-- {
			if p, ok := stages[d].(*plan.Project); ok {
				if r.Idx < len(p.Exprs) {
					return sub(p.Exprs[r.Idx], d-1)
				}
				return "?"
			}
			if l, ok := stages[d].(*plan.LateralFuncScan); ok && r.Idx >= len(l.In.Types()) {
				return fmt.Sprintf("%s(%s)", l.Func, sub(l.Args[0], d-1))
			}
			if h, ok := stages[d].(*plan.Hop); ok && r.Idx >= len(h.In.Types()) {
				// A window bound means its time column and sizes.
				bound := [2]string{"window_start", "window_end"}[min(r.Idx-len(h.In.Types()), 1)]
				return fmt.Sprintf("%s(%s, %dus, %dus).%s", h.Name(), sub(h.TS, d-1), h.Slide, h.Size, bound)
			}
		}
		return fromColumn(from, r.Idx)
	}
	return sub(x, len(stages)-1)
}

func fromColumn(n *gnode, i int) string {
	switch n.kind {
	case nSource:
		if i < len(n.src.Columns) {
			return n.src.Name + "." + n.src.Columns[i].Name
		}
	case nJoin:
		nl := len(n.join.Left.Types())
		if i < nl {
			return traceThrough(&expr.ColRef{Idx: i}, n.ins[0].stages, n.ins[0].from)
		}
		return traceThrough(&expr.ColRef{Idx: i - nl}, n.ins[1].stages, n.ins[1].from)
	case nUnion, nRank, nTemporal:
		if n.kind == nRank && n.rank.window != nil && i >= len(n.rank.window.In.Types()) {
			return fmt.Sprintf("rank#%d.%d", n.op, i)
		}
		return traceThrough(&expr.ColRef{Idx: i}, n.ins[0].stages, n.ins[0].from)
	}
	return fmt.Sprintf("op#%d.%d", n.op, i)
}

// renderWith prints x with its column references rendered by col.
func renderWith(x expr.Expr, col func(*expr.ColRef) string) string {
	switch e := x.(type) {
	case *expr.ColRef:
		return col(e)
	case *expr.Cast:
		return fmt.Sprintf("CAST(%s AS %s)", renderWith(e.E, col), e.T)
	case *expr.Func:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = renderWith(a, col)
		}
		return e.Name + "(" + strings.Join(args, ", ") + ")"
	case *expr.Case:
		var b strings.Builder
		b.WriteString("CASE")
		for _, w := range e.Whens {
			fmt.Fprintf(&b, " WHEN %s THEN %s", renderWith(w.Cond, col), renderWith(w.Then, col))
		}
		if e.Else != nil {
			fmt.Fprintf(&b, " ELSE %s", renderWith(e.Else, col))
		}
		b.WriteString(" END")
		return b.String()
	case *expr.InList:
		args := make([]string, len(e.List))
		for i, a := range e.List {
			args[i] = renderWith(a, col)
		}
		return renderWith(e.E, col) + " IN (" + strings.Join(args, ", ") + ")"
	}
	return x.String()
}

// Check reports whether p can run as a continuous query.
func Check(p plan.Plan) error {
	_, err := compile(p, 1)
	return err
}

// Sources names the tables (streams and views) a continuous plan reads.
func Sources(p plan.Plan) ([]*storage.TableDef, error) {
	g, err := compile(p, 1)
	if err != nil {
		return nil, err
	}
	var out []*storage.TableDef
	for _, s := range g.sources {
		out = append(out, s.src)
	}
	return out, nil
}

// sessionNode compiles a session window aggregate, partitioned by its keys.
// Its input must only insert rows: a retraction would have to split a
// session, which merged partial results cannot do.
func (c *compiler) sessionNode(n *plan.SessionAgg) (*gnode, error) {
	if err := refuseNow(append([]expr.Expr{n.Time}, n.Keys...)...); err != nil {
		return nil, err
	}
	for _, a := range n.Aggs {
		if err := refuseNow(a.Arg); err != nil {
			return nil, err
		}
	}
	if err := plan.CheckSessionAggs(n.Aggs); err != nil {
		return nil, err
	}
	g := &gnode{kind: nSession, session: n, par: 1, retracts: true}
	if len(n.Keys) > 0 {
		g.par = c.par
	}
	if err := c.input(g, 0, n.In, n.Keys); err != nil {
		return nil, err
	}
	if g.ins[0].from.retracts {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"SESSION windows in a continuous query need an input that only inserts rows (a stream, or a join or filter of streams); this one retracts rows (a view, an aggregate, an outer join), and a retraction would have to split a session")
	}
	return c.add(g), nil
}
