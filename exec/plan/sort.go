package plan

import (
	"github.com/streamdb/streamdb/exec/opkit"
)

// stopper polls the query's cancellation from inside a loop that cannot
// return an error (a sort's comparison; opkit.Stopper).
func (ctx *Ctx) Stopper() *opkit.Stopper { return &opkit.Stopper{Canceled: ctx.Canceled} }
