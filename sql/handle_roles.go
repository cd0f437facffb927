package sql

import (
	"context"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/types"
)

// The roles family: CREATE/ALTER/DROP ROLE and GRANT (roles.go).
func init() {
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.CreateRole, _ []types.Datum) (*Result, error) {
		return s.e.roleStore.createRole(n)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.AlterRole, _ []types.Datum) (*Result, error) {
		return s.e.roleStore.alterRole(n, s.user)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.DropRole, _ []types.Datum) (*Result, error) {
		return s.e.roleStore.dropRole(n, s.user)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.Grant, _ []types.Datum) (*Result, error) {
		return s.e.roleStore.grant(n)
	})
}
