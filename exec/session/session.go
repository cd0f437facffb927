// Package session is the session window aggregate (GROUP BY keys,
// SESSION(ts, gap)): the operator of a job's session node and of a batch
// query's. The plan node and the wiring into a job (the watermark it
// keeps in the job's state, the time bound of its input) stay in exec.
//
// It implements the operator contract (exec/op), reaches its state only
// through opkit.State and shares the accumulators of exec/accum; it
// imports neither the runtime nor another operator family.
package session

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Session windows (GROUP BY keys, SESSION(ts, gap)).
//
// A session of a key is a maximal run of the key's rows whose event times
// are less than gap apart: it spans [first row's time, last row's time +
// gap). A row whose time falls inside a session (or less than gap before
// its first row) joins it, moving its bounds; a row that reaches two
// sessions merges them. The session operator keeps, per key, its open
// sessions sorted by start, each with its own accumulators (a group id of
// the shared accumulators of exec/accum), so a row that joins a session is
// one accumulator update; a merge folds the accumulators of the sessions
// it joins into the first (Flink's MergingWindowSet with mergeable
// accumulators), which is why only count, sum, avg, min and max without
// DISTINCT are supported. A batch query runs the same operator over its
// whole input, so batch and view agree by construction.
//
// In a job, a session closes when the watermark of its time (exec/eventtime.go:
// its WATERMARK FOR column, maybe shifted by a fixed interval; a time
// without one never closes a session) reaches its end: the view
// keeps its last row (EMIT ON WINDOW CLOSE: the row is inserted then), its
// state is deleted in the same epoch, and a row behind the watermark that
// would start a session already ended (time + gap <= watermark) is late:
// dropped and counted. A row that joins an open session is never late,
// however old: every session in memory is open (the ones the watermark
// passed were closed at the barrier that brought it).
//
// Output columns: the partition keys, session_start, session_end, then
// the aggregates.

// Spec is a session window aggregate: a session is a maximal run of rows
// of a key (Keys) whose Time values are less than Gap µs apart. Output:
// Keys, session start, session end (last time + Gap), Aggs.
type Spec struct {
	Keys []expr.Expr
	Time expr.Expr
	Gap  int64
	Aggs []accum.Spec
}

// Types are the output columns' types.
func (p *Spec) Types() []types.T {
	ts := expr.Types(p.Keys)
	ts = append(ts, types.TTimestamp, types.TTimestamp)
	for _, a := range p.Aggs {
		ts = append(ts, a.T)
	}
	return ts
}

// CheckAggs refuses the aggregates a session window cannot merge.
func CheckAggs(aggs []accum.Spec) error {
	for _, a := range aggs {
		if !accum.Mergeable(a) {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"SESSION windows support count, sum, avg, min and max without DISTINCT (their partial results merge when sessions do)")
		}
	}
	return nil
}

// session is one open session of a key.
type session struct {
	start, last int64
	gid         int32
}

// Op is a session window aggregate: one instance of a job's session
// node, or a batch query's.
type Op struct {
	// st is a job's instance's state, whichever backend holds it.
	st    opkit.State
	spec  *Spec
	keyTs []types.T
	// numKey: a key column is unconstrained NUMERIC, whose display scales
	// the state values carry (stateVal).
	numKey bool
	outTs  []types.T
	mem    memory.Allocator
	gt     *accum.GroupTable // partition key -> key id
	byKey  [][]session       // per key id, by start
	accs   []accum.Accum

	// Per session (group id; 0 is a scratch group late rows and rows
	// without a time go to, cleared after each batch).
	kid     []int32
	gen     []uint32 // bumped when the id is freed (stale heap entries)
	alive   []bool
	isDirty []bool
	lastOut []string // row last emitted ("" none); unused with eowc
	saved   []bool   // the session has a state entry, under savedAt
	savedAt []int64
	free    []int32

	dirty  []int32
	merged []int32  // sessions folded into another this epoch: freed at the barrier
	gone   []string // rows emitted for them, retracted at the barrier
	del    [][]byte // their state keys, deleted at the barrier

	ends    endHeap // open sessions by end (lazily updated)
	closing []int32
	wm      int64 // watermark of the sessions' time as of the last barrier
	wmSaved int64
	// timed says a watermark bounds the sessions' time: it is that
	// watermark's column plus shift µs (exec/eventtime.go). Without one,
	// sessions never close and no row is late.
	timed bool
	shift int64
	late  int64
	eowc  bool

	kids, gids []int32
	keyBuf     []byte
	bytes      int64

	// Job only: where the node's rows go.
	out op.Outlet
}

// sessionBytes is the estimated memory of one session besides its key.
const sessionBytes = 120

// New returns a batch query's session operator over spec, allocating its
// output from mem: Fold every input batch, then Build the sessions All
// lists.
func New(spec *Spec, mem memory.Allocator) *Op {
	o := newOp(spec)
	o.mem = mem
	return o
}

// Node is the wiring of a job's session node instance.
type Node struct {
	Out   op.Outlet   // takes its rows
	State opkit.State // its state; nil for a job without state
	// Timed says a watermark bounds the sessions' time: that watermark's
	// column plus Shift µs. Without one, sessions never close and no row
	// is late.
	Timed bool
	Shift int64
	// EOWC emits each session once, as it closes (EMIT ON WINDOW CLOSE).
	EOWC bool
}

// NewNode returns an instance of a job's session node; a durable job's
// then Loads its state.
func NewNode(spec *Spec, n Node) *Op {
	o := newOp(spec)
	o.out, o.st, o.timed, o.shift, o.eowc = n.Out, n.State, n.Timed, n.Shift, n.EOWC
	return o
}

func newOp(spec *Spec) *Op {
	o := &Op{spec: spec, keyTs: expr.Types(spec.Keys), outTs: spec.Types(), mem: opkit.Mem, wm: op.NoWatermark, wmSaved: op.NoWatermark}
	o.gt = accum.NewGroupTable(o.keyTs)
	for _, t := range o.keyTs {
		o.numKey = o.numKey || t.Kind == types.Numeric && t.Prec == 0
	}
	for _, s := range spec.Aggs {
		o.accs = append(o.accs, accum.New(s, false))
	}
	if len(spec.Keys) == 0 {
		o.byKey = make([][]session, 1)
	}
	o.newGid() // the scratch group
	return o
}

// newGid takes a free session id.
func (o *Op) newGid() int32 {
	if n := len(o.free); n > 0 {
		g := o.free[n-1]
		o.free = o.free[:n-1]
		o.alive[g] = true
		return g
	}
	g := int32(len(o.kid))
	o.kid = append(o.kid, 0)
	o.gen = append(o.gen, 0)
	o.alive = append(o.alive, g != 0)
	o.isDirty = append(o.isDirty, false)
	o.lastOut = append(o.lastOut, "")
	o.saved = append(o.saved, false)
	o.savedAt = append(o.savedAt, 0)
	for _, a := range o.accs {
		a.Grow(len(o.kid))
	}
	return g
}

// freeGid returns session g's id for reuse.
func (o *Op) freeGid(g int32) {
	for _, a := range o.accs {
		a.Reset(g)
	}
	o.alive[g] = false
	o.gen[g]++
	o.bytes -= sessionBytes + int64(len(o.lastOut[g]))
	o.lastOut[g] = ""
	o.saved[g] = false
	o.free = append(o.free, g)
}

func (o *Op) markDirty(g int32) {
	if !o.isDirty[g] {
		o.isDirty[g] = true
		o.dirty = append(o.dirty, g)
	}
}

// Fold folds a batch of inserted rows into the sessions.
func (o *Op) Fold(ectx *expr.Ctx, rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	kids, created, keys, err := o.gt.Group(ectx, o.spec.Keys, rec, o.kids)
	if err != nil {
		return err
	}
	defer opkit.ReleaseAll(keys)
	o.kids = kids
	if cap(o.gids) < n {
		o.gids = make([]int32, n)
	}
	gids := o.gids[:n]
	if created > 0 {
		for len(o.byKey) < o.gt.Len() {
			o.byKey = append(o.byKey, nil)
		}
		for _, k := range o.gt.Created {
			o.bytes += o.gt.KeyBytes(k)
		}
	}
	tcol, err := expr.Eval(ectx, o.spec.Time, rec)
	if err != nil {
		return err
	}
	defer tcol.Release()
	ts, _ := tcol.(*array.Int64) // nil: all NULL
	args := make([]arrow.Array, len(o.spec.Aggs))
	defer opkit.ReleaseAll(args)
	for i, s := range o.spec.Aggs {
		if s.Arg != nil {
			if args[i], err = expr.Eval(ectx, s.Arg, rec); err != nil {
				return err
			}
		}
	}
	gap := o.spec.Gap
	done := 0 // rows before done are in the accumulators
	for i := 0; i < n; i++ {
		if ts == nil || ts.IsNull(i) {
			gids[i] = 0 // a row without a time is in no session
			continue
		}
		t := ts.Value(i)
		kid := kids[i]
		list := o.byKey[kid]
		// The sessions the row reaches: end > t and start < t + gap (ends
		// rise with starts). Rows mostly come in time order: the last
		// session first.
		lo := len(list)
		if lo > 0 && list[lo-1].last+gap > t {
			lo = sort.Search(len(list), func(j int) bool { return list[j].last+gap > t })
		}
		hi := lo
		for hi < len(list) && list[hi].start < t+gap {
			hi++
		}
		switch hi - lo {
		case 0:
			if t+gap <= o.wm {
				o.late++ // its session would have ended already
				gids[i] = 0
				continue
			}
			g := o.newGid()
			o.kid[g] = kid
			o.bytes += sessionBytes
			list = slices.Insert(list, lo, session{start: t, last: t, gid: g})
			o.ends.push(endItem{end: t + gap, gid: g, gen: o.gen[g]})
			gids[i] = g
		case 1:
			s := &list[lo]
			s.start, s.last = min(s.start, t), max(s.last, t)
			gids[i] = s.gid
		default:
			// The row bridges sessions: fold the later ones into the first.
			if err := o.update(gids[done:i], args, done, i, n); err != nil {
				return err
			}
			done = i
			s := &list[lo]
			for _, m := range list[lo+1 : hi] {
				o.merge(s.gid, m.gid)
				s.last = max(s.last, m.last)
			}
			s.start, s.last = min(s.start, t), max(s.last, t)
			gids[i] = s.gid
			list = slices.Delete(list, lo+1, hi)
		}
		o.byKey[kid] = list
		o.markDirty(gids[i])
	}
	if err := o.update(gids[done:], args, done, n, n); err != nil {
		return err
	}
	for _, a := range o.accs {
		a.Reset(0)
	}
	return nil
}

// update folds rows [from, to) of a batch of n rows into their sessions.
func (o *Op) update(gids []int32, args []arrow.Array, from, to, n int) error {
	if from == to {
		return nil
	}
	for i, a := range o.accs {
		arg := args[i]
		if arg != nil && (from > 0 || to < n) {
			arg = array.NewSlice(arg, int64(from), int64(to))
			defer arg.Release()
		}
		if err := a.Update(gids, arg, nil); err != nil {
			return err
		}
	}
	return nil
}

// merge folds session src into dst; src's row is retracted and its state
// deleted at the barrier.
func (o *Op) merge(dst, src int32) {
	for _, a := range o.accs {
		accum.Merge(a, dst, src)
	}
	if o.lastOut[src] != "" {
		o.gone = append(o.gone, o.lastOut[src])
		o.lastOut[src] = ""
	}
	if o.saved[src] {
		o.del = append(o.del, o.stateKey(nil, o.kid[src], o.savedAt[src]))
		o.saved[src] = false
	}
	o.alive[src] = false
	o.merged = append(o.merged, src)
}

// sessionOf finds session g among its key's.
func (o *Op) sessionOf(g int32) (int, *session) {
	list := o.byKey[o.kid[g]]
	for i := range list {
		if list[i].gid == g {
			return i, &list[i]
		}
	}
	return -1, nil
}

// AdvanceWatermark implements op.WatermarkHandler: the sessions the
// barrier's watermark reached close (closing, in end order). It returns the
// rows dropped as late since the last call.
func (o *Op) AdvanceWatermark(_ *expr.Ctx, wm op.Watermark) (int64, error) {
	if o.timed && wm.At != op.NoWatermark && wm.At+o.shift > o.wm {
		o.wm = wm.At + o.shift
	}
	o.closing = o.closing[:0]
	for o.ends.Len() > 0 && o.ends.items[0].end <= o.wm {
		it := o.ends.pop()
		if !o.alive[it.gid] || o.gen[it.gid] != it.gen {
			continue // merged or freed since
		}
		_, s := o.sessionOf(it.gid)
		if end := s.last + o.spec.Gap; end > o.wm {
			o.ends.push(endItem{end: end, gid: it.gid, gen: it.gen}) // grew since
			continue
		}
		o.closing = append(o.closing, it.gid)
	}
	late := o.late
	o.late = 0
	return late, nil
}

// Build makes the output rows of sessions gids.
func (o *Op) Build(gids []int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, len(o.outTs))
	kids := make([]int32, len(gids))
	for i, g := range gids {
		kids[i] = o.kid[g]
	}
	for c := range o.keyTs {
		cols = append(cols, o.gt.BuildKeys(o.mem, c, kids))
	}
	starts := array.NewInt64Builder(o.mem)
	ends := array.NewInt64Builder(o.mem)
	starts.Reserve(len(gids))
	ends.Reserve(len(gids))
	for _, g := range gids {
		_, s := o.sessionOf(g)
		starts.UnsafeAppend(s.start)
		ends.UnsafeAppend(s.last + o.spec.Gap)
	}
	cols = append(cols, starts.NewArray(), ends.NewArray())
	starts.Release()
	ends.Release()
	cols, err := accum.AppendResults(o.mem, o.spec.Aggs, o.accs, gids, cols)
	if err != nil {
		return nil, err
	}
	return opkit.NewRecord(o.outTs, cols, len(gids)), nil
}

// changes emits the epoch's changes: the rows of merged-away sessions
// retracted, changed sessions' rows updated. With eowc it emits the rows of
// the sessions closing now, in end order, as inserts, and nothing else.
func (o *Op) changes(emit func(op.Chunk) error) error {
	if o.eowc {
		if len(o.closing) == 0 {
			return nil
		}
		ids := slices.Clone(o.closing)
		rec, err := o.Build(ids)
		if err != nil {
			return err
		}
		ops := make([]types.ChangeOp, len(ids))
		for i := range ops {
			ops[i] = types.ChangeInsert
		}
		return emit(op.Chunk{Rec: rec, Ops: ops})
	}
	live := o.dirty[:0:0]
	for _, g := range o.dirty {
		if o.alive[g] {
			live = append(live, g)
		}
	}
	if len(live) == 0 && len(o.gone) == 0 {
		return nil
	}
	cur, err := o.Build(live)
	if err != nil {
		return err
	}
	defer cur.Release()
	out := opkit.NewRowsOut(o.outTs)
	var take []int
	var ops []types.ChangeOp
	var buf []byte
	for _, old := range o.gone {
		out.AddStored(old, types.ChangeDelete)
	}
	for i, g := range live {
		buf = opkit.EncodeRow(buf[:0], cur, i, o.outTs)
		old := o.lastOut[g]
		if old == string(buf) {
			continue
		}
		if old != "" {
			out.AddStored(old, types.ChangeUpdateBefore)
			ops = append(ops, types.ChangeUpdateAfter)
		} else {
			ops = append(ops, types.ChangeInsert)
		}
		take = append(take, i)
		o.bytes += int64(len(buf) - len(old))
		o.lastOut[g] = string(buf)
	}
	if out.N > 0 {
		if err := emit(out.Chunk()); err != nil {
			return err
		}
	} else {
		out.Release()
	}
	if len(take) == 0 {
		return nil
	}
	return emit(op.Chunk{Rec: opkit.TakeRecord(cur, take, o.outTs), Ops: ops})
}

// stateKey is the state key of key kid's session starting at start: the
// key group, the encoded partition key, the start (big-endian, sign bit
// flipped: a key's sessions sort by start).
func (o *Op) stateKey(buf []byte, kid int32, start int64) []byte {
	var h uint64
	if len(o.keyTs) > 0 {
		h = o.gt.Hashes[kid]
	}
	buf = append(buf, byte(op.KeyGroup(h)))
	for c, t := range o.keyTs {
		buf = opkit.EncodeDatum(buf, o.gt.KeyDatum(c, kid), t)
	}
	return binary.BigEndian.AppendUint64(buf, uint64(start)^1<<63)
}

// finish ends an epoch: it frees the sessions merged away and the ones
// closed (and their keys once they have no session left).
func (o *Op) finish() {
	for _, g := range o.dirty {
		o.isDirty[g] = false
	}
	o.dirty = o.dirty[:0]
	for _, g := range o.merged {
		o.freeGid(g)
	}
	o.merged, o.gone, o.del = o.merged[:0], o.gone[:0], o.del[:0]
	for _, g := range o.closing {
		kid := o.kid[g]
		if i, _ := o.sessionOf(g); i >= 0 {
			o.byKey[kid] = slices.Delete(o.byKey[kid], i, i+1)
		}
		o.freeGid(g)
		if len(o.byKey[kid]) == 0 && len(o.keyTs) > 0 {
			o.bytes -= o.gt.KeyBytes(kid)
			o.gt.Remove(kid)
			o.byKey[kid] = nil
		}
	}
	o.closing = o.closing[:0]
}

// All lists every open session.
func (o *Op) All() []int32 {
	var gids []int32
	for _, list := range o.byKey {
		for _, s := range list {
			gids = append(gids, s.gid)
		}
	}
	return gids
}

type endItem struct {
	end int64
	gid int32
	gen uint32
}

// endHeap is a min-heap of sessions by end; an entry may be stale (the
// session grew, merged or closed since): advance checks. Its own sift
// functions keep a push free of boxing.
type endHeap struct{ items []endItem }

func (h *endHeap) Len() int { return len(h.items) }

func (h *endHeap) push(it endItem) {
	h.items = append(h.items, it)
	h.up(len(h.items) - 1)
}

func (h *endHeap) pop() endItem {
	it := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	h.down(0)
	return it
}

func (h *endHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.items[p].end <= h.items[i].end {
			return
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
}

func (h *endHeap) down(i int) {
	n := len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h.items[c+1].end < h.items[c].end {
			c++
		}
		if h.items[i].end <= h.items[c].end {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}

// init orders items appended without push.
func (h *endHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Push implements op.Operator: the rows join their sessions.
func (o *Op) Push(ectx *expr.Ctx, c op.Chunk, _ int) error {
	defer c.Rec.Release()
	for _, op := range c.Ops {
		if op.Sign() < 0 {
			return errRetract()
		}
	}
	return o.Fold(ectx, c.Rec)
}

func errRetract() error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "SESSION windows need an input that only inserts rows (a stream), not one that retracts them")
}

// Barrier implements op.Operator: the epoch's changes out, its state written,
// the closed sessions forgotten.
func (o *Op) Barrier(ectx *expr.Ctx, b *op.Barrier, w *storage.Batch) error {
	if err := o.changes(func(c op.Chunk) error { return o.out.Emit(ectx, c) }); err != nil {
		return err
	}
	changed := len(o.dirty) > 0 || len(o.closing) > 0 || len(o.del) > 0
	if _, err := o.st.Commit(w, b, changed, false, o.save, o.snapshot); err != nil {
		return err
	}
	o.finish()
	return nil
}

// save writes the epoch's state changes into w.
func (o *Op) save(x *opkit.Writer) error {
	for _, k := range o.del {
		x.Delete(k)
	}
	var key, val []byte
	for _, g := range o.closing {
		o.isDirty[g] = false // written below as deleted, not saved
		if o.saved[g] {
			key = o.stateKey(key[:0], o.kid[g], o.savedAt[g])
			x.Delete(key)
			o.saved[g] = false
		}
	}
	for _, g := range o.dirty {
		if !o.alive[g] || !o.isDirty[g] {
			continue // merged away, or closed
		}
		_, s := o.sessionOf(g)
		if o.saved[g] && o.savedAt[g] != s.start {
			key = o.stateKey(key[:0], o.kid[g], o.savedAt[g])
			x.Delete(key)
		}
		key = o.stateKey(key[:0], o.kid[g], s.start)
		x.Put(key, o.stateVal(val[:0], g, s.last))
		o.saved[g], o.savedAt[g] = true, s.start
	}
	return nil
}

// keyScalesTag starts the trailer of a session's state value that holds
// the display scales of its unconstrained NUMERIC key values
// (accum.GroupTable.AppendKeyScales): the state key encodes values
// without them, and the session prints its key's first value's digits
// (1.50, not 1.5) after a restart. Values saved before it have no trailer
// and print trimmed.
const keyScalesTag = 'k'

// stateVal appends session g's state value to buf: its last event time,
// its accumulators, and its key's display-scale trailer if the key has an
// unconstrained NUMERIC column.
func (o *Op) stateVal(buf []byte, g int32, last int64) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(last))
	for _, a := range o.accs {
		buf = a.Encode(buf, g)
	}
	if o.numKey {
		buf = o.gt.AppendKeyScales(append(buf, keyScalesTag), o.kid[g])
	}
	return buf
}

// Bytes estimates the operator's memory (a batch query's budget).
func (o *Op) Bytes() int64 { return o.bytes + o.gt.ApproxBytes() }

// Reemit forgets the rows last emitted, so the next barrier emits every
// open session anew (a view upgraded from a savepoint).
func (o *Op) Reemit() {
	if o.eowc {
		return
	}
	for _, g := range o.All() {
		o.bytes -= int64(len(o.lastOut[g]))
		o.lastOut[g] = ""
		o.markDirty(g)
	}
}

// Watermark is the watermark of the sessions' time as of the last
// barrier, and whether it moved since the last call to SavedWatermark.
// The runtime keeps it in the job's own state (not the operator's) at each
// barrier, so rows replayed after a restart meet the watermark they met
// before.
func (o *Op) Watermark() (wm int64, moved bool) { return o.wm, o.wm != o.wmSaved }

// SavedWatermark records that the runtime wrote the watermark.
func (o *Op) SavedWatermark() { o.wmSaved = o.wm }

// snapshot encodes every open session as save writes its entry, sorted by
// key (memory backend: storage.OpSnapshot): the sessions closing at this
// barrier are gone, those merged away too.
func (o *Op) snapshot(epoch uint64) *opkit.Snapshot {
	s := opkit.NewSnapshot(0, epoch) // the State names the operator
	closing := make(map[int32]bool, len(o.closing))
	for _, g := range o.closing {
		closing[g] = true
	}
	var key, val []byte
	for kid, list := range o.byKey {
		for _, ss := range list {
			g := ss.gid
			if !o.alive[g] || closing[g] {
				continue
			}
			key = o.stateKey(key[:0], int32(kid), ss.start)
			val = o.stateVal(val[:0], g, ss.last)
			s.Entries.AddKV(g, key, val)
		}
	}
	s.Entries.Sort()
	return s
}

// Load restores the open sessions of the key groups instance inst owns,
// and the operator's watermark wm (op.NoWatermark if none was kept).
func (o *Op) Load(inst, par int, wm int64) error {
	if o.timed {
		o.wm, o.wmSaved = wm, wm
	}
	var prev []byte // the last key's partition key
	kid := int32(0)
	ds := make([]types.Datum, len(o.keyTs))
	err := o.st.Scan(func(key, val []byte) error {
		if len(key) < 9 || len(val) < 8 {
			return opkit.ErrCorruptState
		}
		if op.InstanceOf(int(key[0]), par) != inst {
			return nil
		}
		pk := key[1 : len(key)-8]
		if len(o.keyTs) > 0 && (prev == nil || string(pk) != string(prev)) {
			rest := pk
			for c, t := range o.keyTs {
				var err error
				if ds[c], rest, err = opkit.DecodeDatum(rest, t); err != nil {
					return err
				}
			}
			if len(rest) != 0 {
				return opkit.ErrCorruptState
			}
			kid = o.gt.InsertDatums(ds)
			for len(o.byKey) <= int(kid) {
				o.byKey = append(o.byKey, nil)
			}
			o.bytes += o.gt.KeyBytes(kid)
			prev = append(prev[:0], pk...)
		}
		start := int64(binary.BigEndian.Uint64(key[len(key)-8:]) ^ 1<<63)
		last := int64(binary.BigEndian.Uint64(val))
		g := o.newGid()
		o.kid[g] = kid
		o.bytes += sessionBytes
		rest := val[8:]
		for _, a := range o.accs {
			var err error
			if rest, err = a.Decode(rest, g); err != nil {
				return err
			}
		}
		if len(rest) > 0 && rest[0] == keyScalesTag {
			o.gt.SetKeyScales(kid, rest[1:])
		}
		o.saved[g], o.savedAt[g] = true, start
		o.byKey[kid] = append(o.byKey[kid], session{start: start, last: last, gid: g})
		o.ends.items = append(o.ends.items, endItem{end: last + o.spec.Gap, gid: g, gen: o.gen[g]})
		return nil
	})
	if err != nil {
		return err
	}
	o.st.Loaded()
	o.ends.init()
	if o.eowc {
		return nil
	}
	// The rows last emitted are the ones the restored state gives.
	gids := o.All()
	for len(gids) > 0 {
		part := gids[:min(len(gids), 16<<10)]
		gids = gids[len(part):]
		rec, err := o.Build(part)
		if err != nil {
			return err
		}
		var buf []byte
		for i, g := range part {
			buf = opkit.EncodeRow(buf[:0], rec, i, o.outTs)
			o.lastOut[g] = string(buf)
			o.bytes += int64(len(buf))
		}
		rec.Release()
	}
	return nil
}
