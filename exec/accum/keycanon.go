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
// and hash. For most types equal values have equal bytes; for three they do
// not, and the values of such a key column are replaced by representatives before
// it is hashed, compared or encoded:
//
//	interval  types.CanonInterval: '24:00:00' and '1 day' both key as '1 day'
//	float     every NaN as one NaN (PostgreSQL: NaN = NaN), -0 as 0
//	jsonb     types.JSONBKey: numbers without trailing fractional zeros,
//	          at any depth ('{"a": 1.0}' and '{"a": 1}' both key as the latter)
//
// So a group's key, and the value a GROUP BY or DISTINCT outputs for it,
// is the representative ('1 day', 0), where PostgreSQL outputs the first
// value it saw. NUMERIC needs nothing: a column holds every value at its
// type's one scale, so 1.0 and 1.00 are the same integer.
//
// jsonb is told from the other String columns by the key's type (the
// callers pass it), and a jsonb group prints its key form too ('1' for a
// group of '1.0').
//
// Views created before this (storage.TableDef.KeyFormat 0) have state
// keyed by the raw values; their jobs run with ctx.RawKeys and keep it;
// views created before KeyFormatJSONB run with ctx.RawJSONBKeys.

// CanonKey returns a (a key column of type t) with its values replaced by
// their representatives, or a itself (most columns: nothing to replace).
// A replaced a is released.
func CanonKey(ctx *expr.Ctx, a arrow.Array, t types.T) arrow.Array {
	if t.Kind == types.JSONB {
		if ctx != nil && ctx.RawJSONBKeys {
			return a
		}
		if arr, ok := a.(*array.String); ok {
			return canonJSONB(arr)
		}
		return a
	}
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

// EvalKeys evaluates the key expressions exprs over rec and canonicalizes
// the columns (CanonKeys); the caller releases them. On an error it
// releases what it made.
func EvalKeys(ctx *expr.Ctx, exprs []expr.Expr, rec arrow.RecordBatch) ([]arrow.Array, error) {
	keys := make([]arrow.Array, len(exprs))
	for i, k := range exprs {
		arr, err := expr.Eval(ctx, k, rec)
		if err != nil {
			for _, a := range keys[:i] {
				a.Release()
			}
			return nil, err
		}
		keys[i] = arr
	}
	CanonKeys(ctx, keys, exprs)
	return keys, nil
}

// CanonKeys applies CanonKey to each key column (the values of exprs), in
// place.
func CanonKeys(ctx *expr.Ctx, keys []arrow.Array, exprs []expr.Expr) {
	for i, k := range keys {
		keys[i] = CanonKey(ctx, k, exprs[i].Type())
	}
}

// CanonKeysT applies CanonKey to each key column (of type ts[i]), in place.
func CanonKeysT(ctx *expr.Ctx, keys []arrow.Array, ts []types.T) {
	for i, k := range keys {
		keys[i] = CanonKey(ctx, k, ts[i])
	}
}

// canonJSONB returns the jsonb column a with its values in key form, or a
// itself when they all are (checked without allocating).
func canonJSONB(a *array.String) arrow.Array {
	n := a.Len()
	i := 0
	for ; i < n; i++ {
		if a.IsNull(i) {
			continue
		}
		if _, ok := types.JSONBKey(a.Value(i)); ok {
			break
		}
	}
	if i == n {
		return a
	}
	b := array.NewStringBuilder(opkit.Mem)
	defer b.Release()
	b.Reserve(n)
	for i := range n {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		k, _ := types.JSONBKey(a.Value(i))
		b.Append(k)
	}
	return replaced(a, b.NewArray())
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

// Group evaluates the grouping keys exprs over rec (EvalKeys) and writes
// each row's group in g into gids, adding the groups not yet in g (the
// rows of a query without keys all fall in group 0). gids is resized to
// the batch, reusing its array when it is large enough. It returns the
// ids, the number of groups added (g.Created lists them) and the key
// columns, which the caller releases.
func (g *GroupTable) Group(ctx *expr.Ctx, exprs []expr.Expr, rec arrow.RecordBatch, gids []int32) ([]int32, int, []arrow.Array, error) {
	n := int(rec.NumRows())
	keys, err := EvalKeys(ctx, exprs, rec)
	if err != nil {
		return gids, 0, nil, err
	}
	if cap(gids) < n {
		gids = make([]int32, n)
	}
	gids = gids[:n]
	if len(keys) == 0 {
		clear(gids)
		return gids, 0, keys, nil
	}
	return gids, g.Lookup(keys, n, gids, true), keys, nil
}
