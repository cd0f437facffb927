package parse

// PostgreSQL's ORDER BY and DISTINCT inside a collecting aggregate
// (array_agg(x ORDER BY y), string_agg(DISTINCT x, ','),
// jsonb_object_agg(k, v ORDER BY t)): TiDB's grammar takes both only in
// group_concat, with the ORDER BY before the separator. So string_agg's
// delimiter is moved after its ORDER BY, and the other aggregates are
// written as group_concat with a marker separator (AggFromMarker), which
// the binder reads back (sql/bind stringagg.go).

// sortedAggs are the aggregates written as group_concat with a marker
// when DISTINCT or ORDER BY appears inside the call.
var sortedAggs = map[string]bool{"array_agg": true, "jsonb_agg": true, "jsonb_object_agg": true}

// sortedAggStart returns the aggregate starting at toks[i] if it is one of
// sortedAggs called with DISTINCT or with ORDER BY inside, else "".
func sortedAggStart(toks []token, i, to int) string {
	t := toks[i]
	if t.Kind != tIdent || !sortedAggs[t.Val] || i+2 >= to || !toks[i+1].isOp("(") || i > 0 && toks[i-1].isOp(".") {
		return ""
	}
	if toks[i+2].is("distinct") {
		return t.Val
	}
	depth := 0
	for j := i + 2; j < to; j++ {
		switch {
		case toks[j].isOp("("):
			depth++
		case toks[j].isOp(")"):
			if depth == 0 {
				return ""
			}
			depth--
		case depth == 0 && toks[j].is("order") && j+1 < to && toks[j+1].is("by"):
			return t.Val
		}
	}
	return ""
}

// endSortedAgg is called at the ")" (token tok) closing f: it writes the
// marker separator of a sortedAggs call, and moves string_agg's separator
// after the ORDER BY inside the call. ORDER BY inside a call with OVER is
// refused, as PostgreSQL does (TiDB's grammar would drop it).
func (r *rewriter) endSortedAgg(f frame, tok int) error {
	if (f.aggMarker != "" || f.stringAgg) && f.orderAt > 0 && tok+1 < len(r.p.toks) && r.p.toks[tok+1].is("over") {
		return r.p.notSupported(r.p.toks[tok+1], "aggregate ORDER BY is not implemented for window functions")
	}
	switch {
	case f.aggMarker != "":
		r.emit("separator "+aggMarkerSQL(f.aggMarker), tok, true)
	case f.stringAgg && f.sepAt > 0 && f.orderAt > f.sepAt:
		sep := append([]piece(nil), r.out[f.sepAt:f.orderAt]...)
		r.out = append(r.out[:f.sepAt], r.out[f.orderAt:]...)
		r.out = append(r.out, sep...)
	}
	return nil
}

// filterCall rewrites FILTER (WHERE cond) after a sortedAggs call f
// closed at token close, which keeps NULL values, so the CASE WHEN of
// filterClause cannot drop rows from it: the call, ended as usual, is
// wrapped as pg_agg_filter(cond, call), which the binder reads as the
// call with a filter (sql/bind aggfilter.go). It returns the token after
// the FILTER clause.
func (r *rewriter) filterCall(f frame, close, to int) (end int, err error) {
	sub, end, err := r.filterCond(close, to)
	if err != nil {
		return 0, err
	}
	if end+1 < len(r.p.toks) && r.p.toks[end+1].is("over") {
		return r.windowFilter(f, sub, close, end)
	}
	if err := r.endSortedAgg(f, close); err != nil {
		return 0, err
	}
	r.emit(")", close, false)
	r.wrapFilter(f.start, len(r.out), "pg_agg_filter", sub, close)
	return end + 1, nil
}

// wrapFilter writes the pieces r.out[from:to] as fn(cond, pieces), cond
// being sub's; close is the aggregate call's ")" token.
func (r *rewriter) wrapFilter(from, to int, fn string, sub *rewriter, close int) {
	moved := append([]piece(nil), r.out[from:to]...)
	moved[0].space = true
	rest := append([]piece(nil), r.out[to:]...)
	r.out = r.out[:from]
	r.emit(fn+"(", close+1, true)
	r.out = append(r.out, sub.out...)
	r.emit(",", close+1, false)
	r.out = append(r.out, moved...)
	r.emit(")", close, false)
	r.out = append(r.out, rest...)
}

// windowFilter rewrites FILTER (WHERE cond) after array_agg(x),
// jsonb_agg(x) or jsonb_object_agg(k, v) (the call f, closed at token
// close) that OVER follows, the FILTER clause ending at token end: the
// first argument becomes pg_win_filter(cond, x), which the binder reads
// (sql/bind windowcollect.go); TiDB's grammar takes no call around a
// window function. It returns the token after the FILTER clause.
func (r *rewriter) windowFilter(f frame, sub *rewriter, close, end int) (int, error) {
	p := r.p
	switch {
	case f.orderAt > 0:
		return 0, p.notSupported(p.toks[end+1], "aggregate ORDER BY is not implemented for window functions")
	case f.aggMarker != "" && (!pgAggs[f.aggMarker] || f.open+1 < len(r.out) && p.toks[r.out[f.open+1].tok].is("distinct")):
		return 0, p.notSupported(p.toks[end+1], "DISTINCT is not implemented for window functions")
	}
	to := len(r.out) // the first argument's end
	if f.commaAt > f.open {
		to = f.commaAt
	}
	if to == f.open+1 {
		return 0, p.syntaxError(p.toks[close])
	}
	r.wrapFilter(f.open+1, to, "pg_win_filter", sub, close)
	if f.aggMarker != "" { // stddev(x) FILTER (...) OVER w: the marker separator (pgaggs.go)
		if err := r.endSortedAgg(f, close); err != nil {
			return 0, err
		}
	}
	r.emit(")", close, false)
	return end + 1, nil
}
