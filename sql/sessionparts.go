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
