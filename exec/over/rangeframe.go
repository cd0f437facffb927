package over

import (
	"math"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// RANGE frames with an offset (RANGE BETWEEN 10 PRECEDING AND CURRENT ROW,
// RANGE INTERVAL '1' HOUR PRECEDING): a row's frame is the rows of its
// partition whose ORDER BY value lies within the offset of its own, as
// PostgreSQL's in_range: for an ascending key, start at the first row
// whose value is >= v - offset (n PRECEDING) or >= v + offset (n
// FOLLOWING), end after the last row whose value is <= v - offset or
// <= v + offset; a descending key mirrors the signs. A row whose key is
// NULL has its NULL peers as the offset ends of its frame, and no row with
// a value is within an offset of NULL. The binder allows one ORDER BY key
// of an integer type (integer offset), a floating-point type or numeric
// (numeric offset), or timestamp, timestamptz, date, time or timetz
// (interval offset).

// RangeOffset says f is a RANGE frame with an offset at either end.
func (f Frame) RangeOffset() bool {
	off := func(b FrameBound) bool { return b.Kind == BoundPreceding || b.Kind == BoundFollowing }
	return !f.Rows && !f.Groups && (off(f.Start) || off(f.End))
}

// rangeFrame computes every sorted row's frame under f (a RANGE frame with
// an offset) over the ORDER BY key key, and returns it as a frameFunc.
func rangeFrame(env *Env, f Frame, key SortKey, rec arrow.RecordBatch, idx []int, spids []int32, peer []bool) (frameFunc, error) {
	col, err := expr.Eval(env.Expr, key.E, rec)
	if err != nil {
		return nil, err
	}
	defer col.Release()
	n := len(idx)
	null := make([]bool, n)
	ints := make([]int64, n)
	kt := key.E.Type()
	var floats []float64
	var nums []decimal256.Num
	float := kt.Physical() == types.PhysFloat64
	numeric := kt.Kind == types.Numeric
	// A numeric key and its offset are compared at the larger of their
	// scales (the offset's scale is its bound's N), exactly: 256 bits hold
	// a 38-digit value raised by 38 digits, plus the offset.
	var up int32
	switch {
	case float:
		floats = make([]float64, n)
	case numeric:
		nums = make([]decimal256.Num, n)
		up = max(int32(f.Start.N), int32(f.End.N), kt.Scale) - kt.Scale
	}
	for k, r := range idx {
		if col.IsNull(r) {
			null[k] = true
			continue
		}
		switch a := col.(type) {
		case *array.Int64:
			ints[k] = a.Value(r)
		case *array.Int32:
			ints[k] = int64(a.Value(r))
		case *array.Int16:
			ints[k] = int64(a.Value(r))
		case *array.Float64:
			floats[k] = a.Value(r)
		case *array.Float32:
			floats[k] = float64(a.Value(r))
		case *array.Decimal128:
			nums[k] = decimal256.FromDecimal128(a.Value(r)).IncreaseScaleBy(up)
		default:
			d := types.DatumAt(col, r, kt)
			ints[k] = d.I
		}
		if kt.Kind == types.Date {
			ints[k] = dateMicros(ints[k]) // in_range(date, interval) is that of timestamps
		}
	}
	// target returns the value bound b reaches from row k's value.
	target := func(k int, b FrameBound) (int64, float64, decimal256.Num) {
		sub := (b.Kind == BoundPreceding) != key.Desc // move down the values
		switch {
		case float:
			if sub {
				return 0, floats[k] - b.Off.F, decimal256.Num{}
			}
			return 0, floats[k] + b.Off.F, decimal256.Num{}
		case numeric:
			off := decimal256.FromDecimal128(b.Off.D).IncreaseScaleBy(kt.Scale + up - int32(b.N))
			if sub {
				return 0, 0, nums[k].Sub(off)
			}
			return 0, 0, nums[k].Add(off)
		case kt.Kind == types.Timestamp || kt.Kind == types.Date:
			// timestamptz too: TimeZone is UTC only, so adding days and
			// months is the same on both.
			iv := b.Off.IV
			if sub {
				iv = arrow.MonthDayNanoInterval{Months: -iv.Months, Days: -iv.Days, Nanoseconds: -iv.Nanoseconds}
			}
			return types.AddInterval(ints[k], iv), 0, decimal256.Num{}
		case kt.Kind == types.Time:
			// PostgreSQL's in_range(time, interval): the offset's time part
			// only, without wrapping around midnight.
			if sub {
				return ints[k] - b.Off.IV.Nanoseconds/1000, 0, decimal256.Num{}
			}
			return ints[k] + b.Off.IV.Nanoseconds/1000, 0, decimal256.Num{}
		case kt.Kind == types.TimeTZ:
			return timeTZTarget(ints[k], b.Off.IV.Nanoseconds/1000, sub), 0, decimal256.Num{}
		}
		v, o := ints[k], b.Off.I
		if sub {
			if v < math.MinInt64+o {
				return math.MinInt64, 0, decimal256.Num{}
			}
			return v - o, 0, decimal256.Num{}
		}
		if v > math.MaxInt64-o {
			return math.MaxInt64, 0, decimal256.Num{}
		}
		return v + o, 0, decimal256.Num{}
	}
	cmp := func(j int, ti int64, tf float64, tn decimal256.Num) int { // row j's value against the target, in sort order
		c := 0
		switch {
		case float:
			switch {
			case floats[j] < tf:
				c = -1
			case floats[j] > tf:
				c = 1
			}
		case numeric:
			c = nums[j].Cmp(tn)
		default:
			switch {
			case ints[j] < ti:
				c = -1
			case ints[j] > ti:
				c = 1
			}
		}
		if key.Desc {
			c = -c
		}
		return c
	}
	lo, hi := make([]int, n), make([]int, n)
	for ps := 0; ps < n; {
		pe := ps + 1
		for pe < n && spids[pe] == spids[ps] {
			pe++
		}
		// The partition's rows with a value: [vs, ve); NULLs sort at one end.
		vs, ve := ps, pe
		for vs < pe && null[vs] {
			vs++
		}
		for ve > vs && null[ve-1] {
			ve--
		}
		for gs := ps; gs < pe; {
			ge := gs + 1
			for ge < pe && peer[ge] {
				ge++
			}
			for k := gs; k < ge; k++ {
				lo[k], hi[k] = f.bounds(k, ps, pe, gs, ge)
				if null[k] {
					if f.Start.Kind == BoundPreceding || f.Start.Kind == BoundFollowing {
						lo[k] = gs
					}
					if f.End.Kind == BoundPreceding || f.End.Kind == BoundFollowing {
						hi[k] = ge
					}
					continue
				}
				if b := f.Start; b.Kind == BoundPreceding || b.Kind == BoundFollowing {
					ti, tf, tn := target(k, b)
					lo[k] = vs + sort.Search(ve-vs, func(i int) bool { return cmp(vs+i, ti, tf, tn) >= 0 })
				}
				if b := f.End; b.Kind == BoundPreceding || b.Kind == BoundFollowing {
					ti, tf, tn := target(k, b)
					hi[k] = vs + sort.Search(ve-vs, func(i int) bool { return cmp(vs+i, ti, tf, tn) > 0 })
				}
			}
			gs = ge
		}
		ps = pe
	}
	return func(k, _, _, _, _ int) (int, int) { return lo[k], hi[k] }, nil
}

// timeTZTarget is PostgreSQL's in_range(timetz, interval) target from the
// stored timetz v (types.PackTimeTZ) moved by off µs (the offset's time
// part; sub: down): the time moves without wrapping around midnight and
// keeps v's zone, and the result compares with stored values as the
// integers do (UTC-equivalent time, then zone). Stored values lie within
// ±2³⁸ µs of UTC midnight, so a target past ±2⁴⁰ is clamped there.
func timeTZTarget(v, off int64, sub bool) int64 {
	const bound = 1 << 40
	us, west := types.UnpackTimeTZ(v)
	off = min(off, bound)
	if sub {
		off = -off
	}
	utc := min(max(us+off+west*1_000_000, -bound), bound)
	return types.PackTimeTZ(utc-west*1_000_000, west)
}

// dateMicros is date d (days) as a timestamp (µs), infinities kept; a
// date beyond timestamp's range counts as infinity.
func dateMicros(d int64) int64 {
	const usPerDay = 86_400_000_000
	switch {
	case d >= types.DateInfinity || d > math.MaxInt64/usPerDay-1:
		return types.TimestampInfinity
	case d <= types.DateNegInfinity || d < math.MinInt64/usPerDay+1:
		return types.TimestampNegInfinity
	}
	return d * usPerDay
}

// groupsFrame computes every sorted row's frame under GROUPS frame f: its
// ends count peer groups from the current row's, as PostgreSQL's GROUPS
// mode (n PRECEDING starts at the first row of the group n before the
// current one, n FOLLOWING ends after the last row of the group n after
// it, clamped to the partition; CURRENT ROW is the current group's first
// or last row). spids and peer are as in Columns.
func groupsFrame(f Frame, spids []int32, peer []bool) frameFunc {
	n := len(spids)
	lo, hi := make([]int, n), make([]int, n)
	var starts []int // the first row of each peer group of the partition
	for ps := 0; ps < n; {
		pe := ps + 1
		for pe < n && spids[pe] == spids[ps] {
			pe++
		}
		starts = starts[:0]
		for k := ps; k < pe; k++ {
			if k == ps || !peer[k] {
				starts = append(starts, k)
			}
		}
		groups := int64(len(starts))
		first := func(g int64) int { // the first row of group g, pe past the last
			switch {
			case g < 0:
				return ps
			case g >= groups:
				return pe
			}
			return starts[g]
		}
		end := func(g int64) int { // the end of group g: ps before the first, pe past the last
			switch {
			case g < 0:
				return ps
			case g+1 >= groups:
				return pe
			}
			return starts[g+1]
		}
		// at is where bound b lies from group g; edge is first or end.
		at := func(b FrameBound, g int64, edge func(int64) int) int {
			switch b.Kind {
			case BoundUnboundedPreceding:
				return ps
			case BoundPreceding:
				return edge(g - min(b.N, g+1))
			case BoundCurrentRow:
				return edge(g)
			case BoundFollowing:
				return edge(g + min(b.N, groups))
			}
			return pe
		}
		g := int64(-1)
		for k := ps; k < pe; k++ {
			if k == ps || !peer[k] {
				g++
			}
			lo[k], hi[k] = at(f.Start, g, first), at(f.End, g, end)
		}
		ps = pe
	}
	return func(k, _, _, _, _ int) (int, int) { return lo[k], hi[k] }
}
