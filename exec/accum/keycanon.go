package accum

import (
	"github.com/streamdb/streamdb/exec/opkit"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// Equality-based operators (hash aggregates and DISTINCT, joins, top-N and
// window partitions, exchanges, COUNT(DISTINCT)) key on a value's bytes
// and hash. For most types equal values have equal bytes; for two they do
// not, and the values of such a key column are replaced by representatives before
// it is hashed, compared or encoded:
//
//	interval  types.CanonInterval: '24:00:00' and '1 day' both key as '1 day'
//	float     every NaN as one NaN (PostgreSQL: NaN = NaN), -0 as 0
//
// So a group's key, and the value a GROUP BY or DISTINCT outputs for it,
// is the representative ('1 day', 0), where PostgreSQL outputs the first
// value it saw. NUMERIC needs nothing: a column holds every value at its
// type's one scale, so 1.0 and 1.00 are the same integer.
//
// Views created before this (storage.TableDef.KeyFormat 0) have state
// keyed by the raw values; their jobs run with ctx.RawKeys and keep it.

// CanonKey returns a with its values replaced by their representatives,
// or a itself (most columns: nothing to replace). A replaced a is released.
func CanonKey(ctx *expr.Ctx, a arrow.Array) arrow.Array {
	if ctx != nil && ctx.RawKeys {
		return a
	}
	switch arr := a.(type) {
	case *array.MonthDayNanoInterval:
		return canonValues(arr, arr.MonthDayNanoIntervalValues(), func() *array.MonthDayNanoIntervalBuilder { return array.NewMonthDayNanoIntervalBuilder(opkit.Mem) },
			types.IsCanonInterval, func(v arrow.MonthDayNanoInterval) arrow.MonthDayNanoInterval {
				c, _ := types.CanonInterval(v)
				return c
			})
	case *array.Float64:
		return canonValues(arr, arr.Float64Values(), func() *array.Float64Builder { return array.NewFloat64Builder(opkit.Mem) }, isCanonFloat, canonFloat)
	}
	return a
}

// canonValues returns a (values vs) with every non-NULL value v replaced by
// canon(v), built with a builder from newB, or a itself when every value
// is canonical (the common case, which allocates nothing).
func canonValues[T any, B interface {
	Reserve(int)
	AppendNull()
	UnsafeAppend(T)
	NewArray() arrow.Array
	Release()
}](a arrow.Array, vs []T, newB func() B, isCanon func(T) bool, canon func(T) T) arrow.Array {
	i := 0
	for ; i < len(vs) && (a.IsNull(i) || isCanon(vs[i])); i++ {
	}
	if i == len(vs) {
		return a
	}
	b := newB()
	defer b.Release()
	b.Reserve(len(vs))
	for i, v := range vs {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.UnsafeAppend(canon(v))
	}
	return replaced(a, b.NewArray())
}

func isCanonFloat(f float64) bool {
	return f == f && (f != 0 || !math.Signbit(f)) || math.Float64bits(f) == canonNaN
}

var canonNaN = math.Float64bits(math.NaN())

// CanonKeys applies CanonKey to each key column, in place.
func CanonKeys(ctx *expr.Ctx, keys []arrow.Array) {
	for i, k := range keys {
		keys[i] = CanonKey(ctx, k)
	}
}

func replaced(old, new arrow.Array) arrow.Array {
	old.Release()
	return new
}

func canonFloat(f float64) float64 {
	switch {
	case f != f:
		return math.NaN()
	case f == 0:
		return 0
	}
	return f
}
