package exec

import (
	"errors"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/exchange"
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
// Only one shape runs distributed: one source → stateless stages →
// one hash aggregate → the view (CheckDistShape). The aggregate may be a
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
	// Instances is the node of each aggregate instance, Splits the node
	// of each split (partition) of the source.
	Instances []string
	Splits    []string
	// Server is this node's Flight service (its inboxes); Conn returns a
	// connection to another node's.
	Server *exchange.Server
	Conn   func(node string) (grpc.ClientConnInterface, error)
}

// distShuffleEdge is the exchange edge number of the source → aggregate
// edge (the only edge that crosses nodes).
const distShuffleEdge = 0

// CheckDistShape reports whether plan, compiled with the given
// parallelism, has the one shape that runs distributed (see DistPart):
// nil if it has, a 0A000 error saying why not otherwise.
func CheckDistShape(p plan.Plan, parallelism int) error {
	_, err := DistSplits(p, parallelism)
	return err
}

// DistSplits is CheckDistShape that also returns the number of splits
// (partitions) of p's source, which a placement spreads over the
// nodes.
func DistSplits(p plan.Plan, parallelism int) (int, error) {
	g, err := compile(p, max(1, parallelism))
	if err != nil {
		return 0, err
	}
	src, _, err := distShape(g)
	if err != nil {
		return 0, err
	}
	return src.par, nil
}

// distShape returns the source and aggregate of a graph of the
// distributed shape.
func distShape(g *graph) (src, agg *gnode, err error) {
	refuse := func(why string) (*gnode, *gnode, error) {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "a distributed view must be a keyed GROUP BY over one source, windowed or not (filters, projections, TUMBLE and HOP windows and EMIT ON WINDOW CLOSE allowed): %s", why)
	}
	var ops []*gnode
	for _, n := range g.nodes {
		if n.kind != nSource {
			ops = append(ops, n)
		}
	}
	if len(g.sources) != 1 || len(ops) != 1 {
		return refuse("this query has other operators or several sources")
	}
	src, agg = g.sources[0], ops[0]
	if agg.kind != nAgg || len(agg.ins) != 1 || agg.ins[0].from != src || len(src.outs) != 1 || g.root.from != agg {
		return refuse("this query is not one aggregate over its source")
	}
	if len(agg.agg.Keys) == 0 {
		return refuse("a global aggregate has no key to spread")
	}
	if src.changelog {
		return refuse("its source is a change stream")
	}
	return src, agg, nil
}

// distWiring is what StartJob needs to know of a distributed part.
type distWiring struct {
	d        *DistPart
	src, agg *gnode
}

func newDistWiring(g *graph, d *DistPart) (*distWiring, error) {
	src, agg, err := distShape(g)
	if err != nil {
		return nil, err
	}
	if len(d.Instances) != agg.par || len(d.Splits) != src.par {
		return nil, sqlerr.New(sqlerr.Internal, "distributed job %s: placement of %d instances and %d splits for a job of %d and %d",
			d.Job, len(d.Instances), len(d.Splits), agg.par, src.par)
	}
	w := &distWiring{d: d, src: src, agg: agg}
	if len(w.localSplits()) > 0 && len(d.Instances) > 0 && w.firstLocalInstance() < 0 {
		// Its splits' positions commit with its own sink, which needs an
		// instance to carry them (the placement puts splits only on nodes
		// that run an instance: cluster.place).
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "distributed job %s: node %s reads splits but runs no aggregate instance", d.Job, d.Self)
	}
	return w, nil
}

func (w *distWiring) splitLocal(p int) bool { return w.d.Splits[p] == w.d.Self }

func (w *distWiring) instanceLocal(i int) bool { return w.d.Instances[i] == w.d.Self }

func (w *distWiring) localSplits() []int {
	var out []int
	for p := range w.d.Splits {
		if w.splitLocal(p) {
			out = append(out, p)
		}
	}
	return out
}

func (w *distWiring) firstLocalInstance() int {
	for i := range w.d.Instances {
		if w.instanceLocal(i) {
			return i
		}
	}
	return -1
}

// senderIndex is split p's sender number in the inbox of an instance on
// node recv: the splits on other nodes than recv, numbered in order.
func (w *distWiring) senderIndex(p int, recv string) int {
	n := 0
	for q := 0; q < p; q++ {
		if w.d.Splits[q] != recv {
			n++
		}
	}
	return n
}

// remoteSenders counts the splits on other nodes than recv.
func (w *distWiring) remoteSenders(recv string) int { return w.senderIndex(len(w.d.Splits), recv) }

// distInbox opens, for local instance i of the distributed operator, the
// exchange inbox the splits on other nodes reach it through (nil if there
// are none): a drain started with the job feeds it into one more input
// of the instance, added to ins, whose aligner then aligns its barriers
// with the local splits' as any input's. The operator does not know.
func (j *Job) distInbox(w *distWiring, i int, ins *[]chan msg, starts *[]func()) (*exchange.Inbox, error) {
	senders := w.remoteSenders(w.d.Self)
	if senders == 0 {
		return nil, nil
	}
	in, err := w.d.Server.Open(w.d.Job, distShuffleEdge, i, senders, 0)
	if err != nil {
		return nil, err
	}
	ch := make(chan msg, 4)
	*ins = append(*ins, ch)
	*starts = append(*starts, func() { j.goRun(func() error { return j.drain(w, in, ch) }) })
	return in, nil
}

// pump sends what a local split's outlet routes to remote instance c over
// the exchange: its chunks and barriers (which carry no writes, wOut).
// A stopping job breaks the stream (the receiver's part fails too: a
// distributed job rolls back as a whole).
func (j *Job) pump(w *distWiring, p, c int, ch chan msg) error {
	cc, err := w.d.Conn(w.d.Instances[c])
	if err != nil {
		return err
	}
	schema := opkit.SchemaFor(w.agg.agg.In.Types())
	s, err := exchange.Dial(j.ctx, cc, exchange.StreamID{Job: w.d.Job, Edge: distShuffleEdge,
		Sender: w.senderIndex(p, w.d.Instances[c]), Receiver: c}, schema)
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
		j.inflight.Add(-n) // counted again by the receiving node
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

// drain feeds local instance c's exchange inbox into ch, one of the
// instance's inputs: chunks, and barriers aligned across the remote
// splits with their combined watermark.
func (j *Job) drain(w *distWiring, in *exchange.Inbox, ch chan msg) error {
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
		m := msg{barrier: it.Barrier, wm: it.WM}
		if it.Barrier == nil {
			j.inflight.Add(it.Chunk.Rec.NumRows())
			m = msg{c: it.Chunk}
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
