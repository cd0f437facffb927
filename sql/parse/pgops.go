package parse

import (
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
)

// PostgreSQL operator forms psql and drivers send in their catalog
// queries, bridged to TiDB's grammar at token level:
//
//	a ~ b    → a regexp b            a !~ b   → a not regexp b
//	a ~* b   → a regexp '(?i)' || b  a !~* b  → a not regexp '(?i)' || b
//	a ~~ b   → a like b              a !~~ b  → a not like b
//	a ~~* b  → a ilike b             a !~~* b → a not ilike b
//	a OPERATOR(pg_catalog.~) b       → as a ~ b (any of the eight, and = <> < <= > >=)
//	a COLLATE pg_catalog.default, a COLLATE "C"  → a
//
// TiDB's REGEXP has comparison precedence, as PostgreSQL's ~ has in the
// forms these queries use; the binder evaluates it with PostgreSQL's
// regular-expression semantics (see exec/expr compileRegex). The
// case-insensitive forms prefix the pattern with the embedded option
// (?i), which PostgreSQL's ARE syntax has too; with PIPES_AS_CONCAT, ||
// binds tighter than REGEXP, so the prefix applies to the whole operand.
// COLLATE is dropped: streamdb compares text bytewise, which is the
// "C" collation, the only one it has; any other collation name is 0A000.

// regexOp emits the regular expression operator op at token i.
func (r *rewriter) regexOp(op string, i int, space bool) error {
	text := map[string]string{
		"~":   "regexp",
		"!~":  "not regexp",
		"~*":  "regexp '(?i)' ||",
		"!~*": "not regexp '(?i)' ||",
		// PostgreSQL's names of LIKE, NOT LIKE, ILIKE and NOT ILIKE (the
		// operators LIKE is written with in its catalog and in EXPLAIN).
		"~~":   "like",
		"!~~":  "not like",
		"~~*":  "ilike",
		"!~~*": "not ilike",
	}[op]
	r.emit(text, i, true)
	return nil
}

// operatorCall rewrites OPERATOR(schema.op) at token i, whose schema must
// be pg_catalog, and returns the token after its ")".
func (r *rewriter) operatorCall(i, to int, space bool) (end int, err error) {
	p := r.p
	toks := p.toks
	j := i + 2
	if j+1 < to && (toks[j].Kind == tIdent || toks[j].Kind == tQIdent) && toks[j+1].isOp(".") {
		if toks[j].Val != "pg_catalog" {
			return 0, p.positioned(sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", toks[j].Val), toks[j])
		}
		j += 2
	}
	if j+1 >= to || toks[j].Kind != tOp || !toks[j+1].isOp(")") {
		return 0, p.syntaxError(toks[min(j, to)])
	}
	switch op := toks[j].Val; op {
	case "~", "!~", "~*", "!~*", "~~", "!~~", "~~*", "!~~*":
		if err := r.regexOp(op, j, space); err != nil {
			return 0, err
		}
	case "=", "<>", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "||":
		r.emit(op, j, true)
	case "^":
		r.emit("div", j, true) // as a bare ^ (rewrite.go)
	default:
		return 0, p.notSupported(toks[j], "operator %s is not supported", op)
	}
	return j + 2, nil
}

// collate drops COLLATE name at token i (name: default, "default", "C",
// "POSIX", optionally qualified by pg_catalog) and returns the token after it.
func (r *rewriter) collate(i, to int) (end int, err error) {
	p := r.p
	toks := p.toks
	j := i + 1
	if j+1 < to && toks[j].Val == "pg_catalog" && toks[j+1].isOp(".") {
		j += 2
	}
	if j >= to || toks[j].Kind != tIdent && toks[j].Kind != tQIdent {
		return 0, p.syntaxError(toks[min(j, to)])
	}
	switch toks[j].Val {
	case "default", "C", "POSIX", "c", "posix", "ucs_basic":
		return j + 1, nil
	}
	return 0, p.positioned(sqlerr.New(sqlerr.FeatureNotSupported, "collation %q is not supported (streamdb compares text bytewise, as collation \"C\")", toks[j].Val), toks[j])
}

// catalogTypes are the PostgreSQL types that exist only in catalog
// queries: oid and name read as bigint and text (pg_catalog's columns are
// those), the reg* types become pg_reg(x, 'regclass'), which the binder
// resolves against the catalog (an oid to its name, a name to its oid).
var catalogTypes = map[string]string{
	"oid": "bigint", "name": "text", "regtype": "", "regclass": "", "regrole": "",
	"regnamespace": "", "regproc": "", "regprocedure": "",
}

// catalogCast rewrites x::oid, x::pg_catalog.regclass, ... at the "::"
// token i (prim is where x's piece begins) and returns the token after the
// type name; ok is false for any other type.
func (r *rewriter) catalogCast(i, to, prim int) (end int, ok bool) {
	toks := r.p.toks
	j := i + 1
	if j+1 < to && toks[j].is("pg_catalog") && toks[j+1].isOp(".") {
		j += 2
	}
	if j >= to || toks[j].Kind != tIdent {
		return 0, false
	}
	target, ok := catalogTypes[toks[j].Val]
	if !ok {
		return 0, false
	}
	if target != "" {
		r.out[prim].pre = "pg_cast(" + r.out[prim].pre
		r.emit(", "+quote(target)+")", i, false)
	} else {
		r.out[prim].pre = "pg_reg(" + r.out[prim].pre
		r.emit(", "+quote(toks[j].Val)+")", i, false)
	}
	return j + 1, true
}

// relName reads a relation name a statement creates, drops or writes,
// possibly qualified by a schema: public.t is t; a system schema
// (pg_catalog, information_schema) is 42501, as PostgreSQL refuses to
// change its catalogs; any other schema does not exist (3F000).
func (p *parser) relName() (string, error) {
	first := p.at()
	n, err := p.name()
	if err != nil {
		return "", err
	}
	schema, rel, ok := strings.Cut(n, ".")
	if !ok {
		return n, nil
	}
	switch schema {
	case "public":
		if strings.Contains(rel, ".") {
			return "", p.positioned(sqlerr.New(sqlerr.FeatureNotSupported, "cross-database references are not implemented: %s", n), first)
		}
		return rel, nil
	case "pg_catalog", "information_schema":
		return "", p.positioned(sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied: %q is a system schema", schema), first)
	}
	return "", p.positioned(sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", schema), first)
}

// relNameList reads relName[, relName...].
func (p *parser) relNameList() ([]string, error) {
	var names []string
	for {
		n, err := p.relName()
		if err != nil {
			return nil, err
		}
		names = append(names, n)
		if !p.at().isOp(",") {
			return names, nil
		}
		p.i++
	}
}

// trimList rewrites TRIM with a comma at token i, the forms of PostgreSQL
// 15's grammar that TiDB's lacks:
//
//	TRIM([BOTH|LEADING|TRAILING] chars FROM s, more...)  → btrim(s, more..., chars)
//	TRIM([BOTH|LEADING|TRAILING] [FROM] s, more...)      → btrim(s, more...)
//
// (ltrim for LEADING, rtrim for TRAILING), which is what PostgreSQL makes
// of them: the list after FROM, then the characters, as the arguments of
// the function (so TRIM(FROM s, 'x') is btrim(s, 'x') and three arguments
// are 42883, as there). ok is false when the parentheses hold no comma at
// their top level: TiDB parses those forms and the binder reads them
// (sql/bind trimFunc). end is the token after ")".
func (r *rewriter) trimList(i, to int, space bool) (end int, ok bool, err error) {
	p := r.p
	toks := p.toks
	// The closing parenthesis, the top-level FROM and commas.
	from := -1
	var commas []int
	close := r.scanCall(i, to, func(k int, t token) {
		switch {
		case t.isOp(","):
			commas = append(commas, k)
		case t.is("from") && from < 0:
			from = k
		}
	})
	if close < 0 || len(commas) == 0 {
		return 0, false, nil
	}
	fn := "btrim"
	k := i + 2
	switch {
	case toks[k].is("both"):
		k++
	case toks[k].is("leading"):
		fn, k = "ltrim", k+1
	case toks[k].is("trailing"):
		fn, k = "rtrim", k+1
	}
	listFrom := k
	var chars [2]int // the characters' tokens, if any
	if from >= 0 {
		if commas[0] < from {
			return 0, true, p.syntaxError(toks[from]) // TRIM(a, b FROM c)
		}
		chars = [2]int{k, from}
		listFrom = from + 1
	}
	// The arguments: the list's items split at its commas, then the characters.
	var args [][2]int
	for _, c := range append(commas, close) {
		if c == listFrom {
			return 0, true, p.syntaxError(toks[c])
		}
		args = append(args, [2]int{listFrom, c})
		listFrom = c + 1
	}
	if chars[1] > chars[0] {
		args = append(args, chars)
	}
	end, err = r.emitCall(fn, i, args, close, space)
	return end, true, err
}

// scanCall calls visit with each token at the top level of the
// parentheses opened at toks[i+1] and returns the closing one's index (-1
// when they do not close before to).
func (r *rewriter) scanCall(i, to int, visit func(k int, t token)) int {
	depth := 0
	for k := i + 2; k < to; k++ {
		switch t := r.p.toks[k]; {
		case t.isOp("(") || t.isOp("["):
			depth++
		case t.isOp(")") && depth == 0:
			return k
		case t.isOp(")") || t.isOp("]"):
			depth--
		case depth == 0:
			visit(k, t)
		}
	}
	return -1
}

// emitCall writes the call fn(args...) in place of toks[i:close+1]: each
// argument the token range [from, to) rewritten on its own (an empty one
// is a syntax error); end is the token after close.
func (r *rewriter) emitCall(fn string, i int, args [][2]int, close int, space bool) (end int, err error) {
	p := r.p
	r.emit(fn+"(", i, space)
	for n, a := range args {
		if n > 0 {
			r.emit(",", a[0], false)
		}
		arg := &rewriter{p: p}
		if err := arg.rewrite(a[0], a[1]); err != nil {
			return 0, err
		}
		if len(arg.out) == 0 || arg.emits || arg.eowc {
			return 0, p.syntaxError(p.toks[a[0]])
		}
		r.out = append(r.out, arg.out...)
	}
	r.emit(")", close, false)
	return close + 1, nil
}
