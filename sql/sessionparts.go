package sql

// sessionAuth is a session's privilege checks (privileges.go): whether its
// role may run a statement or use a table. A value wraps the session, so
// (sessionAuth{s}).authorize(st) costs no allocation.
type sessionAuth struct {
	*Session
}

// sessionPrepared is a session's SQL-level prepared statements (PREPARE,
// EXECUTE, DEALLOCATE: prepare.go).
type sessionPrepared struct {
	*Session
}

// sessionSettings is a session's SET and RESET, SET LOCAL and the
// parameter changes reported to the client (show.go, setconfig.go).
type sessionSettings struct {
	*Session
}

// sessionCursors is a session's cursors: DECLARE, FETCH and CLOSE
// (show.go).
type sessionCursors struct {
	*Session
}

// sessionShow is a session's SHOW statements and their columns (show.go).
type sessionShow struct {
	*Session
}

// sessionTxBlock is a transaction block's savepoints (SAVEPOINT, RELEASE,
// ROLLBACK TO) and its failed state: failing the block on an error before
// a statement runs, refusing statements in a failed block
// (txsavepoint.go). The transaction rules themselves are the session's
// (txn.go).
type sessionTxBlock struct {
	*Session
}
