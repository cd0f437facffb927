package exec

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
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
// the shared accumulators of accum.go), so a row that joins a session is
// one accumulator update; a merge folds the accumulators of the sessions
// it joins into the first (Flink's MergingWindowSet with mergeable
// accumulators), which is why only count, sum, avg, min and max without
// DISTINCT are supported. A batch query runs the same operator over its
// whole input, so batch and view agree by construction.
//
// In a job, a session closes when the watermark of its time (eventtime.go:
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

// SessionAgg groups rows into session windows per Keys: a session is a
// maximal run of rows of a key whose Time values are less than Gap µs
// apart. Output: Keys, session start, session end (last time + Gap), Aggs.
type SessionAgg struct {
	In   Plan
	Keys []expr.Expr
	Time expr.Expr
	Gap  int64
	Aggs []AggSpec
}

func (p *SessionAgg) Types() []types.T {
	ts := exprTypes(p.Keys)
	ts = append(ts, types.TTimestamp, types.TTimestamp)
	for _, a := range p.Aggs {
		ts = append(ts, a.T)
	}
	return ts
}

// CheckSessionAggs refuses the aggregates a session window cannot merge.
func CheckSessionAggs(aggs []AggSpec) error {
	for _, a := range aggs {
		if a.Distinct || a.Kind >= AggArrayAgg {
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

// sessionOp is a session window aggregate: one instance of a job's session
// node, or a batch query's.
type sessionOp struct {
	// st is a job's instance's state, whichever backend holds it.
	st    opkit.State
	spec  *SessionAgg
	keyTs []types.T
	outTs []types.T
	mem   memory.Allocator
	gt    *groupTable // partition key -> key id
	byKey [][]session // per key id, by start
	accs  []accum

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
	// watermark's column plus shift µs (eventtime.go). Without one,
	// sessions never close and no row is late.
	timed bool
	shift int64
	late  int64
	eowc  bool

	kids, gids []int32
	keyBuf     []byte
	bytes      int64

	// Job only.
	j   *Job
	id  uint32
	out *outlet
}

// sessionBytes is the estimated memory of one session besides its key.
const sessionBytes = 120

func newSessionOp(spec *SessionAgg) *sessionOp {
	o := &sessionOp{spec: spec, keyTs: exprTypes(spec.Keys), outTs: spec.Types(), mem: memoryPool, wm: NoWatermark, wmSaved: NoWatermark}
	o.gt = newGroupTable(o.keyTs)
	for _, s := range spec.Aggs {
		o.accs = append(o.accs, newAccum(s, false))
	}
	if len(spec.Keys) == 0 {
		o.byKey = make([][]session, 1)
	}
	o.newGid() // the scratch group
	return o
}

// newGid takes a free session id.
func (o *sessionOp) newGid() int32 {
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
		a.grow(len(o.kid))
	}
	return g
}

// freeGid returns session g's id for reuse.
func (o *sessionOp) freeGid(g int32) {
	for _, a := range o.accs {
		a.reset(g)
	}
	o.alive[g] = false
	o.gen[g]++
	o.bytes -= sessionBytes + int64(len(o.lastOut[g]))
	o.lastOut[g] = ""
	o.saved[g] = false
	o.free = append(o.free, g)
}

func (o *sessionOp) markDirty(g int32) {
	if !o.isDirty[g] {
		o.isDirty[g] = true
		o.dirty = append(o.dirty, g)
	}
}

// fold folds a batch of inserted rows into the sessions.
func (o *sessionOp) fold(ectx *expr.Ctx, rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	keys := make([]arrow.Array, len(o.spec.Keys))
	defer releaseAll(keys)
	for i, k := range o.spec.Keys {
		arr, err := expr.Eval(ectx, k, rec)
		if err != nil {
			return err
		}
		keys[i] = arr
	}
	canonKeys(ectx, keys)
	if cap(o.kids) < n {
		o.kids, o.gids = make([]int32, n), make([]int32, n)
	}
	kids, gids := o.kids[:n], o.gids[:n]
	if len(keys) == 0 {
		clear(kids)
	} else if o.gt.lookup(keys, n, kids, true) > 0 {
		for len(o.byKey) < o.gt.Len() {
			o.byKey = append(o.byKey, nil)
		}
		for _, k := range o.gt.created {
			o.bytes += o.gt.keyBytes(k)
		}
	}
	tcol, err := expr.Eval(ectx, o.spec.Time, rec)
	if err != nil {
		return err
	}
	defer tcol.Release()
	ts, _ := tcol.(*array.Int64) // nil: all NULL
	args := make([]arrow.Array, len(o.spec.Aggs))
	defer releaseAll(args)
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
		a.reset(0)
	}
	return nil
}

// update folds rows [from, to) of a batch of n rows into their sessions.
func (o *sessionOp) update(gids []int32, args []arrow.Array, from, to, n int) error {
	if from == to {
		return nil
	}
	for i, a := range o.accs {
		arg := args[i]
		if arg != nil && (from > 0 || to < n) {
			arg = array.NewSlice(arg, int64(from), int64(to))
			defer arg.Release()
		}
		if err := a.update(gids, arg, nil); err != nil {
			return err
		}
	}
	return nil
}

// merge folds session src into dst; src's row is retracted and its state
// deleted at the barrier.
func (o *sessionOp) merge(dst, src int32) {
	for _, a := range o.accs {
		mergeAcc(a, dst, src)
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

// mergeAcc folds group src's partial result into dst's (CheckSessionAggs
// admits only these accumulators).
func mergeAcc(a accum, dst, src int32) {
	switch a := a.(type) {
	case *countAcc:
		a.n[dst] += a.n[src]
	case *sumIntAcc:
		var c uint64
		a.lo[dst], c = addCarry(a.lo[dst], a.lo[src])
		a.hi[dst] += a.hi[src] + int64(c)
		a.n[dst] += a.n[src]
	case *sumFloatAcc:
		a.s[dst] += a.s[src]
		a.n[dst] += a.n[src]
	case *sumDecAcc:
		a.s[dst] = a.s[dst].Add(a.s[src])
		a.n[dst] += a.n[src]
	case *sumIntervalAcc:
		a.s[dst].Months += a.s[src].Months
		a.s[dst].Days += a.s[src].Days
		a.s[dst].Nanoseconds += a.s[src].Nanoseconds
		a.n[dst] += a.n[src]
	case *minMaxAcc:
		if d := a.get(src); !d.Null {
			a.offer(dst, d)
		}
	}
}

func addCarry(x, y uint64) (uint64, uint64) {
	s := x + y
	if s < x {
		return s, 1
	}
	return s, 0
}

// sessionOf finds session g among its key's.
func (o *sessionOp) sessionOf(g int32) (int, *session) {
	list := o.byKey[o.kid[g]]
	for i := range list {
		if list[i].gid == g {
			return i, &list[i]
		}
	}
	return -1, nil
}

// advance takes the watermark of a barrier: the sessions it reached close
// (closing, in end order). It returns the rows dropped as late since the
// last call.
func (o *sessionOp) AdvanceWatermark(_ *expr.Ctx, wm Watermark) (int64, error) {
	if o.timed && wm.At != NoWatermark && wm.At+o.shift > o.wm {
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

// build makes the output rows of sessions gids.
func (o *sessionOp) build(gids []int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, len(o.outTs))
	kids := make([]int32, len(gids))
	for i, g := range gids {
		kids[i] = o.kid[g]
	}
	for c := range o.keyTs {
		cols = append(cols, o.gt.buildKeys(o.mem, c, kids))
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
	cols, err := appendResults(o.mem, o.spec.Aggs, o.accs, gids, cols)
	if err != nil {
		return nil, err
	}
	return newRecord(o.outTs, cols, len(gids)), nil
}

// changes emits the epoch's changes: the rows of merged-away sessions
// retracted, changed sessions' rows updated. With eowc it emits the rows of
// the sessions closing now, in end order, as inserts, and nothing else.
func (o *sessionOp) changes(emit func(Chunk) error) error {
	if o.eowc {
		if len(o.closing) == 0 {
			return nil
		}
		ids := slices.Clone(o.closing)
		rec, err := o.build(ids)
		if err != nil {
			return err
		}
		ops := make([]Op, len(ids))
		for i := range ops {
			ops[i] = OpInsert
		}
		return emit(Chunk{Rec: rec, Ops: ops})
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
	cur, err := o.build(live)
	if err != nil {
		return err
	}
	defer cur.Release()
	out := newRowsOut(o.outTs)
	var take []int
	var ops []Op
	var buf []byte
	for _, old := range o.gone {
		out.AddStored(old, OpDelete)
	}
	for i, g := range live {
		buf = encodeRow(buf[:0], cur, i, o.outTs)
		old := o.lastOut[g]
		if old == string(buf) {
			continue
		}
		if old != "" {
			out.AddStored(old, OpUpdateBefore)
			ops = append(ops, OpUpdateAfter)
		} else {
			ops = append(ops, OpInsert)
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
	return emit(Chunk{Rec: takeRecord(cur, take, o.outTs), Ops: ops})
}

// stateKey is the state key of key kid's session starting at start: the
// key group, the encoded partition key, the start (big-endian, sign bit
// flipped: a key's sessions sort by start).
func (o *sessionOp) stateKey(buf []byte, kid int32, start int64) []byte {
	var h uint64
	if len(o.keyTs) > 0 {
		h = o.gt.hashes[kid]
	}
	buf = append(buf, byte(keyGroup(h)))
	for c, t := range o.keyTs {
		buf = encodeDatum(buf, o.gt.keyDatum(c, kid), t)
	}
	return binary.BigEndian.AppendUint64(buf, uint64(start)^1<<63)
}

// finish ends an epoch: it frees the sessions merged away and the ones
// closed (and their keys once they have no session left).
func (o *sessionOp) finish() {
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
			o.bytes -= o.gt.keyBytes(kid)
			o.gt.remove(kid)
			o.byKey[kid] = nil
		}
	}
	o.closing = o.closing[:0]
}

// all lists every open session.
func (o *sessionOp) all() []int32 {
	var gids []int32
	for _, list := range o.byKey {
		for _, s := range list {
			gids = append(gids, s.gid)
		}
	}
	return gids
}

// runSession runs a session window aggregate in a batch query: every input
// row into the sessions, then every session out.
func runSession(ctx *Ctx, p *SessionAgg, emit func(arrow.RecordBatch) error) error {
	if err := CheckSessionAggs(p.Aggs); err != nil {
		return err
	}
	o := newSessionOp(p)
	o.mem = ctx.alloc()
	share := ctx.heap()
	defer share.release()
	if err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if err := o.fold(ctx.Expr, rec); err != nil {
			return err
		}
		share.set(o.bytes + o.gt.approxBytes())
		return ctx.check()
	}); err != nil {
		return err
	}
	gids := o.all()
	const chunk = 64 << 10
	for len(gids) > 0 {
		part := gids[:min(len(gids), chunk)]
		gids = gids[len(part):]
		if err := ctx.canceled(); err != nil {
			return err
		}
		rec, err := o.build(part)
		if err != nil {
			return err
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
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
