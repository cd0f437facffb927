package parse

import (
	tidb "github.com/pingcap/tidb/pkg/parser"
)

// pgReserved are the words PostgreSQL 15 reserves (pg_get_keywords()
// categories R and T): none of them can name a column or table unquoted
// there, so streamdb never quotes them (they keep their grammar role).
var pgReserved = map[string]bool{}

func init() {
	for _, w := range []string{"all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric",
		"authorization", "binary", "both", "case", "cast", "check", "collate", "collation", "column",
		"concurrently", "constraint", "create", "cross", "current_catalog", "current_date", "current_role",
		"current_schema", "current_time", "current_timestamp", "current_user", "default", "deferrable", "desc",
		"distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign", "freeze", "from", "full",
		"grant", "group", "having", "ilike", "in", "initially", "inner", "intersect", "into", "is", "isnull",
		"join", "lateral", "leading", "left", "like", "limit", "localtime", "localtimestamp", "natural", "not",
		"notnull", "null", "offset", "on", "only", "or", "order", "outer", "overlaps", "placing", "primary",
		"references", "returning", "right", "select", "session_user", "similar", "some", "symmetric", "table",
		"tablesample", "then", "to", "trailing", "true", "union", "unique", "user", "using", "variadic",
		"verbose", "when", "where", "window", "with"} {
		pgReserved[w] = true
	}
	// dec, schema and schemas are TiDB synonyms (of decimal, database and
	// databases) that its keyword table does not list as reserved.
	for _, w := range []string{"dec", "schema", "schemas"} {
		tidbOnlyReserved[w] = true
	}
	for _, k := range tidb.Keywords {
		if k.Reserved && !pgReserved[asciiLower(k.Word)] {
			tidbOnlyReserved[asciiLower(k.Word)] = true
		}
	}
}

// tidbOnlyReserved are the words TiDB's grammar reserves and PostgreSQL
// does not (key, rows, values, partition, revoke, ...). Where such a word
// stands as a name the rewriter quotes it for TiDB (isName).
var tidbOnlyReserved = map[string]bool{}

// nameBefore are tokens after which a name may follow; nameAfter are tokens
// a name may precede. A TiDB-only reserved word between the two is a name:
// the grammar uses these words elsewhere (PRIMARY KEY, PARTITION BY, ROWS
// BETWEEN, VALUES (, INTERVAL '1' DAY, ON DELETE SET NULL, ...).
var (
	nameBefore = map[string]bool{"select": true, ",": true, "(": true, "by": true, "where": true, "and": true,
		"or": true, "not": true, "from": true, "join": true, "into": true, "update": true, "table": true,
		"when": true, "then": true, "else": true, "having": true, "distinct": true, "on": true, "case": true,
		"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true, "+": true, "-": true,
		"*": true, "/": true, "%": true, "||": true, "using": true, "exists": true, "view": true, "set": true}
	nameAfter = map[string]bool{",": true, ")": true, "from": true, "as": true, "where": true, "group": true,
		"order": true, "having": true, "limit": true, "offset": true, "union": true, "except": true,
		"intersect": true, "asc": true, "desc": true, "and": true, "or": true, "is": true, "in": true,
		"not": true, "between": true, "like": true, "ilike": true, "join": true, "left": true, "right": true,
		"inner": true, "full": true, "cross": true, "natural": true, "on": true, "using": true, "values": true,
		"set": true, "select": true, "window": true, "then": true, "else": true, "end": true, "when": true,
		"nulls": true, "emit": true, "returning": true, "fetch": true,
		"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true, "+": true, "-": true,
		"*": true, "/": true, "%": true, "||": true, "::": true, "[": true, ".": true}
)

// isName reports whether the unquoted word at token i (of the statement's
// tokens from..to) is a TiDB-only reserved word used as a name, which the
// rewriter must quote: a column, a table, a qualifier (w.x) or a bare
// output label (SELECT 1 w).
func isName(toks []token, i, from, to int) bool {
	w := toks[i].Val
	if !tidbOnlyReserved[w] || i == from {
		return false
	}
	prev := toks[i-1]
	next := token{Kind: tEOF}
	if i+1 < to {
		next = toks[i+1]
	}
	if prev.isOp(".") {
		return false // TiDB takes any word after a dot
	}
	if next.isOp(".") {
		return true
	}
	if prev.Kind == tOp && prev.Val == "::" {
		return false
	}
	if (prev.is("on") || prev.is("do")) && (w == "delete" || w == "update") {
		return false // ON DELETE SET NULL, DO UPDATE SET
	}
	if prev.is("not") && w == "between" {
		return false // x NOT BETWEEN -1 AND 3
	}
	before := (prev.Kind == tIdent || prev.Kind == tOp) && nameBefore[prev.Val]
	after := next.Kind == tEOF || (next.Kind == tIdent || next.Kind == tOp) && nameAfter[next.Val]
	switch {
	case next.isOp("("):
		// INSERT INTO w (a) and a table named w in CREATE VIEW ... FROM w
		// are names; w( elsewhere is a call or grammar (VALUES (, ROW().
		return prev.is("into")
	case before && after:
		return true
	case before && (prev.is("from") || prev.is("join") || prev.is("into") || prev.is("update") || prev.is("select") || prev.isOp(",")) &&
		(next.Kind == tIdent && !notFuncKeywords[next.Val] && !clauseKeywords[next.Val] && !tidbOnlyReserved[next.Val] || next.Kind == tQIdent):
		// FROM w x, SELECT w x: a name with an alias.
		return true
	case after && (next.Kind == tEOF || next.isOp(",") || next.is("from")) &&
		(prev.Kind == tNumber || prev.Kind == tString || prev.Kind == tQIdent || prev.isOp(")") ||
			prev.Kind == tIdent && !tidbOnlyReserved[prev.Val] && !notFuncKeywords[prev.Val]):
		// SELECT 1 w, x w FROM: a bare output label.
		return true
	}
	return false
}
