// Package accum holds what the aggregating operators share: the
// accumulators of the aggregate functions (count, sum, avg, min/max,
// array_agg, the ordered-set aggregates, and DISTINCT over any of them),
// the group table that maps key tuples to dense group ids, and the
// canonical form of key values (keycanon.go).
//
// Contract:
//  1. An accumulator holds one aggregate for every group of an operator,
//     in typed slices indexed by group id: Update folds a batch in with a
//     typed loop (signs -1 retract), Result reads a group, Encode/Decode
//     carry a group's partial result to and from state, Reset frees a
//     group's id for reuse.
//  2. The grouping operators (the aggregate, session windows, the
//     over-window functions) import it; it imports only the operator kit
//     (exec/opkit), expressions and types, never the runtime or an operator
//     family, so any family may share it.
package accum
