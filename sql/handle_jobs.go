package sql

import (
	"context"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/types"
)

// The jobs family: CHECKPOINT and STOP/START JOB (jobs.go).
func init() {
	on(func(s *Session, ctx context.Context, _ *Stmt, _ *parse.Checkpoint, _ []types.Datum) (*Result, error) {
		return localCheckpoint(ctx, s.e)
	})
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.StopJob, _ []types.Datum) (*Result, error) {
		return s.e.sup.stopJob(ctx, n)
	})
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.StartJob, _ []types.Datum) (*Result, error) {
		return s.e.sup.startJob(ctx, n)
	})
}
