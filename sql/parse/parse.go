package parse

import (
	"github.com/streamdb/streamdb/sqlerr"
)

// ParseAll splits sql into statements and parses each. Errors carry SQLSTATE
// 42601 (or the code of a more specific problem, e.g. 42704 for an unknown
// type, 0A000 for an unsupported form) and a 1-based Position into sql.
func ParseAll(sql string) ([]Statement, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	var stmts []Statement
	for _, st := range split(toks) {
		p := &parser{src: sql, toks: st}
		s, err := p.statement()
		if err != nil {
			return nil, sqlerr.Wrap(sqlerr.SyntaxError, err)
		}
		stmts = append(stmts, s)
	}
	return stmts, nil
}

// split cuts toks (ending with tEOF) at top-level semicolons, in place.
// Each statement's tokens are followed by a tEOF token placed right after
// its last token; empty statements are dropped.
func split(toks []token) [][]token {
	var out [][]token
	start, depth := 0, 0
	for i, t := range toks {
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")") && depth > 0:
			depth--
		case t.isOp(";") && depth == 0, t.Kind == tEOF:
			if i > start {
				// The ";" (or the final tEOF) becomes the statement's tEOF.
				end := toks[i-1].End
				toks[i] = token{Kind: tEOF, Pos: end, End: end}
				out = append(out, toks[start:i+1])
			}
			start = i + 1
		}
	}
	return out
}

// statement parses one statement: streamdb's own by their leading keywords,
// everything else through the TiDB path.
func (p *parser) statement() (Statement, error) {
	first := p.at()
	p.i++
	var (
		s   Statement
		err error
	)
	switch {
	case first.is("create"):
		switch {
		case p.accept("table"):
			s, err = p.createTable()
		case p.accept("source"):
			s, err = p.createSource()
		case p.accept("sink"):
			s, err = p.createSink()
		case p.accept("materialized", "view"):
			s, err = p.createView(false)
		case p.accept("or", "replace", "materialized", "view"):
			s, err = p.createView(true)
		case p.accept("view"):
			return p.createPlainView(false)
		case p.accept("or", "replace", "view"):
			return p.createPlainView(true)
		case p.accept("savepoint"):
			s, err = p.createSavepoint()
		case p.accept("role"):
			return p.createRole(false)
		case p.accept("user"):
			return p.createRole(true)
		case p.at().is("index") || p.at().is("unique") && p.peek(1).is("index"):
			return p.createIndex()
		case p.accept("type"):
			return p.createType()
		case p.at().is("temp") || p.at().is("temporary") || p.at().is("unlogged"):
			return nil, p.notSupported(p.at(), "%s tables are not supported", p.at().Val)
		default:
			return p.tidb()
		}
	case first.is("drop"):
		switch {
		case p.accept("table"):
			return p.drop(ObjTable)
		case p.accept("materialized", "view"):
			return p.drop(ObjView)
		case p.accept("savepoint"):
			return p.drop(ObjSavepoint)
		case p.accept("source"):
			return p.drop(ObjSource)
		case p.accept("sink"):
			return p.dropSink()
		case p.accept("index"):
			return p.dropIndex()
		case p.accept("type"):
			return p.dropType()
		case p.accept("view"):
			return p.drop(ObjPlainView)
		case p.accept("role"), p.accept("user"):
			return p.dropRole()
		default:
			return p.tidb()
		}
	case first.is("copy"):
		return p.copyStmt()
	case first.is("set"):
		return p.set()
	case first.is("show"):
		return p.show()
	case first.is("reset"):
		return p.reset()
	case first.is("checkpoint"):
		return &Checkpoint{}, p.end()
	case first.is("restore"):
		return p.restore()
	case first.is("stop") && p.accept("job"):
		v, sp, err := p.jobSavepoint("with")
		return &StopJob{View: v, Savepoint: sp}, err
	case first.is("start") && p.accept("job"):
		return p.startJob()
	case first.is("alter") && p.accept("materialized", "view"):
		a := &AlterView{}
		if a.Name, err = p.name(); err != nil {
			return nil, err
		}
		if err := p.expect("set"); err != nil {
			return nil, err
		}
		if a.Options, err = p.options(); err != nil {
			return nil, err
		}
		return a, p.end()
	case first.is("alter") && p.accept("cluster"):
		if !p.accept("rebalance") {
			return nil, p.syntaxError(p.at())
		}
		return &AlterCluster{Rebalance: true}, p.end()
	case first.is("alter") && (p.accept("role") || p.accept("user")):
		return p.alterRole()
	case first.is("grant"):
		return p.grant(false)
	case first.is("revoke"):
		return p.grant(true)
	case first.is("declare"):
		return p.declare()
	case first.is("fetch"):
		return p.fetch()
	case first.is("close"):
		if p.accept("all") {
			return &CloseCursor{}, p.end()
		}
		c, err := p.ident()
		if err != nil {
			return nil, err
		}
		return &CloseCursor{Cursor: c}, p.end()
	case first.is("discard"):
		t := p.at()
		if !(t.is("all") || t.is("plans") || t.is("sequences") || t.is("temp") || t.is("temporary")) {
			return nil, p.syntaxError(t)
		}
		p.i++
		return &Discard{Name: t.Val}, p.end()
	case first.is("prepare"):
		return p.prepare()
	case first.is("execute"):
		return p.execute()
	case first.is("deallocate"):
		p.accept("prepare")
		if p.accept("all") {
			return &Discard{Deallocate: "all"}, p.end()
		}
		n, err := p.ident()
		if err != nil {
			return nil, err
		}
		return &Discard{Deallocate: n}, p.end()
	case first.is("savepoint"):
		return p.txSavepoint(TxSavepointSet)
	case first.is("release"):
		return p.txSavepoint(TxSavepointRelease)
	case first.is("begin") || first.is("start") && p.at().is("transaction"):
		return p.transaction("START TRANSACTION", "work", "transaction")
	case first.is("commit") || first.is("end"):
		return p.transaction("COMMIT", "work", "transaction")
	case first.is("rollback") || first.is("abort"):
		return p.transaction("ROLLBACK", "work", "transaction")
	default:
		return p.tidb()
	}
	if err != nil {
		return nil, err
	}
	switch s := s.(type) {
	case *CreateTable:
		s.SQL = p.stmtText()
	case *CreateSource:
		s.SQL = p.stmtText()
	case *CreateView:
		s.SQL = p.stmtText()
	}
	return s, p.end()
}

// stmtText is the user's text of the statement, from its first token to its last.
func (p *parser) stmtText() string {
	return p.src[p.toks[0].Pos:p.toks[len(p.toks)-2].End]
}

// tidb hands the whole statement to the TiDB path.
func (p *parser) tidb() (Statement, error) {
	if at := p.returningAt(); at >= 0 {
		return p.dmlReturning(at)
	}
	if at := p.onConflictAt(); at >= 0 {
		return p.insertOnConflict(at)
	}
	q, err := p.query(0, len(p.toks)-1)
	if err != nil {
		return nil, err
	}
	return q, nil
}

// transaction parses BEGIN/START TRANSACTION, COMMIT/END and ROLLBACK/ABORT
// in PostgreSQL's forms and gives TiDB the plain statement. Transaction
// modes (ISOLATION LEVEL ..., READ ONLY) are accepted and ignored: streamdb
// statements see one consistent checkpoint anyway.
func (p *parser) transaction(canonical string, noise ...string) (Statement, error) {
	for _, w := range noise {
		if p.accept(w) {
			break
		}
	}
	if canonical == "ROLLBACK" && p.accept("to") {
		return p.txSavepoint(TxSavepointRollback)
	}
	if canonical == "START TRANSACTION" && p.at().Kind != tEOF {
		if _, err := p.words(); err != nil {
			return nil, err
		}
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	node, err := tidbParse(canonical)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.Internal, err)
	}
	return &Query{Node: node, SQL: p.stmtText(), Rewritten: canonical}, nil
}
