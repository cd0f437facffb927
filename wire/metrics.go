package wire

// Metrics receives statement outcomes for monitoring (monitor/ counts them
// for /metrics). Set it in Config.Metrics; its methods are called on the
// connection's goroutine after each statement and must not block.
type Metrics interface {
	// StatementCompleted: a statement completed with this CommandComplete
	// tag ("INSERT 0 3", "COPY 10", "CREATE MATERIALIZED VIEW");
	// copyIn says it was a COPY ... FROM STDIN.
	StatementCompleted(tag string, copyIn bool)
	// StatementFailed: a statement (its SQL text) failed with err, which
	// carries its SQLSTATE (statementError).
	StatementFailed(sql string, code string)
}

// Connections is the number of client connections open now (in startup,
// authentication or a session; cancel requests excluded).
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

func (c *conn) noteCompleted(tag string, copyIn bool) {
	if m := c.srv.cfg.Metrics; m != nil {
		m.StatementCompleted(tag, copyIn)
	}
}

func (c *conn) noteFailed(sql string, err error) {
	if m := c.srv.cfg.Metrics; m != nil && err != nil && err != errConnDead {
		m.StatementFailed(sql, statementError(err).Code)
	}
}
