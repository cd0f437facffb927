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
