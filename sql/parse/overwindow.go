package parse

import "github.com/streamdb/streamdb/sqlerr"

// windowOffsetArg finds, in a call lag(...), lead(...) or nth_value(...)
// at toks[i], a second argument TiDB's grammar does not read (it takes only
// an unsigned integer literal there, PostgreSQL any integer expression):
// the index of its first token, or -1 when the call is fine or is not one
// of these.
func windowOffsetArg(toks []token, i, to int) int {
	switch toks[i].Val {
	case "lag", "lead", "nth_value":
	default:
		return -1
	}
	if i+1 >= to || !toks[i+1].isOp("(") || i > 0 && toks[i-1].isOp(".") {
		return -1
	}
	depth, arg, start := 0, 0, -1
	for k := i + 2; k < to; k++ {
		t := toks[k]
		switch {
		case t.isOp("(") || t.isOp("["):
			depth++
		case (t.isOp(")") || t.isOp("]")) && depth > 0:
			depth--
		case depth == 0 && (t.isOp(",") || t.isOp(")")):
			if arg == 1 && k > start && (k != start+1 || toks[start].Kind != tNumber || !isDigits(toks[start].Val)) {
				return start
			}
			if t.isOp(")") {
				return -1
			}
			arg++
			if arg == 1 {
				start = k + 1
				if start >= to {
					return -1
				}
			}
		}
	}
	return -1
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// frameOffsetError reports, at PRECEDING or FOLLOWING (toks[i]), the
// offsets TiDB's grammar cannot read but PostgreSQL reads and rejects when
// it runs the query: NULL (22004) and a negative literal (22013), with
// PostgreSQL's messages. Nil for anything else.
func frameOffsetError(toks []token, i, from int) error {
	if i-1 < from {
		return nil
	}
	k := i - 1 // the offset's first token
	null := toks[k].Kind == tIdent && toks[k].Val == "null"
	// A unary minus only: after BETWEEN, AND, ROWS, RANGE or GROUPS (5 - 1
	// PRECEDING is an expression TiDB cannot read: its syntax error).
	neg := toks[k].Kind == tNumber && k-2 >= from && toks[k-1].isOp("-") && toks[k-2].Kind == tIdent && frameWords[toks[k-2].Val]
	if neg {
		k--
	}
	if !null && !neg {
		return nil
	}
	what := "starting"
	if k-1 >= from && toks[k-1].Kind == tIdent && toks[k-1].Val == "and" {
		what = "ending"
	}
	if null {
		return sqlerr.New(sqlerr.NullValueNotAllowed, "frame %s offset must not be null", what)
	}
	return sqlerr.New("22013", "frame %s offset must not be negative", what)
}

var frameWords = map[string]bool{"between": true, "and": true, "rows": true, "range": true, "groups": true}

// frameOffsetPiece finds, at PRECEDING or FOLLOWING (toks[i]), an offset
// expression PostgreSQL takes and TiDB's grammar does not (anything but a
// lone number, parameter, UNBOUNDED or INTERVAL literal): the index of the
// output piece where the offset begins, or -1.
func (r *rewriter) frameOffsetPiece(toks []token, i, from int) int {
	w, depth := -1, 0
	for k := i - 1; k >= from && w < 0; k-- {
		t := toks[k]
		switch {
		case t.isOp(")") || t.isOp("]"):
			depth++
		case t.isOp("(") || t.isOp("["):
			if depth == 0 {
				return -1
			}
			depth--
		case t.isOp(";"):
			return -1
		case depth == 0 && t.Kind == tIdent && frameWords[t.Val]:
			w = k
		}
	}
	if w < 0 || w+1 >= i {
		return -1
	}
	if first := toks[w+1]; w+2 == i && (first.Kind == tNumber || first.Kind == tParam || first.is("unbounded")) || first.is("interval") {
		return -1
	}
	k := len(r.out)
	for k > 0 && r.out[k-1].tok > w {
		k--
	}
	if k == len(r.out) {
		return -1
	}
	return k
}

// parenFrameOffset reports whether ROWS, RANGE or GROUPS at toks[i] is
// followed by a parenthesized frame offset, ROWS (1) PRECEDING, and not by
// an alias's column list (t rows(a, b)).
func parenFrameOffset(toks []token, i, to int) bool {
	switch toks[i].Val {
	case "rows", "range", "groups":
	default:
		return false
	}
	depth := 0
	for k := i + 1; k < to; k++ {
		switch {
		case toks[k].isOp("(") || toks[k].isOp("["):
			depth++
		case toks[k].isOp(")") || toks[k].isOp("]"):
			if depth--; depth == 0 {
				return k+1 < to && (toks[k+1].is("preceding") || toks[k+1].is("following"))
			}
		}
	}
	return false
}
