package parse

import (
	"errors"
	"strconv"
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// parser is a recursive-descent parser over one statement's tokens. toks
// ends with a tEOF token placed right after the statement's last token;
// positions are byte offsets into src, the whole input of ParseAll.
type parser struct {
	src  string
	toks []token
	i    int
	// keyTok is the PRIMARY of CREATE TABLE's key, for errors (dml.go).
	keyTok token
}

func (p *parser) at() token { return p.peek(0) }

func (p *parser) peek(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

// accept consumes the keyword sequence kws if the tokens at the cursor are exactly those.
func (p *parser) accept(kws ...string) bool {
	for k, kw := range kws {
		if !p.peek(k).is(kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

func (p *parser) expect(kws ...string) error {
	for _, kw := range kws {
		if !p.at().is(kw) {
			return p.syntaxError(p.at())
		}
		p.i++
	}
	return nil
}

func (p *parser) acceptOp(op string) bool {
	if p.at().isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.syntaxError(p.at())
	}
	return nil
}

// text is the user's text of token t.
func (p *parser) text(t token) string { return p.src[t.Pos:t.End] }

// syntaxError is PostgreSQL's 42601 error for an unexpected token.
func (p *parser) syntaxError(t token) error {
	if t.Kind == tEOF {
		return p.positioned(sqlerr.New(sqlerr.SyntaxError, "syntax error at end of input"), t)
	}
	return p.positioned(sqlerr.New(sqlerr.SyntaxError, "syntax error at or near %q", p.text(t)), t)
}

// positioned gives err the position of t unless it has one.
func (p *parser) positioned(err error, t token) error {
	var e *sqlerr.Error
	if errors.As(err, &e) && e.Position == 0 {
		e.Position = charPos(p.src, t.Pos)
	}
	return err
}

// notSupported is a 0A000 error at t.
func (p *parser) notSupported(t token, format string, args ...any) error {
	return p.positioned(sqlerr.New(sqlerr.FeatureNotSupported, format, args...), t)
}

// end checks that the whole statement was consumed.
func (p *parser) end() error {
	if p.at().Kind != tEOF {
		return p.syntaxError(p.at())
	}
	return nil
}

// ident reads one identifier: unquoted ones are lower-cased, quoted ones keep their case.
func (p *parser) ident() (string, error) {
	t := p.at()
	if t.Kind != tIdent && t.Kind != tQIdent {
		return "", p.syntaxError(t)
	}
	p.i++
	return t.Val, nil
}

// name reads a possibly dotted name (checkpoint.interval, public.t) and joins its parts with '.'.
func (p *parser) name() (string, error) {
	s, err := p.ident()
	if err != nil {
		return "", err
	}
	for p.at().isOp(".") {
		p.i++
		part, err := p.ident()
		if err != nil {
			return "", err
		}
		s += "." + part
	}
	return s, nil
}

// nameList reads name[, name...].
func (p *parser) nameList() ([]string, error) {
	var names []string
	for {
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		names = append(names, n)
		if !p.acceptOp(",") {
			return names, nil
		}
	}
}

// value reads a setting or option value: a string, a signed number, or a
// word (true, off, csv, ...). It returns the literal's text without quotes.
func (p *parser) value() (string, error) {
	t := p.at()
	sign := ""
	if (t.isOp("-") || t.isOp("+")) && p.peek(1).Kind == tNumber {
		sign = strings.TrimPrefix(t.Val, "+")
		p.i++
		t = p.at()
	}
	switch t.Kind {
	case tNumber:
		p.i++
		return sign + t.Val, nil
	case tString, tIdent, tQIdent:
		if sign == "" {
			p.i++
			return t.Val, nil
		}
	}
	return "", p.syntaxError(t)
}

// options reads ( key = value [, ...] ) with possibly dotted keys.
func (p *parser) options() (map[string]string, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	opts := map[string]string{}
	for {
		kt := p.at()
		k, err := p.name()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if _, dup := opts[k]; dup {
			return nil, p.positioned(sqlerr.New(sqlerr.SyntaxError, "option %q specified more than once", k), kt)
		}
		opts[k] = v
		if !p.acceptOp(",") {
			break
		}
	}
	return opts, p.expectOp(")")
}

// matchParen returns the index of the ")" closing the "(" at toks[open], or -1.
func (p *parser) matchParen(open int) int {
	depth := 0
	for i := open; i < len(p.toks); i++ {
		switch {
		case p.toks[i].isOp("("):
			depth++
		case p.toks[i].isOp(")"):
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// createTable parses CREATE TABLE; the cursor is after TABLE.
func (p *parser) createTable() (*CreateTable, error) {
	ct := &CreateTable{}
	ct.IfNotExists = p.accept("if", "not", "exists")
	var err error
	if ct.Name, err = p.relName(); err != nil {
		return nil, err
	}
	if p.at().is("as") {
		return nil, p.notSupported(p.at(), "CREATE TABLE AS is not supported, use CREATE MATERIALIZED VIEW")
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var wmTok token
	for !p.at().isOp(")") {
		t := p.at()
		switch {
		case t.is("watermark") && p.peek(1).is("for"):
			if ct.WatermarkCol != "" {
				return nil, p.positioned(sqlerr.New(sqlerr.SyntaxError, "multiple WATERMARK clauses are not allowed"), t)
			}
			wmTok = t
			if err := p.watermark(ct); err != nil {
				return nil, err
			}
		case t.is("primary") && p.peek(1).is("key"):
			if err := p.tableKey(ct); err != nil {
				return nil, err
			}
		case t.is("constraint") || t.is("unique") || t.is("check") || t.is("foreign") ||
			t.is("exclude") && (p.peek(1).isOp("(") || p.peek(1).is("using")): // else a column named exclude
			return nil, p.notSupported(t, "table constraints other than PRIMARY KEY are not supported")
		default:
			col, keyTok, err := p.columnDef()
			if err != nil {
				return nil, err
			}
			if keyTok.Kind != tEOF {
				if err := p.columnKey(ct, col, keyTok); err != nil {
					return nil, err
				}
			}
			for _, c := range ct.Columns {
				if c.Name == col.Name {
					return nil, p.positioned(sqlerr.New(sqlerr.DuplicateColumn, "column %q specified more than once", col.Name), t)
				}
			}
			ct.Columns = append(ct.Columns, col)
		}
		if !p.acceptOp(",") {
			break
		}
		if p.at().isOp(")") { // (a INT,) is a syntax error at the ")"
			return nil, p.syntaxError(p.at())
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	// APPEND ONLY (as RisingWave has it) declares what a table without a
	// key already is, so nothing needs to remember it; with a key the
	// table would be a changelog, so the two together are refused.
	aoTok := p.at()
	appendOnly := p.accept("append", "only")
	if p.accept("with") {
		if ct.With, err = p.options(); err != nil {
			return nil, err
		}
	}
	if appendOnly && ct.PrimaryKey != nil {
		return nil, p.positioned(sqlerr.New(sqlerr.InvalidTableDefinition,
			"an APPEND ONLY table cannot have a PRIMARY KEY: a key makes it a changelog table, whose rows UPDATE and DELETE change"), aoTok)
	}
	if ct.WatermarkCol != "" {
		found := false
		for _, c := range ct.Columns {
			if c.Name == ct.WatermarkCol {
				found = true
				if c.Type.Kind != types.Timestamp {
					return nil, p.positioned(sqlerr.New(sqlerr.DatatypeMismatch,
						"watermark column %q must be of type timestamp, not %s", c.Name, c.Type), wmTok)
				}
			}
		}
		if !found {
			return nil, p.positioned(sqlerr.New(sqlerr.UndefinedColumn, "column %q named in WATERMARK does not exist", ct.WatermarkCol), wmTok)
		}
	}
	if err := p.checkKey(ct); err != nil {
		return nil, err
	}
	return ct, nil
}

// createSource parses CREATE SOURCE; the cursor is after SOURCE. Its form
// is CREATE TABLE's, and a source needs its WITH options.
func (p *parser) createSource() (*CreateSource, error) {
	// CREATE SOURCE name WITH (...): no column list, the connector derives
	// the columns (a Kafka source's registered Avro schema).
	start := p.i
	ifNot := p.accept("if", "not", "exists")
	if name, err := p.relName(); err == nil && p.accept("with") {
		opts, err := p.options()
		if err != nil {
			return nil, err
		}
		return &CreateSource{CreateTable: CreateTable{Name: name, IfNotExists: ifNot, With: opts}}, nil
	}
	p.i = start
	ct, err := p.createTable()
	if err != nil {
		return nil, err
	}
	if ct.With == nil {
		return nil, p.positioned(sqlerr.New(sqlerr.InvalidParameterValue, "CREATE SOURCE needs WITH (connector = ...)"), p.at())
	}
	if err := p.sourceDefaults(ct); err != nil {
		return nil, err
	}
	if ct.PrimaryKey != nil {
		return nil, p.notSupported(p.keyTok, "a source cannot have a PRIMARY KEY: its rows come from its connector, which cannot enforce a key (declare a table with the key and insert into it)")
	}
	return &CreateSource{CreateTable: *ct}, nil
}

// createSink parses CREATE SINK; the cursor is after SINK.
func (p *parser) createSink() (*CreateSink, error) {
	n := &CreateSink{IfNotExists: p.accept("if", "not", "exists")}
	var err error
	if n.Name, err = p.relName(); err != nil {
		return nil, err
	}
	if !p.accept("from") {
		return nil, p.syntaxError(p.at())
	}
	if n.From, err = p.relName(); err != nil {
		return nil, err
	}
	if !p.accept("with") {
		return nil, p.positioned(sqlerr.New(sqlerr.InvalidParameterValue, "CREATE SINK needs WITH (connector = ...)"), p.at())
	}
	if n.With, err = p.options(); err != nil {
		return nil, err
	}
	return n, nil
}

// dropSink parses DROP SINK; the cursor is after SINK.
func (p *parser) dropSink() (Statement, error) {
	n := &DropSink{IfExists: p.accept("if", "exists")}
	var err error
	if n.Name, err = p.relName(); err != nil {
		return nil, err
	}
	return n, p.end()
}

// columnDef parses name type [NOT NULL | NULL | PRIMARY KEY]...; keyTok
// is the PRIMARY of a column key (Kind tEOF if none).
func (p *parser) columnDef() (col ColumnDef, keyTok token, err error) {
	keyTok.Kind = tEOF
	col, err = p.columnDefKey(&keyTok)
	return col, keyTok, err
}

func (p *parser) columnDefKey(keyTok *token) (ColumnDef, error) {
	var col ColumnDef
	var err error
	if col.Name, err = p.ident(); err != nil {
		return col, err
	}
	if col.Type, err = p.typeName(); err != nil {
		return col, err
	}
	for {
		t := p.at()
		switch {
		case p.accept("not", "null"):
			col.NotNull = true
		case p.accept("null"):
			col.NotNull = false
		case t.is("primary") && p.peek(1).is("key"):
			if keyTok.Kind != tEOF {
				return col, p.positioned(sqlerr.New(sqlerr.InvalidTableDefinition, "multiple primary keys for table are not allowed"), t)
			}
			*keyTok = t
			col.NotNull = true
			p.i += 2
		case t.is("default"):
			if err := p.columnDefault(&col); err != nil {
				return col, err
			}
		case t.is("unique") || t.is("check") || t.is("references") ||
			t.is("generated") || t.is("collate") || t.is("constraint"):
			return col, p.notSupported(t, "column option %s is not supported", strings.ToUpper(t.Val))
		default:
			return col, nil
		}
	}
}

// watermark parses WATERMARK FOR col AS col [- INTERVAL ...].
func (p *parser) watermark(ct *CreateTable) error {
	start := p.at()
	p.i += 2 // WATERMARK FOR
	col, err := p.ident()
	if err != nil {
		return err
	}
	if err := p.expect("as"); err != nil {
		return err
	}
	exprTok := p.at()
	same, err := p.ident()
	if err != nil {
		return err
	}
	if same != col {
		return p.notSupported(exprTok, "WATERMARK expression must be %s [- INTERVAL '...']", col)
	}
	var us int64
	if p.acceptOp("-") {
		it := p.at()
		if !it.is("interval") {
			return p.notSupported(it, "WATERMARK expression must be %s [- INTERVAL '...']", col)
		}
		p.i++
		text, err := p.intervalLiteral()
		if err != nil {
			return err
		}
		var ok bool
		if us, ok = intervalMicros(text); !ok || us < 0 {
			return p.positioned(sqlerr.New(sqlerr.InvalidDatetimeFormat,
				"invalid watermark delay %q: use a fixed duration such as '5 seconds'", text), it)
		}
	}
	ct.WatermarkCol = col
	ct.WatermarkUS = us
	ct.WatermarkSQL = p.src[start.Pos:p.toks[p.i-1].End]
	return nil
}

// intervalUnits are the unit words that may follow an interval literal.
var intervalUnits = map[string]bool{
	"year": true, "month": true, "week": true, "day": true, "hour": true,
	"minute": true, "second": true, "millisecond": true, "microsecond": true,
}

// intervalLiteral parses what follows INTERVAL: 'text' [unit] or n unit,
// and returns the interval's text, e.g. "5 minutes" or "10 second".
func (p *parser) intervalLiteral() (string, error) {
	t := p.at()
	unit := p.peek(1)
	switch {
	case t.Kind == tString && unit.Kind == tIdent && intervalUnits[unit.Val]:
		p.i += 2
		return t.Val + " " + unit.Val, nil
	case t.Kind == tString:
		p.i++
		return t.Val, nil
	case t.Kind == tNumber && unit.Kind == tIdent && intervalUnits[unit.Val]:
		p.i += 2
		return t.Val + " " + unit.Val, nil
	case t.Kind == tNumber:
		return "", p.syntaxError(unit)
	}
	return "", p.syntaxError(t)
}

// intervalMicros converts a fixed-length interval text ("5 seconds",
// "1 minute 30 seconds", "500 ms", "00:00:05") to microseconds. ok is false
// for anything else, including months and years, which have no fixed length.
func intervalMicros(s string) (int64, bool) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 1 && strings.Contains(f[0], ":") {
		return clockMicros(f[0])
	}
	if len(f) == 0 {
		return 0, false
	}
	var total float64
	for i := 0; i < len(f); i++ {
		num, unit := f[i], ""
		// "5s" and "5 s" are both accepted.
		if k := strings.IndexFunc(num, func(r rune) bool { return r >= 'a' && r <= 'z' }); k > 0 {
			num, unit = num[:k], num[k:]
		} else if i+1 < len(f) {
			i++
			unit = f[i]
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, false
		}
		var scale float64
		switch unit {
		case "us", "usec", "usecs", "microsecond", "microseconds":
			scale = 1
		case "ms", "msec", "msecs", "millisecond", "milliseconds":
			scale = 1e3
		case "s", "sec", "secs", "second", "seconds":
			scale = 1e6
		case "m", "min", "mins", "minute", "minutes":
			scale = 60e6
		case "h", "hr", "hrs", "hour", "hours":
			scale = 3600e6
		case "d", "day", "days":
			scale = 86400e6
		case "w", "week", "weeks":
			scale = 7 * 86400e6
		default:
			return 0, false
		}
		total += v * scale
	}
	if total > 1<<62 || total < -(1<<62) {
		return 0, false
	}
	return int64(total), true
}

// clockMicros parses [-]HH:MM[:SS[.frac]].
func clockMicros(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	parts := strings.Split(strings.TrimPrefix(s, "-"), ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	var total float64
	for k, part := range parts {
		v, err := strconv.ParseFloat(part, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		total += v * []float64{3600e6, 60e6, 1e6}[k]
	}
	if neg {
		total = -total
	}
	return int64(total), true
}

// createView parses CREATE [OR REPLACE] MATERIALIZED VIEW; the cursor is after VIEW.
func (p *parser) createView(orReplace bool) (*CreateView, error) {
	cv := &CreateView{OrReplace: orReplace}
	cv.IfNotExists = p.accept("if", "not", "exists")
	var err error
	if cv.Name, err = p.relName(); err != nil {
		return nil, err
	}
	if p.accept("with") { // PostgreSQL's place for storage parameters
		if cv.With, err = p.options(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	from := p.i
	end := len(p.toks) - 1 // the tEOF token
	// Trailing clauses, from the right: WITH (...) and FROM SAVEPOINT sp.
	for again := true; again; {
		again = false
		if cv.With == nil && end-1 > from && p.toks[end-1].isOp(")") {
			open := p.openParen(end - 1)
			if open > from && p.toks[open-1].is("with") {
				p.i = open
				if cv.With, err = p.options(); err != nil {
					return nil, err
				}
				end, again = open-1, true
			}
		}
		if cv.FromSavepoint == "" && end-3 >= from && p.toks[end-3].is("from") && p.toks[end-2].is("savepoint") &&
			(p.toks[end-1].Kind == tIdent || p.toks[end-1].Kind == tQIdent) {
			cv.FromSavepoint = p.toks[end-1].Val
			end, again = end-3, true
		}
	}
	if cv.Query, err = p.query(from, end); err != nil {
		return nil, err
	}
	p.i = len(p.toks) - 1
	return cv, nil
}

// openParen returns the index of the "(" matching the ")" at toks[close], or -1.
func (p *parser) openParen(close int) int {
	depth := 0
	for i := close; i >= 0; i-- {
		switch {
		case p.toks[i].isOp(")"):
			depth++
		case p.toks[i].isOp("("):
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// drop parses DROP TABLE | MATERIALIZED VIEW | SAVEPOINT; the cursor is after the kind.
func (p *parser) drop(kind ObjectKind) (*Drop, error) {
	d := &Drop{Kind: kind}
	d.IfExists = p.accept("if", "exists")
	var err error
	names := p.nameList
	if kind == ObjTable || kind == ObjView {
		names = p.relNameList
	}
	if d.Names, err = names(); err != nil {
		return nil, err
	}
	if p.accept("cascade") {
		d.Cascade = true
	} else {
		p.accept("restrict")
	}
	return d, p.end()
}

// copyStmt parses COPY; the cursor is after COPY.
func (p *parser) copyStmt() (*Copy, error) {
	c := &Copy{Options: map[string]string{}}
	if p.at().isOp("(") {
		closing := p.matchParen(p.i)
		if closing < 0 {
			return nil, p.syntaxError(p.toks[len(p.toks)-1])
		}
		q, err := p.query(p.i+1, closing)
		if err != nil {
			return nil, err
		}
		if q.EmitOnWindowClose {
			return nil, errEOWCOnlyInViews(p)
		}
		c.Query = q
		p.i = closing + 1
	} else {
		var err error
		if c.Table, err = p.relName(); err != nil {
			return nil, err
		}
		if p.acceptOp("(") {
			if c.Columns, err = p.nameList(); err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
	}
	dir := p.at()
	switch {
	case dir.is("from") && c.Query == nil:
		c.From = true
	case dir.is("to"):
	default:
		return nil, p.syntaxError(dir)
	}
	p.i++
	target := p.at()
	switch {
	case c.From && target.is("stdin"), !c.From && target.is("stdout"):
		p.i++
	case target.Kind == tString || target.is("program"):
		return nil, p.notSupported(target, "COPY to or from a file or program is not supported, use STDIN or STDOUT")
	default:
		return nil, p.syntaxError(target)
	}
	if err := p.copyOptions(c.Options); err != nil {
		return nil, err
	}
	return c, p.end()
}

// copyOptions parses [WITH] (name [value], ...) or the legacy
// [WITH] [BINARY] [DELIMITER [AS] 'c'] [NULL [AS] 's'] [CSV [HEADER] [QUOTE [AS] 'q'] [ESCAPE [AS] 'e']].
func (p *parser) copyOptions(opts map[string]string) error {
	set := func(t token, k, v string) error {
		if _, dup := opts[k]; dup {
			return p.positioned(sqlerr.New(sqlerr.SyntaxError, "conflicting or redundant options"), t)
		}
		if k == "format" {
			v = strings.ToLower(v)
		}
		opts[k] = v
		return nil
	}
	p.accept("with")
	if p.acceptOp("(") {
		for {
			kt := p.at()
			k, err := p.ident()
			if err != nil {
				return err
			}
			v := "true"
			switch {
			case p.at().isOp(",") || p.at().isOp(")"):
			case p.at().isOp("*"):
				p.i++
				v = "*"
			case p.at().isOp("("): // force_quote (a, b)
				p.i++
				cols, err := p.nameList()
				if err != nil {
					return err
				}
				if err := p.expectOp(")"); err != nil {
					return err
				}
				v = strings.Join(cols, ",")
			default:
				if v, err = p.value(); err != nil {
					return err
				}
			}
			if err := set(kt, k, v); err != nil {
				return err
			}
			if !p.acceptOp(",") {
				break
			}
		}
		return p.expectOp(")")
	}
	for {
		t := p.at()
		var k, v string
		switch {
		case t.is("binary"):
			p.i++
			k, v = "format", "binary"
		case t.is("csv"):
			p.i++
			k, v = "format", "csv"
		case t.is("header"):
			p.i++
			k, v = "header", "true"
		case t.is("delimiter") || t.is("null") || t.is("quote") || t.is("escape") || t.is("encoding"):
			p.i++
			p.accept("as")
			s := p.at()
			if s.Kind != tString {
				return p.syntaxError(s)
			}
			p.i++
			k, v = t.Val, s.Val
		case t.is("force"):
			p.i++
			k = "force_quote"
			if p.accept("not", "null") {
				k = "force_not_null"
			} else if err := p.expect("quote"); err != nil {
				return err
			}
			if p.acceptOp("*") {
				v = "*"
			} else {
				cols, err := p.nameList()
				if err != nil {
					return err
				}
				v = strings.Join(cols, ",")
			}
		default:
			return nil
		}
		if err := set(t, k, v); err != nil {
			return err
		}
	}
}

// set parses SET; the cursor is after SET.
func (p *parser) set() (s *Set, err error) {
	local := false
	defer func() {
		if s != nil {
			s.Local = local
		}
	}()
	if !p.accept("session", "characteristics") {
		if !p.accept("session") {
			local = p.accept("local")
		}
	} else {
		// SET SESSION CHARACTERISTICS AS TRANSACTION mode [, ...]
		if err := p.expect("as", "transaction"); err != nil {
			return nil, err
		}
		v, err := p.words()
		return &Set{Name: "session_characteristics", Value: v}, err
	}
	t := p.at()
	switch {
	case t.is("transaction"):
		p.i++
		v, err := p.words()
		return &Set{Name: "transaction", Value: v}, err
	case t.is("authorization") || t.is("role"):
		return nil, p.notSupported(t, "SET %s is not supported", strings.ToUpper(t.Val))
	case p.accept("time", "zone"):
		s := &Set{Name: "timezone"}
		if p.accept("local") || p.accept("default") {
			s.Default = true
			return s, p.end()
		}
		var err error
		s.Value, err = p.value()
		if err != nil {
			return nil, err
		}
		return s, p.end()
	case p.accept("names"):
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return &Set{Name: "client_encoding", Value: v}, p.end()
	case p.accept("schema"):
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return &Set{Name: "search_path", Value: v}, p.end()
	}
	s = &Set{}
	if s.Name, err = p.name(); err != nil {
		return nil, err
	}
	if !p.acceptOp("=") && !p.accept("to") {
		return nil, p.syntaxError(p.at())
	}
	if p.accept("default") {
		s.Default = true
		return s, p.end()
	}
	var vals []string
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
		if !p.acceptOp(",") {
			break
		}
	}
	s.Value = strings.Join(vals, ", ")
	return s, p.end()
}

// words consumes the rest of the statement, which must be words and commas
// (transaction modes), and returns it lower-cased and space separated.
func (p *parser) words() (string, error) {
	var b strings.Builder
	for p.at().Kind != tEOF {
		t := p.at()
		switch {
		case t.Kind == tIdent:
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t.Val)
		case t.isOp(","):
			b.WriteByte(',')
		default:
			return "", p.syntaxError(t)
		}
		p.i++
	}
	if b.Len() == 0 {
		return "", p.syntaxError(p.at())
	}
	return b.String(), nil
}

// showObjects maps SHOW <words> to a ShowObjects listing.
var showObjects = []struct {
	words []string
	what  string
}{
	{[]string{"tables"}, "tables"},
	{[]string{"materialized", "views"}, "materialized views"},
	{[]string{"jobs"}, "jobs"},
	{[]string{"checkpoints"}, "checkpoints"},
	{[]string{"savepoints"}, "savepoints"},
	{[]string{"roles"}, "roles"},
	{[]string{"sources"}, "sources"},
	{[]string{"sinks"}, "sinks"},
	{[]string{"cluster"}, "cluster"},
}

// show parses SHOW; the cursor is after SHOW.
func (p *parser) show() (Statement, error) {
	for _, o := range showObjects {
		if p.accept(o.words...) {
			return &ShowObjects{What: o.what}, p.end()
		}
	}
	switch {
	case p.accept("create", "table"):
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		return &ShowCreate{Kind: ObjTable, Name: n}, p.end()
	case p.accept("create", "materialized", "view"):
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		return &ShowCreate{Kind: ObjView, Name: n}, p.end()
	case p.accept("transaction", "isolation", "level"):
		return &Show{Name: "transaction_isolation"}, p.end()
	case p.accept("time", "zone"):
		return &Show{Name: "timezone"}, p.end()
	}
	n, err := p.name()
	if err != nil {
		return nil, err
	}
	return &Show{Name: n}, p.end()
}

// reset parses RESET; the cursor is after RESET.
func (p *parser) reset() (*Reset, error) {
	if p.accept("time", "zone") {
		return &Reset{Name: "timezone"}, p.end()
	}
	n, err := p.name()
	if err != nil {
		return nil, err
	}
	return &Reset{Name: n}, p.end()
}

// createSavepoint parses CREATE SAVEPOINT name [FOR v, ...]; the cursor is after SAVEPOINT.
func (p *parser) createSavepoint() (*CreateSavepoint, error) {
	cs := &CreateSavepoint{}
	var err error
	if cs.Name, err = p.ident(); err != nil {
		return nil, err
	}
	if p.accept("for") {
		if cs.Views, err = p.nameList(); err != nil {
			return nil, err
		}
	}
	return cs, p.end()
}

// restore parses RESTORE [view] FROM {SAVEPOINT name | CHECKPOINT id}; the cursor is after RESTORE.
func (p *parser) restore() (*Restore, error) {
	r := &Restore{}
	var err error
	if !p.at().is("from") {
		if r.View, err = p.name(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("from"); err != nil {
		return nil, err
	}
	switch {
	case p.accept("savepoint"):
		if r.Savepoint, err = p.ident(); err != nil {
			return nil, err
		}
	case p.accept("checkpoint"):
		t := p.at()
		id, err := strconv.ParseUint(t.Val, 10, 64)
		if t.Kind != tNumber || err != nil || id == 0 {
			return nil, p.syntaxError(t)
		}
		p.i++
		r.Checkpoint = id
	default:
		return nil, p.syntaxError(p.at())
	}
	return r, p.end()
}

// jobSavepoint parses "view [kw SAVEPOINT name]" for STOP JOB and START JOB.
func (p *parser) jobSavepoint(kw string) (view, sp string, err error) {
	if view, err = p.name(); err != nil {
		return "", "", err
	}
	if p.accept(kw, "savepoint") {
		if sp, err = p.ident(); err != nil {
			return "", "", err
		}
	}
	return view, sp, p.end()
}

// declare parses DECLARE c [BINARY] [INSENSITIVE] [[NO] SCROLL] CURSOR [WITH[OUT] HOLD] FOR query.
func (p *parser) declare() (*Declare, error) {
	d := &Declare{}
	var err error
	if d.Cursor, err = p.ident(); err != nil {
		return nil, err
	}
	if t := p.at(); t.is("binary") {
		return nil, p.notSupported(t, "binary cursors are not supported")
	}
	if !p.accept("asensitive") {
		p.accept("insensitive")
	}
	if !p.accept("no", "scroll") {
		p.accept("scroll")
	}
	if err := p.expect("cursor"); err != nil {
		return nil, err
	}
	if p.accept("with", "hold") {
		d.Hold = true
	} else {
		p.accept("without", "hold")
	}
	if err := p.expect("for"); err != nil {
		return nil, err
	}
	if d.Query, err = p.query(p.i, len(p.toks)-1); err != nil {
		return nil, err
	}
	if d.Query.EmitOnWindowClose {
		return nil, errEOWCOnlyInViews(p)
	}
	p.i = len(p.toks) - 1
	return d, nil
}

// fetch parses FETCH [FORWARD] [n | ALL | NEXT] [FROM | IN] cursor.
func (p *parser) fetch() (*Fetch, error) {
	f := &Fetch{Count: 1}
	count := func() error {
		t := p.at()
		switch {
		case t.is("all"):
			f.Count = -1
		case t.Kind == tNumber:
			n, err := strconv.ParseInt(t.Val, 10, 64)
			if err != nil {
				return p.syntaxError(t)
			}
			f.Count = n
		default:
			return nil
		}
		p.i++
		return nil
	}
	t := p.at()
	switch {
	case p.accept("next"):
	case p.accept("forward"):
		if err := count(); err != nil {
			return nil, err
		}
	case t.is("prior") || t.is("first") || t.is("last") || t.is("absolute") || t.is("relative") ||
		t.is("backward") || t.isOp("-"):
		return nil, p.notSupported(t, "cursors can only fetch forward")
	default:
		if err := count(); err != nil {
			return nil, err
		}
	}
	if !p.accept("from") {
		p.accept("in")
	}
	var err error
	if f.Cursor, err = p.ident(); err != nil {
		return nil, err
	}
	return f, p.end()
}

// errEOWCOnlyInViews refuses EMIT ON WINDOW CLOSE outside CREATE
// MATERIALIZED VIEW: a batch query has no watermark to close windows by.
func errEOWCOnlyInViews(p *parser) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "EMIT ON WINDOW CLOSE is only supported in CREATE MATERIALIZED VIEW")
}
