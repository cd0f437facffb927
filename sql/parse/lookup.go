package parse

import "strings"

// Temporal (lookup) joins, Flink's and RisingWave's form:
//
//	s [LEFT] JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() [[AS] d] ON s.k = dim.k
//
// TiDB has no FOR SYSTEM_TIME. The rewrite drops the four words and the
// PROCTIME() call and puts a marker conjunct first in the join's ON
// condition, as ASOF joins do (asof.go):
//
//	s JOIN dim ON pg_lookup_join() AND s.k = dim.k
//
// The binder (sql/bind lookup.go) finds the marker among the top-level
// conjuncts of ON and binds the join as a lookup join.
//
// The event-time form (a versioned-table join), FOR SYSTEM_TIME AS OF
// s.ts with s.ts a column of the left side, is rewritten the same way
// with the column as the marker's argument:
//
//	s JOIN rates r ON pg_versioned_join(s.ts) AND s.k = r.k
//
// and bound as a versioned join (sql/bind versioned.go). Only a column
// reference ([table.]column) may follow AS OF there.

// LookupMarker is the call the dialect layer puts first in a lookup join's ON.
const LookupMarker = "pg_lookup_join"

// VersionedMarker is the call, with the probe's time column as its one
// argument, put first in a versioned (event-time temporal) join's ON.
const VersionedMarker = "pg_versioned_join"

// lookupWord reports whether toks[i] starts a FOR SYSTEM_TIME AS OF
// clause, or is a word at the depth of a lookup join still waiting for
// its ON that ends or misplaces it.
func (r *rewriter) lookupWord(i, to, depth int) bool {
	toks := r.p.toks
	if toks[i].is("for") && i+3 < to && toks[i+1].is("system_time") && toks[i+2].is("as") && toks[i+3].is("of") {
		return true
	}
	if len(r.lookupOn) == 0 {
		return false
	}
	if top := r.lookupOn[len(r.lookupOn)-1]; top > depth {
		return true // the table's parenthesis closed without ON
	} else if top < depth {
		return false
	}
	switch toks[i].Val {
	case "on", "using", "natural", "join", "where", "group", "having", "order", "limit", "union", "window":
		return toks[i].Kind == tIdent
	}
	return false
}

// lookupJoin rewrites the token lookupWord accepted and returns the index
// of the first token not consumed.
func (r *rewriter) lookupJoin(i, to, depth int, space bool) (int, error) {
	p := r.p
	t := p.toks[i]
	if !t.is("for") || len(r.lookupOn) > 0 && r.lookupOn[len(r.lookupOn)-1] > depth {
		if len(r.lookupOn) > 0 && r.lookupOn[len(r.lookupOn)-1] > depth {
			return 0, p.notSupported(t, "FOR SYSTEM_TIME AS OF PROCTIME() needs a JOIN ... ON condition")
		}
		switch t.Val {
		case "on":
			mark := r.lookupMark[len(r.lookupMark)-1]
			r.lookupOn = r.lookupOn[:len(r.lookupOn)-1]
			r.lookupMark = r.lookupMark[:len(r.lookupMark)-1]
			r.emit("on "+mark+" and", i, space)
			return i + 1, nil
		case "using", "natural":
			return 0, p.notSupported(t, "a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) ... USING is not supported; write JOIN ... ON")
		}
		return 0, p.notSupported(t, "FOR SYSTEM_TIME AS OF PROCTIME() needs a JOIN ... ON condition")
	}
	j := i + 4 // after FOR SYSTEM_TIME AS OF
	if j >= to {
		return 0, p.syntaxError(p.toks[to])
	}
	if !(p.toks[j].is("proctime") && j+2 < to && p.toks[j+1].isOp("(") && p.toks[j+2].isOp(")")) {
		// The event-time form: a [table.]column of the left side.
		ref, end := columnRef(p.toks, j, to)
		if ref == "" {
			return 0, p.notSupported(p.toks[j],
				"FOR SYSTEM_TIME AS OF takes PROCTIME() (a lookup join) or a time column of the left side, [table.]column (a versioned-table join)")
		}
		r.lookupOn = append(r.lookupOn, depth)
		r.lookupMark = append(r.lookupMark, VersionedMarker+"("+ref+")")
		return end, nil
	}
	r.lookupOn = append(r.lookupOn, depth)
	r.lookupMark = append(r.lookupMark, LookupMarker+"()")
	return j + 3, nil
}

// columnRef reads a column reference, name or name.name, at toks[j:to] and
// returns its TiDB text and the index after it; "" if there is none. A
// call or an expression (a "(" or an operator after it) is not one.
func columnRef(toks []token, j, to int) (string, int) {
	name := func(t token) string {
		switch t.Kind {
		case tIdent:
			return t.Val
		case tQIdent:
			return `"` + strings.ReplaceAll(t.Val, `"`, `""`) + `"`
		}
		return ""
	}
	ref := name(toks[j])
	if ref == "" {
		return "", 0
	}
	end := j + 1
	if end+1 < to && toks[end].isOp(".") {
		n := name(toks[end+1])
		if n == "" {
			return "", 0
		}
		ref += "." + n
		end += 2
	}
	if end < to && toks[end].Kind == tOp && !toks[end].isOp(")") && !toks[end].isOp(",") {
		return "", 0
	}
	return ref, end
}

// lookupDone checks that every lookup join found its ON.
func (r *rewriter) lookupDone(to int) error {
	if len(r.lookupOn) > 0 {
		return r.p.notSupported(r.p.toks[to], "FOR SYSTEM_TIME AS OF PROCTIME() needs a JOIN ... ON condition")
	}
	return nil
}
