package parse

import "github.com/streamdb/streamdb/sqlerr"

// Column defaults. CREATE TABLE's column option DEFAULT expr is kept as
// the expression's text (ColumnDef.Default): sql/bind checks and binds
// it, and the catalog stores it as PostgreSQL prints it. INSERT ...
// DEFAULT VALUES, which TiDB's grammar lacks, is rewritten to its MySQL
// spelling INSERT ... () VALUES (), which the binder reads as "every
// column takes its default".

// columnDefault parses DEFAULT expr; the cursor is at DEFAULT. The
// expression runs to the next comma or closing parenthesis at its own
// depth, or to the next column option.
func (p *parser) columnDefault(col *ColumnDef) error {
	kw := p.at()
	p.i++
	start := p.i
	depth := 0
	for ; p.i < len(p.toks); p.i++ {
		t := p.toks[p.i]
		if t.Kind == tEOF {
			break
		}
		if t.isOp("(") || t.isOp("[") {
			depth++
			continue
		}
		if depth > 0 {
			if t.isOp(")") || t.isOp("]") {
				depth--
			}
			continue
		}
		if t.isOp(",") || t.isOp(")") || p.i > start && columnOptionStart(p.toks, p.i) {
			break
		}
	}
	if p.i == start {
		return p.syntaxError(p.at())
	}
	if col.Default != "" {
		return p.positioned(sqlerr.New(sqlerr.SyntaxError, "multiple default values specified for column %q", col.Name), kw)
	}
	col.Default = p.src[p.toks[start].Pos:p.toks[p.i-1].End]
	return nil
}

// columnOptionStart reports whether toks[i] begins another column option.
func columnOptionStart(toks []token, i int) bool {
	t := toks[i]
	next := token{Kind: tEOF}
	if i+1 < len(toks) {
		next = toks[i+1]
	}
	switch {
	case t.is("not") && next.is("null"), t.is("null"), t.is("primary") && next.is("key"),
		t.is("default"), t.is("unique"), t.is("check"), t.is("references"),
		t.is("generated"), t.is("collate"), t.is("constraint"):
		return true
	}
	return false
}

// defaultValues rewrites DEFAULT VALUES (at toks[i]) as () VALUES () and
// reports whether it did.
func (r *rewriter) defaultValues(i int, space bool) bool {
	toks := r.p.toks
	if !toks[i].is("default") || i+1 >= len(toks) || !toks[i+1].is("values") {
		return false
	}
	r.emit("() values ()", i, space)
	return true
}

// sourceDefaults refuses DEFAULT on a source's columns: its rows come
// from its connector, never from an INSERT that could leave a column out.
func (p *parser) sourceDefaults(ct *CreateTable) error {
	for _, c := range ct.Columns {
		if c.Default != "" {
			return sqlerr.New(sqlerr.FeatureNotSupported, "column %q: a source's columns cannot have a DEFAULT (its rows come from its connector)", c.Name)
		}
	}
	return nil
}
