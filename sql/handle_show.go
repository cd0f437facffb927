package sql

import (
	"context"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/types"
)

// The show family: SHOW name, SHOW TABLES/VIEWS/... and SHOW CREATE
// (show.go).
func init() {
	on(func(s *Session, _ context.Context, st *Stmt, n *parse.Show, _ []types.Datum) (*Result, error) {
		return (sessionShow{s}).execShow(st, n)
	})
	on(func(s *Session, _ context.Context, st *Stmt, n *parse.ShowObjects, _ []types.Datum) (*Result, error) {
		return (sessionShow{s}).execShow(st, n)
	})
	on(func(s *Session, _ context.Context, st *Stmt, n *parse.ShowCreate, _ []types.Datum) (*Result, error) {
		return (sessionShow{s}).execShow(st, n)
	})
}
