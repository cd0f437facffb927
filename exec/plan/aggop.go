package plan

import (
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/opkit"
)

// Aggregates: the operator is exec/agg; here is the wiring of a job's
// aggregate node (its spec from the plan, the job's share of state, TTL
// and late-row log, and the counters the job's epoch bounds read).

// aggSpecOf is the operator's spec of hash aggregate p; retract says its
// input may retract rows; win is the group key that closes its windows
// (nil: none; a batch query closes none).
func AggSpecOf(p *HashAgg, retract bool, win *opkit.WindowClose) *agg.Spec {
	return &agg.Spec{Keys: p.Keys, Aggs: p.Aggs, OutTs: p.Types(), Retract: retract, Win: win}
}
