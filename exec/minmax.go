package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/types"
)

// minMaxAcc keeps the current extreme per group. Under retraction it also
// keeps each group's multiset of values so a retracted extreme can be
// replaced by the next one.
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
	// bag[g] counts each value (encoded) of group g; only once retractions are seen.
	bag []map[string]int64
}

func (a *minMaxAcc) grow(n int) {
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
		var bag map[string]int64
		if a.retract {
			bag = map[string]int64{}
		}
		a.bag = append(a.bag, bag)
	}
}

func (a *minMaxAcc) update(gids []int32, arg arrow.Array, signs []int8) error {
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
			if !a.has[g] || (a.max && floatLess(a.flts[g], v)) || (!a.max && floatLess(v, a.flts[g])) {
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
		if a.bag[g] != nil && arg.IsValid(i) {
			a.bag[g][string(encodeDatum(nil, types.DatumAt(arg, i, a.t), a.t))]++
		}
	}
	return nil
}

// floatLess orders floats as PostgreSQL does: NaN above everything.
func floatLess(x, y float64) bool {
	if x != x {
		return false
	}
	if y != y {
		return true
	}
	return x < y
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
	c := compareDatum(d, a.get(g), a.t)
	if (a.max && c > 0) || (!a.max && c < 0) {
		a.set(g, d)
	}
}

func (a *minMaxAcc) updateBag(gids []int32, arg arrow.Array, signs []int8) error {
	for i, g := range gids {
		if arg.IsNull(i) {
			continue
		}
		if a.bag[g] == nil {
			a.bag[g] = map[string]int64{}
			if a.has[g] {
				a.bag[g][string(encodeDatum(nil, a.get(g), a.t))] = 1
			}
		}
		d := types.DatumAt(arg, i, a.t)
		k := string(encodeDatum(nil, d, a.t))
		if signs[i] > 0 {
			a.bag[g][k]++
			a.offer(g, d)
			continue
		}
		if a.bag[g][k]--; a.bag[g][k] <= 0 {
			delete(a.bag[g], k)
		}
		if a.has[g] && compareDatum(d, a.get(g), a.t) == 0 && a.bag[g][k] == 0 {
			a.recompute(g)
		}
	}
	return nil
}

func (a *minMaxAcc) recompute(g int32) {
	a.has[g] = false
	for k := range a.bag[g] {
		d, _, err := decodeDatum([]byte(k), a.t)
		if err == nil {
			a.offer(g, d)
		}
	}
}

func (a *minMaxAcc) result(g int32) types.Datum { return a.get(g) }

func (a *minMaxAcc) reset(g int32) {
	a.has[g] = false
	if a.retract {
		a.bag[g] = map[string]int64{}
	} else {
		a.bag[g] = nil
	}
}

func (a *minMaxAcc) encode(buf []byte, g int32) []byte {
	buf = encodeDatum(buf, a.get(g), a.t)
	buf = appendUvarint(buf, uint64(len(a.bag[g])))
	for k, n := range a.bag[g] {
		buf = appendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = appendUvarint(buf, uint64(n))
	}
	return buf
}

func (a *minMaxAcc) decode(buf []byte, g int32) ([]byte, error) {
	d, buf, err := decodeDatum(buf, a.t)
	if err != nil {
		return nil, err
	}
	a.set(g, d)
	n, buf, err := readUvarint(buf)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		a.bag[g] = make(map[string]int64, n)
	}
	for ; n > 0; n-- {
		var l, c uint64
		if l, buf, err = readUvarint(buf); err != nil || uint64(len(buf)) < l {
			return nil, errCorruptState
		}
		k := string(buf[:l])
		if c, buf, err = readUvarint(buf[l:]); err != nil {
			return nil, err
		}
		a.bag[g][k] = int64(c)
	}
	return buf, nil
}

// distinctAcc feeds its inner aggregate each value once per group, counting
// duplicates so retractions remove a value only when its last copy goes.
type distinctAcc struct {
	inner accum
	t     types.T
	seen  map[distinctKey]int64
	idx   []int
	sg    []int32
	ss    []int8
}

type distinctKey struct {
	g int32
	v string
}

func (a *distinctAcc) grow(n int) { a.inner.grow(n) }

func (a *distinctAcc) update(gids []int32, arg arrow.Array, signs []int8) error {
	if a.seen == nil {
		a.seen = map[distinctKey]int64{}
	}
	a.idx, a.sg, a.ss = a.idx[:0], a.sg[:0], a.ss[:0]
	var buf []byte
	for i, g := range gids {
		if arg.IsNull(i) {
			continue
		}
		buf = encodeDatum(buf[:0], types.DatumAt(arg, i, a.t), a.t)
		k := distinctKey{g, string(buf)}
		s := sign(signs, i)
		before := a.seen[k]
		after := before + s
		if after <= 0 {
			delete(a.seen, k)
		} else {
			a.seen[k] = after
		}
		if (before <= 0) != (after <= 0) {
			a.idx, a.sg, a.ss = append(a.idx, i), append(a.sg, g), append(a.ss, int8(s))
		}
	}
	if len(a.idx) == 0 {
		return nil
	}
	sub := takeArray(arg, a.idx, a.t)
	defer sub.Release()
	ss := a.ss
	if signs == nil {
		ss = nil
	}
	return a.inner.update(a.sg, sub, ss)
}

func (a *distinctAcc) result(g int32) types.Datum { return a.inner.result(g) }

func (a *distinctAcc) reset(g int32) {
	a.inner.reset(g)
	for k := range a.seen {
		if k.g == g {
			delete(a.seen, k)
		}
	}
}

func (a *distinctAcc) encode(buf []byte, g int32) []byte {
	buf = a.inner.encode(buf, g)
	var vals []string
	for k := range a.seen {
		if k.g == g {
			vals = append(vals, k.v)
		}
	}
	buf = appendUvarint(buf, uint64(len(vals)))
	for _, v := range vals {
		buf = appendUvarint(buf, uint64(len(v)))
		buf = append(buf, v...)
		buf = appendUvarint(buf, uint64(a.seen[distinctKey{g, v}]))
	}
	return buf
}

func (a *distinctAcc) decode(buf []byte, g int32) ([]byte, error) {
	if a.seen == nil {
		a.seen = map[distinctKey]int64{}
	}
	buf, err := a.inner.decode(buf, g)
	if err != nil {
		return nil, err
	}
	n, buf, err := readUvarint(buf)
	if err != nil {
		return nil, err
	}
	for ; n > 0; n-- {
		var l, c uint64
		if l, buf, err = readUvarint(buf); err != nil || uint64(len(buf)) < l {
			return nil, errCorruptState
		}
		v := string(buf[:l])
		if c, buf, err = readUvarint(buf[l:]); err != nil {
			return nil, err
		}
		a.seen[distinctKey{g, v}] = int64(c)
	}
	return buf, nil
}
