package parse

import (
	"github.com/streamdb/streamdb/types"
)

// Prepare is PREPARE name [(type, ...)] AS statement.
type Prepare struct {
	Name  string
	Types []types.T
	Stmt  Statement
	SQL   string // the text of the prepared statement
}

// Execute is EXECUTE name [(arg, ...)]. ArgsText holds each argument's
// text: an expression, evaluated (cast to its parameter's type) when the
// statement is executed.
type Execute struct {
	Name     string
	ArgsText []string
}

func (*Prepare) stmt() {}
func (*Execute) stmt() {}

// prepare parses PREPARE; the cursor is after PREPARE.
func (p *parser) prepare() (Statement, error) {
	pr := &Prepare{}
	var err error
	if pr.Name, err = p.ident(); err != nil {
		return nil, err
	}
	if p.acceptOp("(") {
		for {
			t, err := p.typeName()
			if err != nil {
				return nil, err
			}
			pr.Types = append(pr.Types, t)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	if p.at().Kind == tEOF {
		return nil, p.syntaxError(p.at())
	}
	// The rest is a statement of its own: parse it from its first token.
	sub := &parser{src: p.src, toks: p.toks[p.i:]}
	if pr.Stmt, err = sub.statement(); err != nil {
		return nil, err
	}
	switch pr.Stmt.(type) {
	case *Prepare, *Execute:
		return nil, p.notSupported(p.at(), "PREPARE of PREPARE or EXECUTE is not supported")
	}
	pr.SQL = p.src[p.at().Pos:p.toks[len(p.toks)-2].End]
	return pr, nil
}

// execute parses EXECUTE; the cursor is after EXECUTE.
func (p *parser) execute() (Statement, error) {
	ex := &Execute{}
	var err error
	if ex.Name, err = p.ident(); err != nil {
		return nil, err
	}
	if p.at().isOp("(") {
		open := p.i
		close := p.matchParen(open)
		if close < 0 {
			return nil, p.syntaxError(p.toks[len(p.toks)-1])
		}
		if close == open+1 {
			return nil, p.syntaxError(p.toks[close])
		}
		// The arguments are parsed as the select list of a query, which
		// gives them every expression form a query has.
		start := p.i
		depth := 0
		for k := open + 1; k < close; k++ {
			switch {
			case p.toks[k].isOp("("):
				depth++
			case p.toks[k].isOp(")"):
				depth--
			case p.toks[k].isOp(",") && depth == 0:
				ex.ArgsText = append(ex.ArgsText, p.src[p.toks[start+1].Pos:p.toks[k-1].End])
				start = k
			}
		}
		ex.ArgsText = append(ex.ArgsText, p.src[p.toks[start+1].Pos:p.toks[close-1].End])
		p.i = close + 1
	}
	return ex, p.end()
}
