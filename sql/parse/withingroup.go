package parse

import (
	"github.com/streamdb/streamdb/sqlerr"
)

// WithinGroupFunc is the internal function an ordered-set aggregate is
// written with for TiDB, which has no WITHIN GROUP:
//
//	percentile_cont(f) WITHIN GROUP (ORDER BY x DESC)
//	  → max(pg_within_group('percentile_cont', x, 1, f))
//
// (the arguments: the aggregate's name, the ORDER BY expression, 1 for
// DESC else 0, then the direct arguments). max makes it an aggregate call
// in TiDB's tree; sql/bind recognises the inner call and binds the
// ordered-set aggregate named by its first argument, so errors name it.
const WithinGroupFunc = "pg_within_group"

// orderedSetAggs are the ordered-set aggregates streamdb has.
var orderedSetAggs = map[string]bool{"percentile_cont": true, "percentile_disc": true, "mode": true}

// withinGroup rewrites the call whose arguments' frame is f, closed by the
// ")" at toks[close] and followed by WITHIN GROUP (ORDER BY x [ASC|DESC]
// [NULLS FIRST|LAST]), into WithinGroupFunc's form; it returns the token
// after the clause. NULLS FIRST/LAST changes nothing: the aggregates skip
// NULLs.
func (r *rewriter) withinGroup(f frame, close, to int) (end int, err error) {
	p := r.p
	toks := p.toks
	fn := toks[r.out[f.start].tok].Val
	if !orderedSetAggs[fn] {
		return 0, p.positioned(sqlerr.New(sqlerr.UndefinedFunction, "function %s ... WITHIN GROUP does not exist: %s is not an ordered-set aggregate", fn, fn), toks[close+1])
	}
	open := close + 3
	if open+2 >= to || !toks[open].isOp("(") || !toks[open+1].is("order") || !toks[open+2].is("by") {
		return 0, p.syntaxError(toks[min(open+1, to)])
	}
	from, depth, items := open+3, 0, 1
	end = from
	for ; end < to && (depth > 0 || !toks[end].isOp(")")); end++ {
		switch {
		case toks[end].isOp("("), toks[end].isOp("["):
			depth++
		case toks[end].isOp(")"), toks[end].isOp("]"):
			depth--
		case depth == 0 && toks[end].isOp(","):
			items++
		}
	}
	if end >= to {
		return 0, p.syntaxError(toks[to])
	}
	if items > 1 {
		return 0, p.positioned(sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d ORDER BY expressions does not exist: it takes one", fn, items), toks[open+1])
	}
	exprTo := end
	if exprTo-2 > from && toks[exprTo-2].is("nulls") && (toks[exprTo-1].is("first") || toks[exprTo-1].is("last")) {
		exprTo -= 2
	}
	desc := "0"
	if exprTo-1 > from && (toks[exprTo-1].is("desc") || toks[exprTo-1].is("asc")) {
		if toks[exprTo-1].is("desc") {
			desc = "1"
		}
		exprTo--
	}
	if exprTo == from {
		return 0, p.syntaxError(toks[from])
	}
	sub := &rewriter{p: p}
	if err := sub.rewrite(from, exprTo); err != nil {
		return 0, err
	}
	if len(sub.out) == 0 || sub.emits {
		return 0, p.syntaxError(toks[from])
	}
	if after := end + 1; after < to && (toks[after].is("over") || toks[after].is("filter")) {
		if toks[after].is("over") {
			return 0, p.notSupported(toks[after], "OVER is not supported for ordered-set aggregate %s", fn)
		}
		return 0, p.notSupported(toks[after], "FILTER is not supported with ordered-set aggregate %s", fn)
	}
	direct := append([]piece(nil), r.out[f.open+1:]...)
	r.out = r.out[:f.open+1]
	r.out[f.start].text = "max(" + WithinGroupFunc
	r.emit(quote(fn)+",", close, false)
	sub.out[0].space = true
	r.out = append(r.out, sub.out...)
	r.emit(", "+desc, close, false)
	if len(direct) > 0 {
		r.emit(",", close, false)
		direct[0].space = true
		r.out = append(r.out, direct...)
	}
	r.emit("))", end, false)
	return end + 1, nil
}
