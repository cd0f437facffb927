package parse

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// tokKind classifies a token.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // unquoted identifier or keyword; Val is lower-cased
	tQIdent         // "quoted" identifier; Val keeps its case
	tNumber         // 42, 1.5, .5, 1e-3
	tString         // '..', E'..', $$..$$; Val is the decoded value
	tParam          // $1
	tOp             // operators and punctuation, including ";" "(" ")" "," "."
)

// token is one lexical token of the user's SQL. Pos and End are byte offsets
// into the whole input; Space tells whether whitespace or a comment came
// before it.
type token struct {
	Kind     tokKind
	Val      string
	Pos, End int
	Space    bool
}

// is reports whether t is the unquoted keyword kw (lower case).
func (t token) is(kw string) bool { return t.Kind == tIdent && t.Val == kw }

// isOp reports whether t is the operator op.
func (t token) isOp(op string) bool { return t.Kind == tOp && t.Val == op }

// lexer turns SQL text into tokens, the way PostgreSQL's scanner does for
// the subset streamdb accepts. It never interprets text inside a literal or
// a comment.
type lexer struct {
	src string
	pos int
}

// lex returns all tokens of src, ending with a tEOF token at len(src).
func lex(src string) ([]token, error) {
	l := &lexer{src: src}
	toks := make([]token, 0, len(src)/5+1)
	for {
		space, err := l.skipSpace()
		if err != nil {
			return nil, err
		}
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		t.Space = space
		toks = append(toks, t)
		if t.Kind == tEOF {
			return toks, nil
		}
	}
}

// skipSpace skips whitespace and comments (-- to end of line, nested /* */).
func (l *lexer) skipSpace() (bool, error) {
	start := l.pos
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "--"):
			if i := strings.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
				l.pos += i + 1
			} else {
				l.pos = len(l.src)
			}
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			begin := l.pos
			depth := 0
			for {
				rest := l.src[l.pos:]
				switch {
				case rest == "":
					return false, l.errAt(begin, "unterminated /* comment at or near %q", l.src[begin:])
				case strings.HasPrefix(rest, "/*"):
					depth++
					l.pos += 2
				case strings.HasPrefix(rest, "*/"):
					depth--
					l.pos += 2
				default:
					l.pos++
				}
				if depth == 0 {
					break
				}
			}
		default:
			return l.pos > start, nil
		}
	}
	return l.pos > start, nil
}

// errAt returns a 42601 error positioned at byte offset off.
func (l *lexer) errAt(off int, format string, args ...any) error {
	e := sqlerr.New(sqlerr.SyntaxError, format, args...)
	e.Position = charPos(l.src, off)
	return e
}

// charPos converts a byte offset into PostgreSQL's 1-based character position.
func charPos(src string, off int) int {
	if off > len(src) {
		off = len(src)
	}
	return utf8.RuneCountInString(src[:off]) + 1
}

// asciiLower folds A-Z only, as PostgreSQL folds unquoted identifiers.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// twoCharOps are the multi-character operators; anything else is one byte.
var twoCharOps = []string{"::", "||", "<>", "!=", "<=", ">=", "=>", ":="}

// jsonOps are PostgreSQL's json and jsonb operators, longest first
// (sql/parse jsonops.go rewrites them).
var jsonOps = []string{"->>", "#>>", "->", "#>", "@>", "<@", "?|", "?&", "?"}

// regexOps are PostgreSQL's regular expression match operators and its
// LIKE operators (~~ !~~ ~~* !~~*), longest first, so ~~ is one token as in
// PostgreSQL's scanner (~~5 is no double bitwise NOT there either); a lone ~
// is a oneCharOp and the dialect layer tells its binary use.
var regexOps = []string{"!~~*", "!~~", "~~*", "!~*", "~~", "!~", "~*"}

// oneCharOps are the single-character operators and punctuation. Characters
// MySQL gives another meaning (? markers, @ variables, backquotes, lone !)
// are deliberately absent, so they are syntax errors; # is PostgreSQL's
// xor, which the dialect layer rewrites (it is no comment here).
const oneCharOps = "+-*/%^<>=()[],.;:|&~#"

func (l *lexer) next() (token, error) {
	start := l.pos
	if start >= len(l.src) {
		return token{Kind: tEOF, Pos: start, End: start}, nil
	}
	c := l.src[start]
	switch {
	case (c == 'e' || c == 'E') && start+1 < len(l.src) && l.src[start+1] == '\'':
		l.pos++
		return l.quoted(start, true)
	case isIdentStart(c):
		l.pos++
		for l.pos < len(l.src) && isIdentCont(l.src[l.pos]) {
			l.pos++
		}
		return token{Kind: tIdent, Val: asciiLower(l.src[start:l.pos]), Pos: start, End: l.pos}, nil
	case c == '\'':
		return l.quoted(start, false)
	case c == '"':
		return l.quotedIdent(start)
	case isDigit(c) || c == '.' && start+1 < len(l.src) && isDigit(l.src[start+1]):
		return l.number(start)
	case c == '$':
		return l.dollar(start)
	}
	for _, op := range regexOps {
		if strings.HasPrefix(l.src[start:], op) {
			l.pos += len(op)
			return token{Kind: tOp, Val: op, Pos: start, End: l.pos}, nil
		}
	}
	for _, op := range jsonOps {
		if strings.HasPrefix(l.src[start:], op) {
			l.pos += len(op)
			return token{Kind: tOp, Val: op, Pos: start, End: l.pos}, nil
		}
	}
	for _, op := range twoCharOps {
		if strings.HasPrefix(l.src[start:], op) {
			l.pos += 2
			return token{Kind: tOp, Val: op, Pos: start, End: l.pos}, nil
		}
	}
	if c == '^' || c == '#' {
		// PostgreSQL's scanner reads a run of operator characters as one
		// operator and keeps a trailing + or - when the run has a ^ or #:
		// 2^-1 is the operator ^-, which does not exist (2 ^ -1 is 0.5).
		if n := pgOpRun(l.src[start:]); n > 1 {
			e := sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s", l.src[start:start+n])
			e.Position = charPos(l.src, start)
			return token{}, e
		}
	}
	if strings.IndexByte(oneCharOps, c) >= 0 {
		l.pos++
		return token{Kind: tOp, Val: string(c), Pos: start, End: l.pos}, nil
	}
	_, n := utf8.DecodeRuneInString(l.src[start:])
	return token{}, l.errAt(start, "syntax error at or near %q", l.src[start:start+n])
}

// quoted lexes a '..' string, in which a doubled quote stands for one,
// or, if escapes, an E'..' string, which also has backslash escapes. l.pos is at the opening quote.
func (l *lexer) quoted(start int, escapes bool) (token, error) {
	var b strings.Builder
	made := false // an escape made a byte that is not ASCII, or NUL
	var high rune // the first half of a UTF-16 surrogate pair, written \uD8xx
	l.pos++       // opening quote
	for {
		if l.pos >= len(l.src) {
			return token{}, l.errAt(start, "unterminated quoted string at or near %q", l.src[start:])
		}
		c := l.src[l.pos]
		switch {
		case c == '\'' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '\'':
			b.WriteByte('\'')
			l.pos += 2
		case high != 0 && !(c == '\\' && l.pos+1 < len(l.src) && (l.src[l.pos+1] == 'u' || l.src[l.pos+1] == 'U')):
			return token{}, l.errAt(l.pos, "invalid Unicode surrogate pair at or near \"%s\"", l.nearAt(l.pos))
		case c == '\'':
			l.pos++
			val := b.String()
			if made {
				// As PostgreSQL does: the bytes escapes made are checked
				// as the text they now are part of.
				if err := types.CheckString(val); err != nil {
					return token{}, err
				}
			}
			return token{Kind: tString, Val: val, Pos: start, End: l.pos}, nil
		case c == '\\' && escapes:
			if l.pos+1 >= len(l.src) {
				return token{}, l.errAt(start, "unterminated quoted string at or near %q", l.src[start:])
			}
			l.pos += 2
			switch e := l.src[l.pos-1]; e {
			case 'x', '0', '1', '2', '3', '4', '5', '6', '7':
				// \xh[h] in hex, \o[o[o]] in octal: one byte.
				base, n, from := 16, 2, l.pos
				if e != 'x' {
					base, n, from = 8, 3, l.pos-1
				}
				end := from
				for end < len(l.src) && end < from+n && digitVal(l.src[end]) < base {
					end++
				}
				if end == from { // \x with no hex digit: an x
					b.WriteByte(e)
					continue
				}
				v := 0
				for _, d := range []byte(l.src[from:end]) {
					v = v*base + digitVal(d)
				}
				l.pos = end
				if byte(v) == 0 || v >= 0x80 {
					made = true
				}
				b.WriteByte(byte(v))
			case 'u', 'U':
				esc := l.pos - 2
				n := 4
				if e == 'U' {
					n = 8
				}
				if l.pos+n > len(l.src) || strings.IndexFunc(l.src[l.pos:l.pos+n], func(r rune) bool { return r > 0x7f || digitVal(byte(r)) >= 16 }) >= 0 {
					err := sqlerr.New("22025", "invalid Unicode escape") // invalid_escape_sequence
					err.Hint = `Unicode escapes must be \uXXXX or \UXXXXXXXX.`
					err.Position = charPos(l.src, esc)
					return token{}, err
				}
				r := rune(0)
				for _, d := range []byte(l.src[l.pos : l.pos+n]) {
					r = r<<4 | rune(digitVal(d))
				}
				l.pos += n
				switch {
				case high != 0:
					if r < 0xdc00 || r > 0xdfff {
						return token{}, l.errAt(esc, "invalid Unicode surrogate pair at or near \"%s\"", l.src[esc:l.pos])
					}
					r = 0x10000 + (high-0xd800)<<10 + (r - 0xdc00)
					high = 0
				case r >= 0xd800 && r <= 0xdbff:
					high = r
					continue
				case r >= 0xdc00 && r <= 0xdfff:
					return token{}, l.errAt(esc, "invalid Unicode surrogate pair at or near \"%s\"", l.src[esc:l.pos])
				case r == 0 || r > unicode.MaxRune:
					return token{}, l.errAt(esc, "invalid Unicode escape value at or near \"%s\"", l.src[esc:l.pos])
				}
				b.WriteRune(r)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			default: // \\, \', and any other character stand for themselves
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
}

// digitVal is the value of the hex digit c, or 16 if it is none.
func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return 16
}

// nearAt is the text a syntax error at off names: the character there.
func (l *lexer) nearAt(off int) string {
	_, n := utf8.DecodeRuneInString(l.src[off:])
	return l.src[off : off+n]
}

// quotedIdent lexes "..." with "" for a double quote.
func (l *lexer) quotedIdent(start int) (token, error) {
	var b strings.Builder
	l.pos++
	for {
		if l.pos >= len(l.src) {
			return token{}, l.errAt(start, "unterminated quoted identifier at or near %q", l.src[start:])
		}
		c := l.src[l.pos]
		if c == '"' {
			if l.pos+1 < len(l.src) && l.src[l.pos+1] == '"' {
				b.WriteByte('"')
				l.pos += 2
				continue
			}
			l.pos++
			if b.Len() == 0 {
				return token{}, l.errAt(start, "zero-length delimited identifier at or near %q", `""`)
			}
			return token{Kind: tQIdent, Val: b.String(), Pos: start, End: l.pos}, nil
		}
		b.WriteByte(c)
		l.pos++
	}
}

// number lexes digits[.digits][e[+-]digits] or .digits[...].
func (l *lexer) number(start int) (token, error) {
	digits := func() {
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
	}
	digits()
	// A '.' followed by another '.' is not a decimal point (1..2 is never valid anyway).
	if l.pos < len(l.src) && l.src[l.pos] == '.' && !(l.pos+1 < len(l.src) && l.src[l.pos+1] == '.') {
		l.pos++
		digits()
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		p := l.pos + 1
		if p < len(l.src) && (l.src[p] == '+' || l.src[p] == '-') {
			p++
		}
		if p < len(l.src) && isDigit(l.src[p]) {
			l.pos = p
			digits()
		}
	}
	if l.pos < len(l.src) && isIdentStart(l.src[l.pos]) {
		// PostgreSQL rejects junk after a numeric literal (123abc).
		end := l.pos
		for end < len(l.src) && isIdentCont(l.src[end]) {
			end++
		}
		return token{}, l.errAt(start, "trailing junk after numeric literal at or near %q", l.src[start:end])
	}
	return token{Kind: tNumber, Val: l.src[start:l.pos], Pos: start, End: l.pos}, nil
}

// dollar lexes $n placeholders and $tag$...$tag$ strings.
func (l *lexer) dollar(start int) (token, error) {
	p := start + 1
	if p < len(l.src) && isDigit(l.src[p]) {
		for p < len(l.src) && isDigit(l.src[p]) {
			p++
		}
		l.pos = p
		return token{Kind: tParam, Val: l.src[start:p], Pos: start, End: p}, nil
	}
	// $tag$: the tag is an identifier without '$', possibly empty.
	if p < len(l.src) && isIdentStart(l.src[p]) {
		for p < len(l.src) && isIdentCont(l.src[p]) && l.src[p] != '$' {
			p++
		}
	}
	if p >= len(l.src) || l.src[p] != '$' {
		return token{}, l.errAt(start, "syntax error at or near %q", "$")
	}
	delim := l.src[start : p+1]
	body := p + 1
	i := strings.Index(l.src[body:], delim)
	if i < 0 {
		return token{}, l.errAt(start, "unterminated dollar-quoted string at or near %q", l.src[start:])
	}
	l.pos = body + i + len(delim)
	return token{Kind: tString, Val: l.src[body : body+i], Pos: start, End: l.pos}, nil
}

// pgOpRun returns the length of the operator PostgreSQL's scanner reads at
// the start of s: operator characters up to a comment's -- or /*.
func pgOpRun(s string) int {
	n := 0
	for n < len(s) && strings.IndexByte("+-*/<>=~!@#%^&|`?", s[n]) >= 0 {
		if n > 0 && (strings.HasPrefix(s[n:], "--") || strings.HasPrefix(s[n:], "/*")) {
			break
		}
		n++
	}
	return n
}
