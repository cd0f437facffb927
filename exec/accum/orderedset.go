package accum

import (
	"fmt"
	"github.com/streamdb/streamdb/exec/opkit"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// orderedSetAcc is percentile_cont, percentile_disc or mode WITHIN GROUP
// (ORDER BY x), as PostgreSQL 15 computes them. Each group keeps its
// multiset of non-NULL values in ValueBags, the state min/max under
// retraction and DISTINCT keep: a retracted row removes one copy of its
// value, and a barrier writes only the (group, value) counts that changed
// (the aggregate operator's state). The result is computed from the group's sorted values when
// it is asked for (once per changed group and epoch in a view).
type orderedSetAcc struct {
	spec Spec
	t    types.T // the ORDER BY expression's type
	bags ValueBags
	buf  []byte
	// vs is scratch: a group's distinct values with their counts, sorted.
	vs []osValue
}

type osValue struct {
	d types.Datum
	n int64
}

func (a *orderedSetAcc) Grow(n int) { a.bags.Grow(n) }

func (a *orderedSetAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	for i, g := range gids {
		if arg.IsNull(i) {
			continue
		}
		// With its display scale (unconstrained NUMERIC): the value chosen
		// prints as written; mode counts equal spellings together.
		a.buf = opkit.EncodeValueDatum(a.buf[:0], types.DatumAt(arg, i, a.t), a.t)
		a.bags.add(g, a.buf, sign(signs, i))
	}
	return nil
}

// sorted fills a.vs with group g's values in the aggregate's order and
// returns how many rows they stand for.
func (a *orderedSetAcc) sorted(g int32) int64 {
	var rows int64
	a.vs, rows = bagValues(a.vs[:0], a.bags.B[g], a.t)
	slices.SortFunc(a.vs, func(x, y osValue) int {
		c := opkit.CompareDatum(x.d, y.d, a.t)
		if a.spec.Desc {
			return -c
		}
		return c
	})
	return rows
}

// bagValues appends a group's values (a ValueBags map) to vs, decoded as
// type t, with their counts, and returns it and how many rows they stand for.
func bagValues(vs []osValue, m map[string]*int64, t types.T) ([]osValue, int64) {
	var rows int64
	for k, p := range m {
		d, _, err := opkit.DecodeDatum([]byte(k), t)
		if err != nil || *p <= 0 {
			continue
		}
		vs = append(vs, osValue{d, *p})
		rows += *p
	}
	return vs, rows
}

// at returns the value at 0-based row r of the sorted values.
func (a *orderedSetAcc) at(r int64) types.Datum {
	for _, v := range a.vs {
		if r < v.n {
			return v.d
		}
		r -= v.n
	}
	return a.vs[len(a.vs)-1].d
}

func (a *orderedSetAcc) Result(g int32) types.Datum {
	if a.spec.Kind != Mode && math.IsNaN(a.spec.Frac) { // a NULL fraction
		return types.Null
	}
	rows := a.sorted(g)
	if rows == 0 {
		return types.Null
	}
	frac := a.spec.Frac
	switch a.spec.Kind {
	case PercentileDisc:
		// PostgreSQL's percentile_disc_final: the first row whose
		// position (1-based) reaches frac * rows.
		r := int64(math.Ceil(frac * float64(rows)))
		return a.at(max(r, 1) - 1)
	case PercentileCont:
		// percentile_cont_final_common: interpolate between the rows
		// around frac * (rows - 1).
		pos := frac * float64(rows-1)
		first, second := int64(math.Floor(pos)), int64(math.Ceil(pos))
		lo := a.at(first)
		if second == first {
			return lo
		}
		hi, p := a.at(second), pos-float64(first)
		if a.t.Physical() == types.PhysInterval {
			// interval_lerp: lo + (hi - lo) * p, field by field.
			diff := arrow.MonthDayNanoInterval{Months: hi.IV.Months - lo.IV.Months, Days: hi.IV.Days - lo.IV.Days,
				Nanoseconds: hi.IV.Nanoseconds - lo.IV.Nanoseconds}
			m := expr.IntervalMul(diff, p)
			return types.Datum{IV: arrow.MonthDayNanoInterval{Months: lo.IV.Months + m.Months, Days: lo.IV.Days + m.Days,
				Nanoseconds: lo.IV.Nanoseconds + m.Nanoseconds}}
		}
		return types.Datum{F: lo.F + (hi.F-lo.F)*p} // float8_lerp
	}
	// mode: the most frequent value, the first in sort order on a tie;
	// equal values of different spellings (1.5, 1.50) count together.
	best, bestN := 0, int64(0)
	for i := 0; i < len(a.vs); {
		j, n := i, int64(0)
		for ; j < len(a.vs) && (j == i || opkit.CompareDatum(a.vs[i].d, a.vs[j].d, a.t) == 0); j++ {
			n += a.vs[j].n
		}
		if n > bestN {
			best, bestN = i, n
		}
		i = j
	}
	return a.vs[best].d
}

func (a *orderedSetAcc) Reset(g int32) { a.bags.Reset(g) }

// encode writes an empty inline value list: the values are state entries
// of their own (saveValues), as for min/max and DISTINCT.
func (a *orderedSetAcc) Encode(buf []byte, g int32) []byte { return opkit.AppendUvarint(buf, 0) }

func (a *orderedSetAcc) Decode(buf []byte, g int32) ([]byte, error) {
	return a.bags.decodeInline(buf, g)
}

func (a *orderedSetAcc) values() *ValueBags { return &a.bags }

// OrderedSetTrace is what an ordered-set aggregate adds to its operator's
// description (StateOperators): its fraction and direction, "" for others.
func OrderedSetTrace(a Spec) string {
	s := ""
	if a.Kind == PercentileCont || a.Kind == PercentileDisc {
		s = fmt.Sprintf(" %g", a.Frac)
	}
	if a.Desc {
		s += " desc"
	}
	return s
}
