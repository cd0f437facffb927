package sql

import (
	"context"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/types"
)

// The DDL family: tables, sources, sinks, views, DROP and ALTER VIEW
// (ddl.go, sources.go, sinks.go, views.go hold the work).
func init() {
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.CreateTable, _ []types.Datum) (*Result, error) {
		return s.e.createTable(n, s.user)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.CreateSource, _ []types.Datum) (*Result, error) {
		return s.e.createSource(n, s.user)
	})
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.CreateSink, _ []types.Datum) (*Result, error) {
		return s.e.sinkMgr.createSink(ctx, n, s.user)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.DropSink, _ []types.Datum) (*Result, error) {
		return s.e.sinkMgr.dropSink(n)
	})
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.CreateView, _ []types.Datum) (*Result, error) {
		res, err := s.e.createView(ctx, n, s.user)
		if err != nil || backgroundDDL(s) || len(res.Notices) > 0 {
			return res, err
		}
		return res, (backfills{s.e}).await(ctx, n.Name, false)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.CreatePlainView, _ []types.Datum) (*Result, error) {
		return s.e.createPlainView(n, s.user)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.Drop, _ []types.Datum) (*Result, error) {
		return s.e.drop(n)
	})
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.AlterView, _ []types.Datum) (*Result, error) {
		return s.e.alterView(ctx, n)
	})
}
