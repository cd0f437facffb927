package join

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
)

// store is a join's rows, both sides', by join key: the groups in memory,
// the rows changed in the epoch, and the state cache of a durable job (its
// size, the groups evicted to the state table and their read-back). It
// knows nothing of the join's output: the operator matches rows, the store
// keeps them.
type store struct {
	st     opkit.State // its state, whichever backend holds it
	groups map[string]*joinGroup
	// dirty lists the rows changed in the epoch (joinRow.dirty marks them;
	// a row removed and added again may be listed twice).
	dirty []joinDirty
	// lazy: a row reading its group back needs only the other side's rows
	// (an inner join keeps no match counts, so a row of one side is matched
	// against the other side's rows and stored beside its own side's
	// without reading them: they are read when a row of the other side
	// comes, loadSide). Joins freed by watermark and lookup joins read both
	// sides.
	lazy bool
	// recount recomputes the match counts of a group read back (outer,
	// semi and anti joins; nil for inner joins, which keep none).
	recount func(ectx *expr.Ctx, g *joinGroup) error

	// The state cache (durable jobs): once bytes passes budget, groups
	// whose state is committed are evicted at a barrier, their key hashes
	// go into evicted, and a row whose key may be there reads its group
	// back from the state table before it is matched.
	bytes    int64
	reported int64 // bytes as last added to the job's opBytes
	// What the runtime shares with its operators (Node).
	committed         *atomic.Uint64
	opBytes, evictedN *atomic.Int64
	budget            int64
	spilled           bool
	// evicted[s] holds the key hashes of groups evicted with rows of side
	// s (an inner join reads back a side only if its filter may hold the
	// key); other joins add every evicted key to evicted[0].
	evicted [2]opkit.EvictedFilter
	// rowsOut[s] (inner joins) holds the hashes of side s's rows that
	// left memory with their group: a row of a partial side not there has
	// no stored count to read (rowHash).
	rowsOut [2]opkit.EvictedFilter
	// tick counts the barriers; a group notes it when a row uses it
	// (evictage.go: the groups used longest ago are evicted first).
	tick uint64
	// emptied (once spilled): keys whose group left memory emptied (its
	// rows retracted, freed or expired) in an epoch not yet committed, by
	// that epoch (0: the current one). That epoch's batch deletes their
	// rows, so until it commits the state table still has them, and the
	// key is not read back: its group is known to be empty.
	emptied    map[string]uint64
	emptiedNow []string
	emptiedQ   []emptiedKey

	// cur reads evicted groups back through one iterator per epoch: made
	// at the first read, closed at the barrier before eviction.
	cur opkit.Cursor
}

// dropEmpty removes group g, whose rows are all gone, from memory.
func (ks *store) dropEmpty(g *joinGroup) {
	ks.bytes -= joinGroupBytes + int64(len(g.key))
	delete(ks.groups, g.key)
	g.gone = true
	if ks.spilled {
		if ks.emptied == nil {
			ks.emptied = map[string]uint64{}
		}
		ks.emptied[g.key] = 0
		ks.emptiedNow = append(ks.emptiedNow, g.key)
	}
}

// readable says whether key's group may be read back from the state table.
func (ks *store) readable(key string) bool {
	_, ok := ks.emptied[key]
	return !ok
}

// settleEmptied, at the barrier of epoch, dates the keys emptied in the
// epoch and forgets those emptied in epochs committed since.
func (ks *store) settleEmptied(epoch, committed uint64) {
	for _, k := range ks.emptiedNow {
		if ks.emptied[k] == 0 {
			ks.emptied[k] = epoch
			ks.emptiedQ = append(ks.emptiedQ, emptiedKey{epoch: epoch, key: k})
		}
	}
	clear(ks.emptiedNow)
	ks.emptiedNow = ks.emptiedNow[:0]
	n := 0
	for ; n < len(ks.emptiedQ) && ks.emptiedQ[n].epoch <= committed; n++ {
		e := ks.emptiedQ[n]
		if ks.emptied[e.key] == e.epoch {
			delete(ks.emptied, e.key)
		}
	}
	if n > 0 {
		m := copy(ks.emptiedQ, ks.emptiedQ[n:])
		clear(ks.emptiedQ[m:])
		ks.emptiedQ = ks.emptiedQ[:m]
	}
}

// evict drops groups whose state is committed (at or before epoch
// committed), those used longest ago first (evictage.go), until the
// estimate is below 80 % of the budget. It is called at a barrier, after
// the epoch's rows are written: a group changed in the epoch is not
// committed yet, so it stays.
func (ks *store) evict(committed uint64) {
	if ks.budget <= 0 || ks.bytes <= ks.budget {
		return
	}
	target := ks.budget * 8 / 10
	if !ks.spilled {
		defer func() {
			if ks.spilled { // the first groups went: own the strings of those kept, once
				ks.ownRows()
			}
		}()
	}
	if ks.lazy {
		ks.evictSides(committed, target)
		return
	}
	opkit.EvictOldest(ks.groups, ks.tick, ks.bytes-target,
		func(k string, g *joinGroup) bool { return g.saved <= committed && k != nullKey },
		func(g *joinGroup) uint64 { return g.used }, ks.groupBytes, ks.evictGroup,
		func() bool { return ks.bytes <= target })
}

// ownRows, when the join first spills, gives every row left in memory its
// own string. Until then a row shares one string per input batch (pushRows),
// and the rows kept would keep alive the batches of the rows evicted: the
// join held twice its share of the state cache (Nexmark q9 at 3M events,
// 99 MB of batch strings against a 128 MB share). Rows stored after this
// get their own copy as they come.
func (ks *store) ownRows() {
	for _, g := range ks.groups {
		for side := range g.rows {
			rows := g.rows[side]
			for i := range rows {
				rows[i].enc = strings.Clone(rows[i].enc)
			}
			if m := g.idx[side]; m != nil {
				clear(m)
				for i := range rows {
					m[rows[i].enc] = int32(i)
				}
			}
		}
	}
}

// groupBytes is the estimated memory of group g and its rows.
func (ks *store) groupBytes(g *joinGroup) int64 {
	n := joinGroupBytes + int64(len(g.key))
	for side := range g.rows {
		for _, r := range g.rows[side] {
			n += joinRowBytes + int64(len(r.enc))
		}
	}
	return n
}

// evictGroup drops group g (key k), committed, from memory: its key may be
// read back from the state table.
func (ks *store) evictGroup(k string, g *joinGroup) {
	ks.bytes -= ks.groupBytes(g)
	delete(ks.groups, k)
	switch {
	case !ks.lazy:
		ks.evicted[0].Add(g.hash)
	default:
		for side := range g.rows {
			if len(g.rows[side]) > 0 || g.partial[side] {
				ks.evicted[side].Add(g.hash)
			}
			for _, r := range g.rows[side] {
				ks.rowsOut[side].Add(rowHash(g.key, r.enc))
			}
		}
	}
	g.gone, g.evicted = true, true
	g.rows, g.idx = [2][]joinRow{}, [2]map[string]int32{} // the watermark's entries may keep g
	ks.spilled = true
	ks.evictedN.Add(1)
}

// rowHash is the hash of a row (enc) of group key, for rowsOut.
func rowHash(key, enc string) uint64 {
	var h maphash.Hash
	h.SetSeed(rowSeed)
	h.WriteString(key)
	h.WriteString(enc)
	return h.Sum64()
}

var rowSeed = maphash.MakeSeed()

// cursor is the epoch's reader of the state table.
func (ks *store) cursor() opkit.Cursor {
	if ks.cur == nil {
		ks.cur = opkit.CursorOf(ks.st)
	}
	return ks.cur
}

// closeCursor lets the epoch's reader go (at a barrier: a later read
// sees what the barrier committed).
func (ks *store) closeCursor() error {
	if ks.cur == nil {
		return nil
	}
	err := ks.cur.Close()
	ks.cur = nil
	return err
}

// sidePrefix is the state key prefix of side's rows of group key.
func sidePrefix(b []byte, kg byte, side int, key string) []byte {
	b = binary.AppendUvarint(append(b[:0], kg, byte(side)), uint64(len(key)))
	return append(b, key...)
}

// loadSide reads side's rows of g, a partial side, from the state table
// and resolves the rows changed since: a delta adds to the stored count,
// a resolved count replaces it; rows left at zero go.
func (ks *store) loadSide(g *joinGroup, side int) error {
	prefix := sidePrefix(nil, g.kg, side, g.key)
	err := ks.cursor().ScanPrefix(prefix, func(k, v []byte) error {
		count, _, clock, err := decodeJoinValue(v)
		if err != nil {
			return err
		}
		g.idle = max(g.idle, clock)
		enc := k[len(prefix):]
		if i := g.find(side, opkit.BytesView(enc)); i >= 0 {
			if r := &g.rows[side][i]; r.delta {
				r.count += count
				r.delta = false
			}
			return nil
		}
		e := string(enc)
		g.insert(side, joinRow{enc: e, count: count})
		ks.bytes += joinRowBytes + int64(len(e))
		return nil
	})
	if err != nil {
		return err
	}
	g.partial[side] = false
	for i := len(g.rows[side]) - 1; i >= 0; i-- {
		r := &g.rows[side][i]
		r.delta = false
		if r.count <= 0 {
			ks.bytes -= joinRowBytes + int64(len(r.enc))
			g.remove(side, i)
		}
	}
	return nil
}

// complete reads back g's partial sides.
func (ks *store) complete(g *joinGroup) error {
	for side := range g.partial {
		if g.partial[side] {
			if err := ks.loadSide(g, side); err != nil {
				return err
			}
		}
	}
	return nil
}

// readBack reads back, for a row of side, the group of key, not in
// memory, if the state table may have rows of it (nil if not). An inner
// join reads the other side's rows only, and only if a group of the key
// was evicted with rows of that side; its own side is partial if a group
// was evicted with rows of it (and nothing is read if the other side's
// filter does not hold the key).
func (ks *store) readBack(ectx *expr.Ctx, key string, h uint64, side int) (*joinGroup, error) {
	kg := byte(op.KeyGroup(h))
	if !ks.lazy {
		if !ks.evicted[0].MayContain(h) {
			return nil, nil
		}
		return ks.reload(ectx, key, kg, h, -1)
	}
	other, own := ks.evicted[1-side].MayContain(h), ks.evicted[side].MayContain(h)
	switch {
	case other:
		g, err := ks.reload(ectx, key, kg, h, 1-side)
		if g != nil {
			g.partial[side] = own
		}
		return g, err
	case own:
		g := &joinGroup{kg: kg, key: key, hash: h, used: ks.tick}
		g.partial[side] = true
		ks.groups[key] = g
		ks.bytes += joinGroupBytes + int64(len(key))
		return g, nil
	}
	return nil, nil
}

// reload reads the group of key back from the state table (nil if it has
// no rows there) and recomputes its rows' match counts. need >= 0 reads
// only that side's rows (lazy): the group comes back, rows or not, with
// its other side partial.
func (ks *store) reload(ectx *expr.Ctx, key string, kg byte, h uint64, need int) (*joinGroup, error) {
	var g *joinGroup
	var prefix []byte
	for side := 0; side < 2; side++ {
		if need >= 0 && side != need {
			continue
		}
		prefix = sidePrefix(prefix, kg, side, key)
		err := ks.cursor().ScanPrefix(prefix, func(k, v []byte) error {
			count, pinned, clock, err := decodeJoinValue(v)
			if err != nil {
				return err
			}
			if g == nil {
				g = &joinGroup{kg: kg, key: key, hash: h}
				ks.bytes += joinGroupBytes + int64(len(key))
			}
			g.idle = max(g.idle, clock)
			enc := string(k[len(prefix):])
			g.insert(side, joinRow{enc: enc, count: count, matches: pinned, pinned: pinned})
			ks.bytes += joinRowBytes + int64(len(enc))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if g == nil && need >= 0 {
		g = &joinGroup{kg: kg, key: key, hash: h}
		ks.bytes += joinGroupBytes + int64(len(key))
	}
	if g == nil {
		return nil, nil
	}
	if need >= 0 {
		g.partial[1-need] = true
	}
	g.used, g.need = ks.tick, [2]uint64{ks.tick, ks.tick}
	ks.groups[key] = g
	if ks.recount != nil {
		if err := ks.recount(ectx, g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// writeDirty writes the state of the rows changed in the epoch as one
// sorted run. The keys are built into one buffer and sorted by their
// first 16 bytes as two integers, then by the rest.
func (ks *store) writeDirty(st *opkit.Writer, clocks bool) error {
	type ref struct {
		p0, p1               uint64
		off, end             int
		count, pinned, clock int64
		row                  *joinRow // a delta to resolve
	}
	refs := make([]ref, 0, len(ks.dirty))
	size := 0
	for _, d := range ks.dirty {
		size += 2 + binary.MaxVarintLen32 + len(d.g.key) + len(d.enc)
	}
	buf := make([]byte, 0, size)
	for _, d := range ks.dirty {
		// The row now: it may have gone and come back (listed twice,
		// written the same both times), or its group been made anew
		// (and under another key group: nullKey's follows its first row).
		g := d.g
		var count, pinned, clock int64
		var row *joinRow
		if g.gone {
			g = ks.groups[g.key]
		}
		if g != nil && g.kg == d.g.kg {
			if i := g.find(d.side, d.enc); i >= 0 {
				count, pinned = g.rows[d.side][i].count, g.rows[d.side][i].pinned
				g.rows[d.side][i].dirty = false
				if r := &g.rows[d.side][i]; r.delta {
					if ks.rowsOut[d.side].MayContain(rowHash(g.key, r.enc)) {
						row = r // read its stored count below, in key order
					} else { // never evicted: no stored count, its delta is it
						r.count, r.delta = max(r.count, 0), false
						count = r.count
					}
				}
			}
			if clocks {
				clock = g.idle
			}
		}
		off := len(buf)
		buf = append(buf, d.g.kg, byte(d.side))
		buf = binary.AppendUvarint(buf, uint64(len(d.g.key)))
		buf = append(append(buf, d.g.key...), d.enc...)
		refs = append(refs, ref{off: off, end: len(buf), count: count, pinned: pinned, clock: clock, row: row})
	}
	for i := range refs {
		r := &refs[i]
		var p [16]byte
		copy(p[:], buf[r.off:r.end])
		r.p0, r.p1 = binary.BigEndian.Uint64(p[:8]), binary.BigEndian.Uint64(p[8:])
	}
	slices.SortFunc(refs, func(a, b ref) int {
		switch {
		case a.p0 != b.p0:
			return cmp.Compare(a.p0, b.p0)
		case a.p1 != b.p1:
			return cmp.Compare(a.p1, b.p1)
		}
		return bytes.Compare(buf[a.off:a.end], buf[b.off:b.end])
	})
	st.Reserve(len(buf) + len(refs)*(14+8+16))
	var v []byte
	for i, x := range refs {
		k := buf[x.off:x.end]
		if p := &refs[max(i, 1)-1]; i > 0 && p.p0 == x.p0 && p.p1 == x.p1 && bytes.Equal(k, buf[p.off:p.end]) {
			continue // the same row listed twice
		}
		if r := x.row; r != nil && r.delta {
			// A row of a partial side: its count adds to the stored one,
			// a point read (the tables' Bloom filters answer most rows,
			// new ones, without reading a block). The row stays with its
			// count, zero too, while the side is partial: the state table
			// shows this write only once it commits.
			stored, err := ks.st.Get(k)
			if err != nil {
				return err
			}
			if stored != nil {
				c, _, _, err := decodeJoinValue(stored)
				if err != nil {
					return err
				}
				r.count += c
			}
			r.count, r.delta = max(r.count, 0), false
			x.count = r.count
		}
		if x.count > 0 {
			v = appendJoinValue(v[:0], x.count, x.pinned, x.clock)
			st.Put(k, v)
		} else {
			st.Delete(k)
		}
	}
	return nil
}
