package sql

import (
	"context"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/types"
)

// The settings family: SET and RESET (show.go, settings.go). SHOW is
// handle_show.go's.
func init() {
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.Set, _ []types.Datum) (*Result, error) {
		return (sessionSettings{s}).execSet(n)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.Reset, _ []types.Datum) (*Result, error) {
		return (sessionSettings{s}).execReset(n)
	})
}
