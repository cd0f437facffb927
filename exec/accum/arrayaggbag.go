package accum

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// arrayAggBagAcc is array_agg(x) in a materialized view (Spec.Sorted):
// each group keeps its multiset of values, NULLs included, in ValueBags,
// the state min/max under retraction and the ordered-set aggregates keep,
// so a retracted row removes one copy of its value and a barrier writes
// only the (group, value) counts that changed. The result lists the values
// in ascending order with NULLs last (array_agg(x ORDER BY x) in
// PostgreSQL), one element per copy, whatever order the rows came in: the
// order is deterministic under retraction and across a restart. It is
// built when asked for (once per changed group and epoch in a view).
type arrayAggBagAcc struct {
	t    types.T // x's type
	bags ValueBags
	buf  []byte
	vs   []osValue // scratch: a group's values with their counts, sorted
}

func (a *arrayAggBagAcc) Grow(n int) { a.bags.Grow(n) }

func (a *arrayAggBagAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	for i, g := range gids {
		a.buf = opkit.EncodeDatum(a.buf[:0], types.DatumAt(arg, i, a.t), a.t)
		a.bags.add(g, a.buf, sign(signs, i))
	}
	return nil
}

func (a *arrayAggBagAcc) Result(g int32) types.Datum {
	var rows int64
	a.vs, rows = bagValues(a.vs[:0], a.bags.B[g], a.t)
	if rows == 0 {
		return types.Null
	}
	slices.SortFunc(a.vs, func(x, y osValue) int {
		switch {
		case x.d.Null || y.d.Null:
			return types.Cmp3(!x.d.Null, !y.d.Null) // NULLs last
		}
		return opkit.CompareDatum(x.d, y.d, a.t)
	})
	v := &types.Array{Elems: make([]string, 0, rows)}
	for _, e := range a.vs {
		s := ""
		if !e.d.Null {
			s = types.TextOf(e.d, a.t)
		} else if v.Null == nil {
			v.Null = make([]bool, len(v.Elems), rows)
		}
		for range e.n {
			v.Elems = append(v.Elems, s)
			if v.Null != nil {
				v.Null = append(v.Null, e.d.Null)
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
