package accum

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// Kind is an aggregate function.
type Kind uint8

const (
	CountStar Kind = iota
	Count
	Sum
	Avg
	Min
	Max
	ArrayAgg // text → text[]
	// The ordered-set aggregates (WITHIN GROUP (ORDER BY Arg)), with
	// Spec's Frac and Desc (orderedset.go).
	PercentileCont
	PercentileDisc
	Mode
)

// Spec is one aggregate over an argument expression (nil for count(*)).
type Spec struct {
	Kind     Kind
	Distinct bool
	Arg      expr.Expr
	T        types.T // result type
	// Frac is percentile_cont/disc's fraction, in [0, 1] (NaN: NULL, so
	// the result is NULL); Desc orders an ordered-set aggregate's values
	// descending.
	Frac float64
	Desc bool
	// Sorted makes array_agg keep a multiset per group and list it in
	// order (a materialized view's array_agg, or one with ORDER BY or
	// DISTINCT inside the call, arrayaggbag.go); Arg is then x itself, not
	// its element text, or with Order the record ROW(k1, ..., kn, x) of
	// the ORDER BY keys and x. Distinct with Sorted lists each entry once.
	Sorted bool
	Order  []OrderDir
}
