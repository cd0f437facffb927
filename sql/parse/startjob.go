package parse

// startJob parses START JOB view [FROM SAVEPOINT name] [WITH (k = v, ...)]
// (after START JOB).
func (p *parser) startJob() (*StartJob, error) {
	s := &StartJob{}
	var err error
	if s.View, err = p.name(); err != nil {
		return nil, err
	}
	if p.accept("from", "savepoint") {
		if s.Savepoint, err = p.ident(); err != nil {
			return nil, err
		}
	}
	if p.accept("with") {
		if s.Options, err = p.options(); err != nil {
			return nil, err
		}
	}
	return s, p.end()
}
