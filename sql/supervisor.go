package sql

// supervisor runs the engine's jobs apart from its SQL sessions: it starts
// view jobs, restarts failed ones under their restart strategy, runs
// STOP/START JOB (jobs.go) and RESTORE (restore.go) and applies retention
// after each checkpoint (retention.go). Its savepointStore takes checkpoints and
// savepoints and exports them (savepoint.go, snapshots.go).
//
// It shares the engine's state (the catalog, the job table, e.mu): the
// split is one of behaviour, so that Engine keeps the catalog, DDL and
// queries and the job lifecycle reads as one type. Engine reaches it as
// e.sup.
type supervisor struct {
	*Engine
	savepointStore
}

// savepointStore is the supervisor's checkpoints and savepoints: the
// CHECKPOINT statement, CREATE and DROP SAVEPOINT, the jobs' manifests,
// the export of a completed checkpoint to its storage location and its
// retention there, SHOW SAVEPOINTS (savepoint.go, snapshots.go). Embedded
// in supervisor, so e.sup.createSavepoint reaches it.
type savepointStore struct {
	*Engine
}
