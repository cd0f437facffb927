package sql

import (
	"context"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/types"
)

// The ingest family: COPY FROM and COPY TO (ingest.go, copy*.go). INSERT is
// a query the TiDB parser parses, so handle_query.go runs it.
func init() {
	on(func(s *Session, ctx context.Context, st *Stmt, n *parse.Copy, _ []types.Datum) (*Result, error) {
		return s.execCopy(ctx, st, n)
	})
}
