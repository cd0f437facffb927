package accum

import (
	"bytes"
	"github.com/streamdb/streamdb/exec/opkit"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/types"
)

// minMaxAcc keeps the current extreme per group. Under retraction it also
// keeps each group's multiset of values so a retracted extreme can be
// replaced by the next one; the multiset is stored value by value
// (ValueBags), so an epoch writes only the values that changed.
type minMaxAcc struct {
	max bool
	t   types.T
	// retract is set when the input may retract rows (it reads a
	// changelog): every group then keeps its multiset of values from the start.
	retract bool
	has     []bool
	ints    []int64   // PhysInt64, PhysBool
	flts    []float64 // PhysFloat64
	ds      []types.Datum
	// bags counts each value (encoded) of each group: every group if
	// retract, else only groups that have seen a retraction.
	bags ValueBags
	// heaps[g] orders group g's values, best first, once its extreme has
	// been retracted (recompute); nil before.
	heaps []*valHeap
	buf   []byte
}

func (a *minMaxAcc) Grow(n int) {
	for len(a.has) < n {
		a.has = append(a.has, false)
		switch a.t.Physical() {
		case types.PhysInt64, types.PhysBool:
			a.ints = append(a.ints, 0)
		case types.PhysFloat64:
			a.flts = append(a.flts, 0)
		default:
			a.ds = append(a.ds, types.Datum{})
		}
	}
	a.bags.Grow(n)
	for len(a.heaps) < n {
		a.heaps = append(a.heaps, nil)
	}
}

// bagged says group g keeps its multiset of values.
func (a *minMaxAcc) bagged(g int32) bool { return a.retract || a.bags.B[g] != nil }

func (a *minMaxAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	if signs != nil {
		return a.updateBag(gids, arg, signs)
	}
	noNulls := arg.NullN() == 0
	switch arr := arg.(type) {
	case *array.Int64:
		vs := arr.Int64Values()
		for i, g := range gids {
			if !noNulls && arr.IsNull(i) {
				continue
			}
			v := vs[i]
			if !a.has[g] || (a.max && v > a.ints[g]) || (!a.max && v < a.ints[g]) {
				a.ints[g], a.has[g] = v, true
			}
		}
	case *array.Float64:
		vs := arr.Float64Values()
		for i, g := range gids {
			if !noNulls && arr.IsNull(i) {
				continue
			}
			v := vs[i]
			if !a.has[g] || (a.max && opkit.FloatLess(a.flts[g], v)) || (!a.max && opkit.FloatLess(v, a.flts[g])) {
				a.flts[g], a.has[g] = v, true
			}
		}
	default:
		for i, g := range gids {
			if arg.IsNull(i) {
				continue
			}
			d := types.DatumAt(arg, i, a.t)
			a.offer(g, d)
		}
	}
	for i, g := range gids {
		if a.bagged(g) && arg.IsValid(i) {
			a.addValue(g, types.DatumAt(arg, i, a.t))
		}
	}
	return nil
}

// addValue adds a copy of d to group g's values; a new value goes into the
// group's heap, if it has one.
func (a *minMaxAcc) addValue(g int32, d types.Datum) {
	a.buf = opkit.EncodeValueDatum(a.buf[:0], d, a.t)
	if before, _ := a.bags.add(g, a.buf, 1); before == 0 && a.heaps[g] != nil {
		if h := a.heaps[g]; len(h.ds) > 2*len(a.bags.B[g])+16 {
			a.heaps[g] = nil // mostly stale: rebuilt when next needed
		} else {
			h.push(a, d, string(a.buf))
		}
	}
}

func (a *minMaxAcc) get(g int32) types.Datum {
	if !a.has[g] {
		return types.Null
	}
	switch a.t.Physical() {
	case types.PhysInt64, types.PhysBool:
		return types.Datum{I: a.ints[g]}
	case types.PhysFloat64:
		return types.Datum{F: a.flts[g]}
	}
	return a.ds[g]
}

func (a *minMaxAcc) set(g int32, d types.Datum) {
	a.has[g] = !d.Null
	switch a.t.Physical() {
	case types.PhysInt64, types.PhysBool:
		a.ints[g] = d.I
	case types.PhysFloat64:
		a.flts[g] = d.F
	default:
		a.ds[g] = d
	}
}

func (a *minMaxAcc) offer(g int32, d types.Datum) {
	if !a.has[g] {
		a.set(g, d)
		return
	}
	c := opkit.CompareDatum(d, a.get(g), a.t)
	if (a.max && c > 0) || (!a.max && c < 0) {
		a.set(g, d)
	}
}

func (a *minMaxAcc) updateBag(gids []int32, arg arrow.Array, signs []int8) error {
	for i, g := range gids {
		if arg.IsNull(i) {
			continue
		}
		if !a.bagged(g) {
			// The first retraction of a group that kept only its extreme:
			// from here on it keeps its values, starting with that one.
			a.bags.B[g] = map[string]*int64{}
			if a.has[g] {
				a.addValue(g, a.get(g))
			}
		}
		d := types.DatumAt(arg, i, a.t)
		if signs[i] > 0 {
			a.addValue(g, d)
			a.offer(g, d)
			continue
		}
		if after := a.removeValue(g, d); after <= 0 && a.has[g] && opkit.CompareDatum(d, a.get(g), a.t) == 0 {
			a.recompute(g)
		}
	}
	return nil
}

// removeValue removes a copy of d from group g's values and returns the
// count left of its encoding. The values are encoded with their display
// scales (unconstrained NUMERIC: EncodeValueDatum), so that the extreme
// found after a retraction prints as it was written; a retraction whose
// scale differs from every copy held (it should not) removes an equal
// value of another scale instead.
func (a *minMaxAcc) removeValue(g int32, d types.Datum) int64 {
	a.buf = opkit.EncodeValueDatum(a.buf[:0], d, a.t)
	if count(a.bags.B[g], string(a.buf)) > 0 || a.t.Kind != types.Numeric || a.t.Prec != 0 {
		_, after := a.bags.add(g, a.buf, -1)
		return after
	}
	for k, n := range a.bags.B[g] {
		if *n <= 0 {
			continue
		}
		if o, _, err := opkit.DecodeDatum([]byte(k), a.t); err == nil && opkit.CompareDatum(o, d, a.t) == 0 {
			_, after := a.bags.add(g, []byte(k), -1)
			return after
		}
	}
	return 0
}

// recompute finds group g's extreme once the current one is gone: the top
// of the group's heap of values, after popping values whose count fell to
// zero (the heap is not told of deletions). The heap is built from the
// group's values the first time, and rebuilt when stale entries outnumber
// live ones; otherwise a retracted extreme costs O(log n), no scan.
func (a *minMaxAcc) recompute(g int32) {
	m := a.bags.B[g]
	h := a.heaps[g]
	if h == nil || len(h.ds) > 2*len(m)+16 {
		h = &valHeap{ds: make([]types.Datum, 0, len(m)), keys: make([]string, 0, len(m))}
		for k := range m {
			d, _, err := opkit.DecodeDatum([]byte(k), a.t)
			if err == nil {
				h.ds, h.keys = append(h.ds, d), append(h.keys, k)
			}
		}
		h.init(a)
		a.heaps[g] = h
	}
	for len(h.ds) > 0 && count(m, h.keys[0]) <= 0 {
		h.pop(a)
	}
	if len(h.ds) == 0 {
		a.has[g] = false
		return
	}
	a.set(g, h.ds[0])
}

// valHeap is a binary heap of a group's values (and their encodings), the
// extreme on top.
type valHeap struct {
	ds   []types.Datum
	keys []string
}

func (h *valHeap) better(a *minMaxAcc, i, j int) bool {
	c := opkit.CompareDatum(h.ds[i], h.ds[j], a.t)
	return (a.max && c > 0) || (!a.max && c < 0)
}

func (h *valHeap) swap(i, j int) {
	h.ds[i], h.ds[j] = h.ds[j], h.ds[i]
	h.keys[i], h.keys[j] = h.keys[j], h.keys[i]
}

func (h *valHeap) init(a *minMaxAcc) {
	for i := len(h.ds)/2 - 1; i >= 0; i-- {
		h.down(a, i)
	}
}

func (h *valHeap) push(a *minMaxAcc, d types.Datum, key string) {
	h.ds, h.keys = append(h.ds, d), append(h.keys, key)
	for i := len(h.ds) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.better(a, i, p) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *valHeap) pop(a *minMaxAcc) {
	last := len(h.ds) - 1
	h.swap(0, last)
	h.ds, h.keys = h.ds[:last], h.keys[:last]
	h.down(a, 0)
}

func (h *valHeap) down(a *minMaxAcc, i int) {
	for {
		c := 2*i + 1
		if c >= len(h.ds) {
			return
		}
		if c+1 < len(h.ds) && h.better(a, c+1, c) {
			c++
		}
		if !h.better(a, c, i) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

func (a *minMaxAcc) Result(g int32) types.Datum { return a.get(g) }

func (a *minMaxAcc) Reset(g int32) {
	a.has[g] = false
	a.bags.Reset(g)
	a.heaps[g] = nil
}

// encode writes the extreme and an empty inline multiset: the values are
// separate state entries (saveValues). State written before they were
// carried the multiset inline; decode still reads it.
func (a *minMaxAcc) Encode(buf []byte, g int32) []byte {
	buf = opkit.EncodeValueDatum(buf, a.get(g), a.t)
	return opkit.AppendUvarint(buf, 0)
}

func (a *minMaxAcc) Decode(buf []byte, g int32) ([]byte, error) {
	d, buf, err := opkit.DecodeDatum(buf, a.t)
	if err != nil {
		return nil, err
	}
	a.set(g, d)
	return a.bags.decodeInline(buf, g)
}

func (a *minMaxAcc) values() *ValueBags { return &a.bags }

// distinctAcc feeds its inner aggregate each value once per group, counting
// duplicates so retractions remove a value only when its last copy goes.
// The counts are kept per group and stored value by value (ValueBags): a
// barrier's work is the changed (group, value) pairs, not every value.
type distinctAcc struct {
	inner Accum
	t     types.T
	bags  ValueBags
	idx   []int
	sg    []int32
	ss    []int8
	buf   []byte
}

func (a *distinctAcc) Grow(n int) {
	a.inner.Grow(n)
	a.bags.Grow(n)
}

func (a *distinctAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	a.idx, a.sg, a.ss = a.idx[:0], a.sg[:0], a.ss[:0]
	for i, g := range gids {
		if arg.IsNull(i) {
			continue
		}
		a.buf = opkit.EncodeDatum(a.buf[:0], types.DatumAt(arg, i, a.t), a.t)
		s := sign(signs, i)
		before, after := a.bags.add(g, a.buf, s)
		if (before <= 0) != (after <= 0) {
			a.idx, a.sg, a.ss = append(a.idx, i), append(a.sg, g), append(a.ss, int8(s))
		}
	}
	if len(a.idx) == 0 {
		return nil
	}
	sub := opkit.TakeArrayMem(opkit.Mem, arg, a.idx, a.t)
	defer sub.Release()
	ss := a.ss
	if signs == nil {
		ss = nil
	}
	return a.inner.Update(a.sg, sub, ss)
}

func (a *distinctAcc) Result(g int32) types.Datum { return a.inner.Result(g) }

// CheckResult is the inner accumulator's (a sum out of range).
func (a *distinctAcc) CheckResult(g int32) error {
	if c, ok := a.inner.(interface{ CheckResult(int32) error }); ok {
		return c.CheckResult(g)
	}
	return nil
}

func (a *distinctAcc) Reset(g int32) {
	a.inner.Reset(g)
	a.bags.Reset(g)
}

// encode writes the inner state and an empty inline value list: the values
// are separate state entries (saveValues). State written before they were
// carried the values inline; decode still reads it.
func (a *distinctAcc) Encode(buf []byte, g int32) []byte {
	buf = a.inner.Encode(buf, g)
	return opkit.AppendUvarint(buf, 0)
}

func (a *distinctAcc) Decode(buf []byte, g int32) ([]byte, error) {
	buf, err := a.inner.Decode(buf, g)
	if err != nil {
		return nil, err
	}
	return a.bags.decodeInline(buf, g)
}

func (a *distinctAcc) values() *ValueBags { return &a.bags }

// ValuesOf returns the per-value counts acc keeps, or nil.
func ValuesOf(acc Accum) *ValueBags {
	if v, ok := acc.(interface{ values() *ValueBags }); ok {
		return v.values()
	}
	return nil
}

// ValueBags is a multiset of values per group: each value (encoded with
// opkit.EncodeDatum; min/max: opkit.EncodeValueDatum) with its count. In a view job (Track) it also logs the
// values whose count changed since the last save, so a barrier writes one
// state entry per changed (group, value) pair: the group's key, the
// accumulator, the value -> the count (the aggregate operator's state). The log is
// flat (no allocation per change but the values' bytes, in one arena).
type ValueBags struct {
	// B holds each group's values and their counts (nil: empty); a count
	// is a pointer so that changing it writes no map key (m[string(b)] =
	// n allocates the key string, a lookup does not).
	B     []map[string]*int64
	Track bool
	chg   []valueChange
	arena []byte
	// Legacy is set when a group's entry carried its values inline.
	Legacy bool
	// Bytes estimates the memory of the values held (a batch query's
	// budget reads it).
	Bytes int64
}

// valueEntryBytes is a map entry's overhead beside the value's bytes.
const valueEntryBytes = 48

// valueChange is a changed value of group g: arena[off:off+n], and its
// count after the change.
type valueChange struct {
	g      int32
	off, n uint32
	cnt    int64
}

func (v *ValueBags) Grow(n int) {
	for len(v.B) < n {
		v.B = append(v.B, nil)
	}
}

// add adds d copies of value val to group g and returns its count before
// and after; a count that reaches zero is dropped.
func (v *ValueBags) add(g int32, val []byte, d int64) (before, after int64) {
	m := v.B[g]
	p := m[string(val)]
	if p != nil {
		before = *p
	}
	after = before + d
	switch {
	case after > 0 && p != nil:
		*p = after
	case after > 0:
		if m == nil {
			m = map[string]*int64{}
			v.B[g] = m
		}
		c := after // escapes only here: a new entry
		m[string(val)] = &c
		v.Bytes += int64(len(val)) + valueEntryBytes
	case p != nil:
		delete(m, string(val))
		v.Bytes -= int64(len(val)) + valueEntryBytes
	}
	if v.Track && before != after {
		v.chg = append(v.chg, valueChange{g: g, off: uint32(len(v.arena)), n: uint32(len(val)), cnt: max(after, 0)})
		v.arena = append(v.arena, val...)
	}
	return before, max(after, 0)
}

// count is value k's count in m (0: absent).
func count(m map[string]*int64, k string) int64 {
	if p := m[k]; p != nil {
		return *p
	}
	return 0
}

// reset empties group g (its id is reused by another group). Only a group
// with no unsaved changes is reset (evicted).
func (v *ValueBags) Reset(g int32) {
	for val := range v.B[g] {
		v.Bytes -= int64(len(val)) + valueEntryBytes
	}
	v.B[g] = nil
}

func (v *ValueBags) val(c valueChange) []byte { return v.arena[c.off : c.off+c.n] }

// sortChanges orders the change log by group and value and keeps the last
// change of each (group, value), whose count is the current one (no read
// of the groups' maps: at a barrier they are cold); saveValues then reads it.
func (v *ValueBags) SortChanges() {
	slices.SortStableFunc(v.chg, func(a, b valueChange) int {
		if a.g != b.g {
			return int(a.g) - int(b.g)
		}
		return bytes.Compare(v.val(a), v.val(b))
	})
	out := v.chg[:0]
	for i, c := range v.chg {
		if i+1 < len(v.chg) && v.chg[i+1].g == c.g && bytes.Equal(v.val(v.chg[i+1]), v.val(c)) {
			continue // a later change of the same value follows
		}
		out = append(out, c)
	}
	v.chg = out
}

// saveValues calls put with each value of group g in the sorted change log
// (sortChanges), in byte order, with its count (0: gone).
func (v *ValueBags) SaveValues(g int32, put func(val []byte, n int64)) {
	i, _ := slices.BinarySearchFunc(v.chg, g, func(c valueChange, g int32) int { return int(c.g) - int(g) })
	for ; i < len(v.chg) && v.chg[i].g == g; i++ {
		put(v.val(v.chg[i]), v.chg[i].cnt)
	}
}

// allValues calls fn, in byte order, with every value group g has or had
// since the last save (the sorted change log's and the group's own): the
// entries a deleted group may have in the state table.
func (v *ValueBags) AllValues(g int32, fn func(val []byte)) {
	vals := make([]string, 0, len(v.B[g]))
	for val := range v.B[g] {
		vals = append(vals, val)
	}
	v.SaveValues(g, func(val []byte, n int64) {
		if n <= 0 {
			vals = append(vals, string(val))
		}
	})
	slices.Sort(vals)
	for _, val := range vals {
		fn([]byte(val))
	}
}

// clearChanges empties the change log (once every changed group is saved).
func (v *ValueBags) ClearChanges() { v.chg, v.arena = v.chg[:0], v.arena[:0] }

// loadValue restores value val's count in group g from its state entry.
func (v *ValueBags) LoadValue(g int32, val []byte, n int64) {
	if v.B[g] == nil {
		v.B[g] = map[string]*int64{}
	}
	if p := v.B[g][string(val)]; p != nil {
		*p = n
		return
	}
	v.Bytes += int64(len(val)) + valueEntryBytes
	c := n
	v.B[g][string(val)] = &c
}

// decodeInline reads the values a group's state entry carries inline:
// none in state written now, the group's whole multiset in state written
// before values were stored apart. Those are logged as changed and legacy
// is set, so the group is saved at the next barrier (decodeGroup) with its
// values as entries of their own.
func (v *ValueBags) decodeInline(buf []byte, g int32) ([]byte, error) {
	n, buf, err := opkit.ReadUvarint(buf)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		v.Legacy = true
	}
	for ; n > 0; n-- {
		var l, c uint64
		if l, buf, err = opkit.ReadUvarint(buf); err != nil || uint64(len(buf)) < l {
			return nil, opkit.ErrCorruptState
		}
		val := buf[:l]
		if c, buf, err = opkit.ReadUvarint(buf[l:]); err != nil {
			return nil, err
		}
		v.add(g, val, int64(c))
	}
	return buf, nil
}

// ValueBytes estimates the memory of the values a count(DISTINCT ...) (and
// its kin) or an ordered-set aggregate has seen; 0 for other accumulators.
func ValueBytes(acc Accum) int64 {
	switch d := acc.(type) {
	case *distinctAcc:
		return d.bags.Bytes
	case *orderedSetAcc:
		return d.bags.Bytes
	case *arrayAggBagAcc:
		return d.bags.Bytes
	}
	return 0
}
