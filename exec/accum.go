package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// The accumulators, the group table and key canonicalization live in
// exec/accum, shared by the aggregate, session and window operators; these
// are exec's names for them.

type groupTable = accum.GroupTable

func newGroupTable(ts []types.T) *groupTable { return accum.NewGroupTable(ts) }

func canonKeys(ctx *expr.Ctx, keys []arrow.Array, exprs []expr.Expr) {
	accum.CanonKeys(ctx, keys, exprs)
}

func hashColumns(h []uint64, keys []arrow.Array, n int) []uint64 {
	return accum.HashColumns(h, keys, n)
}

func hashDatums(ds []types.Datum, ts []types.T) uint64 { return accum.HashDatums(ds, ts) }
