package parse

import "strings"

// ASOF joins (DuckDB's and RisingWave's form):
//
//	t1 ASOF [INNER] JOIN t2 ON t1.k = t2.k AND t1.ts >= t2.ts
//	t1 ASOF LEFT [OUTER] JOIN t2 ON ...
//
// TiDB would read ASOF as t1's alias. The rewrite drops the word and puts
// a marker conjunct first in the join's ON condition:
//
//	t1 JOIN t2 ON pg_asof_join() AND t1.k = t2.k AND t1.ts >= t2.ts
//
// The binder (sql/bind asof.go) finds the marker among the top-level
// conjuncts of the ON condition and binds the join as an ASOF join; a
// marker anywhere else (a top-level OR in the condition) is refused
// there, as the condition must be equalities and one inequality anyway.
// As in DuckDB, ASOF directly before JOIN, INNER, LEFT, RIGHT or FULL is
// the keyword, not an alias ("t AS asof JOIN u" keeps the alias).
// ASOF RIGHT and FULL joins are refused (0A000), so is USING.

// AsofMarker is the call the dialect layer puts first in an ASOF join's ON.
const AsofMarker = "pg_asof_join"

// asofWord reports whether toks[i] starts or continues an ASOF join
// rewrite at parenthesis depth depth: the word ASOF before a join, or a
// word after it at the depth of the join still waiting for its ON.
func (r *rewriter) asofWord(i, from, to, depth int) bool {
	t := r.p.toks[i]
	if t.Kind != tIdent {
		return false
	}
	if t.Val == "asof" && i+1 < to && !(i > from && (r.p.toks[i-1].is("as") || r.p.toks[i-1].isOp("."))) {
		switch n := r.p.toks[i+1]; n.Val {
		case "join", "inner", "left", "right", "full":
			return n.Kind == tIdent
		}
	}
	if len(r.asofOn) == 0 {
		return false
	}
	if top := r.asofOn[len(r.asofOn)-1]; top > depth {
		return true // the right side ended without ON
	} else if top < depth {
		return false
	}
	switch t.Val {
	case "on", "using", "natural", "join", "where", "group", "having", "order", "limit", "union", "window":
		return true
	}
	return false
}

// asofJoin rewrites the token asofWord accepted; it returns the index of
// the first token not consumed.
func (r *rewriter) asofJoin(i, to, depth int, space bool) (end int, err error) {
	p := r.p
	t := p.toks[i]
	if t.Val != "asof" || len(r.asofOn) > 0 && r.asofOn[len(r.asofOn)-1] > depth {
		if len(r.asofOn) > 0 && r.asofOn[len(r.asofOn)-1] > depth {
			return 0, p.notSupported(t, "ASOF JOIN needs an ON condition (equalities and one inequality)")
		}
		switch t.Val {
		case "on":
			r.asofOn = r.asofOn[:len(r.asofOn)-1]
			r.emit("on "+AsofMarker+"() and", i, space)
			return i + 1, nil
		case "using", "natural":
			return 0, p.notSupported(t, "ASOF JOIN ... USING is not supported; write ASOF JOIN ... ON")
		case "join":
			return 0, p.notSupported(t, "the right side of an ASOF JOIN must be a table or a subquery, not a join")
		}
		return 0, p.notSupported(t, "ASOF JOIN needs an ON condition (equalities and one inequality)")
	}
	j := i + 1
	kind := p.toks[j].Val
	switch kind {
	case "right", "full":
		return 0, p.notSupported(p.toks[j], "ASOF %s JOIN is not supported (ASOF JOIN and ASOF LEFT JOIN are)", strings.ToUpper(kind))
	case "inner", "left":
		j++
		if kind == "left" && j < to && p.toks[j].is("outer") {
			j++
		}
		if j >= to || !p.toks[j].is("join") {
			return 0, p.syntaxError(p.toks[min(j, to)])
		}
	}
	if kind == "left" {
		r.emit("left join", i, space)
	} else {
		r.emit("join", i, space)
	}
	r.asofOn = append(r.asofOn, depth)
	return j + 1, nil
}

// asofDone checks that every ASOF join found its ON.
func (r *rewriter) asofDone(to int) error {
	if len(r.asofOn) > 0 {
		return r.p.notSupported(r.p.toks[to], "ASOF JOIN needs an ON condition (equalities and one inequality)")
	}
	return nil
}
