package plan

import (
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/versionjoin"
)

// Versioned (event-time temporal) joins, FOR SYSTEM_TIME AS OF l.ts over
// a keyed table with a WATERMARK (HashJoin.Versioned). The operator is
// package exec/versionjoin; here are its hooks: the batch query, the
// graph node (an nJoin node of one instance whose HashJoin has
// Versioned) and the instance the runtime runs.

// versionSpec is the operator's spec of p.
func VersionSpec(p *HashJoin) versionjoin.Spec {
	return versionjoin.Spec{
		Left:       p.Kind == JoinLeft,
		ProbeTypes: p.Left.Types(), BuildTypes: p.Right.Types(),
		ProbeKeys: p.LeftKeys, BuildKeys: p.RightKeys,
		ProbeTime: p.Versioned.ProbeTime, BuildTime: p.Versioned.BuildTime,
		Canon: accum.CanonKeysT,
	}
}
