package exec

import (
	"context"
	"sync/atomic"

	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// StartJob compiles a continuous query into its graph and starts it:
// sources → [stateful operators, partitioned by their keys] → sink. Durable
// jobs resume from their committed offsets and state.
func StartJob(db *storage.DB, spec JobSpec) (*Job, error) {
	if spec.Parallelism < 1 {
		spec.Parallelism = 1
	}
	if err := CheckArrayLayout(spec.View); err != nil {
		return nil, err
	}
	if err := CheckNumericLayout(spec.View, spec.Plan); err != nil {
		return nil, err
	}
	if err := CheckUUIDLayout(spec.View, spec.Plan); err != nil {
		return nil, err
	}
	g, err := compile(spec.Plan, spec.Parallelism)
	if err != nil {
		return nil, err
	}
	pruneHops(g, spec.RecordLate)
	var dist *distWiring
	if spec.Dist != nil {
		if dist, err = newDistWiring(g, spec.Dist); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{spec: spec, g: g, db: db, ctx: ctx, cancel: cancel, dist: dist,
		acks: make(chan ack, 1), failed: make(chan struct{})}
	j.changelog.Store(spec.Changelog)
	j.et.db, j.et.spec = db, &j.spec
	j.mem.db, j.mem.spec = db, &j.spec
	j.hold.db, j.hold.spec, j.hold.mem, j.hold.wg = db, &j.spec, &j.mem, &j.wg
	j.et.watermark.Store(NoWatermark)
	if err := useStateBackend(db, &j.spec); err != nil {
		cancel()
		return nil, err
	}
	started := false
	var opened []*exchange.Inbox
	defer func() {
		if !started {
			for _, in := range opened {
				in.Close()
			}
			cancel()
			for _, s := range j.srcs {
				if s.snap != nil {
					s.snap.Close()
				}
			}
		}
	}()
	if spec.Reemit {
		// An upgraded view rebuilds its rows from the state at its root.
		// A view with no state at all rebuilds them from its sources.
		switch {
		case !g.stateful():
			j.fresh = true
		case g.root.from.kind == nSource || g.root.from.kind == nUnion:
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a view whose rows come partly from its streams directly and partly from state cannot be upgraded from a savepoint")
		case g.root.from.kind == nJoin && g.root.from.join.Lookup:
			return nil, errLookupReemit
		}
	}
	j.et.resume = j.durable() && !j.fresh
	for _, n := range g.sources {
		s, err := openSource(j, n)
		if err != nil {
			return nil, err
		}
		j.srcs = append(j.srcs, s)
		for p := range s.offsets {
			pw, err := j.et.newPartWatermark(n.src, uint32(p), n.changelog && !versionedSide(n))
			if err != nil {
				return nil, err
			}
			s.wm = append(s.wm, pw)
		}
	}
	if err := j.et.loadLateRows(); err != nil {
		return nil, err
	}

	// One channel per producer instance and consumer instance of each edge.
	edges := []*gedge{g.root}
	outEdge := map[*gnode]*gedge{g.root.from: g.root}
	for _, n := range g.nodes {
		for _, e := range n.ins {
			edges = append(edges, e)
			outEdge[e.from] = e
		}
	}
	inputs := map[*gnode][][]chan msg{}
	for _, n := range g.nodes {
		inputs[n] = make([][]chan msg, n.par)
	}
	var sinkIns []chan msg
	outlets := map[*gedge][]*outlet{}
	type remote struct {
		s, p, c int
		ch      chan msg
	}
	var remotes []remote  // a local split's channel to an instance on another node
	var guards []chan msg // a local join instance's channel to an aggregate instance of another number
	sinkAgg := g.root.from.kind == nAgg
	for _, e := range edges {
		ninst := 1
		if e.to != nil {
			ninst = e.to.par
		}
		stages := e.stages
		if e.to == nil && sinkAgg {
			stages = nil // the sink applies them, to delete rows HAVING drops
		}
		for p := 0; p < e.from.par; p++ {
			o := &outlet{j: j, stages: stages, keys: e.keys, in: e.in,
				aggregate: e.to != nil && e.to.kind == nAgg,
				rowIDs:    e.to == nil && e.byPosition()}
			shuffle := dist != nil && e.to == dist.shuffle
			si := -1
			if shuffle {
				o.wOut = dist.firstLocalInstance() // the split's writes stay on its node
				si = dist.sourceIndex(e.from)
			}
			joinAgg := dist != nil && dist.join != nil && e.from == dist.join
			if joinAgg {
				o.wOut = p // the join instance's writes go to the aggregate instance beside it
			}
			if e.from.kind == nSource {
				o.fallible = fallibleOf(e.keys...)
				if e.to != nil && e.to.kind == nAgg {
					for _, a := range e.to.agg.Aggs {
						o.fallible = append(o.fallible, fallibleOf(a.Arg)...)
					}
				}
			}
			for c := 0; c < ninst; c++ {
				ch := make(chan msg, 4)
				o.outs = append(o.outs, ch)
				switch {
				case shuffle && !dist.splitLocal(si, p):
					continue // not started here
				case shuffle && !dist.instanceLocal(c):
					remotes = append(remotes, remote{si, p, c, ch})
					continue
				case joinAgg && !dist.instanceLocal(p):
					continue // on another node
				case joinAgg && p != c:
					guards = append(guards, ch)
					continue
				case dist != nil && e.to == nil && !dist.instanceLocal(p):
					continue // its node's sink takes its rows
				}
				if e.to == nil {
					sinkIns = append(sinkIns, ch)
				} else {
					inputs[e.to][c] = append(inputs[e.to][c], ch)
				}
			}
			outlets[e] = append(outlets[e], o)
		}
	}

	nagg, nops := 0, 0
	for _, n := range g.nodes {
		switch n.kind {
		case nAgg:
			nagg += n.par
		case nJoin, nRank, nTemporal, nSession:
			nops += n.par
		}
	}
	j.mem.aggBytes = make([]atomic.Int64, nagg)
	// The aggregates' instances come first; then joins' and ranks'; last
	// the sink's rows of a view without aggregation at its root (so a view
	// of a stream's rows bounds its epochs too).
	j.mem.dirty = make([]atomic.Int64, nagg+nops+1)
	j.mem.stateful = max(1, nagg+nops)
	if spec.View != nil && g.root.from.kind != nAgg && !g.root.byPosition() && g.root.from.retracts {
		j.mem.stateful++ // the sink's multiset of the view's rows takes a share (sinkbag.go)
	}
	var starts []func()
	f := opFactory{j}
	slot, opSlot := 0, nagg // aggregates' instances first, then the others'

	for _, n := range g.nodes {
		out := outEdge[n]
		root := out == g.root
		switch n.kind {
		case nAgg:
			for i := 0; i < n.par; i++ {
				at := slot
				slot++
				if dist != nil && !dist.instanceLocal(i) {
					continue // on another node
				}
				op, err := f.newAggNode(n, i, at, outlets[out][i], root)
				if err != nil {
					return nil, err
				}
				if dist != nil && n == dist.shuffle {
					in, err := dist.inboxes(j, i, &inputs[n][i], &starts)
					if err != nil {
						return nil, err
					}
					opened = append(opened, in...)
				}
				ins, o := inputs[n][i], outlets[out][i]
				starts = append(starts, func() { j.start(&opTask{j, -1, op, ins, o}) })
			}
		case nJoin:
			if n.join.Versioned != nil {
				op, err := f.versionedOp(n, outlets[out][0], spec.Reemit && root)
				if err != nil {
					return nil, err
				}
				ins, o, at := inputs[n][0], outlets[out][0], opSlot
				opSlot++
				starts = append(starts, func() { j.start(&opTask{j, at, op, ins, o}) })
				continue
			}
			for i := 0; i < n.par; i++ {
				at := opSlot
				opSlot++
				if dist != nil && !dist.instanceLocal(i) {
					continue // on another node
				}
				reemit := spec.Reemit && root
				op, err := f.newJoinNode(n, i, outlets[out][i], reemit)
				if err != nil {
					return nil, err
				}
				if dist != nil && n == dist.shuffle {
					in, err := dist.inboxes(j, i, &inputs[n][i], &starts)
					if err != nil {
						return nil, err
					}
					opened = append(opened, in...)
				}
				ins, o := inputs[n][i], outlets[out][i]
				starts = append(starts, func() {
					j.start(taskFunc(func() error {
						if reemit {
							if err := op.reemitAll(j.exprCtx()); err != nil {
								return err
							}
						}
						return (&opTask{j, at, op, ins, o}).run()
					}))
				})
			}
		case nRank:
			for i := 0; i < n.par; i++ {
				op, err := f.newRankNode(n, i, outlets[out][i], spec.Reemit && root)
				if err != nil {
					return nil, err
				}
				ins, o := inputs[n][i], outlets[out][i]
				at := opSlot
				opSlot++
				starts = append(starts, func() { j.start(&opTask{j, at, op, ins, o}) })
			}
		case nSession:
			for i := 0; i < n.par; i++ {
				op, err := f.newSessionNode(n, i, outlets[out][i], root)
				if err != nil {
					return nil, err
				}
				ins, o := inputs[n][i], outlets[out][i]
				at := opSlot
				opSlot++
				starts = append(starts, func() { j.start(&opTask{j, at, op, ins, o}) })
			}
		case nTemporal:
			op, err := f.temporalOp(n, outlets[out][0], spec.Reemit && root)
			if err != nil {
				return nil, err
			}
			ins, o, at := inputs[n][0], outlets[out][0], opSlot
			opSlot++
			starts = append(starts, func() { j.start(&opTask{j, at, op, ins, o}) })
		case nUnion:
			ins, o := inputs[n][0], outlets[out][0]
			starts = append(starts, func() { j.start(&opTask{j, -1, unionOp{o}, ins, o}) })
		}
	}
	for _, r := range remotes {
		starts = append(starts, func() { j.start(&pumpTask{j, dist, r.s, r.p, r.c, r.ch}) })
	}
	for _, ch := range guards {
		starts = append(starts, func() { j.start(&guardTask{j, dist, ch}) })
	}
	for si, s := range j.srcs {
		for p := range s.offsets {
			if dist != nil && !dist.splitLocal(si, p) {
				continue
			}
			bc := make(chan *Barrier, 1)
			j.barriers = append(j.barriers, bc)
			var outs []*outlet
			for _, e := range s.n.outs {
				outs = append(outs, outlets[e][p])
			}
			r := &sourceRunner{j: j, s: s, part: uint32(p), barriers: bc, outs: outs}
			starts = append(starts, func() { j.start(r) })
		}
	}
	started = true
	for _, st := range starts {
		st()
	}
	j.start(&sinkTask{j: j, s: newViewSink(j), ins: sinkIns})
	return j, nil
}

// openSource positions a source: at the job's committed offsets, or for a
// new consumer of a view at a snapshot of its rows and the changelog's end.
func openSource(j *Job, n *gnode) (*jobSource, error) {
	s := &jobSource{n: n, offsets: make([]atomic.Uint64, n.par)}
	if n.src.Kind == storage.KindSource {
		return s, s.openConnector(j)
	}
	for p := 0; p < n.par; p++ {
		start, _, _, err := j.db.Log().Bounds(n.src.ID, uint32(p))
		if err != nil {
			return s, err
		}
		off := start
		resumed := false
		if j.durable() && !j.fresh {
			committed, ok, err := j.db.State().LoadOffset(j.spec.ID, n.src.ID, uint32(p))
			if err != nil {
				return s, err
			}
			off, resumed = max(off, committed), ok
		}
		if n.changelog && !resumed && n.src.Kind == storage.KindView {
			// A new consumer of a view starts from a snapshot of its rows
			// and follows its changelog from the same instant.
			snap, end, err := j.db.Views().Snapshot(n.src.ID)
			if err != nil {
				return s, err
			}
			s.snap, off = snap, end
		}
		s.offsets[p].Store(off)
	}
	return s, nil
}

// opTask runs one instance of a stateful node through the operator
// contract, op.Operator: the runtime aligns its inputs' barriers; chunks
// go to Push, and at each aligned barrier the input watermark goes to
// AdvanceWatermark (op.WatermarkHandler) and the barrier to Barrier,
// whose writes then travel on with the barrier; an afterBarrierOp then
// frees memory (an aggregate's eviction). The rows it takes in an epoch
// count towards the epoch's bound (j.mem.dirty[slot]; -1: none, or the
// operator counts them itself, as an aggregate's changed groups do).
type opTask struct {
	j    *Job
	slot int
	o    op.Operator
	ins  []chan msg
	out  *outlet
}

// run feeds the instance until the job ends.
func (t *opTask) run() error {
	j, slot, o, ins, out := t.j, t.slot, t.o, t.ins, t.out
	ectx := j.exprCtx()
	al := newAligner(ins, j.spec.AtLeastOnce, j.ctx.Done())
	wk, keepsWM := o.(watermarkKeeper)
	if keepsWM = keepsWM && wk.keepsWatermark(); keepsWM {
		if err := j.et.resumeWatermark(al, wk.opID()); err != nil {
			return err
		}
		// Rows replayed before the first barrier meet the resumed watermark.
		if _, err := wk.AdvanceWatermark(ectx, al.Watermark()); err != nil {
			return err
		}
	}
	for {
		m, ok := al.next()
		if !ok {
			return nil
		}
		if m.barrier == nil {
			n := m.c.Rec.NumRows()
			if err := o.Push(ectx, m.c, m.in); err != nil {
				return err
			}
			if so, ok := o.(sizedOp); ok && j.mem.limited() {
				so.reportBytes()
				if err := j.mem.check(); err != nil {
					return err
				}
			}
			if slot >= 0 {
				j.mem.dirty[slot].Add(n)
			}
			continue
		}
		if slot >= 0 {
			j.mem.dirty[slot].Store(0)
		}
		if et, ok := o.(op.WatermarkHandler); ok {
			late, err := et.AdvanceWatermark(ectx, al.Watermark())
			if err != nil {
				return err
			}
			m.late += late
		}
		var w *storage.Batch
		if j.durable() {
			w = j.db.State().NewEpochBatch()
		}
		if err := o.Barrier(ectx, m.barrier, w); err != nil {
			return err
		}
		if keepsWM {
			m.lateRows = mergeLate(m.lateRows, wk.takeLate())
			j.et.saveWatermark(w, al, wk.opID())
		}
		if w != nil {
			m = withWrites(m, w)
		}
		if err := out.barrier(m); err != nil {
			return err
		}
		if ab, ok := o.(afterBarrierOp); ok {
			if err := ab.afterBarrier(m.barrier.Epoch); err != nil {
				return err
			}
		}
	}
}

// afterBarrierOp is an operator with work to do once a barrier has gone
// on (an aggregate evicts then, so its eviction does not delay the
// checkpoint).
type afterBarrierOp interface{ afterBarrier(epoch uint64) error }

// unionOp passes every input's rows on (UNION ALL).
type unionOp struct{ out *outlet }

func (u unionOp) Push(ectx *expr.Ctx, c Chunk, _ int) error { return u.out.emit(ectx, c, nil) }

func (u unionOp) Barrier(*expr.Ctx, *Barrier, *storage.Batch) error { return nil }

// CheckArrayLayout refuses to run a view created before arrays were
// stored as typed lists (storage.KeyFormatTypedArrays) when it outputs an
// array of a non-text element type: its log holds the old List<String>
// layout without the metadata that would say how to read it back.
func CheckArrayLayout(v *storage.TableDef) error {
	if v == nil || v.KeyFormat >= storage.KeyFormatTypedArrays {
		return nil
	}
	for _, c := range v.Columns {
		if c.Type.Kind == types.TextArray && c.Type != types.TTextArray {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"materialized view %q was created before arrays were stored as typed lists and its column %q is %s: drop and recreate it",
				v.Name, c.Name, c.Type)
		}
	}
	return nil
}

// CheckNumericLayout refuses to run a view created before unconstrained
// NUMERIC carried a display scale per value (storage.KeyFormatNumericDScale)
// when any operator of its plan computes an unconstrained numeric (a
// column without a declared precision, `/`, avg, sum over those): its
// state and rows were written at the old scale and layout, and reading
// them now would give wrong values rather than an error.
func CheckNumericLayout(v *storage.TableDef, p plan.Plan) error {
	if v == nil || v.KeyFormat >= storage.KeyFormatNumericDScale || p == nil {
		return nil
	}
	var col string
	plan.WalkPlan(p, func(n plan.Plan) {
		for _, t := range n.Types() {
			if col == "" && t.Kind == types.Numeric && t.Prec == 0 {
				col = t.String()
			}
		}
	})
	if col == "" {
		return nil
	}
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"materialized view %q was created before NUMERIC kept its display scale per value and computes %s: drop and recreate it",
		v.Name, col)
}

// CheckUUIDLayout refuses to run a view created before uuid was stored as
// 16 bytes (storage.KeyFormatUUIDBytes) when a uuid (or uuid[], or a
// record with a uuid field) appears anywhere in its plan: its output log
// holds uuid as text in a String column, without the type metadata that
// would say how to read it back in the new layout.
func CheckUUIDLayout(v *storage.TableDef, p plan.Plan) error {
	if v == nil || v.KeyFormat >= storage.KeyFormatUUIDBytes || p == nil {
		return nil
	}
	found := false
	plan.WalkPlan(p, func(n plan.Plan) {
		for _, t := range n.Types() {
			found = found || usesUUID(t)
		}
	})
	for _, c := range v.Columns {
		found = found || usesUUID(c.Type)
	}
	if !found {
		return nil
	}
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"materialized view %q was created before uuid was stored as 16 bytes and its plan carries uuid values: drop and recreate it", v.Name)
}

// usesUUID reports whether values of t hold a uuid: uuid, uuid[], or a
// record with such a field.
func usesUUID(t types.T) bool {
	if t.Kind == types.UUID || t.Kind == types.TextArray && types.ArrayElem(t).Kind == types.UUID {
		return true
	}
	for _, f := range types.RecordFields(t) {
		if usesUUID(f.T) {
			return true
		}
	}
	return false
}
