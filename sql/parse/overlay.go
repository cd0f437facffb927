package parse

// overlayList rewrites PostgreSQL's OVERLAY(s PLACING t FROM n [FOR m]),
// which TiDB's grammar lacks, into the call overlay(s, t, n [, m]) that
// the binder resolves (sql/bind/funcs_more.go). toks[i] is "overlay" and
// toks[i+1] "("; ok is false for a call without PLACING (the plain form
// overlay(s, t, n [, m]), left as it is).
func (r *rewriter) overlayList(i, to int, space bool) (end int, ok bool, err error) {
	p := r.p
	toks := p.toks
	placing, from, forTok := -1, -1, -1
	close := r.scanCall(i, to, func(k int, t token) {
		switch {
		case t.is("placing") && placing < 0:
			placing = k
		case t.is("from") && placing >= 0 && from < 0:
			from = k
		case t.is("for") && from >= 0 && forTok < 0:
			forTok = k
		}
	})
	if placing < 0 || close < 0 {
		return 0, false, nil
	}
	if from < 0 {
		return 0, true, p.syntaxError(toks[close])
	}
	args := [][2]int{{i + 2, placing}, {placing + 1, from}}
	if forTok >= 0 {
		args = append(args, [2]int{from + 1, forTok}, [2]int{forTok + 1, close})
	} else {
		args = append(args, [2]int{from + 1, close})
	}
	end, err = r.emitCall("overlay", i, args, close, space)
	return end, true, err
}
