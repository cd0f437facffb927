package parse

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/sqlerr"
)

// Tables with a primary key: the key in CREATE TABLE (column or table
// constraint) and INSERT ... ON CONFLICT, which TiDB's grammar lacks. The
// INSERT before ON CONFLICT goes to TiDB as usual; DO UPDATE's SET list
// and WHERE are parsed as an UPDATE of the target (so they get the dialect
// rewrites too), and the binder takes its assignments and condition.
// UPDATE and DELETE themselves are TiDB statements.

// OnConflict is INSERT's ON CONFLICT [(cols)] DO NOTHING | DO UPDATE SET ... [WHERE ...].
type OnConflict struct {
	Cols      []string // the conflict target; none: any key
	DoNothing bool
	// Update is DO UPDATE's SET list and WHERE, as an UPDATE of the target.
	Update *ast.UpdateStmt
}

// tableKey parses PRIMARY KEY (col [, ...]) as a table constraint; the
// cursor is at PRIMARY.
func (p *parser) tableKey(ct *CreateTable) error {
	t := p.at()
	if ct.PrimaryKey != nil {
		return p.positioned(sqlerr.New(sqlerr.InvalidTableDefinition, "multiple primary keys for table %q are not allowed", ct.Name), t)
	}
	p.i += 2
	if err := p.expectOp("("); err != nil {
		return err
	}
	for {
		c, err := p.ident()
		if err != nil {
			return err
		}
		for _, k := range ct.PrimaryKey {
			if k == c {
				return p.positioned(sqlerr.New(sqlerr.DuplicateColumn, "column %q appears twice in primary key constraint", c), p.toks[p.i-1])
			}
		}
		ct.PrimaryKey = append(ct.PrimaryKey, c)
		if !p.acceptOp(",") {
			break
		}
	}
	p.keyTok = t
	return p.expectOp(")")
}

// columnKey records a column's PRIMARY KEY; t is its PRIMARY token.
func (p *parser) columnKey(ct *CreateTable, col ColumnDef, t token) error {
	if ct.PrimaryKey != nil {
		return p.positioned(sqlerr.New(sqlerr.InvalidTableDefinition, "multiple primary keys for table %q are not allowed", ct.Name), t)
	}
	ct.PrimaryKey, p.keyTok = []string{col.Name}, t
	return nil
}

// checkKey checks the key's columns and makes them NOT NULL.
func (p *parser) checkKey(ct *CreateTable) error {
	for _, k := range ct.PrimaryKey {
		found := false
		for i := range ct.Columns {
			if ct.Columns[i].Name == k {
				ct.Columns[i].NotNull = true
				found = true
			}
		}
		if !found {
			return p.positioned(sqlerr.New(sqlerr.UndefinedColumn, "column %q named in key does not exist", k), p.keyTok)
		}
	}
	// A table with a PRIMARY KEY and a WATERMARK is a versioned table: its
	// watermark reaches only the temporal joins that read it as their
	// versioned side (exec versioned.go); other readers see its changes
	// without event time.
	return nil
}

// onConflictAt returns the index of the ON of a top-level ON CONFLICT in
// an INSERT, or -1.
func (p *parser) onConflictAt() int {
	if !p.toks[0].is("insert") {
		return -1
	}
	return p.topLevelAt(func(i int) bool { return p.toks[i].is("on") && i+1 < len(p.toks) && p.toks[i+1].is("conflict") })
}

// returningAt returns the index of a top-level RETURNING in an INSERT,
// UPDATE or DELETE, or -1.
func (p *parser) returningAt() int {
	if f := p.toks[0]; !f.is("insert") && !f.is("update") && !f.is("delete") {
		return -1
	}
	return p.topLevelAt(func(i int) bool { return p.toks[i].is("returning") })
}

// topLevelAt returns the index of the first token outside parentheses
// for which match is true, or -1.
func (p *parser) topLevelAt(match func(i int) bool) int {
	depth := 0
	for i, t := range p.toks {
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth == 0 && match(i):
			return i
		}
	}
	return -1
}

// dmlReturning parses an INSERT, UPDATE or DELETE whose RETURNING starts
// at toks[at]: the statement before it as usual (ON CONFLICT included),
// the list after it as the select list of SELECT <list>.
func (p *parser) dmlReturning(at int) (Statement, error) {
	last := len(p.toks) - 2 // the statement's last token (the final one is the end)
	if at >= last {
		return nil, p.syntaxError(p.toks[at+1])
	}
	sts, err := ParseAll(p.src[p.toks[0].Pos:p.toks[at].Pos])
	if err != nil {
		return nil, err
	}
	q, ok := onlyQuery(sts)
	if !ok {
		return nil, p.syntaxError(p.toks[at])
	}
	switch q.Node.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt:
	default:
		return nil, p.syntaxError(p.toks[at])
	}
	sel, err := ParseAll("SELECT " + p.src[p.toks[at+1].Pos:p.toks[last].End])
	if err != nil {
		return nil, err
	}
	sq, ok := onlyQuery(sel)
	if !ok {
		return nil, p.syntaxError(p.toks[at+1])
	}
	ss, ok := sq.Node.(*ast.SelectStmt)
	if !ok || ss.From != nil || ss.Where != nil || ss.GroupBy != nil || ss.Having != nil || ss.OrderBy != nil || ss.Limit != nil || ss.Distinct {
		return nil, p.syntaxError(p.toks[at+1])
	}
	q.SQL = p.stmtText()
	q.Returning = ss
	return q, nil
}

// insertOnConflict parses an INSERT whose ON CONFLICT starts at toks[at].
func (p *parser) insertOnConflict(at int) (Statement, error) {
	q, err := p.query(0, at)
	if err != nil {
		return nil, err
	}
	ins, ok := q.Node.(*ast.InsertStmt)
	if !ok {
		return nil, p.syntaxError(p.toks[at])
	}
	q.SQL = p.stmtText()
	oc := &OnConflict{}
	p.i = at + 2
	if p.acceptOp("(") {
		for {
			c, err := p.ident()
			if err != nil {
				return nil, err
			}
			oc.Cols = append(oc.Cols, c)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	} else if p.at().is("on") {
		return nil, p.notSupported(p.at(), "ON CONFLICT ON CONSTRAINT is not supported; name the key's columns")
	}
	if err := p.expect("do"); err != nil {
		return nil, err
	}
	switch {
	case p.accept("nothing"):
		oc.DoNothing = true
		if err := p.end(); err != nil {
			return nil, err
		}
	case p.at().is("update") && p.peek(1).is("set"):
		if oc.Cols == nil {
			return nil, p.positioned(sqlerr.New(sqlerr.SyntaxError, "ON CONFLICT DO UPDATE requires inference specification or constraint name"), p.at())
		}
		tn, ok := insertTable(ins)
		if !ok {
			return nil, p.syntaxError(p.at())
		}
		// UPDATE <target> SET ... [WHERE ...], from the user's own text.
		from := p.toks[p.i+2].Pos
		text := "UPDATE " + quoteIdent(tn.Name.O) + " SET " + p.src[from:p.toks[len(p.toks)-2].End]
		sub, err := ParseAll(text)
		if err != nil {
			return nil, err
		}
		uq, ok := onlyQuery(sub)
		if !ok {
			return nil, p.syntaxError(p.at())
		}
		up, ok := uq.Node.(*ast.UpdateStmt)
		if !ok {
			return nil, p.syntaxError(p.at())
		}
		oc.Update = up
	default:
		return nil, p.syntaxError(p.at())
	}
	q.OnConflict = oc
	return q, nil
}

func onlyQuery(sts []Statement) (*Query, bool) {
	if len(sts) != 1 {
		return nil, false
	}
	q, ok := sts[0].(*Query)
	return q, ok
}

// insertTable is an INSERT's single target table.
func insertTable(n *ast.InsertStmt) (*ast.TableName, bool) {
	if n.Table == nil || n.Table.TableRefs == nil || n.Table.TableRefs.Right != nil {
		return nil, false
	}
	ts, ok := n.Table.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, false
	}
	tn, ok := ts.Source.(*ast.TableName)
	return tn, ok
}
