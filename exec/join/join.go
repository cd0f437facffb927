// Package join is the streaming equi-join operator (a symmetric hash
// join), with its share of event time (interval and window joins whose
// rows the watermark frees, time.go), of state.ttl (ttl.go) and of lookup
// joins (lookup.go): the operator of a job's join node. The plan node,
// the batch query's join, how a join's rows end by watermark (found from
// the plan under it) and the wiring into a job stay in exec.
//
// It implements the operator contract (exec/op), reaches its state only
// through opkit.State, emits through op.Outlet and shares the group
// hashes and key canonicalisation of exec/accum; it imports neither the
// runtime nor another operator family.
package join

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// Kind is the kind of join.
type Kind uint8

const (
	Inner Kind = iota
	Left
	Right
	Full
	// Semi keeps the left rows that have at least one match (IN,
	// EXISTS); Anti those that have none (NOT EXISTS). Both output the
	// left columns only; Residual still sees left then right columns.
	Semi
	Anti
)

// Spec is a join as its operator runs it: it joins on LeftKeys[i] =
// RightKeys[i] (no keys: every pair), then applies Residual over the
// joined row (left columns then right columns).
type Spec struct {
	Kind                Kind
	LeftTs, RightTs     []types.T // the inputs' columns
	OutTs               []types.T
	LeftKeys, RightKeys []expr.Expr
	Residual            expr.Expr
	// Lookup makes it a lookup join (lookup.go).
	Lookup bool
	// Time is how its rows end by watermark (time.go); nil if they do not.
	Time *Time
}

// Node is what the runtime gives a join instance.
type Node struct {
	opkit.Node
	// Late are the late-row logs of the left and right inputs (nil: not
	// recorded).
	Late [2]*opkit.LateLog
}

// AnyNull says whether row i has a NULL in one of keys.
func AnyNull(keys []arrow.Array, i int) bool {
	for _, k := range keys {
		if k.IsNull(i) {
			return true
		}
	}
	return false
}
