package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// aggOp is a hash aggregate. In a batch query it emits every group at the
// end; in a job it emits, at each barrier, the changes of the groups touched
// since the last one (update_before/update_after, insert, delete).
type aggOp struct {
	// st is a job's instance's state, whichever backend holds it (nil in
	// a batch query).
	st   opkit.State
	spec *HashAgg
	id   uint32 // the operator id its state is stored under
	// restored says some group's state was loaded from the state table.
	restored bool
	keyTs    []types.T
	outTs    []types.T
	mem      memory.Allocator // of the output rows
	gt       *groupTable
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
	saveKeys sortedKeys
	byID     []int32
	perm     []int

	// win, for a window aggregate in a job, says which group key closes
	// its groups by the watermark (windowagg.go); closing lists the groups
	// closed at the current barrier (isClosing by group).
	win       *windowClose
	closing   []int32
	isClosing []bool
	late      *lateLog // rows dropped as late, under job.late_rows = 'record'
	// evictedWins indexes the evicted groups of a window aggregate by
	// window, so they close too (lateevict.go).
	evictedWins evictedWindows
	ttl         aggTTL // state.ttl (ttl.go)
}

// groupBytes is the estimated fixed memory of one group in the table and
// accumulators, besides its key strings and last emitted row.
const groupBytes = 160

// newAggOp makes a hash aggregate; retract says its input may retract rows.
func newAggOp(spec *HashAgg, retract bool) *aggOp {
	a := &aggOp{spec: spec, keyTs: exprTypes(spec.Keys), outTs: spec.Types(), mem: memoryPool, count: accum.NewCountStar(), outValid: true}
	a.gt = newGroupTable(a.keyTs)
	for _, s := range spec.Aggs {
		a.accs = append(a.accs, newAccum(s, retract))
	}
	if len(spec.Keys) == 0 {
		a.gt.InsertDatums(nil) // the one group of a global aggregate always exists
		a.grow()
	}
	return a
}

func (a *aggOp) grow() {
	n := a.gt.Len()
	for _, acc := range a.accs {
		acc.Grow(n)
	}
	a.count.Grow(n)
	a.ttl.grow(n)
	for len(a.isDirty) < n {
		a.isDirty = append(a.isDirty, false)
		a.isClosing = append(a.isClosing, false)
		a.lastOut = append(a.lastOut, "")
		a.live = append(a.live, true)
		a.lastSave = append(a.lastSave, 0)
		a.touched = append(a.touched, 0)
	}
}

// created accounts for the groups the last lookup made and loads their
// state if it may be in the state table.
func (a *aggOp) created() error {
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
func (a *aggOp) evict(limit int64, committed, current uint64) int {
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
		a.noteEvicted(g)
		a.noteEvictedTTL(g)
		a.dropGroup(g)
		a.spilled = true
		evicted++
	}
	return evicted
}

// push folds rec (with optional per-row signs) into the groups.
func (a *aggOp) push(ctx *expr.Ctx, rec arrow.RecordBatch, signs []int8, track bool) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	keys := make([]arrow.Array, len(a.spec.Keys))
	defer releaseAll(keys)
	for i, k := range a.spec.Keys {
		arr, err := expr.Eval(ctx, k, rec)
		if err != nil {
			return err
		}
		keys[i] = arr
	}
	canonKeys(ctx, keys, a.spec.Keys)
	if cap(a.gids) < n {
		a.gids = make([]int32, n)
	}
	gids := a.gids[:n]
	if len(keys) == 0 {
		for i := range gids {
			gids[i] = 0
		}
	} else if a.gt.Lookup(keys, n, gids, true) > 0 {
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

// runAgg runs a hash aggregate in a batch query: it folds every input
// batch into the groups, whose estimated memory counts against the query's
// budget (checked after each batch), then emits every group.
func runAgg(ctx *Ctx, p *HashAgg, emit func(arrow.RecordBatch) error) error {
	agg := newAggOp(p, false)
	agg.mem = ctx.alloc()
	share := ctx.heap()
	defer share.release()
	if err := run(ctx, p.In, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if err := agg.push(ctx.Expr, rec, nil, false); err != nil {
			return err
		}
		share.set(agg.bytes + agg.gt.ApproxBytes() + agg.distinctBytes())
		return ctx.check()
	}); err != nil {
		return err
	}
	return agg.emitAll(func(rec arrow.RecordBatch) error {
		if err := ctx.canceled(); err != nil {
			rec.Release()
			return err
		}
		return emit(rec)
	})
}

// distinctBytes estimates the memory of the values count(DISTINCT ...)
// and its kin, and the ordered-set aggregates, have seen (map entries of
// a group id and an encoded value).
func (a *aggOp) distinctBytes() int64 {
	var n int64
	for _, acc := range a.accs {
		n += accum.ValueBytes(acc)
	}
	return n
}

// emitAll emits every group as inserted rows (batch queries).
func (a *aggOp) emitAll(emit func(arrow.RecordBatch) error) error {
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
// appendResults appends to cols one column per aggregate with the results
// of groups gids; on an error it releases cols.
func appendResults(mem memory.Allocator, aggs []AggSpec, accs []accum.Accum, gids []int32, cols []arrow.Array) ([]arrow.Array, error) {
	return accum.AppendResults(mem, aggs, accs, gids, cols)
}

func (a *aggOp) build(gids []int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, len(a.outTs))
	for c := range a.keyTs {
		cols = append(cols, a.gt.BuildKeys(a.mem, c, gids))
	}
	cols, err := appendResults(a.mem, a.spec.Aggs, a.accs, gids, cols)
	if err != nil {
		return nil, err
	}
	return newRecord(a.outTs, cols, len(gids)), nil
}

// changes emits the changes of the groups touched since the last call, as a
// change chunk, and clears the dirty set.
func (a *aggOp) changes(emit func(Chunk) error) error { return a.changesOf(true, emit) }

// changesOf is changes; without before it emits what maintaining a view's
// rows needs and no more: each changed group's new row (UpdateAfter) or,
// for a group that emptied, its keys (Delete), with no comparison against
// the row last emitted, which is then not kept (lastOut, outValid). The
// first call with before after calls without it cannot give this epoch's
// old rows (they were not kept); it emits as without, then rebuilds every
// group's last emitted row from the accumulators, so later calls are exact.
func (a *aggOp) changesOf(before bool, emit func(Chunk) error) error {
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
	var bls []arrowBuilder
	var take []int
	var ops []Op
	var groups []uint8
	nCur := int(cur.NumRows())
	nOld := 0
	emitRow := func(src int, op Op, g int32) {
		take = append(take, src)
		ops = append(ops, op)
		groups = append(groups, uint8(keyGroup(a.gt.Hashes[g])))
	}
	emitOld := func(old string, op Op, g int32) {
		if bls == nil {
			bls = make([]arrowBuilder, len(a.outTs))
			for c, t := range a.outTs {
				bls[c] = types.NewBuilder(memoryPool, t)
			}
		}
		for c, d := range decodeRow(old, a.outTs) {
			types.AppendDatum(bls[c], d, a.outTs[c])
		}
		emitRow(nCur+nOld, op, g)
		nOld++
	}
	var buf []byte
	for i, g := range a.dirty {
		a.isDirty[g] = false
		buf = encodeRow(buf[:0], cur, i, a.outTs)
		alive := a.count.N(g) > 0 || len(a.spec.Keys) == 0
		old := a.lastOut[g]
		switch {
		case alive && old == string(buf):
			continue
		case alive && old == "":
			emitRow(i, OpInsert, g)
		case alive:
			if before {
				emitOld(old, OpUpdateBefore, g)
			}
			emitRow(i, OpUpdateAfter, g)
		case old != "" && before:
			emitOld(old, OpDelete, g)
		case old != "":
			emitRow(i, OpDelete, g)
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
			cols[c], err = types.Concatenate([]arrow.Array{cur.Column(c), olds}, memoryPool)
			olds.Release()
			if err != nil {
				releaseAll(cols)
				return err
			}
		}
		src = newRecord(a.outTs, cols, nCur+nOld)
		defer src.Release()
	}
	return emit(Chunk{Rec: takeRecord(src, take, a.outTs), Ops: ops, Groups: groups})
}

// newRows emits the dirty groups' current rows as changes without old rows
// (changesOf) and clears the dirty set.
func (a *aggOp) newRows(emit func(Chunk) error) error {
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
	ops := make([]Op, len(ids))
	groups := make([]uint8, len(ids))
	for i, g := range ids {
		a.isDirty[g] = false
		ops[i] = OpUpdateAfter
		if a.count.N(g) <= 0 && len(a.spec.Keys) > 0 {
			ops[i] = OpDelete
		}
		groups[i] = uint8(keyGroup(a.gt.Hashes[g]))
	}
	a.dirty, a.byID = a.dirty[:0], a.byID[:0]
	if perm != nil {
		sorted := takeRecord(cur, perm, a.outTs)
		cur.Release()
		cur = sorted
		ops2, groups2 := make([]Op, len(perm)), make([]uint8, len(perm))
		for i, p := range perm {
			ops2[i], groups2[i] = ops[p], groups[p]
		}
		ops, groups = ops2, groups2
	}
	return emit(Chunk{Rec: cur, Ops: ops, Groups: groups})
}

// restoreAllOut sets every group's last emitted row from its accumulators
// and marks the rows kept from now on (outValid).
func (a *aggOp) restoreAllOut() error {
	gids := make([]int32, 0, a.gt.Len())
	for g := 0; g < a.gt.Len(); g++ {
		if a.live[g] {
			gids = append(gids, int32(g))
		}
	}
	a.outValid = true
	return restoreOut(a, gids)
}

// decodeRow decodes a row encoded column by column with encodeDatum (opkit).
func decodeRow(enc string, ts []types.T) []types.Datum { return opkit.DecodeRow(enc, ts) }

func releaseAll(as []arrow.Array) { opkit.ReleaseAll(as) }

// reemitAll forgets what was emitted and marks every live group changed, so
// the next changes() emits each as an insert.
func (a *aggOp) reemitAll() {
	for g := 0; g < a.gt.Len(); g++ {
		a.lastOut[g] = ""
		if (a.count.N(int32(g)) > 0 || len(a.spec.Keys) == 0) && !a.isDirty[g] {
			a.isDirty[g] = true
			a.dirty = append(a.dirty, int32(g))
		}
	}
}
