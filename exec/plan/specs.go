package plan

import (
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/versionjoin"
)

// Aggregates: the operator is exec/agg; here is the wiring of a job's
// aggregate node (its spec from the plan, the job's share of state, TTL
// and late-row log, and the counters the job's epoch bounds read).

// AggSpecOf is the operator's spec of hash aggregate p; retract says its
// input may retract rows; win is the group key that closes its windows
// (nil: none; a batch query closes none).
func AggSpecOf(p *HashAgg, retract bool, win *opkit.WindowClose) *agg.Spec {
	return &agg.Spec{Keys: p.Keys, Aggs: p.Aggs, OutTs: p.Types(), Retract: retract, Win: win}
}

// Versioned (event-time temporal) joins, FOR SYSTEM_TIME AS OF l.ts over
// a keyed table with a WATERMARK (HashJoin.Versioned). The operator is
// package exec/versionjoin; here are its hooks: the batch query, the
// graph node (an nJoin node of one instance whose HashJoin has
// Versioned) and the instance the runtime runs.

// VersionSpec is the operator's spec of p.
func VersionSpec(p *HashJoin) versionjoin.Spec {
	return versionjoin.Spec{
		Left:       p.Kind == JoinLeft,
		ProbeTypes: p.Left.Types(), BuildTypes: p.Right.Types(),
		ProbeKeys: p.LeftKeys, BuildKeys: p.RightKeys,
		ProbeTime: p.Versioned.ProbeTime, BuildTime: p.Versioned.BuildTime,
		Canon: accum.CanonKeysT,
	}
}
