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

// The engine's read-side facets. Each is a type of its own wrapping the
// engine, and Engine embeds them, so their methods are promoted: the
// callers (and the interfaces Engine implements: bind.PgCatalog,
// planner.Snapshots, catalogReader, monitor's use of Jobs, ...) are the
// same as when they were Engine's own.
type (
	// catalogSource reads the catalog for pg_catalog and
	// information_schema (catalogReader, bind.PgCatalog): the relations
	// and their owners, the roles, the relations' sizes (pgcatalog.go,
	// pgcatalog_size.go, show.go).
	catalogSource struct{ *Engine }
	// sysTables builds the streamdb_* system tables and gives a system or
	// catalog table's definition and rows (show.go, laterows.go).
	sysTables struct{ *Engine }
	// streamJobs tracks the change streams' transient jobs, which get
	// barriers from the coordinator without being waited for (rows.go).
	streamJobs struct{ *Engine }
	// epochCut chooses the consistent epoch cut a batch read sees and
	// opens the snapshot at it (epochread.go).
	epochCut struct{ *Engine }
	// engineStatus is what monitor reads: jobs, restarts, checkpoints,
	// savepoints, Pebble's and the tail cache's figures, a view's state
	// size (monitor.go, statebackend.go).
	engineStatus struct{ *Engine }
)
