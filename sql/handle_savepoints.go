package sql

import (
	"context"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/types"
)

// The savepoints family: CREATE SAVEPOINT and RESTORE (savepoint.go,
// restore.go). DROP SAVEPOINT is a DROP (handle_ddl.go); the transaction
// SAVEPOINT statement is txsavepoint.go's.
func init() {
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.CreateSavepoint, _ []types.Datum) (*Result, error) {
		if _, err := s.e.sup.createSavepoint(ctx, n.Name, n.Views); err != nil {
			return nil, err
		}
		return &Result{Tag: "CREATE SAVEPOINT"}, nil
	})
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.Restore, _ []types.Datum) (*Result, error) {
		return s.e.sup.restore(ctx, n)
	})
}
