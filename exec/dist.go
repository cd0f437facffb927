package exec

import (
	"errors"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"google.golang.org/grpc"
)

// DistPart makes a job one node's part of a distributed job
// (docs/design/cluster.md, "Distributed jobs"): the job's graph is the
// same on every node of its placement, but a node starts only the source
// splits and aggregate instances placed on it. Rows a local split routes
// to an instance on another node go over the Flight exchange
// (exec/exchange); an instance with producers on other nodes reads them
// from an exchange inbox, whose aligned barriers enter the instance's
// aligner as one more input. The aggregate's rows go to the sink of the
// node it runs on, so each node's sink commits its own instances' state
// and view rows, and its own splits' positions, at each epoch: a barrier
// that crosses the exchange carries no writes (outlet.wOut sends the
// source's writes to a local instance).
//
// Two shapes run distributed (CheckDistShape): one source → stateless
// stages → one hash aggregate → the view; and two sources → an inner
// equi-join → one hash aggregate by the join key (joinShape). The
// aggregate may be a
// window's (TUMBLE, HOP, CUMULATE keys; EMIT ON WINDOW CLOSE too): the
// watermark crosses the exchange with each barrier, and an instance's
// input watermark is the minimum over every split that feeds it, local
// or remote (the aligner combines its inputs', the exchange inbox its
// senders'), so a window closes only once every split has passed it, at
// the same epoch on every node. The caller injects the same barrier
// epochs on every node (the cluster's rounds) and commits each node's
// part.
type DistPart struct {
	// Job names the job's exchange streams on every node: the view and
	// the placement's generation, so streams of an older generation never
	// attach to a newer one's inboxes.
	Job  string
	Self string
	// Instances is the node of each instance of the shuffled operator
	// (and of the aggregate above a join: the same instance), Splits the
	// node of each split (partition) of each source, in the order of the
	// graph's sources (a join's left side first).
	Instances []string
	Splits    [][]string
	// Server is this node's Flight service (its inboxes); Conn returns a
	// connection to another node's.
	Server *exchange.Server
	Conn   func(node string) (grpc.ClientConnInterface, error)
}

// CheckDistShape reports whether plan, compiled with the given
// parallelism, has a shape that runs distributed (see DistPart): nil if
// it has, a 0A000 error saying why not otherwise.
func CheckDistShape(p plan.Plan, parallelism int) error {
	g, err := compile(p, max(1, parallelism))
	if err != nil {
		return err
	}
	_, err = distShape(g)
	return err
}

// DistSource is a source of a distributed job: its table's name and its
// number of splits (partitions), which a placement spreads over the
// nodes.
type DistSource struct {
	Name   string
	Splits int
}

// DistSources is CheckDistShape that also returns p's sources, in the
// order DistPart.Splits takes them.
func DistSources(p plan.Plan, parallelism int) ([]DistSource, error) {
	g, err := compile(p, max(1, parallelism))
	if err != nil {
		return nil, err
	}
	sh, err := distShape(g)
	if err != nil {
		return nil, err
	}
	out := make([]DistSource, len(sh.srcs))
	for i, n := range sh.srcs {
		if i > 0 && n.src.Name == out[0].Name {
			return nil, distRefusal("a join of a table with itself has one set of splits for two sides")
		}
		out[i] = DistSource{Name: n.src.Name, Splits: n.par}
	}
	return out, nil
}

// shape is a graph of a distributed shape: its sources (in the graph's
// order), the operator they are shuffled to (the aggregate, or the join
// below it) and the aggregate at the root.
type shape struct {
	srcs       []*gnode
	shuffle    *gnode
	agg, join  *gnode // join: nil for a GROUP BY over one source
	sideSchema []*arrow.Schema
}

// distRefusal is the 0A000 of a query that cannot run distributed.
func distRefusal(why string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "a distributed view must be a keyed GROUP BY over one source, windowed or not (filters, projections, TUMBLE and HOP windows and EMIT ON WINDOW CLOSE allowed): %s", why)
}

// distShape returns the shape of a graph of a distributed shape: one
// source → one keyed aggregate, or (engine only, not wired into views)
// two sources → an inner equi-join → an aggregate keyed by the join key.
func distShape(g *graph) (*shape, error) {
	var ops []*gnode
	for _, n := range g.nodes {
		if n.kind != nSource {
			ops = append(ops, n)
		}
	}
	if len(g.sources) == 2 && len(ops) == 2 && ops[0].kind == nJoin {
		return joinShape(g, ops[0], ops[1])
	}
	if len(g.sources) != 1 || len(ops) != 1 {
		return nil, distRefusal("this query has other operators or several sources")
	}
	src, agg := g.sources[0], ops[0]
	if agg.kind != nAgg || len(agg.ins) != 1 || agg.ins[0].from != src || len(src.outs) != 1 || g.root.from != agg {
		return nil, distRefusal("this query is not one aggregate over its source")
	}
	if len(agg.agg.Keys) == 0 {
		return nil, distRefusal("a global aggregate has no key to spread")
	}
	if src.changelog {
		return nil, distRefusal("its source is a change stream")
	}
	return &shape{srcs: []*gnode{src}, shuffle: agg, agg: agg,
		sideSchema: []*arrow.Schema{opkit.SchemaFor(agg.agg.In.Types())}}, nil
}

// joinShape checks two sources → an inner equi-join → one aggregate
// keyed by the join key: both sides are shuffled by the join key to the
// join's instances, and the aggregate's key group of a row is the join
// key's, so each join instance's rows go to the aggregate instance of
// the same number, on the same node.
func joinShape(g *graph, join, agg *gnode) (*shape, error) {
	refuse := func(why string) (*shape, error) {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a distributed join must be an inner equi-join of two sources with a GROUP BY by its key above it: %s", why)
	}
	jn := join.join
	if jn.Lookup || jn.Versioned != nil || jn.Kind != plan.JoinInner || len(jn.LeftKeys) == 0 {
		return refuse("this join is not an inner equi-join")
	}
	if len(join.ins) != 2 || agg.kind != nAgg || len(agg.ins) != 1 || agg.ins[0].from != join || g.root.from != agg || agg.par != join.par {
		return refuse("this query is not one aggregate over one join")
	}
	srcs := make([]*gnode, 2)
	schemas := make([]*arrow.Schema, 2)
	for i, e := range join.ins {
		if e.from.kind != nSource || e.from.changelog || len(e.from.outs) != 1 {
			return refuse("a side of the join is not one source's rows")
		}
		srcs[i] = e.from
		side := jn.Left
		if e.in == 1 {
			side = jn.Right
		}
		schemas[i] = opkit.SchemaFor(side.Types())
	}
	if srcs[0] != g.sources[0] || srcs[1] != g.sources[1] {
		return refuse("the join's sides are not its two sources in order")
	}
	nl := len(jn.Left.Types())
	e := agg.ins[0]
	if len(e.keys) != len(jn.LeftKeys) {
		return refuse("the GROUP BY is not by the join key")
	}
	for i, k := range e.keys {
		c, ok := joinColumn(e.stages, k)
		l, lok := jn.LeftKeys[i].(*expr.ColRef)
		r, rok := jn.RightKeys[i].(*expr.ColRef)
		if !ok || !lok || !rok || k.Type() != l.Type() || l.Type() != r.Type() || (c != l.Idx && c != nl+r.Idx) {
			return refuse("the GROUP BY is not by the join key")
		}
	}
	return &shape{srcs: srcs, shuffle: join, agg: agg, join: join, sideSchema: schemas}, nil
}

// joinColumn traces key k, over the rows after stages, to a column of
// the rows before them (a join's output): only column references through
// projections and filters.
func joinColumn(stages []plan.Plan, k expr.Expr) (int, bool) {
	r, ok := k.(*expr.ColRef)
	if !ok {
		return 0, false
	}
	idx := r.Idx
	for i := len(stages) - 1; i >= 0; i-- {
		switch st := stages[i].(type) {
		case *plan.Filter:
		case *plan.Project:
			if idx >= len(st.Exprs) {
				return 0, false
			}
			if r, ok = st.Exprs[idx].(*expr.ColRef); !ok {
				return 0, false
			}
			idx = r.Idx
		default:
			return 0, false
		}
	}
	return idx, true
}

// distWiring is what StartJob needs to know of a distributed part.
type distWiring struct {
	d *DistPart
	*shape
}

func newDistWiring(g *graph, d *DistPart) (*distWiring, error) {
	sh, err := distShape(g)
	if err != nil {
		return nil, err
	}
	ok := len(d.Instances) == sh.shuffle.par && len(d.Splits) == len(sh.srcs)
	for i := 0; ok && i < len(sh.srcs); i++ {
		ok = len(d.Splits[i]) == sh.srcs[i].par
	}
	if !ok {
		return nil, sqlerr.New(sqlerr.Internal, "distributed job %s: placement of %d instances and splits %v for a job of %d instances over %d sources",
			d.Job, len(d.Instances), d.Splits, sh.shuffle.par, len(sh.srcs))
	}
	w := &distWiring{d: d, shape: sh}
	if w.anyLocalSplit() && len(d.Instances) > 0 && w.firstLocalInstance() < 0 {
		// Its splits' positions commit with its own sink, which needs an
		// instance to carry them (the placement puts splits only on nodes
		// that run an instance: cluster.place).
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "distributed job %s: node %s reads splits but runs no aggregate instance", d.Job, d.Self)
	}
	return w, nil
}

func (w *distWiring) splitLocal(s, p int) bool { return w.d.Splits[s][p] == w.d.Self }

func (w *distWiring) instanceLocal(i int) bool { return w.d.Instances[i] == w.d.Self }

func (w *distWiring) anyLocalSplit() bool {
	for _, splits := range w.d.Splits {
		if slices.Contains(splits, w.d.Self) {
			return true
		}
	}
	return false
}

// sourceIndex is src's number among the shape's sources (-1: none).
func (w *distWiring) sourceIndex(src *gnode) int { return slices.Index(w.srcs, src) }

func (w *distWiring) firstLocalInstance() int {
	for i := range w.d.Instances {
		if w.instanceLocal(i) {
			return i
		}
	}
	return -1
}

// senderIndex is split p of source s's sender number in the inbox of an
// instance on node recv: the source's splits on other nodes than recv,
// numbered in order.
func (w *distWiring) senderIndex(s, p int, recv string) int {
	n := 0
	for q := 0; q < p; q++ {
		if w.d.Splits[s][q] != recv {
			n++
		}
	}
	return n
}

// remoteSenders counts source s's splits on other nodes than recv.
func (w *distWiring) remoteSenders(s int, recv string) int {
	return w.senderIndex(s, len(w.d.Splits[s]), recv)
}

// inboxes opens, for local instance i of the shuffled operator, the
// exchange inbox each source's splits on other nodes reach it through
// (exchange edge s for source s; none if there are none): a drain
// started with the job feeds it into one more input of the instance,
// added to ins, whose aligner then aligns its barriers with the local
// splits' as any input's. The operator does not know.
func (w *distWiring) inboxes(j *Job, i int, ins *[]chan msg, starts *[]func()) ([]*exchange.Inbox, error) {
	var opened []*exchange.Inbox
	for s := range w.srcs {
		senders := w.remoteSenders(s, w.d.Self)
		if senders == 0 {
			continue
		}
		in, err := w.d.Server.Open(w.d.Job, s, i, senders, 0)
		if err != nil {
			for _, o := range opened {
				o.Close()
			}
			return nil, err
		}
		opened = append(opened, in)
		ch := make(chan msg, 4)
		*ins = append(*ins, ch)
		side := w.srcs[s].outs[0].in
		*starts = append(*starts, func() { j.start(&drainTask{j, w, in, side, ch}) })
	}
	return opened, nil
}

// guardTask reads the channel of a join instance to an aggregate instance of
// another number, which a distributed part leaves unconnected: the
// aggregate keys by the join key, so no row may come (joinShape); a row
// that does fails the job rather than going astray.
type guardTask struct {
	j  *Job
	w  *distWiring
	ch chan msg
}

func (t *guardTask) run() error {
	j, w, ch := t.j, t.w, t.ch
	for {
		select {
		case m := <-ch:
			if m.barrier == nil {
				m.c.Rec.Release()
				return sqlerr.New(sqlerr.Internal, "distributed job %s: a join row for an aggregate instance of another key", w.d.Job)
			}
		case <-j.ctx.Done():
			return nil
		}
	}
}

// pumpTask sends what split p of source src's outlet routes to remote
// instance c over the exchange: its chunks and barriers (which carry no
// writes, wOut). A stopping job breaks the stream (the receiver's part
// fails too: a distributed job rolls back as a whole).
type pumpTask struct {
	j         *Job
	w         *distWiring
	src, p, c int
	ch        chan msg
}

func (t *pumpTask) run() error {
	j, w, src, p, c, ch := t.j, t.w, t.src, t.p, t.c, t.ch
	cc, err := w.d.Conn(w.d.Instances[c])
	if err != nil {
		return err
	}
	schema := w.sideSchema[src]
	s, err := exchange.Dial(j.ctx, cc, exchange.StreamID{Job: w.d.Job, Edge: src,
		Sender: w.senderIndex(src, p, w.d.Instances[c]), Receiver: c}, schema)
	if err != nil {
		return err
	}
	defer s.Abort()
	for {
		var m msg
		select {
		case m = <-ch:
		case <-j.ctx.Done():
			return nil
		}
		if m.barrier != nil {
			if m.w != nil || m.late != 0 || len(m.lateRows) != 0 {
				return sqlerr.New(sqlerr.Internal, "distributed job %s: a barrier with writes on the exchange", w.d.Job)
			}
			if err := s.Barrier(j.ctx, m.barrier, m.wm); err != nil {
				return err
			}
			continue
		}
		if !sameLayout(m.c.Rec.Schema(), schema) {
			m.c.Rec.Release()
			return sqlerr.New(sqlerr.Internal, "distributed job %s: rows of schema %s on an edge of schema %s", w.d.Job, m.c.Rec.Schema(), schema)
		}
		n := m.c.Rec.NumRows()
		if err := s.Send(j.ctx, m.c); err != nil {
			return err
		}
		if w.shuffle == w.agg {
			j.mem.inflight.Add(-n) // counted again by the receiving node
		}
	}
}

// sameLayout reports whether records of schema a can be read as b.
func sameLayout(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

// drainTask feeds local instance c's exchange inbox into ch, one of the
// instance's inputs (side: the operator's input the rows are, a join's
// left or right): chunks, and barriers aligned across the remote splits
// with their combined watermark.
type drainTask struct {
	j    *Job
	w    *distWiring
	in   *exchange.Inbox
	side int
	ch   chan msg
}

func (t *drainTask) run() error {
	j, w, in, side, ch := t.j, t.w, t.in, t.side, t.ch
	defer in.Close()
	for {
		it, err := in.Next(j.ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if j.ctx.Err() != nil {
				return nil
			}
			return err
		}
		m := msg{barrier: it.Barrier, wm: it.WM, in: side}
		if it.Barrier == nil {
			if w.shuffle == w.agg {
				j.mem.inflight.Add(it.Chunk.Rec.NumRows())
			}
			m = msg{c: it.Chunk, in: side}
		}
		if err := j.send(ch, m); err != nil {
			return nil // the job stops (send released the chunk)
		}
	}
}

// DistRestoreFilter is the part of a distributed job's data that one node
// takes from another node's snapshot when a new placement gives it
// instances and splits that node held (distjob): the state and view rows
// of the key groups of instances (of n), and the positions, event time
// and lost-record counts of splits, of the source whose table id is
// srcTable in the snapshot and dstTable here; and the aggregate's input
// watermark, the same on every node at an epoch (the minimum over all
// splits), so the rows replayed after a restore are judged late as they
// were before it.
func DistRestoreFilter(instances []int, n int, splits []int, srcTable, dstTable uint64) storage.PartFilter {
	inst := make([]bool, n)
	for _, i := range instances {
		if i >= 0 && i < n {
			inst[i] = true
		}
	}
	return storage.PartFilter{
		Group: func(kg byte) bool { return int(kg) < op.KeyGroups && inst[op.InstanceOf(int(kg), n)] },
		Split: func(part uint32) bool { return slices.Contains(splits, int(part)) },
		JobOp: jobStateOp, SplitKinds: string([]byte{keyPartEventTime, keyPartLost}), SharedKinds: string([]byte{keyOpWatermark}),
		SrcTable: srcTable, DstTable: dstTable,
	}
}
