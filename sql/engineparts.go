package sql

// roleStore runs the role statements (CREATE/ALTER/DROP ROLE, GRANT) and
// loads the roles at start (roles.go). It shares the engine's state
// (e.mu.roles under the catalog lock). Engine reaches it as e.roleStore;
// the role lookups wire needs (Role, AnyPassword, AuthSecret) stay on
// Engine.
type roleStore struct {
	*Engine
}

// sinkManager creates, starts, stops and restarts sinks (sinks.go). It
// shares the engine's state (e.sinks, the catalog). Engine reaches it as
// e.sinkMgr.
type sinkManager struct {
	*Engine
}
