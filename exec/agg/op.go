// Package agg is the hash aggregate operator family: GROUP BY in a batch
// query (every group emitted at the end) and in a job (each barrier emits
// the changes of the groups touched in the epoch: insert, update_before /
// update_after, delete), with its state in the state table (state.go: a
// group's accumulators, and the values count(DISTINCT) and min/max under
// retraction keep, one entry each), its state cache (evict, load on a
// key's return), its window closing by the watermark and its late rows
// (window.go, lateevict.go: EMIT ON WINDOW CLOSE, evicted windows that
// close too) and its share of state.ttl (ttl.go). The plan node, how a
// group key bounds windows (traced through the plan under it) and the
// wiring into a job stay in exec (aggop.go, windowagg.go).
//
// It implements the operator contract (exec/op), reaches its state only
// through opkit.State and emits through op.Outlet; it imports neither the
// runtime nor another operator family.
package agg

import (
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Spec is an aggregate node as its operator runs it.
type Spec struct {
	Keys  []expr.Expr
	Aggs  []accum.Spec
	OutTs []types.T // the keys' types, then the aggregates'
	// Retract says the input may retract rows.
	Retract bool
	// Win is the group key that closes groups by the watermark (a window
	// aggregate in a job; nil: none).
	Win *opkit.WindowClose
}

// Node is what the runtime gives an aggregate instance of a job.
type Node struct {
	opkit.Node
	// Late is the late-row log of a window aggregate (nil: not recorded).
	Late *opkit.LateLog
	// KeepRows says the instance keeps each group's last emitted row, so
	// that its changes can carry old rows (false: a view without readers
	// needs none, changesOf); OldRows says, at each barrier, whether they
	// do (the job's changelog may turn on while it runs).
	KeepRows bool
	OldRows  func() bool
	// OnWindowClose: only closed windows' final rows are emitted (EMIT ON
	// WINDOW CLOSE, at the view's root).
	OnWindowClose bool
	// PerEpoch says the state commits each epoch's changed entries
	// (opkit.State.Commit calls write), so the values count(DISTINCT) and
	// min/max keep log their changes between barriers.
	PerEpoch bool
	// Mem is the allocator of the output rows (nil: opkit.Mem).
	Mem memory.Allocator
}

// Op is a hash aggregate. In a batch query it emits every group at the
// end; in a job it emits, at each barrier, the changes of the groups touched
// since the last one (update_before/update_after, insert, delete).
type Op struct {
	// st is a job's instance's state, whichever backend holds it (nil in
	// a batch query).
	st   opkit.State
	spec *Spec
	id   uint32 // the operator id its state is stored under
	// restored says some group's state was loaded from the state table.
	restored bool
	keyTs    []types.T
	outTs    []types.T
	mem      memory.Allocator // of the output rows
	gt       *accum.GroupTable
	accs     []accum.Accum
	count    *accum.CountAcc // rows per group, to know when a group empties under retraction
	gids     []int32

	dirty   []int32
	isDirty []bool
	lastOut []string // encoded output row last emitted per group; "" none
	// outValid says lastOut is kept: always, unless the job's changes only
	// maintain a view's rows (changesOf without before).
	outValid bool

	// The state cache (jobs only). Groups whose state is committed can be
	// evicted when bytes exceeds the cap; a group not in memory is loaded
	// from the state table when its key comes back (load), which is only
	// needed once something was evicted or left unloaded (spilled).
	live     []bool
	lastSave []uint64 // epoch whose commit holds the group's state
	touched  []uint64 // epoch the group last changed in
	bytes    int64    // estimated memory of the groups
	spilled  bool
	evicted  opkit.EvictedFilter // hashes of groups whose state is only in the state table
	hand     int
	epoch    uint64 // the epoch being processed
	load     func(gids []int32) error

	// Reused at each barrier: the changed groups' state keys and values,
	// sorted by key (prepareSave); the groups in id order, and for each
	// position in key order the group's position in id order, with which
	// newRows reads the groups front to back and then reorders the rows.
	saveKeys opkit.SortedKeys
	byID     []int32
	perm     []int

	wins windows // closing by the watermark and late rows (window.go, lateevict.go)
	ttl  aggTTL  // state.ttl (ttl.go)

	// What the runtime gives a job's instance (Node): the outlet, whether
	// the changes carry old rows and whether only closed windows emit, the
	// state cache's budget, the job's counters and state.ttl; perEpoch says
	// the state commits each epoch's changed entries (valueBags track them).
	out           op.Outlet
	oldRows       func() bool
	onWindowClose bool
	perEpoch      bool
	budget        int64
	committed     *atomic.Uint64
	evictedN      *atomic.Int64
	ttlOf         func() int64
}

// groupBytes is the estimated fixed memory of one group in the table and
// accumulators, besides its key strings and last emitted row.
const groupBytes = 160

// New makes an instance of a hash aggregate: spec is the node, nd what
// the runtime gives a job's instance (the zero Node in a batch query). A
// durable job's instance then loads its state (Load).
func New(spec *Spec, nd Node) *Op {
	a := &Op{spec: spec, keyTs: expr.Types(spec.Keys), outTs: spec.OutTs, mem: opkit.Mem, count: accum.NewCountStar(), outValid: true,
		id: nd.ID, st: nd.State, out: nd.Out, oldRows: nd.OldRows, onWindowClose: nd.OnWindowClose,
		perEpoch: nd.PerEpoch, budget: nd.Budget, committed: nd.Committed, evictedN: nd.Evicted, ttlOf: nd.TTL}
	a.wins = windows{win: spec.Win, late: nd.Late, wm: op.NoWatermark}
	a.ttl.applies = spec.Win == nil && len(spec.Keys) > 0
	if nd.Mem != nil {
		a.mem = nd.Mem
	}
	if a.ttlOf == nil {
		a.ttlOf = func() int64 { return 0 }
	}
	if a.oldRows == nil {
		a.oldRows = func() bool { return true }
	}
	if nd.Out != nil {
		a.outValid = nd.KeepRows
	}
	a.gt = accum.NewGroupTable(a.keyTs)
	for _, s := range spec.Aggs {
		a.accs = append(a.accs, accum.New(s, spec.Retract))
	}
	if len(spec.Keys) == 0 {
		a.gt.InsertDatums(nil) // the one group of a global aggregate always exists
		a.grow()
	}
	return a
}

func (a *Op) grow() {
	n := a.gt.Len()
	for _, acc := range a.accs {
		acc.Grow(n)
	}
	a.count.Grow(n)
	a.ttl.grow(n)
	for len(a.isDirty) < n {
		a.isDirty = append(a.isDirty, false)
		a.wins.isClosing = append(a.wins.isClosing, false)
		a.lastOut = append(a.lastOut, "")
		a.live = append(a.live, true)
		a.lastSave = append(a.lastSave, 0)
		a.touched = append(a.touched, 0)
	}
}

// created accounts for the groups the last lookup made and loads their
// state if it may be in the state table.
func (a *Op) created() error {
	for _, g := range a.gt.Created {
		a.live[g] = true
		a.ttl.created(g)
		a.bytes += groupBytes + a.gt.KeyBytes(g)
	}
	if a.spilled && a.load != nil && len(a.gt.Created) > 0 {
		maybe := a.gt.Created[:0:0]
		for _, g := range a.gt.Created {
			if a.evicted.MayContain(a.gt.Hashes[g]) {
				maybe = append(maybe, g)
			}
		}
		if len(maybe) > 0 {
			return a.load(maybe)
		}
	}
	return nil
}

// evict drops clean groups (state committed at or before epoch committed,
// not changed in the current epoch) until the estimate is below 80 % of
// limit. A sweep resumes where the last one stopped (a clock).
// It returns the number of groups evicted.
func (a *Op) evict(limit int64, committed, current uint64) int {
	if limit <= 0 || a.bytes <= limit || len(a.spec.Keys) == 0 {
		return 0
	}
	evicted := 0
	n := a.gt.Len()
	target := limit * 8 / 10
	for scanned := 0; scanned < n && a.bytes > target; scanned++ {
		a.hand = (a.hand + 1) % n
		g := int32(a.hand)
		if !a.live[g] || a.isDirty[g] || a.lastSave[g] > committed || a.touched[g] >= current {
			continue
		}
		a.evicted.Add(a.gt.Hashes[g])
		a.wins.noteEvicted(a.gt, len(a.keyTs), g)
		a.ttl.noteEvicted(a.gt, len(a.keyTs), g)
		a.dropGroup(g)
		a.spilled = true
		evicted++
	}
	return evicted
}

// Fold folds rec (with optional per-row signs; nil: all inserts) into the
// groups; track: note the groups it changes, for the next barrier's
// changes (a job's instance; a batch query emits every group at the end).
// It does not take rec.
func (a *Op) Fold(ctx *expr.Ctx, rec arrow.RecordBatch, signs []int8, track bool) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	gids, created, keys, err := a.gt.Group(ctx, a.spec.Keys, rec, a.gids)
	if err != nil {
		return err
	}
	defer opkit.ReleaseAll(keys)
	a.gids = gids
	if created > 0 {
		a.grow()
		if err := a.created(); err != nil {
			return err
		}
	}
	for i, s := range a.spec.Aggs {
		var arg arrow.Array
		if s.Arg != nil {
			var err error
			if arg, err = expr.Eval(ctx, s.Arg, rec); err != nil {
				return err
			}
			if s.Distinct { // DISTINCT's values are keys too
				arg = accum.CanonKey(ctx, arg, s.Arg.Type())
			}
		}
		err := a.accs[i].Update(gids, arg, signs)
		if arg != nil {
			arg.Release()
		}
		if err != nil {
			return err
		}
	}
	_ = a.count.Update(gids, nil, signs)
	if track {
		for _, g := range gids {
			if !a.isDirty[g] {
				a.isDirty[g] = true
				a.dirty = append(a.dirty, g)
				a.touched[g] = a.epoch
			}
		}
	}
	return nil
}

// distinctBytes estimates the memory of the values count(DISTINCT ...)
// and its kin, and the ordered-set aggregates, have seen (map entries of
// a group id and an encoded value).
func distinctBytes(accs []accum.Accum) int64 {
	var n int64
	for _, acc := range accs {
		n += accum.ValueBytes(acc)
	}
	return n
}

// EmitAll emits every group as inserted rows (a batch query's end).
func (a *Op) EmitAll(emit func(arrow.RecordBatch) error) error {
	n := a.gt.Len()
	const chunk = 64 << 10
	gids := make([]int32, 0, min(n, chunk))
	for start := 0; start < n; start += chunk {
		gids = gids[:0]
		for g := start; g < min(n, start+chunk); g++ {
			gids = append(gids, int32(g))
		}
		rec, err := a.build(gids)
		if err != nil {
			return err
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// build makes the output rows of groups gids.
func (a *Op) build(gids []int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, len(a.outTs))
	for c := range a.keyTs {
		cols = append(cols, a.gt.BuildKeys(a.mem, c, gids))
	}
	cols, err := accum.AppendResults(a.mem, a.spec.Aggs, a.accs, gids, cols)
	if err != nil {
		return nil, err
	}
	return opkit.NewRecord(a.outTs, cols, len(gids)), nil
}

// changesOf emits the changes of the groups touched since the last call,
// as a change chunk, and clears the dirty set. Without before it emits
// what maintaining a view's rows needs and no more: each changed group's new row (UpdateAfter) or,
// for a group that emptied, its keys (Delete), with no comparison against
// the row last emitted, which is then not kept (lastOut, outValid). The
// first call with before after calls without it cannot give this epoch's
// old rows (they were not kept); it emits as without, then rebuilds every
// group's last emitted row from the accumulators, so later calls are exact.
func (a *Op) changesOf(before bool, emit func(op.Chunk) error) error {
	if !before || !a.outValid {
		err := a.newRows(emit)
		if before && err == nil {
			err = a.restoreAllOut()
		}
		return err
	}
	a.byID = a.byID[:0] // read in key order here
	if len(a.dirty) == 0 {
		return nil
	}
	cur, err := a.build(a.dirty)
	if err != nil {
		return err
	}
	defer cur.Release()
	// The output takes new rows from cur by index; old rows (the before
	// side of updates, deletes) are decoded into bls, after cur's rows.
	var bls []array.Builder
	var take []int
	var ops []types.ChangeOp
	var groups []uint8
	nCur := int(cur.NumRows())
	nOld := 0
	emitRow := func(src int, ch types.ChangeOp, g int32) {
		take = append(take, src)
		ops = append(ops, ch)
		groups = append(groups, uint8(op.KeyGroup(a.gt.Hashes[g])))
	}
	emitOld := func(old string, ch types.ChangeOp, g int32) {
		if bls == nil {
			bls = make([]array.Builder, len(a.outTs))
			for c, t := range a.outTs {
				bls[c] = types.NewBuilder(opkit.Mem, t)
			}
		}
		for c, d := range opkit.DecodeRow(old, a.outTs) {
			types.AppendDatum(bls[c], d, a.outTs[c])
		}
		emitRow(nCur+nOld, ch, g)
		nOld++
	}
	var buf []byte
	for i, g := range a.dirty {
		a.isDirty[g] = false
		buf = opkit.EncodeRow(buf[:0], cur, i, a.outTs)
		alive := a.count.N(g) > 0 || len(a.spec.Keys) == 0
		old := a.lastOut[g]
		switch {
		case alive && old == string(buf):
			continue
		case alive && old == "":
			emitRow(i, types.ChangeInsert, g)
		case alive:
			if before {
				emitOld(old, types.ChangeUpdateBefore, g)
			}
			emitRow(i, types.ChangeUpdateAfter, g)
		case old != "" && before:
			emitOld(old, types.ChangeDelete, g)
		case old != "":
			emitRow(i, types.ChangeDelete, g)
		}
		a.bytes -= int64(len(a.lastOut[g]))
		if alive {
			a.lastOut[g] = string(buf)
		} else {
			a.lastOut[g] = ""
		}
		a.bytes += int64(len(a.lastOut[g]))
	}
	a.dirty = a.dirty[:0]
	if len(ops) == 0 {
		for _, b := range bls {
			b.Release()
		}
		return nil
	}
	src := cur
	if bls != nil {
		cols := make([]arrow.Array, len(a.outTs))
		for c, b := range bls {
			olds := b.NewArray()
			b.Release()
			cols[c], err = types.Concatenate([]arrow.Array{cur.Column(c), olds}, opkit.Mem)
			olds.Release()
			if err != nil {
				opkit.ReleaseAll(cols)
				return err
			}
		}
		src = opkit.NewRecord(a.outTs, cols, nCur+nOld)
		defer src.Release()
	}
	return emit(op.Chunk{Rec: opkit.TakeRecord(src, take, a.outTs), Ops: ops, Groups: groups})
}

// newRows emits the dirty groups' current rows as changes without old rows
// (changesOf) and clears the dirty set.
func (a *Op) newRows(emit func(op.Chunk) error) error {
	if len(a.dirty) == 0 {
		return nil
	}
	ids, perm := a.dirty, []int(nil)
	if len(a.byID) == len(a.dirty) {
		ids, perm = a.byID, a.perm // prepared (prepareSave)
	}
	cur, err := a.build(ids)
	if err != nil {
		return err
	}
	ops := make([]types.ChangeOp, len(ids))
	groups := make([]uint8, len(ids))
	for i, g := range ids {
		a.isDirty[g] = false
		ops[i] = types.ChangeUpdateAfter
		if a.count.N(g) <= 0 && len(a.spec.Keys) > 0 {
			ops[i] = types.ChangeDelete
		}
		groups[i] = uint8(op.KeyGroup(a.gt.Hashes[g]))
	}
	a.dirty, a.byID = a.dirty[:0], a.byID[:0]
	if perm != nil {
		sorted := opkit.TakeRecord(cur, perm, a.outTs)
		cur.Release()
		cur = sorted
		ops2, groups2 := make([]types.ChangeOp, len(perm)), make([]uint8, len(perm))
		for i, p := range perm {
			ops2[i], groups2[i] = ops[p], groups[p]
		}
		ops, groups = ops2, groups2
	}
	return emit(op.Chunk{Rec: cur, Ops: ops, Groups: groups})
}

// restoreAllOut sets every group's last emitted row from its accumulators
// and marks the rows kept from now on (outValid).
func (a *Op) restoreAllOut() error {
	gids := make([]int32, 0, a.gt.Len())
	for g := 0; g < a.gt.Len(); g++ {
		if a.live[g] {
			gids = append(gids, int32(g))
		}
	}
	a.outValid = true
	return restoreOut(a, gids)
}

// ReemitAll forgets what was emitted and marks every live group changed, so
// the next changesOf emits each as an insert (an upgraded view rebuilds
// its rows; a global aggregate's one row).
func (a *Op) ReemitAll() {
	for g := 0; g < a.gt.Len(); g++ {
		a.lastOut[g] = ""
		if (a.count.N(int32(g)) > 0 || len(a.spec.Keys) == 0) && !a.isDirty[g] {
			a.isDirty[g] = true
			a.dirty = append(a.dirty, int32(g))
		}
	}
}

// MemBytes is the estimated memory of the groups, their table and the
// values of count(DISTINCT) and the ordered-set aggregates (a batch
// query's budget counts it).
func (a *Op) MemBytes() int64 { return a.bytes + a.gt.ApproxBytes() + distinctBytes(a.accs) }

// Bytes is the estimated memory of the groups (the state cache's measure).
func (a *Op) Bytes() int64 { return a.bytes }

// Dirty is the number of groups changed in the epoch.
func (a *Op) Dirty() int { return len(a.dirty) }

// Spilled says some group's state is only in the state table.
func (a *Op) Spilled() bool { return a.spilled }

// Restored says some group's state was loaded from the state table.
func (a *Op) Restored() bool { return a.restored }

// OpID is the operator id its state is stored under.
func (a *Op) OpID() uint32 { return a.id }

// KeepsWatermark says the instance closes windows by the watermark, so
// the runtime keeps its input watermark with its state.
func (a *Op) KeepsWatermark() bool { return a.wins.win != nil }

// TakeLate returns the late rows noted since the last call.
func (a *Op) TakeLate() []storage.LateRow { return a.wins.late.Take() }

// Push folds a chunk into the groups, dropping first the rows whose
// window had closed at the last barrier's watermark (late).
func (a *Op) Push(ectx *expr.Ctx, c op.Chunk, _ int) error {
	rec, signs, dropped, err := a.wins.dropLate(ectx, a.spec.Keys, c.Rec, c.Signs())
	if err != nil {
		return err
	}
	a.wins.lateN += dropped
	err = a.Fold(ectx, rec, signs, true)
	rec.Release()
	return err
}

// AdvanceWatermark takes the input watermark of a barrier (the windows it
// passed close at that barrier) and returns the rows dropped as late since
// the last call (op.WatermarkHandler).
func (a *Op) AdvanceWatermark(_ *expr.Ctx, wm op.Watermark) (int64, error) {
	a.wins.wm = wm.At
	late := a.wins.lateN
	a.wins.lateN = 0
	return late, nil
}

// Barrier closes the windows the watermark has passed and the groups idle
// for state.ttl, emits the epoch's changes (or, under EMIT ON WINDOW
// CLOSE, the closed windows' final rows) and, for a durable job (w not
// nil), commits the changed groups' state.
func (a *Op) Barrier(ectx *expr.Ctx, b *op.Barrier, w *storage.Batch) error {
	// Windows the watermark has passed close: their groups' last changes
	// go out now, their state is deleted with this epoch.
	// Evicted groups whose window closes come back first, so they close
	// with those in memory (lateevict.go).
	if _, err := a.bringBack(a.wins.closedEvicted()); err != nil {
		return err
	}
	a.wins.markClosing(a.gt, a.live, func(g int32) {
		if !a.isDirty[g] {
			a.isDirty[g] = true
			a.dirty = append(a.dirty, g)
		}
	})
	// Idle groups expire (state.ttl): closed without a row.
	if err := a.expireIdle(time.Now().UnixMicro(), a.ttlOf()); err != nil {
		return err
	}
	changed := false // the epoch changed the state (prepareSave's dirty set)
	if w != nil {
		// Changed groups in state-key order: the state writes and the
		// view rows (keyed alike) then reach storage sorted.
		a.prepareSave(b.Epoch)
		changed = len(a.dirty) > 0
	}
	emit := func(c op.Chunk) error { return a.out.Emit(ectx, c) }
	if a.onWindowClose && a.wins.win != nil {
		if err := a.closedRows(emit); err != nil {
			return err
		}
	} else if err := a.changesOf(a.oldRows(), emit); err != nil {
		return err
	}
	if w != nil {
		wrote, err := a.st.Commit(w, b, changed, a.ttl.on, a.writeState, a.Snapshot)
		if err != nil {
			return err
		}
		if !wrote {
			clearValueChanges(a.accs) // a snapshot holds every value: no log to keep
		}
	}
	a.wins.forgetClosing(a.dropGroup)
	a.epoch = b.Epoch + 1
	return nil
}

// AfterBarrier evicts, once the barrier of epoch has gone on, clean groups
// while the groups' memory is over the budget (eviction is about memory,
// not the epoch's contents: done then, it does not delay the checkpoint).
func (a *Op) AfterBarrier(epoch uint64) error {
	a.evictedN.Add(int64(a.evict(a.budget, a.committed.Load(), epoch)))
	return a.evicted.RefreshIfFull()
}
