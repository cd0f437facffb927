package sql

import (
	"context"
	"reflect"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// handler runs one kind of statement for a session, after the transaction
// rules (txn.go) and the privilege checks (privileges.go) let it.
type handler func(s *Session, ctx context.Context, st *Stmt, params []types.Datum) (*Result, error)

// handlers maps a parsed statement's type to its handler. Each statement
// family registers its own in its file, handle_<family>.go: ddl, ingest
// (COPY), query (queries, cursors, prepared statements), jobs
// (CHECKPOINT, STOP/START JOB), savepoints (CREATE SAVEPOINT, RESTORE),
// settings (SET, RESET), roles (roles and privileges) and show. The
// transaction statements (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) never get here:
// beforeStatement (txn.go) runs them.
var handlers = map[reflect.Type]handler{}

// on registers f as the handler of statements of type T. It is called from
// the init functions of the handle_<family>.go files; registering a type
// twice is a programming error.
func on[T parse.Statement](f func(s *Session, ctx context.Context, st *Stmt, n T, params []types.Datum) (*Result, error)) {
	var zero T
	t := reflect.TypeOf(zero)
	if _, dup := handlers[t]; dup {
		panic("sql: two handlers for " + t.String())
	}
	handlers[t] = func(s *Session, ctx context.Context, st *Stmt, params []types.Datum) (*Result, error) {
		return f(s, ctx, st, planOf(st).impl.(T), params)
	}
}

// dispatch runs a statement after the transaction rules let it.
func (s *Session) dispatch(ctx context.Context, st *Stmt, params []types.Datum) (*Result, error) {
	if err := (sessionAuth{s}).authorize(st); err != nil {
		return nil, err
	}
	if s.e.cluster != nil && !s.clusterApply {
		if res, err, done := (sessionCluster{s}).gate(ctx, st, params); done || err != nil {
			return res, err
		}
	}
	if h, ok := handlers[reflect.TypeOf(planOf(st).impl)]; ok {
		return h(s, ctx, st, params)
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s is not supported", statementWords(st))
}
