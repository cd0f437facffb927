package sql

// supervisor runs the engine's jobs apart from its SQL sessions: it starts
// view jobs, restarts failed ones under their restart strategy (jobs.go),
// takes checkpoints and savepoints and exports them (savepoint.go,
// snapshots.go), runs RESTORE and STOP/START JOB (restore.go) and applies
// retention after each checkpoint (retention.go).
//
// It shares the engine's state (the catalog, the job table, e.mu): the
// split is one of behaviour, so that Engine keeps the catalog, DDL and
// queries and the job lifecycle reads as one type. Engine reaches it as
// e.sup.
type supervisor struct {
	*Engine
}
