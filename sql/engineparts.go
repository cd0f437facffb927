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

// jobOptions reads and applies the per-view job options: the state backend
// and its cache, the error policy and state TTL, ALTER ... SET and the
// options START JOB takes (statebackend.go, statettl.go). It shares the
// engine's state. Engine reaches it as e.jobOpts; StateEntries stays on
// Engine for monitor.
type jobOptions struct {
	*Engine
}

// snapshotStore opens and closes the checkpoint and savepoint snapshots
// AS OF reads use and names their directories (snapshots.go). It shares
// the engine's state (e.snaps). Engine reaches it as e.snapStore;
// Snapshot, the planner's entry point, stays on Engine.
type snapshotStore struct {
	*Engine
}
