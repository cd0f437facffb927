package exec

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// Equality-based operators (hash aggregates and DISTINCT, joins, top-N and
// window partitions, exchanges, COUNT(DISTINCT)) key on a value's bytes
// and hash. For most types equal values have equal bytes; for two they do
// not, and such a key column is replaced by one of representatives before
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

// canonKey returns a with its values replaced by their representatives,
// or a itself (most columns: nothing to replace). A replaced a is released.
func canonKey(ctx *expr.Ctx, a arrow.Array) arrow.Array {
	if ctx != nil && ctx.RawKeys {
		return a
	}
	switch arr := a.(type) {
	case *array.MonthDayNanoInterval:
		vs := arr.MonthDayNanoIntervalValues()
		i := 0
		for ; i < len(vs) && (arr.IsNull(i) || types.IsCanonInterval(vs[i])); i++ {
		}
		if i == len(vs) {
			return a
		}
		b := array.NewMonthDayNanoIntervalBuilder(memoryPool)
		defer b.Release()
		b.Reserve(len(vs))
		for i, v := range vs {
			if arr.IsNull(i) {
				b.AppendNull()
				continue
			}
			c, _ := types.CanonInterval(v)
			b.UnsafeAppend(c)
		}
		return replaced(a, b.NewArray())
	case *array.Float64:
		vs := arr.Float64Values()
		i := 0
		for ; i < len(vs) && !needsCanonFloat(vs[i]); i++ {
		}
		if i == len(vs) {
			return a
		}
		b := array.NewFloat64Builder(memoryPool)
		defer b.Release()
		b.Reserve(len(vs))
		for i, f := range vs {
			if arr.IsNull(i) {
				b.AppendNull()
				continue
			}
			b.UnsafeAppend(canonFloat(f))
		}
		return replaced(a, b.NewArray())
	}
	return a
}

// canonKeys applies canonKey to each key column, in place.
func canonKeys(ctx *expr.Ctx, keys []arrow.Array) {
	for i, k := range keys {
		keys[i] = canonKey(ctx, k)
	}
}

func replaced(old, new arrow.Array) arrow.Array {
	old.Release()
	return new
}

func needsCanonFloat(f float64) bool {
	return f != f && math.Float64bits(f) != canonNaN || f == 0 && math.Signbit(f)
}

var canonNaN = math.Float64bits(math.NaN())

func canonFloat(f float64) float64 {
	switch {
	case f != f:
		return math.NaN()
	case f == 0:
		return 0
	}
	return f
}
