package parse

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
// conjuncts of ON and binds the join as a lookup join. The event-time
// form, FOR SYSTEM_TIME AS OF s.ts, is refused (0A000) here.

// LookupMarker is the call the dialect layer puts first in a lookup join's ON.
const LookupMarker = "pg_lookup_join"

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
			r.lookupOn = r.lookupOn[:len(r.lookupOn)-1]
			r.emit("on "+LookupMarker+"() and", i, space)
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
		return 0, p.notSupported(p.toks[j],
			"FOR SYSTEM_TIME AS OF an event time (a versioned-table join) is not supported; FOR SYSTEM_TIME AS OF PROCTIME() (a lookup join of the table's current rows) is")
	}
	r.lookupOn = append(r.lookupOn, depth)
	return j + 3, nil
}

// lookupDone checks that every lookup join found its ON.
func (r *rewriter) lookupDone(to int) error {
	if len(r.lookupOn) > 0 {
		return r.p.notSupported(r.p.toks[to], "FOR SYSTEM_TIME AS OF PROCTIME() needs a JOIN ... ON condition")
	}
	return nil
}
