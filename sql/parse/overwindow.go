package parse

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
