package parse

import "strings"

// Set-returning functions in FROM. TiDB's grammar has no function calls
// among FROM items, so the dialect layer writes
//
//	FROM [pg_catalog.]generate_series(a, b) [AS] s[(n)]
//	  → FROM (SELECT pg_srf_generate_series(a, b)) [AS] s[(n)]
//	FROM unnest(x)   (no alias)
//	  → FROM (SELECT pg_srf_unnest(x)) AS "unnest"
//
// and the binder reads such a derived table as the function's rows
// (sql/bind/srf.go). Only these names, and only where a FROM item starts
// (after FROM, JOIN, or a comma of a FROM list; a LATERAL before the
// name is dropped, as a function in FROM is lateral anyway).

// srfNames are the set-returning functions streamdb has.
var srfNames = map[string]bool{"generate_series": true, "unnest": true, "pg_options_to_table": true,
	"string_to_table": true, "regexp_split_to_table": true, "regexp_matches": true,
	"jsonb_array_elements": true, "jsonb_array_elements_text": true, "jsonb_each": true, "jsonb_each_text": true}

// srfStart reports whether toks[i], a function name followed by "(", is a
// set-returning function starting a FROM item (its schema, if any, was
// emitted as the last two pieces: pg_catalog and ".").
func (r *rewriter) srfStart(i, from int) bool {
	toks := r.p.toks
	t := toks[i]
	if t.Kind != tIdent || !srfNames[t.Val] || i+1 >= len(toks) || !toks[i+1].isOp("(") {
		return false
	}
	j := i - 1
	if j-1 >= from && toks[j].isOp(".") && toks[j-1].is("pg_catalog") {
		j -= 2
	}
	if j > from && toks[j].is("lateral") { // LATERAL: implicit for a function in FROM
		j--
	}
	if j < from {
		return false
	}
	switch p := toks[j]; {
	case p.is("from"), p.is("join"):
		return true
	case p.isOp(","):
		return r.inFromList(j, from)
	}
	return false
}

// inFromList reports whether the comma toks[k] separates FROM items: the
// nearest clause keyword before it at its parenthesis depth is FROM.
func (r *rewriter) inFromList(k, from int) bool {
	toks := r.p.toks
	depth := 0
	for j := k - 1; j >= from; j-- {
		t := toks[j]
		switch {
		case t.isOp(")"):
			depth++
		case t.isOp("("):
			if depth == 0 {
				return false // the comma is inside a call or a list
			}
			depth--
		case depth == 0 && t.Kind == tIdent:
			switch t.Val {
			case "from":
				return true
			case "select", "where", "group", "having", "order", "limit", "offset", "union", "intersect",
				"except", "window", "values", "set", "returning", "by":
				return false
			}
		}
	}
	return false
}

// emitSRF emits the start of the derived table for the function at
// toks[i] and returns its frame; the schema pieces before it are dropped.
func (r *rewriter) emitSRF(i, from int, space bool) frame {
	toks := r.p.toks
	if i-2 >= from && toks[i-1].isOp(".") && toks[i-2].is("pg_catalog") && len(r.out) >= 2 {
		space = r.out[len(r.out)-2].space
		r.out = r.out[:len(r.out)-2]
	}
	if n := len(r.out); n > 0 && strings.EqualFold(r.out[n-1].text, "lateral") {
		space = r.out[n-1].space
		r.out = r.out[:n-1]
	}
	k := r.emit("(select pg_srf_"+toks[i].Val+"(", i, space)
	return frame{start: k, open: k, srf: toks[i].Val}
}

// srfAlias is what follows the ")" closing a set-returning function at
// toks[i]: an alias is kept; without one, PostgreSQL's (the function's
// name) is added, as TiDB requires derived tables to have one.
func (r *rewriter) srfAlias(fn string, i, to int) string {
	toks := r.p.toks
	if i+1 < to {
		n := toks[i+1]
		if n.is("as") || n.Kind == tQIdent || n.Kind == tIdent && !notFuncKeywords[n.Val] && !clauseWords[n.Val] {
			return "))"
		}
	}
	return ")) as " + quoteIdent(fn)
}

// clauseWords may follow a FROM item but are not aliases.
var clauseWords = map[string]bool{"left": true, "right": true, "full": true, "inner": true, "cross": true,
	"natural": true, "group": true, "order": true, "window": true, "fetch": true, "for": true}

// string_agg(x, delimiter) is written as TiDB's
// group_concat(x separator delimiter) (the delimiter must be a string
// literal there); the binder gives it string_agg's meaning
// (sql/bind/stringagg.go). stringAggStart reports whether toks[i] starts
// such a call.
func stringAggStart(toks []token, i int) bool {
	return toks[i].is("string_agg") && i+1 < len(toks) && toks[i+1].isOp("(")
}
