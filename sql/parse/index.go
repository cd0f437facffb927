package parse

// CreateIndex is CREATE INDEX [IF NOT EXISTS] [name] ON rel [USING btree]
// (col [ASC], ...). Name is "" when the statement gives none.
type CreateIndex struct {
	Name        string
	IfNotExists bool
	Table       string
	Cols        []string
}

// DropIndex is DROP INDEX [IF EXISTS] name[, ...] [CASCADE | RESTRICT].
type DropIndex struct {
	Names    []string
	IfExists bool
}

func (*CreateIndex) stmt() {}
func (*DropIndex) stmt()   {}

// createIndex parses CREATE [UNIQUE] INDEX; the cursor is after CREATE. The
// forms PostgreSQL has and streamdb's indexes do not honour (UNIQUE,
// CONCURRENTLY, ONLY, access methods but btree, expressions, DESC and
// NULLS FIRST, INCLUDE, WITH, TABLESPACE, a partial index's WHERE) get
// 0A000.
func (p *parser) createIndex() (Statement, error) {
	if t := p.at(); p.accept("unique") {
		return nil, p.notSupported(t, "unique indexes are not supported: an index only speeds up reads (a table's PRIMARY KEY is its unique key)")
	}
	if err := p.expect("index"); err != nil {
		return nil, err
	}
	if t := p.at(); p.accept("concurrently") {
		return nil, p.notSupported(t, "CREATE INDEX CONCURRENTLY is not supported")
	}
	n := &CreateIndex{IfNotExists: p.accept("if", "not", "exists")}
	var err error
	if !p.at().is("on") || p.peek(1).is("on") {
		if n.Name, err = p.ident(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("on"); err != nil {
		return nil, err
	}
	if t := p.at(); p.accept("only") {
		return nil, p.notSupported(t, "CREATE INDEX ON ONLY is not supported")
	}
	if n.Table, err = p.relName(); err != nil {
		return nil, err
	}
	if p.accept("using") {
		t := p.at()
		m, err := p.ident()
		if err != nil {
			return nil, err
		}
		if m != "btree" {
			return nil, p.notSupported(t, "access method %q is not supported: indexes are btree", m)
		}
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for {
		t := p.at()
		if t.Kind != tIdent && t.Kind != tQIdent || !(p.peek(1).isOp(",") || p.peek(1).isOp(")") || p.peek(1).is("asc") ||
			p.peek(1).is("desc") || p.peek(1).is("nulls") || p.peek(1).is("collate")) {
			return nil, p.notSupported(t, "indexes on expressions are not supported: index columns")
		}
		col, _ := p.ident()
		n.Cols = append(n.Cols, col)
		p.accept("asc")
		if t := p.at(); p.accept("desc") || p.accept("nulls") || p.accept("collate") {
			return nil, p.notSupported(t, "%s in an index column is not supported", p.text(t))
		}
		if p.acceptOp(")") {
			break
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
	switch t := p.at(); {
	case t.is("where"):
		return nil, p.notSupported(t, "partial indexes are not supported")
	case t.is("include"), t.is("with"), t.is("tablespace"), t.is("nulls"):
		return nil, p.notSupported(t, "%s in CREATE INDEX is not supported", p.text(t))
	}
	return n, p.end()
}

// dropIndex parses DROP INDEX; the cursor is after INDEX.
func (p *parser) dropIndex() (Statement, error) {
	if t := p.at(); p.accept("concurrently") {
		return nil, p.notSupported(t, "DROP INDEX CONCURRENTLY is not supported")
	}
	n := &DropIndex{IfExists: p.accept("if", "exists")}
	var err error
	if n.Names, err = p.relNameList(); err != nil {
		return nil, err
	}
	if !p.accept("cascade") {
		p.accept("restrict")
	}
	return n, p.end()
}
