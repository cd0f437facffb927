package parse

// ObjPlainView is a plain view (CREATE VIEW), for DROP VIEW.
const ObjPlainView ObjectKind = "view"

// CreatePlainView is CREATE [OR REPLACE] VIEW name [(col, ...)] AS query:
// a stored query, expanded where the view is read.
type CreatePlainView struct {
	Name      string
	OrReplace bool
	Columns   []string
	Query     *Query
}

func (*CreatePlainView) stmt() {}

// createPlainView parses CREATE [OR REPLACE] VIEW; the cursor is after VIEW.
func (p *parser) createPlainView(orReplace bool) (Statement, error) {
	v := &CreatePlainView{OrReplace: orReplace}
	var err error
	if v.Name, err = p.name(); err != nil {
		return nil, err
	}
	if p.acceptOp("(") {
		if v.Columns, err = p.nameList(); err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	from := p.i
	if v.Query, err = p.query(from, len(p.toks)-1); err != nil {
		return nil, err
	}
	if v.Query.EmitOnWindowClose {
		return nil, errEOWCOnlyInViews(p)
	}
	if v.Query.EmitChanges {
		return nil, p.notSupported(p.toks[from], "a view cannot be defined with EMIT CHANGES")
	}
	p.i = len(p.toks) - 1
	return v, nil
}
