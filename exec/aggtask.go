package exec

import (
	"container/heap"
	"encoding/binary"
	"slices"
	"time"

	"github.com/streamdb/streamdb/exec/accum"

	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// runAgg is one parallel instance of the aggregate.
func (j *Job) runAgg(inst int, op *aggOp, ins []chan msg, out *outlet, root bool) error {
	ectx := j.exprCtx()
	al := newAligner(ins, j.spec.AtLeastOnce, j.ctx.Done())
	var late int64   // rows dropped as late in the epoch
	var changed bool // the epoch changed the state (prepareSave's dirty set)
	if op.win != nil {
		if err := j.resumeWatermark(al, op.id); err != nil {
			return err
		}
	}
	for {
		m, ok := al.next()
		if !ok {
			return nil
		}
		if m.barrier == nil {
			if err := failpoint(j.spec.Name, "agg"); err != nil {
				m.c.Rec.Release()
				return err
			}
			n := m.c.Rec.NumRows()
			rec, signs, dropped, err := op.dropLate(ectx, m.c.Rec, m.c.Signs(), al.Watermark().At)
			if err != nil {
				return err
			}
			late += dropped
			err = op.push(ectx, rec, signs, true)
			rec.Release()
			if err != nil {
				return err
			}
			if j.memoryLimited() {
				j.stateBytes[inst].Store(op.bytes)
				if err := j.checkMemoryLimit(); err != nil {
					return err
				}
			}
			j.dirty[inst].Store(int64(len(op.dirty)))
			j.inflight.Add(-n)
			continue
		}
		// Windows the watermark has passed close: their groups' last
		// changes go out now, their state is deleted with this epoch.
		if err := op.loadClosingEvicted(al.Watermark().At); err != nil {
			return err
		}
		op.markClosing(al.Watermark().At)
		// Idle groups expire (state.ttl): closed without a row.
		if err := op.expireIdle(time.Now().UnixMicro(), j.spec.StateTTL.micros()); err != nil {
			return err
		}
		m.late += late
		m.lateRows = mergeLate(m.lateRows, op.late.Take())
		late = 0
		if j.spec.View != nil {
			// Changed groups in state-key order: the state writes and the
			// view rows (keyed alike) then reach storage sorted.
			prepareSave(op, m.barrier.Epoch)
			changed = len(op.dirty) > 0
		}
		// Old rows (update_before, deletes' values) are only needed by a
		// changelog or a change stream. The changelog flag only ever turns
		// on, and a reader that turns it on with epoch n committed reads
		// the changelog only from epoch n+3 (EnableChangelog); barrier n+2
		// is injected after that, so every epoch it reads has them.
		// An aggregate inside the graph always sends them: its consumer
		// retracts what it took from the group before.
		// A view's indexes need them too, to remove a changed row's entries.
		before := !root || j.spec.View == nil || j.changelog.Load() || len(j.spec.View.Indexes) > 0
		emit := func(c Chunk) error { return out.emit(ectx, c, nil) }
		if root && j.spec.OnWindowClose && op.win != nil {
			if err := op.closedRows(emit); err != nil {
				return err
			}
		} else if err := op.changesOf(before, emit); err != nil {
			return err
		}
		if j.spec.View != nil {
			w := j.db.NewEpochBatch()
			wrote, err := op.st.Commit(w, m.barrier, changed, op.ttl.on,
				func(x *opkit.Writer) error { j.writeState(x, op); return nil },
				func(e uint64) *stateSnapshot { return snapshotAgg(op, e) })
			if err != nil {
				return err
			}
			if !wrote {
				op.clearValueChanges() // a snapshot holds every value: no log to keep
			}
			if op.win != nil {
				j.saveWatermark(w, al, op.id)
			}
			m = withWrites(m, w)
		}
		op.forgetClosing()
		op.epoch = m.barrier.Epoch + 1
		j.dirty[inst].Store(0)
		if err := out.barrier(m); err != nil {
			return err
		}
		// Eviction is about memory, not this epoch's contents: done after
		// the barrier has gone on, it does not delay the checkpoint.
		if j.spec.View != nil {
			j.Evicted.Add(int64(op.evict(j.cacheShare(), j.committed.Load(), m.barrier.Epoch)))
			if err := op.evicted.RefreshIfFull(); err != nil {
				return err
			}
			if op.spilled {
				j.spilling.Store(true)
			}
			j.stateBytes[inst].Store(op.bytes)
		}
	}
}

// State of an aggregate group: key = key group byte + encoded group key;
// value = each accumulator's state (decodeGroup), or none for a group that
// emptied (deleted). prepareSave has encoded both.
//
// Accumulators that keep a multiset of values per group (count(DISTINCT),
// min/max under retraction: valueBags) store each value apart: key = the
// group's key + the accumulator's index (2 bytes) + the encoded value;
// value = its count. The group's key is prefix-free (encodeDatum), so these
// entries sort right after their group's and before the next group's, and
// only the values whose count changed are written (a count of 0 deletes).
func (j *Job) saveState(w *storage.Batch, op *aggOp) {
	x := opkit.NewWriter(w, j.spec.ID, op.id)
	j.writeState(x, op)
	x.Close()
}

// writeState writes op's changed groups and values through x (saveState).
func (j *Job) writeState(r *opkit.Writer, op *aggOp) {
	ks := &op.saveKeys
	bags := op.valueBags()
	for _, vb := range bags {
		if vb != nil {
			vb.SortChanges()
		}
	}
	var aux []byte
	var val []byte
	for _, k := range ks.Keys {
		key := ks.Key(k)
		if v := ks.Val(k); len(v) > 0 {
			r.Put(key, v)
		} else {
			r.Delete(key)
		}
		for i, vb := range bags {
			if vb == nil {
				continue
			}
			if op.isClosing[k.Ref] {
				// A closed window's group goes with all its values: those
				// it holds and those that left it since the last save.
				vb.AllValues(k.Ref, func(v []byte) {
					aux = append(binary.BigEndian.AppendUint16(append(aux[:0], key...), uint16(i)), v...)
					r.Delete(aux)
				})
				continue
			}
			vb.SaveValues(k.Ref, func(v []byte, n int64) {
				aux = append(binary.BigEndian.AppendUint16(append(aux[:0], key...), uint16(i)), v...)
				if n <= 0 {
					r.Delete(aux)
					return
				}
				val = binary.AppendUvarint(val[:0], uint64(n))
				r.Put(aux, val)
			})
		}
	}
	// Every group with changed values was changed, so saved above.
	for _, vb := range bags {
		if vb != nil {
			vb.ClearChanges()
		}
	}
}

// clearValueChanges empties the accumulators' logs of changed values (a
// memory-backend job saves none).
func (op *aggOp) clearValueChanges() {
	for _, vb := range op.valueBags() {
		if vb != nil {
			vb.ClearChanges()
		}
	}
}

// snapshotAgg encodes the state of every group op holds after the barrier
// (prepareSave has run): the groups that are live, not emptied and not
// closing, as prepareSave encodes them; the one group of a global
// aggregate once it has state. A first pass adds up the entries' lengths,
// so the snapshot's buffers are allocated once at their size (grown by
// append, they ended up to a quarter larger than their contents and were
// held twice while the last growth copied them).
func snapshotAgg(op *aggOp, epoch uint64) *stateSnapshot {
	s := opkit.NewSnapshot(op.id, epoch)
	var n, size int
	eachAggEntry(op, false, func(_ int32, key, val []byte) { n, size = n+1, size+len(key)+len(val) })
	s.Entries.Reserve(n, size)
	eachAggEntry(op, true, s.Entries.AddKV)
	s.Entries.Sort()
	return s
}

// eachAggEntry calls f with each state entry of snapshotAgg, unsorted:
// every group's, then its values' (valueBags; in value order if ordered,
// which sizing does not need). key and val are valid until f returns.
func eachAggEntry(op *aggOp, ordered bool, f func(g int32, key, val []byte)) {
	bags := op.valueBags()
	var key, aux, val []byte
	var vals []string
	n := op.gt.Len()
	for g := int32(0); int(g) < n; g++ {
		if !op.live[g] || op.isClosing[g] {
			continue
		}
		if len(op.spec.Keys) > 0 && op.count.N(g) <= 0 || len(op.spec.Keys) == 0 && op.lastSave[g] == 0 && !op.restored {
			continue
		}
		key = appendStateKey(op, g, key[:0])
		val = op.count.Encode(val[:0], g)
		for _, acc := range op.accs {
			val = acc.Encode(val, g)
		}
		val = op.ttl.appendIdle(appendKeyScales(op, val, g), g)
		f(g, key, val)
		for i, vb := range bags {
			if vb == nil || len(vb.B[g]) == 0 {
				continue
			}
			vals = vals[:0]
			for v := range vb.B[g] {
				vals = append(vals, v)
			}
			if ordered {
				slices.Sort(vals)
			}
			for _, v := range vals {
				aux = append(binary.BigEndian.AppendUint16(append(aux[:0], key...), uint16(i)), v...)
				val = binary.AppendUvarint(val[:0], uint64(*vb.B[g][v]))
				f(g, aux, val)
			}
		}
	}
}

// valueBags returns, per accumulator, its per-value counts or nil; nil if
// no accumulator keeps any.
func (op *aggOp) valueBags() []*accum.ValueBags {
	var out []*accum.ValueBags
	for i, acc := range op.accs {
		if vb := accum.ValuesOf(acc); vb != nil {
			if out == nil {
				out = make([]*accum.ValueBags, len(op.accs))
			}
			out[i] = vb
		}
	}
	return out
}

// loadValue restores one value entry (rest: the key after the group's
// key) of group g.
func loadValue(op *aggOp, bags []*accum.ValueBags, g int32, rest, val []byte) error {
	if len(rest) < 2 {
		return errCorruptState
	}
	i := int(binary.BigEndian.Uint16(rest))
	n, k := binary.Uvarint(val)
	if i >= len(bags) || bags[i] == nil || k <= 0 || k != len(val) {
		return errCorruptState
	}
	bags[i].LoadValue(g, rest[2:], int64(n))
	return nil
}

// refillEvicted returns what the evicted-groups filter is rebuilt from
// (opkit.EvictedFilter.Refill): every group of the instance's key groups in the
// state table (evicted or not: one in memory is never looked up in the
// filter) and nothing else, so groups loaded back or deleted since stop
// costing false positives.
func (j *Job) refillEvicted(op *aggOp, inst, par int) func(add func(uint64)) error {
	return func(add func(uint64)) error {
		ds := make([]types.Datum, len(op.keyTs))
		return j.db.ScanState(j.spec.ID, op.id, func(key, _ []byte) error {
			if len(key) == 0 || instanceOf(int(key[0]), par) != inst {
				return nil
			}
			rest := key[1:]
			for c, t := range op.keyTs {
				var err error
				if ds[c], rest, err = decodeDatum(rest, t); err != nil {
					return err
				}
			}
			if len(rest) == 0 { // a group, not one of its values
				add(hashDatums(ds, op.keyTs))
			}
			return nil
		})
	}
}

// prepareSave encodes the state key and value of each changed group into
// op.saveKeys, sorted by key, and puts op.dirty in that order; the groups'
// state is the epoch's. It reads the groups in id order, so the per-group
// arrays are read front to back rather than at random: at hundreds of
// thousands of changed groups that is most of the time it takes.
func prepareSave(op *aggOp, epoch uint64) {
	slices.Sort(op.dirty)
	ks := &op.saveKeys
	ks.Reset()
	for _, g := range op.dirty {
		op.lastSave[g] = epoch
		ks.Add(g, func(buf []byte) []byte { return appendStateKey(op, g, buf) }, func(buf []byte) []byte {
			if op.count.N(g) <= 0 && len(op.spec.Keys) > 0 || op.isClosing[g] {
				return buf // emptied, or its window closed: deleted
			}
			buf = op.count.Encode(buf, g)
			for _, acc := range op.accs {
				buf = acc.Encode(buf, g)
			}
			return op.ttl.appendIdle(appendKeyScales(op, buf, g), g)
		})
	}
	ks.Sort()
	op.byID = append(op.byID[:0], op.dirty...)
	op.perm = op.perm[:0]
	for i, k := range ks.Keys {
		op.dirty[i] = k.Ref
		op.perm = append(op.perm, int(k.Idx()))
	}
}

// stateKeyOf is group g's key in the state table: its key group, then its
// encoded key.
func stateKeyOf(op *aggOp, g int32, buf []byte) []byte { return appendStateKey(op, g, buf[:0]) }

func appendStateKey(op *aggOp, g int32, buf []byte) []byte {
	buf = append(buf, byte(keyGroup(op.gt.Hashes[g])))
	for c, t := range op.keyTs {
		buf = encodeDatum(buf, op.gt.KeyDatum(c, g), t)
	}
	return buf
}

// decodeGroup restores group g's accumulators. The row the group last
// emitted is not stored: saved at a barrier, right after the group's
// changes were emitted, it always equals the row its accumulators give, so
// restoreOut recomputes it. (State written before this change carries the
// row after the accumulators; it is skipped.)
func decodeGroup(op *aggOp, g int32, val []byte) error {
	var err error
	if val, err = op.count.Decode(val, g); err != nil {
		return err
	}
	for _, acc := range op.accs {
		if val, err = acc.Decode(val, g); err != nil {
			return err
		}
	}
	for len(val) > 0 {
		n, k := binary.Uvarint(val)
		if k <= 0 || uint64(len(val)-k) < n {
			return errCorruptState
		}
		// The key's display scales, the idle clock (state.ttl), or the
		// row state written long ago carried, skipped.
		tr := val[k : k+int(n)]
		if at, ok := decodeIdle(tr); ok {
			op.ttl.idle[g] = at
		} else {
			setKeyScales(op, g, tr)
		}
		val = val[k+int(n):]
	}
	for _, acc := range op.accs {
		if vb := accum.ValuesOf(acc); vb != nil && vb.Legacy {
			// Values stored inline, the old way: the next barrier saves
			// the group, moving them to entries of their own.
			vb.Legacy = false
			if !op.isDirty[g] {
				op.isDirty[g] = true
				op.dirty = append(op.dirty, g)
				op.touched[g] = op.epoch
			}
		}
	}
	return nil
}

// keyScalesTag marks the trailer of a group's state entry that holds the
// display scales of its unconstrained NUMERIC key values: the state key
// encodes values without them (1.5 and 1.50 are one group), and the group
// prints its first value's digits, as PostgreSQL does.
const keyScalesTag = 'k'

// appendKeyScales appends group g's key display-scale trailer to buf
// (length, tag, one byte per unconstrained NUMERIC key column), if the
// group has such a key column with a known scale.
func appendKeyScales(op *aggOp, buf []byte, g int32) []byte {
	known := false
	for c, t := range op.keyTs {
		known = known || t.Kind == types.Numeric && t.Prec == 0 && op.gt.KeyDatum(c, g).DS != 0
	}
	if !known {
		return buf
	}
	buf = append(buf, byte(numericKeyCols(op)+1), keyScalesTag)
	for c, t := range op.keyTs {
		if t.Kind == types.Numeric && t.Prec == 0 {
			buf = append(buf, byte(op.gt.KeyDatum(c, g).DS))
		}
	}
	return buf
}

// numericKeyCols counts op's unconstrained NUMERIC key columns.
func numericKeyCols(op *aggOp) int {
	n := 0
	for _, t := range op.keyTs {
		if t.Kind == types.Numeric && t.Prec == 0 {
			n++
		}
	}
	return n
}

// setKeyScales restores group g's key display scales from trailer tr
// (appendKeyScales); a trailer of another kind or length is ignored.
func setKeyScales(op *aggOp, g int32, tr []byte) {
	if len(tr) == 0 || tr[0] != keyScalesTag {
		return
	}
	tr = tr[1:]
	if len(tr) != numericKeyCols(op) {
		return
	}
	i := 0
	for c, t := range op.keyTs {
		if t.Kind == types.Numeric && t.Prec == 0 {
			op.gt.SetKeyDS(c, g, int8(tr[i]))
			i++
		}
	}
}

// restoreOut sets the last emitted row of restored groups from their
// accumulators (see decodeGroup), if the operator keeps them (outValid).
func restoreOut(op *aggOp, gids []int32) error {
	if !op.outValid {
		return nil
	}
	alive := gids[:0:0]
	for _, g := range gids {
		if op.count.N(g) > 0 || len(op.spec.Keys) == 0 {
			alive = append(alive, g)
		}
	}
	for len(alive) > 0 {
		chunk := alive[:min(len(alive), 16<<10)]
		alive = alive[len(chunk):]
		rec, err := op.build(chunk)
		if err != nil {
			return err
		}
		var buf []byte
		for i, g := range chunk {
			buf = encodeRow(buf[:0], rec, i, op.outTs)
			op.bytes -= int64(len(op.lastOut[g]))
			op.lastOut[g] = string(buf)
			op.bytes += int64(len(buf))
		}
		rec.Release()
	}
	return nil
}

// loadState restores the groups of the key groups instance inst owns, up to
// the instance's share of the state cache; the rest are read when their
// keys come (op.load). An aggregate that will re-emit every group
// (reemitAll) loads them all: its barriers evict what is over the share.
func (j *Job) loadState(op *aggOp, inst, par int, reemit bool) error {
	op.st = j.opState(op.id, inst, par)
	limit := j.cacheShare()
	if reemit {
		limit = 0
	}
	ttl := j.spec.StateTTL.micros()
	bags := op.valueBags()
	for _, vb := range bags {
		if vb != nil {
			// saveState writes the changed values (not on the memory
			// backend: snapshotAgg writes them all at a checkpoint).
			vb.Track = !j.memBackend()
		}
	}
	op.evicted.Refill = j.refillEvicted(op, inst, par)
	var key []byte
	var found []int32
	op.load = func(gids []int32) error {
		found = found[:0]
		for _, g := range gids {
			key = stateKeyOf(op, g, key)
			if bags != nil {
				// The group's entry and, right after it, its values'.
				ok := false
				err := j.db.ScanStatePrefix(j.spec.ID, op.id, key, func(k, v []byte) error {
					if rest := k[len(key):]; len(rest) > 0 {
						if !ok {
							return errCorruptState // values without their group
						}
						return loadValue(op, bags, g, rest, v)
					}
					ok = true
					return decodeGroup(op, g, v)
				})
				if err != nil {
					return err
				}
				if ok {
					found = append(found, g)
				}
				continue
			}
			v, err := j.db.GetState(j.spec.ID, op.id, key)
			if err != nil {
				return err
			}
			if v != nil {
				if err := decodeGroup(op, g, v); err != nil {
					return err
				}
				found = append(found, g)
			}
		}
		return restoreOut(op, found)
	}
	loaded := make([]int32, 0, 4096)
	// The group whose entry came last, if it was loaded (-1 if not): the
	// value entries that follow it are its (saveState).
	cur := int32(-1)
	err := j.db.ScanState(j.spec.ID, op.id, func(key, val []byte) error {
		if len(key) == 0 || instanceOf(int(key[0]), par) != inst {
			return nil
		}
		rest := key[1:]
		ds := make([]types.Datum, len(op.keyTs))
		for c, t := range op.keyTs {
			var err error
			if ds[c], rest, err = decodeDatum(rest, t); err != nil {
				return err
			}
		}
		if len(rest) > 0 {
			if cur < 0 {
				return nil // its group stays in the state table
			}
			return loadValue(op, bags, cur, rest, val)
		}
		cur = -1
		if limit > 0 && op.bytes > limit {
			// The rest stays in the state table until its keys come.
			op.spilled = true
			op.evicted.Add(hashDatums(ds, op.keyTs))
			op.noteEvictedKey(ds)
			if ttl > 0 && op.usesTTL() {
				heap.Push(&op.ttl.evicted, opkit.IdleItem[[]types.Datum]{At: peekIdle(val), G: ds})
			}
			return nil
		}
		var g int32
		if len(op.keyTs) > 0 {
			g = op.gt.InsertDatums(ds)
			op.grow()
			op.live[g] = true
			op.bytes += groupBytes + op.gt.KeyBytes(g)
		}
		if err := decodeGroup(op, g, val); err != nil {
			return err
		}
		cur = g
		op.restored = true
		// Rows are restored in chunks, so op.bytes stays close enough to
		// the truth for the cache limit above.
		if loaded = append(loaded, g); len(loaded) == cap(loaded) {
			err := restoreOut(op, loaded)
			loaded = loaded[:0]
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	op.st.Loaded()
	return restoreOut(op, loaded)
}
