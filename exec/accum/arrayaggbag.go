package accum

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// OrderDir is the direction of one ORDER BY key inside an aggregate call
// (array_agg(x ORDER BY y DESC NULLS LAST)).
type OrderDir struct {
	Desc, NullsFirst bool
}

// arrayAggBagAcc is array_agg in a materialized view, and in a batch query
// with ORDER BY or DISTINCT inside the call (Spec.Sorted): each group
// keeps its multiset of entries, NULLs included, in ValueBags, the state
// min/max under retraction and the ordered-set aggregates keep, so a
// retracted row removes one copy of its entry and a barrier writes only
// the (group, entry) counts that changed.
//
// Without Spec.Order an entry is the value x itself; the result lists the
// values in ascending order with NULLs last (array_agg(x ORDER BY x) in
// PostgreSQL). With Spec.Order, Arg is the record ROW(k1, ..., kn, x) and
// an entry is the keys followed by x (each field encoded by
// opkit.EncodeDatum, so no record is built per row); the result lists the
// values by the keys in their directions, then by x ascending, NULLs last,
// so that ties, which PostgreSQL leaves in any order, come out the same
// under retraction and across a restart. With Spec.Distinct each entry
// counts once (array_agg(DISTINCT x), whose ORDER BY keys are x itself).
// The result is built when asked for (once per changed group and epoch in
// a view).
type arrayAggBagAcc struct {
	t        types.T // Arg's type: x's, or the record's
	vt       types.T // x's type
	keyT     []types.T
	order    []OrderDir
	distinct bool
	// ds: x is unconstrained NUMERIC and an entry ends with x's display
	// scale byte (types.Datum.DS), so 1.50 is listed as 1.50 (an entry
	// per scale; the values still order by value first).
	ds   bool
	bags ValueBags
	buf  []byte
	es   []bagEntry // scratch: a group's entries with their counts
	keys []types.Datum
}

// bagEntry is one decoded entry: its keys (a window of arrayAggBagAcc.keys,
// from k), its value, and its count.
type bagEntry struct {
	k int
	v types.Datum
	n int64
}

func newArrayAggBag(s Spec, argT types.T) *arrayAggBagAcc {
	a := &arrayAggBagAcc{t: argT, vt: argT, order: s.Order, distinct: s.Distinct}
	if len(s.Order) > 0 {
		fs := types.RecordFields(argT)
		for _, f := range fs[:len(fs)-1] {
			a.keyT = append(a.keyT, f.T)
		}
		a.vt = fs[len(fs)-1].T
	}
	a.ds = a.vt.Kind == types.Numeric && a.vt.Prec == 0 && !a.distinct
	return a
}

// appendValue appends x's entry encoding (with its display scale byte
// when a.ds).
func (a *arrayAggBagAcc) appendValue(buf []byte, x types.Datum) []byte {
	buf = opkit.EncodeDatum(buf, x, a.vt)
	if a.ds && !x.Null {
		buf = append(buf, byte(x.DS))
	}
	return buf
}

func (a *arrayAggBagAcc) Grow(n int) { a.bags.Grow(n) }

func (a *arrayAggBagAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	if len(a.keyT) == 0 {
		for i, g := range gids {
			a.buf = a.appendValue(a.buf[:0], types.DatumAt(arg, i, a.t))
			a.bags.add(g, a.buf, sign(signs, i))
		}
		return nil
	}
	st := arg.(*array.Struct)
	nk := len(a.keyT)
	for i, g := range gids {
		if st.IsNull(i) {
			continue // a row FILTER (WHERE ...) drops (sql/bind aggfilter.go)
		}
		a.buf = a.buf[:0]
		for k, t := range a.keyT {
			a.buf = opkit.EncodeDatum(a.buf, types.DatumAt(st.Field(k), i, t), t)
		}
		a.buf = a.appendValue(a.buf, types.DatumAt(st.Field(nk), i, a.vt))
		a.bags.add(g, a.buf, sign(signs, i))
	}
	return nil
}

// entries decodes group g's entries into a.es (keys into a.keys) and
// returns how many rows they stand for.
func (a *arrayAggBagAcc) entries(g int32) int64 {
	a.es, a.keys = a.es[:0], a.keys[:0]
	var rows int64
	for k, p := range a.bags.B[g] {
		n := *p
		if n <= 0 {
			continue
		}
		buf, at := []byte(k), len(a.keys)
		var d types.Datum
		var err error
		for _, t := range a.keyT {
			if d, buf, err = opkit.DecodeDatum(buf, t); err != nil {
				break
			}
			a.keys = append(a.keys, d)
		}
		if err != nil {
			a.keys = a.keys[:at]
			continue
		}
		if d, buf, err = opkit.DecodeDatum(buf, a.vt); err != nil {
			a.keys = a.keys[:at]
			continue
		}
		if a.ds && !d.Null && len(buf) > 0 {
			d.DS = int8(buf[0])
		}
		if a.distinct {
			n = 1
		}
		a.es = append(a.es, bagEntry{k: at, v: d, n: n})
		rows += n
	}
	return rows
}

// compare orders two entries: by the keys in their directions, then by
// the value ascending, NULLs last.
func (a *arrayAggBagAcc) compare(x, y bagEntry) int {
	for i, t := range a.keyT {
		kx, ky := a.keys[x.k+i], a.keys[y.k+i]
		var c int
		switch {
		case kx.Null || ky.Null:
			c = types.Cmp3(!kx.Null, !ky.Null) // NULLs last
			if a.order[i].NullsFirst {
				c = -c
			}
			if c != 0 {
				return c
			}
			continue
		default:
			c = opkit.CompareDatum(kx, ky, t)
		}
		if a.order[i].Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	if x.v.Null || y.v.Null {
		return types.Cmp3(!x.v.Null, !y.v.Null)
	}
	return opkit.CompareDatum(x.v, y.v, a.vt)
}

func (a *arrayAggBagAcc) Result(g int32) types.Datum {
	rows := a.entries(g)
	if rows == 0 {
		return types.Null
	}
	slices.SortFunc(a.es, a.compare)
	v := &types.Array{Elems: make([]string, 0, rows)}
	for _, e := range a.es {
		s := ""
		if !e.v.Null {
			s = types.TextOf(e.v, a.vt)
		} else if v.Null == nil {
			v.Null = make([]bool, len(v.Elems), rows)
		}
		for range e.n {
			v.Elems = append(v.Elems, s)
			if v.Null != nil {
				v.Null = append(v.Null, e.v.Null)
			}
		}
	}
	return types.Datum{A: v}
}

func (a *arrayAggBagAcc) Reset(g int32) { a.bags.Reset(g) }

// Encode writes an empty inline value list: the values are state entries
// of their own, as for min/max and DISTINCT.
func (a *arrayAggBagAcc) Encode(buf []byte, g int32) []byte { return opkit.AppendUvarint(buf, 0) }

func (a *arrayAggBagAcc) Decode(buf []byte, g int32) ([]byte, error) {
	return a.bags.decodeInline(buf, g)
}

func (a *arrayAggBagAcc) values() *ValueBags { return &a.bags }
