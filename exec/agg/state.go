package agg

import (
	"container/heap"
	"encoding/binary"
	"slices"

	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

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
// writeState writes the changed groups and values through r.
func (o *Op) writeState(r *opkit.Writer) error {
	ks := &o.saveKeys
	bags := valueBagsOf(o.accs)
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
			if o.wins.isClosing[k.Ref] {
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
	return nil
}

// clearValueChanges empties the accumulators' logs of changed values (a
// memory-backend job saves none).
func clearValueChanges(accs []accum.Accum) {
	for _, vb := range valueBagsOf(accs) {
		if vb != nil {
			vb.ClearChanges()
		}
	}
}

// Snapshot encodes the state of every group op holds after the barrier
// (prepareSave has run): the groups that are live, not emptied and not
// closing, as prepareSave encodes them; the one group of a global
// aggregate once it has state. A first pass adds up the entries' lengths,
// so the snapshot's buffers are allocated once at their size (grown by
// append, they ended up to a quarter larger than their contents and were
// held twice while the last growth copied them).
func (o *Op) Snapshot(epoch uint64) *opkit.Snapshot {
	s := opkit.NewSnapshot(o.id, epoch)
	var n, size int
	eachAggEntry(o, false, func(_ int32, key, val []byte) { n, size = n+1, size+len(key)+len(val) })
	s.Entries.Reserve(n, size)
	eachAggEntry(o, true, s.Entries.AddKV)
	s.Entries.Sort()
	return s
}

// eachAggEntry calls f with each state entry of Snapshot, unsorted:
// every group's, then its values' (valueBags; in value order if ordered,
// which sizing does not need). key and val are valid until f returns.
func eachAggEntry(o *Op, ordered bool, f func(g int32, key, val []byte)) {
	bags := valueBagsOf(o.accs)
	var key, aux, val []byte
	var vals []string
	n := o.gt.Len()
	for g := int32(0); int(g) < n; g++ {
		if !o.live[g] || o.wins.isClosing[g] {
			continue
		}
		if len(o.spec.Keys) > 0 && o.count.N(g) <= 0 || len(o.spec.Keys) == 0 && o.lastSave[g] == 0 && !o.restored {
			continue
		}
		key = appendStateKey(o, g, key[:0])
		val = o.count.Encode(val[:0], g)
		for _, acc := range o.accs {
			val = acc.Encode(val, g)
		}
		val = o.ttl.appendIdle(appendKeyScales(o, val, g), g)
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
func valueBagsOf(accs []accum.Accum) []*accum.ValueBags {
	var out []*accum.ValueBags
	for i, acc := range accs {
		if vb := accum.ValuesOf(acc); vb != nil {
			if out == nil {
				out = make([]*accum.ValueBags, len(accs))
			}
			out[i] = vb
		}
	}
	return out
}

// loadValue restores one value entry (rest: the key after the group's
// key) of group g.
func loadValue(o *Op, bags []*accum.ValueBags, g int32, rest, val []byte) error {
	if len(rest) < 2 {
		return opkit.ErrCorruptState
	}
	i := int(binary.BigEndian.Uint16(rest))
	n, k := binary.Uvarint(val)
	if i >= len(bags) || bags[i] == nil || k <= 0 || k != len(val) {
		return opkit.ErrCorruptState
	}
	bags[i].LoadValue(g, rest[2:], int64(n))
	return nil
}

// refillEvicted returns what the evicted-groups filter is rebuilt from
// (opkit.EvictedFilter.Refill): every group of the instance's key groups in the
// state table (evicted or not: one in memory is never looked up in the
// filter) and nothing else, so groups loaded back or deleted since stop
// costing false positives.
func refillEvicted(st opkit.State, keyTs []types.T, inst, par int) func(add func(uint64)) error {
	return func(add func(uint64)) error {
		ds := make([]types.Datum, len(keyTs))
		return st.Scan(func(key, _ []byte) error {
			if len(key) == 0 || op.InstanceOf(int(key[0]), par) != inst {
				return nil
			}
			rest := key[1:]
			for c, t := range keyTs {
				var err error
				if ds[c], rest, err = opkit.DecodeDatum(rest, t); err != nil {
					return err
				}
			}
			if len(rest) == 0 { // a group, not one of its values
				add(accum.HashDatums(ds, keyTs))
			}
			return nil
		})
	}
}

// prepareSave encodes the state key and value of each changed group into
// o.saveKeys, sorted by key, and puts o.dirty in that order; the groups'
// state is the epoch's. It reads the groups in id order, so the per-group
// arrays are read front to back rather than at random: at hundreds of
// thousands of changed groups that is most of the time it takes.
func (o *Op) prepareSave(epoch uint64) {
	slices.Sort(o.dirty)
	ks := &o.saveKeys
	ks.Reset()
	for _, g := range o.dirty {
		o.lastSave[g] = epoch
		ks.Add(g, func(buf []byte) []byte { return appendStateKey(o, g, buf) }, func(buf []byte) []byte {
			if o.count.N(g) <= 0 && len(o.spec.Keys) > 0 || o.wins.isClosing[g] {
				return buf // emptied, or its window closed: deleted
			}
			buf = o.count.Encode(buf, g)
			for _, acc := range o.accs {
				buf = acc.Encode(buf, g)
			}
			return o.ttl.appendIdle(appendKeyScales(o, buf, g), g)
		})
	}
	ks.Sort()
	o.byID = append(o.byID[:0], o.dirty...)
	o.perm = o.perm[:0]
	for i, k := range ks.Keys {
		o.dirty[i] = k.Ref
		o.perm = append(o.perm, int(k.Idx()))
	}
}

// stateKeyOf is group g's key in the state table: its key group, then its
// encoded key.
func stateKeyOf(o *Op, g int32, buf []byte) []byte { return appendStateKey(o, g, buf[:0]) }

func appendStateKey(o *Op, g int32, buf []byte) []byte {
	buf = append(buf, byte(op.KeyGroup(o.gt.Hashes[g])))
	for c, t := range o.keyTs {
		buf = opkit.EncodeDatum(buf, o.gt.KeyDatum(c, g), t)
	}
	return buf
}

// decodeGroup restores group g's accumulators. The row the group last
// emitted is not stored: saved at a barrier, right after the group's
// changes were emitted, it always equals the row its accumulators give, so
// restoreOut recomputes it. (State written before this change carries the
// row after the accumulators; it is skipped.)
func decodeGroup(o *Op, g int32, val []byte) error {
	var err error
	if val, err = o.count.Decode(val, g); err != nil {
		return err
	}
	for _, acc := range o.accs {
		if val, err = acc.Decode(val, g); err != nil {
			return err
		}
	}
	for len(val) > 0 {
		n, k := binary.Uvarint(val)
		if k <= 0 || uint64(len(val)-k) < n {
			return opkit.ErrCorruptState
		}
		// The key's display scales, the idle clock (state.ttl), or the
		// row state written long ago carried, skipped.
		tr := val[k : k+int(n)]
		if at, ok := decodeIdle(tr); ok {
			o.ttl.idle[g] = at
		} else {
			setKeyScales(o, g, tr)
		}
		val = val[k+int(n):]
	}
	for _, acc := range o.accs {
		if vb := accum.ValuesOf(acc); vb != nil && vb.Legacy {
			// Values stored inline, the old way: the next barrier saves
			// the group, moving them to entries of their own.
			vb.Legacy = false
			if !o.isDirty[g] {
				o.isDirty[g] = true
				o.dirty = append(o.dirty, g)
				o.touched[g] = o.epoch
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
func appendKeyScales(o *Op, buf []byte, g int32) []byte {
	known := false
	for c, t := range o.keyTs {
		known = known || t.Kind == types.Numeric && t.Prec == 0 && o.gt.KeyDatum(c, g).DS != 0
	}
	if !known {
		return buf
	}
	buf = append(buf, byte(numericKeyCols(o)+1), keyScalesTag)
	for c, t := range o.keyTs {
		if t.Kind == types.Numeric && t.Prec == 0 {
			buf = append(buf, byte(o.gt.KeyDatum(c, g).DS))
		}
	}
	return buf
}

// numericKeyCols counts op's unconstrained NUMERIC key columns.
func numericKeyCols(o *Op) int {
	n := 0
	for _, t := range o.keyTs {
		if t.Kind == types.Numeric && t.Prec == 0 {
			n++
		}
	}
	return n
}

// setKeyScales restores group g's key display scales from trailer tr
// (appendKeyScales); a trailer of another kind or length is ignored.
func setKeyScales(o *Op, g int32, tr []byte) {
	if len(tr) == 0 || tr[0] != keyScalesTag {
		return
	}
	tr = tr[1:]
	if len(tr) != numericKeyCols(o) {
		return
	}
	i := 0
	for c, t := range o.keyTs {
		if t.Kind == types.Numeric && t.Prec == 0 {
			o.gt.SetKeyDS(c, g, int8(tr[i]))
			i++
		}
	}
}

// restoreOut sets the last emitted row of restored groups from their
// accumulators (see decodeGroup), if the operator keeps them (outValid).
func restoreOut(o *Op, gids []int32) error {
	if !o.outValid {
		return nil
	}
	alive := gids[:0:0]
	for _, g := range gids {
		if o.count.N(g) > 0 || len(o.spec.Keys) == 0 {
			alive = append(alive, g)
		}
	}
	for len(alive) > 0 {
		chunk := alive[:min(len(alive), 16<<10)]
		alive = alive[len(chunk):]
		rec, err := o.build(chunk)
		if err != nil {
			return err
		}
		var buf []byte
		for i, g := range chunk {
			buf = opkit.EncodeRow(buf[:0], rec, i, o.outTs)
			o.bytes -= int64(len(o.lastOut[g]))
			o.lastOut[g] = string(buf)
			o.bytes += int64(len(buf))
		}
		rec.Release()
	}
	return nil
}

// Load restores, from st, the groups of the key groups instance inst owns, up to
// the instance's share of the state cache; the rest are read when their
// keys come (o.load). An aggregate that will re-emit every group
// (reemitAll) loads them all: its barriers evict what is over the share.
func (o *Op) Load(st opkit.State, inst, par int, reemit bool) error {
	o.st = st
	limit := o.budget
	if reemit {
		limit = 0
	}
	ttl := o.ttlOf()
	bags := valueBagsOf(o.accs)
	for _, vb := range bags {
		if vb != nil {
			// writeState writes the changed values (unless the State
			// takes snapshots instead, which hold them all: PerEpoch).
			vb.Track = o.perEpoch
		}
	}
	o.evicted.Refill = refillEvicted(o.st, o.keyTs, inst, par)
	var key []byte
	var found []int32
	o.load = func(gids []int32) error {
		found = found[:0]
		for _, g := range gids {
			key = stateKeyOf(o, g, key)
			if bags != nil {
				// The group's entry and, right after it, its values'.
				ok := false
				err := o.st.ScanPrefix(key, func(k, v []byte) error {
					if rest := k[len(key):]; len(rest) > 0 {
						if !ok {
							return opkit.ErrCorruptState // values without their group
						}
						return loadValue(o, bags, g, rest, v)
					}
					ok = true
					return decodeGroup(o, g, v)
				})
				if err != nil {
					return err
				}
				if ok {
					found = append(found, g)
				}
				continue
			}
			v, err := o.st.Get(key)
			if err != nil {
				return err
			}
			if v != nil {
				if err := decodeGroup(o, g, v); err != nil {
					return err
				}
				found = append(found, g)
			}
		}
		return restoreOut(o, found)
	}
	loaded := make([]int32, 0, 4096)
	// The group whose entry came last, if it was loaded (-1 if not): the
	// value entries that follow it are its (writeState).
	cur := int32(-1)
	err := o.st.Scan(func(key, val []byte) error {
		if len(key) == 0 || op.InstanceOf(int(key[0]), par) != inst {
			return nil
		}
		rest := key[1:]
		ds := make([]types.Datum, len(o.keyTs))
		for c, t := range o.keyTs {
			var err error
			if ds[c], rest, err = opkit.DecodeDatum(rest, t); err != nil {
				return err
			}
		}
		if len(rest) > 0 {
			if cur < 0 {
				return nil // its group stays in the state table
			}
			return loadValue(o, bags, cur, rest, val)
		}
		cur = -1
		if limit > 0 && o.bytes > limit {
			// The rest stays in the state table until its keys come.
			o.spilled = true
			o.evicted.Add(accum.HashDatums(ds, o.keyTs))
			o.wins.noteEvictedKey(ds)
			if ttl > 0 && o.ttl.applies {
				heap.Push(&o.ttl.evicted, opkit.IdleItem[[]types.Datum]{At: peekIdle(val), G: ds})
			}
			return nil
		}
		var g int32
		if len(o.keyTs) > 0 {
			g = o.gt.InsertDatums(ds)
			o.grow()
			o.live[g] = true
			o.bytes += groupBytes + o.gt.KeyBytes(g)
		}
		if err := decodeGroup(o, g, val); err != nil {
			return err
		}
		cur = g
		o.restored = true
		// Rows are restored in chunks, so o.bytes stays close enough to
		// the truth for the cache limit above.
		if loaded = append(loaded, g); len(loaded) == cap(loaded) {
			err := restoreOut(o, loaded)
			loaded = loaded[:0]
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	o.st.Loaded()
	return restoreOut(o, loaded)
}
