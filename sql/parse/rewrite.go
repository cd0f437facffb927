package parse

import (
	"strconv"
	"strings"
	"sync"

	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values for the TiDB AST
	"github.com/streamdb/streamdb/sqlerr"
)

// piece is one chunk of the text given to TiDB. tok is the index (in
// parser.toks) of the user's token it came from, so that a TiDB error
// position can be mapped back to the user's text.
type piece struct {
	pre   string // text that a later "::" put before this piece
	text  string
	tok   int
	space bool // a space precedes it
	// param is N for a "?" that stands for $N (LIMIT $1, OFFSET $2).
	param int
}

// rewriter builds the TiDB text of one query from the user's tokens.
type rewriter struct {
	p     *parser
	out   []piece
	emits bool // EMIT CHANGES was seen
	eowc  bool // EMIT ON WINDOW CLOSE was seen
	full  bool // a FULL JOIN was seen
	// asofOn holds the parenthesis depths of ASOF joins awaiting their ON (asof.go).
	asofOn []int
	// lookupOn holds the depths of lookup joins awaiting their ON (lookup.go).
	lookupOn []int
	// lookupMark holds, for each, the marker its ON starts with.
	lookupMark []string
}

// frame is an open parenthesis: start is the piece where the primary it
// belongs to begins (the function name for a call); cast marks CAST(.
// order is the ORDER BY list open inside it, if any.
type frame struct {
	start int
	cast  bool
	order orderList
	// row is set for the parenthesis of a VALUES row (valuesRow).
	row *valuesRow
	// open is the piece of the "(" itself, call says it opens a call's
	// arguments (for FILTER).
	open int
	call bool
	// over is, for the window specification of f(...) OVER (...), the
	// piece where the call begins plus one (0: not a window): the call and
	// its window are one primary (rank() OVER (...)::int).
	over int
	// subscript marks the "[" of a[k]; slice its ":" (a[j:k]).
	subscript, slice bool
	// arraySub marks the parenthesis of ARRAY(subquery), emitted as
	// pg_array_subquery((subquery)).
	arraySub bool
	// arrayCtor marks the "[" of ARRAY[a, b], emitted as pg_array_ctor(a, b).
	arrayCtor bool
	// srf names the set-returning function of a FROM item (srf.go).
	srf string
	// stringAgg marks the arguments of string_agg(x, d), emitted as
	// group_concat(x separator d) (srf.go).
	stringAgg bool
	// sepSeen: the delimiter argument of string_agg has begun; sepAt is
	// its "separator" piece, orderAt the "order by" piece of an ORDER BY
	// inside an aggregate call (0: none), which TiDB's group_concat wants
	// before the separator (sortedagg.go).
	sepSeen        bool
	sepAt, orderAt int
	// aggMarker names array_agg, jsonb_agg or jsonb_object_agg written as
	// group_concat for its DISTINCT or ORDER BY (sortedagg.go).
	aggMarker string
	// commaAt is the piece of a call's first argument-separating comma
	// (0: none yet).
	commaAt int
	// neAll marks the parenthesis of x <> ALL(array), emitted as
	// x member of (array) = false (see the ALL case).
	neAll bool
}

// valuesRow is one row of VALUES (a, b), (c, d) used as a query: it is
// emitted as SELECT a AS column1, b AS column2 UNION ALL SELECT c, d
// (PostgreSQL names the columns column1, column2, ...).
type valuesRow struct {
	first bool // the first row names the columns
	col   int  // columns seen so far
	want  int  // columns of the first row (rows after it)
	from  int  // the piece where the current column begins
}

// orderList tracks an ORDER BY list being emitted, for NULLS FIRST/LAST:
// item is the piece where the current sort item begins (-1: no list open).
type orderList struct{ item int }

// notFuncKeywords are words that may precede "(" without making it a call.
var notFuncKeywords = map[string]bool{
	"select": true, "from": true, "where": true, "and": true, "or": true, "not": true, "in": true,
	"exists": true, "any": true, "all": true, "some": true, "as": true, "on": true, "values": true,
	"when": true, "then": true, "else": true, "is": true, "like": true, "ilike": true, "between": true,
	"using": true, "by": true, "having": true, "union": true, "intersect": true, "except": true,
	"overlaps": true, "escape": true, "end": true, "collate": true, "similar": true, "returning": true,
	"join": true, "into": true, "over": true, "filter": true, "distinct": true, "limit": true,
	"offset": true, "set": true, "with": true, "case": true, "lateral": true, "to": true,
}

// typedLiterals are the type names TiDB accepts before a string literal.
var typedLiterals = map[string]bool{"date": true, "time": true, "timestamp": true}

func (r *rewriter) emit(text string, tok int, space bool) int {
	r.out = append(r.out, piece{text: text, tok: tok, space: space})
	return len(r.out) - 1
}

// quote renders s as a TiDB string literal: quotes doubled, and
// backslashes doubled because TiDB treats backslash as an escape.
func quote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// wordJoin reports whether text written right after out would run into
// its last word: a word the rewrite puts in an operator's place (div for
// ^, regexp for ~) next to an operand written without spaces, as in 2^3,
// or two tokens PostgreSQL's scanner splits and TiDB's would not (0x1f is
// 0 AS x1f in PostgreSQL 15, a hexadecimal literal in TiDB).
func wordJoin(out, text string) bool {
	return out != "" && text != "" && isWordByte(out[len(out)-1]) && isWordByte(text[0])
}

func isWordByte(c byte) bool { return isIdentStart(c) || isDigit(c) }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// query rewrites toks[from:to] for TiDB, parses the result and returns the
// Query. Errors are positioned in the user's text.
func (p *parser) query(from, to int) (*Query, error) {
	if from >= to {
		return nil, p.syntaxError(p.toks[to])
	}
	r := &rewriter{p: p, out: make([]piece, 0, to-from)}
	if err := r.rewrite(from, to); err != nil {
		return nil, err
	}
	if err := r.asofDone(to); err != nil {
		return nil, err
	}
	if err := r.lookupDone(to); err != nil {
		return nil, err
	}
	q := &Query{SQL: p.src[p.toks[from].Pos:p.toks[to-1].End], EmitChanges: r.emits, EmitOnWindowClose: r.eowc}
	var b strings.Builder
	b.Grow(p.toks[to-1].End - p.toks[from].Pos + 16*len(r.out)/10)
	starts := make([]int, len(r.out))
	for k, pc := range r.out {
		if k > 0 && (pc.space || wordJoin(b.String(), pc.pre+pc.text)) {
			b.WriteByte(' ')
		}
		starts[k] = b.Len()
		b.WriteString(pc.pre)
		b.WriteString(pc.text)
	}
	q.Rewritten = b.String()
	for k, pc := range r.out {
		if pc.param > 0 {
			if q.LimitParams == nil {
				q.LimitParams = map[int]int{}
			}
			q.LimitParams[starts[k]+len(pc.pre)] = pc.param - 1
		}
	}
	node, err := tidbParse(q.Rewritten)
	if err != nil {
		off, ok := tidbErrOffset(q.Rewritten, err)
		if !ok || len(r.out) == 0 {
			return nil, p.syntaxError(p.toks[from])
		}
		if off >= len(q.Rewritten) {
			return nil, p.syntaxError(p.toks[to])
		}
		k := len(starts) - 1
		for k > 0 && starts[k] > off {
			k--
		}
		return nil, p.syntaxError(p.toks[r.out[k].tok])
	}
	q.Node = node
	return q, nil
}

// rewrite emits toks[from:to] in TiDB's dialect: the forms listed at
// Query, and these:
//
//	DATE '2026-01-31', BOOLEAN 't', ...  → pg_cast('2026-01-31', 'date') (typedLiteral)
//	EXTRACT(dow FROM x)                  → pg_extract('dow', x)
//	ORDER BY x DESC NULLS FIRST          → ORDER BY pg_nulls_first(x) DESC (nullsOrder)
//	OFFSET 2 [ROWS], LIMIT ALL / NULL / -1, FETCH FIRST n ROWS ONLY
//	                                     → LIMIT count OFFSET skip (limitClause)
//	count(*) FILTER (WHERE c)            → count(CASE WHEN c THEN 1 END) (filterClause)
//	percentile_cont(f) WITHIN GROUP (ORDER BY x)
//	                                     → max(pg_within_group('percentile_cont', x, 0, f)) (withinGroup)
//	VALUES (1, 'a'), (2, 'b')            → SELECT 1 AS column1, 'a' AS column2 UNION ALL SELECT 2, 'b'
//	                                       (as a query or a subquery, not INSERT's VALUES)
//	a[k], f(x)[k], (expr)[k]             → pg_subscript(a, k) ...
//	(expr).field, (expr).f1.f2           → pg_field((expr), 'field') ...
//	ARRAY[a, b]                          → pg_array_ctor(a, b)
//	FROM generate_series(a, b) s         → FROM (select pg_srf_generate_series(a, b)) s (srf.go)
//	x = ANY (array), x = SOME (array)    → x member of (array) (not for a subquery)
//	(subquery) [AS] t(a, b), tbl [AS] t(a, b)
//	                                     → ... "t<AliasColumnSep>a<AliasColumnSep>b" (alias)
func (r *rewriter) rewrite(from, to int) error {
	p := r.p
	toks := p.toks
	var stack []frame
	prim := -1        // piece where the primary just emitted begins, -1 if the last token ends none
	neAll := false    // the next "(" opens the array of x <> ALL(array)
	callable := false // the last token could name a function
	over := 0         // after OVER: the piece where its call begins plus one
	field := -1       // the token of the last field selected by (expr).field
	var cases []int   // the pieces of the CASEs open: CASE ... END is a primary (CASE ... END::text)
	top := orderList{item: -1}
	// order is the ORDER BY list at the current parenthesis depth.
	order := func() *orderList {
		if len(stack) == 0 {
			return &top
		}
		return &stack[len(stack)-1].order
	}
	for i := from; i < to; i++ {
		t := toks[i]
		space := t.Space && i > from
		next := token{Kind: tEOF, Pos: t.End, End: t.End}
		if i+1 < to {
			next = toks[i+1]
		}
		wasCallable := callable
		callable = false
		windowOf := 0 // the piece where the call that this OVER's window follows begins, plus one
		if i > from && toks[i-1].is("over") {
			windowOf, over = over, 0
		}
		switch t.Kind {
		case tString:
			k := r.emit(quote(t.Val), i, space)
			if wasCallable && typedLiterals[toks[i-1].Val] {
				k-- // date '2026-01-01' is one primary
			}
			prim = k
		case tNumber:
			text := t.Val
			if len(text) > 38 && !strings.ContainsAny(text, "eE") {
				// TiDB's literal decimal type cannot hold this many digits
				// (its test driver even panics); the binder reads it as numeric.
				text = "pg_cast(" + quote(text) + ", 'numeric')"
			}
			prim = r.emit(text, i, space)
		case tParam:
			prim = r.emit(t.Val, i, space)
		case tQIdent, tIdent:
			if (next.isOp("=>") || next.isOp(":=")) && len(stack) > 0 {
				// A named argument, name => value (or name := value): the
				// name becomes a marker argument before its value, which
				// the binder pairs with it (sql/bind/namedargs.go).
				r.emit("pg_argname("+quote(t.Val)+")", i, space)
				r.emit(",", i+1, false)
				prim = -1
				i++
				continue
			}
			if t.Kind == tIdent {
				switch {
				case r.lookupWord(i, to, len(stack)):
					end, err := r.lookupJoin(i, to, len(stack), space)
					if err != nil {
						return err
					}
					prim = -1
					i = end - 1
					continue
				case r.asofWord(i, from, to, len(stack)):
					end, err := r.asofJoin(i, to, len(stack), space)
					if err != nil {
						return err
					}
					prim = -1
					i = end - 1
					continue
				case t.Val == "interval" && (next.Kind == tString || next.Kind == tNumber):
					p.i = i + 1
					text, err := p.intervalLiteral()
					if err != nil {
						return err
					}
					if p.i > to {
						return p.syntaxError(toks[to])
					}
					if p.i <= to && (toks[p.i].is("preceding") || toks[p.i].is("following")) {
						// A RANGE frame's offset: TiDB's grammar takes only
						// INTERVAL expr unit there; the binder reads the
						// string as the whole interval (sql/bind rangeBound).
						prim = r.emit("interval "+quote(text)+" microsecond", i, space)
					} else {
						prim = r.emit("pg_interval("+quote(text)+")", i, space)
					}
					i = p.i - 1
					continue
				case r.defaultValues(i, space):
					prim = -1
					i++
					continue
				case (t.Val == "x" || t.Val == "b") && next.Kind == tString && next.Pos == t.End:
					// PostgreSQL's bit strings, which TiDB reads as MySQL's numbers.
					return p.notSupported(t, "bit string literals (B'...', X'...') are not supported")
				case (t.Val == "preceding" || t.Val == "following") && frameOffsetError(toks, i, from) != nil:
					return p.positioned(frameOffsetError(toks, i, from), t)
				case (t.Val == "preceding" || t.Val == "following") && r.frameOffsetPiece(toks, i, from) >= 0:
					// An offset expression TiDB's grammar does not take
					// (1::numeric, CAST(1 AS numeric), 2 - 1): written as
					// INTERVAL pg_frame_offset(expr) MICROSECOND, which the
					// binder unwraps (sql/bind frameBound).
					k := r.frameOffsetPiece(toks, i, from)
					r.out[k].pre = "interval pg_frame_offset(" + r.out[k].pre
					r.emit(") microsecond", i, false)
					r.emit(t.Val, i, space)
					prim = -1
					continue
				case windowOffsetArg(toks, i, to) >= 0:
					k := windowOffsetArg(toks, i, to)
					if a := toks[k]; a.Kind == tNumber && (k+1 >= to || toks[k+1].isOp(",") || toks[k+1].isOp(")")) {
						// A numeric literal alone, 1.0 or 1e0: PostgreSQL has
						// lag(x, integer) only.
						return p.positioned(sqlerr.New(sqlerr.UndefinedFunction, "function %s(anyelement, numeric) does not exist", t.Val), a)
					}
					return p.notSupported(toks[k], "the second argument of %s must be an unsigned integer literal (write lead(x, n) for lag(x, -n))", t.Val)
				case mysqlInfix(toks, i, from, to):
					return p.syntaxError(next) // as PostgreSQL: a REGEXP b is an alias, then a stray operand
				case sortedAggStart(toks, i, to) != "":
					k := r.emit("group_concat(", i, space)
					stack = append(stack, frame{start: k, open: k, call: true, aggMarker: sortedAggStart(toks, i, to)})
					prim = -1
					i++
					continue
				case pgAggStart(toks, i, to) != "": // pgaggs.go
					k := r.emit("group_concat(", i, space)
					stack = append(stack, frame{start: k, open: k, call: true, aggMarker: pgAggStart(toks, i, to)})
					prim = -1
					i++
					continue
				case stringAggStart(toks, i):
					k := r.emit("group_concat(", i, space)
					stack = append(stack, frame{start: k, open: k, call: true, stringAgg: true})
					prim = -1
					i++
					continue
				case r.srfStart(i, from):
					stack = append(stack, r.emitSRF(i, from, space))
					prim = -1
					i++
					continue
				case t.Val == "array" && next.isOp("["):
					k := r.emit("pg_array_ctor(", i, space)
					stack = append(stack, frame{start: k, open: k, arrayCtor: true})
					prim = -1
					i++
					continue
				case t.Val == "array" && next.isOp("(") && i+2 < to && toks[i+2].is("select"):
					k := r.emit("pg_array_subquery((", i, space)
					stack = append(stack, frame{start: k, open: k, arraySub: true})
					prim = -1
					i++
					continue
				case (t.Val == "any" || t.Val == "some") && next.isOp("(") && i > from && toks[i-1].isOp("=") &&
					len(r.out) > 0 && r.out[len(r.out)-1].text == "=" &&
					!(i+2 < to && (toks[i+2].is("select") || toks[i+2].is("with") || toks[i+2].is("values"))):
					// x = ANY(array): TiDB's x MEMBER OF (a), which the binder
					// reads as array membership (= ANY (subquery) stays as is).
					r.out[len(r.out)-1].text = "member of"
					prim = -1
					continue
				case t.Val == "all" && next.isOp("(") && i > from && (toks[i-1].isOp("<>") || toks[i-1].isOp("!=")) &&
					len(r.out) > 0 && (r.out[len(r.out)-1].text == "<>" || r.out[len(r.out)-1].text == "!=") &&
					!(i+2 < to && (toks[i+2].is("select") || toks[i+2].is("with") || toks[i+2].is("values"))):
					// x <> ALL(array) is NOT (x = ANY(array)) in three-valued
					// logic: x member of (array) = false, which TiDB's grammar
					// reads as (x member of (array)) = false. (<> ALL
					// (subquery) stays as is.)
					r.out[len(r.out)-1].text = "member of"
					neAll = true
					prim = -1
					continue
				case t.Val == "cast" && next.isOp("("):
					stack = append(stack, frame{start: r.emit("pg_cast(", i, space), cast: true})
					prim = -1
					i++
					continue
				case t.Val == "as" && len(stack) > 0 && stack[len(stack)-1].cast:
					if err := r.castType(i, to); err != nil {
						return err
					}
					prim = stack[len(stack)-1].start
					stack = stack[:len(stack)-1]
					i = p.i - 1
					continue
				case t.Val == "as" && next.is("of") && i+2 < to && (toks[i+2].is("savepoint") || toks[i+2].is("checkpoint")):
					if err := r.asOf(i, to, space); err != nil {
						return err
					}
					prim = -1
					i += 3
					continue
				case t.Val == "as" && next.Kind == tIdent:
					// An alias is never a keyword in PostgreSQL after AS, but many
					// names (rows, stored, trigger, ...) are reserved in TiDB's grammar.
					r.emit("as", i, space)
					prim = -1
					end, err := r.alias(i+1, to)
					if err != nil {
						return err
					}
					i = end - 1
					continue
				case (t.Val == "session_user" || t.Val == "current_role") && !next.isOp("(") && !(i > from && toks[i-1].isOp(".")):
					// SQL's niladic session_user: TiDB reads it as a column.
					prim = r.emit(t.Val+"()", i, space)
					continue
				case t.Val == "operator" && next.isOp("(") && prim >= 0:
					end, err := r.operatorCall(i, to, space)
					if err != nil {
						return err
					}
					prim = -1
					i = end - 1
					continue
				case wasCallable && next.isOp("(") && !notFuncKeywords[t.Val] &&
					(toks[i-1].Kind == tIdent || toks[i-1].Kind == tQIdent) && !parenFrameOffset(toks, i, to):
					// t x(a, b): a name right after a name is an alias (a call
					// never follows a name), here with column names.
					end, err := r.alias(i, to)
					if err != nil {
						return err
					}
					prim = -1
					i = end - 1
					continue
				case t.Val == "row" && next.isOp("(") && oneField(toks, i+1, to) && !(i > from && (toks[i-1].isOp(".") || relationBefore(toks[i-1]))):
					// ROW(x): TiDB's grammar wants two fields or more; the
					// binder reads pg_row1(x) as the one-field record. After
					// INTO, TABLE, COPY and the like, row is a relation's
					// name with a column list (INSERT INTO row (x) ...).
					prim = r.emit("pg_row1", i, space)
					callable = true
					continue
				case t.Val == "session" && next.isOp("(") && !(i > from && (toks[i-1].is("from") || toks[i-1].is("join") || toks[i-1].is("into") || toks[i-1].isOp("."))):
					// Flink's group window GROUP BY SESSION(ts, gap): SESSION
					// is a keyword of TiDB's grammar (sql/bind groupwin.go).
					prim = r.emit("pg_session_window", i, space)
					continue
				case (t.Val == "trim" || t.Val == "overlay") && next.isOp("(") && !(i > from && toks[i-1].isOp(".")):
					// TRIM(... FROM ...) and OVERLAY(... PLACING ... FROM ...)
					list := r.trimList
					if t.Val == "overlay" {
						list = r.overlayList
					}
					start := len(r.out)
					end, ok, err := list(i, to, space)
					if err != nil {
						return err
					}
					if ok {
						prim = start
						i = end - 1
						continue
					}
				case (t.Val == "tumble" || t.Val == "hop" || t.Val == "cumulate" || t.Val == "session") && next.isOp("(") && i > from && (toks[i-1].is("from") || toks[i-1].is("join")):
					end, err := r.windowTable(i, to, space)
					if err != nil {
						return err
					}
					prim = -1
					i = end - 1
					continue
				case t.Val == "values" && next.isOp("(") && (i == from || toks[i-1].isOp("(")):
					r.emit("select ", i, space)
					stack = append(stack, frame{start: len(r.out), row: &valuesRow{first: true, from: len(r.out)}})
					prim = -1
					i++
					continue
				case t.Val == "is" && next.is("not") && i+3 < to && toks[i+2].is("distinct") && toks[i+3].is("from"):
					r.emit("<=>", i, space) // a IS NOT DISTINCT FROM b is MySQL's null-safe a <=> b
					prim = -1
					i += 3
					continue
				case t.Val == "is" && next.is("distinct") && i+2 < to && toks[i+2].is("from"):
					// a IS DISTINCT FROM b: a <=> pg_is_distinct_from() <=> b,
					// which TiDB groups ((a <=> m) <=> b) with the precedence
					// of the form above; the binder reads it as NOT (a <=> b).
					r.emit("<=> "+distinctMarker+"() <=>", i, space)
					prim = -1
					i += 2
					continue
				case t.Val == "extract" && next.isOp("(") && i+3 < to &&
					(toks[i+2].Kind == tIdent || toks[i+2].Kind == tString) && toks[i+3].is("from"):
					// EXTRACT(field FROM x): TiDB knows only MySQL's units
					// (no dow, epoch, ...), so the binder gets pg_extract('field', x).
					k := r.emit("pg_extract("+quote(toks[i+2].Val)+",", i, space)
					stack = append(stack, frame{start: k})
					prim = -1
					i += 3
					continue
				case t.Val == "full" && (next.is("join") || next.is("outer") && i+2 < to && toks[i+2].is("join")):
					// TiDB has no FULL JOIN; its STRAIGHT_JOIN ... ON (which
					// PostgreSQL lacks) carries it to the binder.
					if i > from && toks[i-1].is("natural") {
						return p.notSupported(t, "NATURAL FULL JOIN is not supported; write FULL JOIN ... ON")
					}
					r.emit("straight_join", i, space)
					r.full = true
					prim = -1
					if next.is("outer") {
						i++
					}
					i++
					continue
				case t.Val == "using" && r.full:
					return p.notSupported(t, "FULL JOIN ... USING is not supported; write FULL JOIN ... ON")
				case t.Val == "straight_join":
					return p.syntaxError(t)
				case t.Val == "order" && next.is("by"):
					if len(stack) > 0 && (stack[len(stack)-1].stringAgg || stack[len(stack)-1].aggMarker != "") {
						stack[len(stack)-1].orderAt = len(r.out)
					}
					r.emit("order by", i, space)
					order().item = len(r.out)
					prim = -1
					i++
					continue
				case t.Val == "nulls" && (next.is("first") || next.is("last")) && order().item >= 0:
					if err := r.nullsOrder(order().item, next.is("first"), i); err != nil {
						return err
					}
					prim = -1
					i++
					continue
				case t.Val == "union" || t.Val == "intersect" || t.Val == "except":
					order().item = -1
				case t.Val == "limit" || t.Val == "offset" || t.Val == "fetch" && (next.is("first") || next.is("next")):
					order().item = -1
					end, err := r.limitClause(i, to, space)
					if err != nil {
						return err
					}
					prim = -1
					i = end - 1
					continue
				case typeLiteralStart[t.Val] && !(i > from && toks[i-1].isOp(".")):
					if end, ok := r.typedLiteral(i, to, space); ok {
						prim = len(r.out) - 1
						i = end - 1
						continue
					}
				case t.Val == "collate" && prim >= 0:
					end, err := r.collate(i, to)
					if err != nil {
						return err
					}
					i = end - 1
					continue
				case t.Val == "emit" && next.is("changes") && i+2 == to:
					r.emits = true
					return r.checkOpen(stack, to)
				case t.Val == "emit" && next.is("on") && i+4 == to && toks[i+2].is("window") && toks[i+3].is("close"):
					r.eowc = true
					return r.checkOpen(stack, to)
				}
			}
			start := -1
			if i > from && toks[i-1].isOp(".") && prim >= 0 {
				start = prim // a.b: the primary began at a
			}
			text := t.Val
			if agg, ok := jsonAggNames[t.Val]; ok && t.Kind == tIdent && next.isOp("(") {
				text = agg // jsonops.go
			}
			quoted := t.Kind == tQIdent || t.Val == "div" || isName(toks, i, from, to) || renamedAggregate(toks, i, to)
			if quoted {
				// div is an identifier in PostgreSQL and TiDB's spelling of ^;
				// names TiDB reserves are quoted (names.go).
				text = quoteIdent(t.Val)
			}
			k := r.emit(text, i, space)
			if start < 0 {
				start = k
			}
			if t.Val == "over" && !quoted && prim >= 0 {
				over = prim + 1 // f(...) OVER: the window primary begins at the call
			}
			prim = start
			callable = quoted || !notFuncKeywords[t.Val]
			if !callable {
				prim = -1 // a keyword such as SELECT ends no primary
			}
			if windowOf > 0 {
				prim = windowOf - 1 // f(...) OVER w: a primary from the call on
				callable = false
			}
			if t.Kind == tIdent && !quoted {
				switch {
				case t.Val == "case":
					cases = append(cases, k)
				case t.Val == "end" && len(cases) > 0:
					prim = cases[len(cases)-1] // the CASE expression ends here
					cases = cases[:len(cases)-1]
				}
			}
		case tOp:
			switch t.Val {
			case ";":
				return p.syntaxError(t)
			case "(":
				k := r.emit("(", i, space)
				start := k
				if wasCallable && prim >= 0 {
					start = prim
				}
				stack = append(stack, frame{start: start, open: k, call: wasCallable && prim >= 0 && !neAll, neAll: neAll, over: windowOf})
				neAll = false
				prim = -1
			case ")":
				if len(stack) == 0 || stack[len(stack)-1].cast || stack[len(stack)-1].subscript || stack[len(stack)-1].arrayCtor {
					return p.syntaxError(t)
				}
				if err := p.stringAggArgs(stack[len(stack)-1], toks, r.out[stack[len(stack)-1].open].tok+1, i); err != nil {
					return err
				}
				if row := stack[len(stack)-1].row; row != nil {
					stack = stack[:len(stack)-1]
					prim = -1
					more, err := r.endValuesRow(row, i, to)
					if err != nil {
						return err
					}
					if more {
						stack = append(stack, frame{start: len(r.out), row: &valuesRow{want: max(row.want, row.col), from: len(r.out)}})
						i += 2
					}
					continue
				}
				f := stack[len(stack)-1]
				within := next.is("within") && i+2 < to && toks[i+2].is("group")
				if f.call && (within || next.is("filter") && i+3 < to && toks[i+2].isOp("(") && toks[i+3].is("where")) {
					var end int
					var err error
					if within {
						end, err = r.withinGroup(f, i, to) // withingroup.go
					} else {
						// The function's name as the user wrote it: the piece
						// emitted may be an internal one (group_concat(, pg_cast().
						if fn := toks[r.out[f.start].tok].Val; !filterAggregates[fn] {
							if !sortedAggs[fn] && !pgAggs[fn] {
								return p.positioned(sqlerr.New(sqlerr.WrongObjectType, "FILTER specified, but %s is not an aggregate function", fn), next)
							}
							end, err = r.filterCall(f, i, to) // sortedagg.go
						} else {
							end, err = r.filterClause(f, i, to)
						}
					}
					if err != nil {
						return err
					}
					prim = f.start
					stack = stack[:len(stack)-1]
					i = end - 1
					continue
				}
				if err := r.endSortedAgg(f, i); err != nil {
					return err
				}
				if f.arraySub {
					r.emit("))", i, space)
				} else if f.neAll {
					r.emit(") = false", i, space)
				} else if f.srf != "" {
					r.emit(r.srfAlias(f.srf, i, to), i, space)
				} else {
					r.emit(")", i, space)
				}
				prim = stack[len(stack)-1].start
				if f.over > 0 {
					prim = f.over - 1 // f(...) OVER (...) ends here
				}
				stack = stack[:len(stack)-1]
				if next.Kind == tIdent && !notFuncKeywords[next.Val] && i+2 < to && toks[i+2].isOp("(") {
					// (subquery) x(a, b): an alias with column names, without AS.
					end, err := r.alias(i+1, to)
					if err != nil {
						return err
					}
					i = end - 1
				}
			case "::":
				if prim < 0 {
					return p.syntaxError(t)
				}
				if end, ok := r.catalogCast(i, to, prim); ok {
					i = end - 1
					continue
				}
				p.i = i + 1
				if p.at().is("pg_catalog") && p.peek(1).isOp(".") {
					p.i += 2
				}
				typ, err := p.typeName()
				if err != nil {
					return err
				}
				if p.i > to {
					return p.syntaxError(toks[to])
				}
				// "pg_cast(" goes where the primary begins (outside any earlier cast of a chain).
				r.out[prim].pre = "pg_cast(" + r.out[prim].pre
				r.emit(", "+quote(typ.String())+")", i, false)
				i = p.i - 1
			case "[":
				// a[k] → pg_subscript(a, k): TiDB has no subscripts. As with
				// "::", the call opens where the primary begins, so
				// (regexp_match(s, p))[2] and f(x)[2] both subscript the whole.
				if prim < 0 {
					return p.syntaxError(t)
				}
				r.out[prim].pre = "pg_subscript(" + r.out[prim].pre
				r.emit(",", i, false)
				stack = append(stack, frame{start: prim, subscript: true})
				prim = -1
				if next.isOp(":") { // a[:k]: from the first element
					r.emit(" 1", i, false)
				}
			case ":":
				// a[j:k] → pg_slice(a, j, k); an omitted bound is the
				// array's own (1, or any index past its end).
				f := len(stack) - 1
				if f < 0 || !stack[f].subscript || stack[f].slice {
					return p.syntaxError(t)
				}
				stack[f].slice = true
				r.out[stack[f].start].pre = strings.Replace(r.out[stack[f].start].pre, "pg_subscript(", "pg_slice(", 1)
				r.emit(",", i, false)
				if next.isOp("]") {
					r.emit(" 2147483647", i, false)
				}
				prim = -1
			case "]":
				if len(stack) == 0 || !stack[len(stack)-1].subscript && !stack[len(stack)-1].arrayCtor {
					return p.syntaxError(t)
				}
				r.emit(")", i, false)
				prim = stack[len(stack)-1].start
				stack = stack[:len(stack)-1]
			case "~~", "!~~", "~~*", "!~~*":
				if prim < 0 {
					// PostgreSQL has no prefix LIKE operator (~~5 is not ~(~5)).
					return p.positioned(sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s with no left operand", t.Val), t)
				}
				if err := r.regexOp(t.Val, i, space); err != nil {
					return err
				}
				prim = -1
			case "~", "!~", "~*", "!~*":
				if t.Val != "~" || prim >= 0 {
					if err := r.regexOp(t.Val, i, space); err != nil {
						return err
					}
					prim = -1
					continue
				}
				r.emit(t.Val, i, space)
				prim = -1
			case "->", "->>", "#>", "#>>", "@>", "<@", "?", "?|", "?&":
				if err := r.jsonOp(t, i, prim); err != nil {
					return err
				}
				prim = -1
			case "#":
				// PostgreSQL's integer xor is TiDB's ^.
				r.emit("^", i, space)
				prim = -1
			case "^":
				// PostgreSQL's exponentiation is TiDB's DIV, an operator
				// PostgreSQL lacks (a column named div is quoted), which has
				// the multiplicative level and left associativity; the binder
				// gives it its PostgreSQL level (sql/bind chainOp, powerOp).
				r.emit("div", i, true)
				prim = -1
			case ".":
				if i > from && (toks[i-1].isOp(")") || toks[i-1].isOp("]") || i-1 == field) && prim >= 0 && (next.Kind == tIdent || next.Kind == tQIdent) {
					// (expr).field → pg_field((expr), 'field'): field
					// selection from a record (TiDB has none). The call opens
					// where the primary begins, so (r).a.b selects twice.
					r.out[prim].pre = "pg_field(" + r.out[prim].pre
					r.emit(", "+quote(next.Val)+")", i, false)
					i++
					field = i
					continue
				}
				r.emit(".", i, space)
				// keep prim: a qualified name continues
				continue
			case ",":
				if len(stack) > 0 && stack[len(stack)-1].subscript {
					return p.syntaxError(t) // a[1, 2]
				}
				if len(stack) > 0 && stack[len(stack)-1].row != nil {
					if err := r.valuesColumn(stack[len(stack)-1].row, i); err != nil {
						return err
					}
				}
				if len(stack) > 0 && stack[len(stack)-1].call && stack[len(stack)-1].commaAt == 0 {
					stack[len(stack)-1].commaAt = len(r.out)
				}
				if len(stack) > 0 && stack[len(stack)-1].stringAgg && stack[len(stack)-1].orderAt == 0 {
					stack[len(stack)-1].sepSeen = true
					stack[len(stack)-1].sepAt = r.emit("separator", i, true)
					prim = -1
					continue
				}
				r.emit(",", i, space)
				if o := order(); o.item >= 0 {
					o.item = len(r.out) // the next sort item starts here
				}
				prim = -1
			default:
				if nullSafeEq(toks, i, to) {
					// MySQL's null-safe equality, which the rewrite itself
					// writes for IS NOT DISTINCT FROM; PostgreSQL has no such operator.
					return p.positioned(sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: <=>"), t)
				}
				r.emit(t.Val, i, space)
				prim = -1
			}
		}
	}
	return r.checkOpen(stack, to)
}

// windowTable rewrites the window table function at token i, TUMBLE(tbl,
// ts, size), HOP(tbl, ts, slide, size) or CUMULATE(tbl, ts, step, max),
// into a subquery adding window_start and window_end to tbl's columns (the
// alias, tbl's own name as in RisingWave, only if the user gives none, so
// HOP(bid, ...) keeps bid.auction valid), and returns
// the token after it. TUMBLE becomes
//
//	(SELECT *, tumble_start(ts, size) AS window_start,
//	           tumble_end(ts, size) AS window_end FROM tbl)
//
// A row is in size/slide hopping windows, and in up to max/step
// cumulating ones: HOP becomes
//
//	(SELECT *, pg_hop_start(ts, slide, size) AS window_start,
//	           pg_hop_end(ts, slide, size) AS window_end FROM tbl)
//
// and CUMULATE the same with pg_cumulate_start/pg_cumulate_end, whose
// placeholders the binder turns into one expand stage (sql/bind hopTVF,
// exec/hop.go). Their sizes must be fixed-length interval literals, the
// slide (step) must divide the size (max), and a row is in at most
// maxWindowsPerRow windows.
func (r *rewriter) windowTable(i, to int, space bool) (end int, err error) {
	p := r.p
	toks := p.toks
	kind := toks[i].Val
	// kind ( name [. name] , column , size... [, size...] )
	k := i + 2
	name := func() (string, error) {
		if k >= to || toks[k].Kind != tIdent && toks[k].Kind != tQIdent {
			return "", p.syntaxError(toks[min(k, to)])
		}
		k++
		return quoteIdent(toks[k-1].Val), nil
	}
	tbl, err := name()
	if err != nil {
		return 0, err
	}
	alias := tbl
	if k+1 < to && toks[k].isOp(".") {
		k++
		rest, err := name()
		if err != nil {
			return 0, err
		}
		tbl += "." + rest
		alias = rest
	}
	if k >= to || !toks[k].isOp(",") {
		return 0, p.syntaxError(toks[min(k, to)])
	}
	k++
	col, err := name()
	if err != nil {
		return 0, err
	}
	if k >= to || !toks[k].isOp(",") {
		return 0, p.syntaxError(toks[min(k, to)])
	}
	k++
	// The size arguments, each rewritten on its own.
	var args [][]piece
	var argTok []int
	for {
		argFrom, depth := k, 0
		for ; k < to && (depth > 0 || !toks[k].isOp(")") && !toks[k].isOp(",")); k++ {
			switch {
			case toks[k].isOp("("):
				depth++
			case toks[k].isOp(")"):
				depth--
			}
		}
		if k >= to || k == argFrom {
			return 0, p.syntaxError(toks[min(k, to)])
		}
		arg := &rewriter{p: p}
		if err := arg.rewrite(argFrom, k); err != nil {
			return 0, err
		}
		if len(arg.out) == 0 || arg.emits {
			return 0, p.syntaxError(toks[argFrom])
		}
		args = append(args, arg.out)
		argTok = append(argTok, argFrom)
		if toks[k].isOp(")") {
			break
		}
		k++
	}
	want := 2
	if kind == "tumble" || kind == "session" {
		want = 1
	}
	if len(args) != want {
		switch kind {
		case "tumble":
			return 0, p.notSupported(toks[i], "TUMBLE(table, time column, size) takes no offset")
		case "hop":
			return 0, p.positioned(sqlerr.New(sqlerr.SyntaxError, "HOP takes (table, time column, slide, size)"), toks[i])
		case "session":
			return 0, p.positioned(sqlerr.New(sqlerr.SyntaxError, "SESSION takes (table, time column, gap)"), toks[i])
		default:
			return 0, p.positioned(sqlerr.New(sqlerr.SyntaxError, "CUMULATE takes (table, time column, step, max size)"), toks[i])
		}
	}
	end = k + 1
	join := func(ps []piece) {
		r.out = append(r.out, ps...)
	}
	if kind == "session" {
		// Sessions are per key: the GROUP BY keys beside window_start and
		// window_end (sql/bind groupwin.go).
		r.emit("(select *, pg_session_start("+col+",", i, space)
		join(args[0])
		r.emit(") as window_start, pg_session_end("+col+",", i, false)
		join(args[0])
		r.emit(") as window_end from "+tbl+")", i, false)
	} else if kind == "tumble" {
		if us, ok, err := p.windowMicros(argTok[0], k); err != nil {
			return 0, err
		} else if ok && us <= 0 {
			return 0, p.positioned(errWindowSize("TUMBLE size"), toks[argTok[0]])
		}
		r.emit("(select *, tumble_start("+col+",", i, space)
		join(args[0])
		r.emit(") as window_start, tumble_end("+col+",", i, false)
		join(args[0])
		r.emit(") as window_end from "+tbl+")", i, false)
	} else {
		small, err := p.requireWindowMicros(argTok[0], argTok[1]-1, kind)
		if err != nil {
			return 0, err
		}
		big, err := p.requireWindowMicros(argTok[1], k, kind)
		if err != nil {
			return 0, err
		}
		if big%small != 0 {
			what := "HOP slide must divide its size"
			if kind == "cumulate" {
				what = "CUMULATE step must divide its max size"
			}
			return 0, p.positioned(sqlerr.New(sqlerr.InvalidParameterValue, "%s (%d µs does not divide %d µs)", what, small, big), toks[argTok[0]])
		}
		n := big / small
		if n > maxWindowsPerRow {
			return 0, p.notSupported(toks[i], "%s puts each row in %d windows; at most %d are supported", strings.ToUpper(kind), n, maxWindowsPerRow)
		}
		// One row per window a row is in, made by the binder's Hop
		// (sql/bind hopTVF) from these placeholders.
		for _, f := range []string{"(select *, pg_" + kind + "_start(", ") as window_start, pg_" + kind + "_end("} {
			r.emit(f+col+",", i, f[0] == '(' && space)
			join(args[0])
			r.emit(",", i, false)
			join(args[1])
		}
		r.emit(") as window_end from "+tbl+")", i, false)
	}
	return r.windowAlias(i, end, to, alias)
}

// windowAlias emits the window table function's alias (at token i, ending
// before token end) unless the user's follows; it returns end.
func (r *rewriter) windowAlias(i, end, to int, alias string) (int, error) {
	toks := r.p.toks
	if end < to && (toks[end].is("as") || toks[end].Kind == tQIdent || toks[end].Kind == tIdent && !notFuncKeywords[toks[end].Val] && !clauseKeywords[toks[end].Val]) {
		return end, nil // the user's alias follows
	}
	r.emit("as "+alias, i, true)
	return end, nil
}

// maxWindowsPerRow bounds size/slide (HOP) and max/step (CUMULATE): the
// rows a row becomes.
const maxWindowsPerRow = 64

func errWindowSize(what string) error {
	return sqlerr.New(sqlerr.InvalidParameterValue, "%s must be a positive interval without months", what)
}

// windowMicros reads toks[from:to] as an interval literal (INTERVAL 'text'
// [unit] or INTERVAL n unit); ok is false if it is something else.
func (p *parser) windowMicros(from, to int) (us int64, ok bool, err error) {
	if !p.toks[from].is("interval") {
		return 0, false, nil
	}
	save := p.i
	defer func() { p.i = save }()
	p.i = from + 1
	text, err := p.intervalLiteral()
	if err != nil || p.i != to {
		return 0, false, nil
	}
	neg := strings.HasPrefix(strings.TrimSpace(text), "-")
	us, ok = intervalMicros(strings.TrimPrefix(strings.TrimSpace(text), "-"))
	if !ok {
		return 0, true, p.positioned(errWindowSize("a window size"), p.toks[from])
	}
	if neg {
		us = -us
	}
	return us, true, nil
}

// requireWindowMicros is windowMicros for HOP and CUMULATE, whose sizes
// must be positive interval literals.
func (p *parser) requireWindowMicros(from, to int, kind string) (int64, error) {
	us, ok, err := p.windowMicros(from, to)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, p.notSupported(p.toks[from], "%s sizes must be interval literals such as INTERVAL '10' SECOND", strings.ToUpper(kind))
	}
	if us <= 0 {
		return 0, p.positioned(errWindowSize(strings.ToUpper(kind)+" sizes"), p.toks[from])
	}
	return us, nil
}

// clauseKeywords may follow a FROM item and are not aliases.
var clauseKeywords = map[string]bool{"group": true, "window": true, "left": true, "right": true, "full": true,
	"inner": true, "cross": true, "natural": true, "order": true, "emit": true}

// filterAggregates are the aggregates FILTER (WHERE ...) applies to.
var filterAggregates = map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"string_agg": true}

// distinctMarker is the function IS DISTINCT FROM is written with (see
// rewrite); sql/bind recognises it only between two <=>.
const distinctMarker = "pg_is_distinct_from"

// filterClause rewrites an aggregate's FILTER (WHERE cond): the arguments
// emitted after the piece open (the call's "(") become CASE WHEN cond
// THEN args END (after a DISTINCT, and 1 for count's *), which every
// aggregate streamdb has treats alike, as they all skip NULLs. close is
// the call's ")" token; it returns the token after the FILTER clause.
// For string_agg (f.stringAgg: emitted as group_concat(x separator d)) only
// x is conditional: the delimiter stays, after an ORDER BY inside the call.
func (r *rewriter) filterClause(f frame, close, to int) (end int, err error) {
	open := f.open
	p := r.p
	toks := p.toks
	sub, end, err := r.filterCond(close, to)
	if err != nil {
		return 0, err
	}
	var rest []piece // what follows the conditional argument
	if f.stringAgg && f.sepAt > open {
		if f.orderAt > f.sepAt { // group_concat's ORDER BY precedes its separator
			rest = append(rest, r.out[f.orderAt:]...)
			rest = append(rest, r.out[f.sepAt:f.orderAt]...)
		} else {
			rest = append(rest, r.out[f.sepAt:]...)
		}
		r.out = r.out[:f.sepAt]
	}
	args := append([]piece(nil), r.out[open+1:]...)
	r.out = r.out[:open+1]
	if len(args) > 0 && args[0].text == "distinct" {
		r.out = append(r.out, args[0])
		args = args[1:]
	}
	if len(args) == 0 {
		return 0, p.syntaxError(toks[close])
	}
	if len(args) == 1 && args[0].text == "*" {
		args[0].text = "1"
	}
	args[0].space = true
	// pg_filter(cond) binds cond as a boolean whose errors name FILTER
	// (sql/bind), not the CASE it is written as.
	r.emit("case when pg_filter(", close+1, true)
	r.out = append(r.out, sub.out...)
	r.emit(") then", close+1, true)
	r.out = append(r.out, args...)
	r.emit("end", close+1, true)
	r.out = append(r.out, rest...)
	r.emit(")", close, false)
	return end + 1, nil
}

// filterCond rewrites the condition of the FILTER (WHERE cond) that
// follows the aggregate call closed at token close, and returns it with
// the token of the FILTER clause's ")".
func (r *rewriter) filterCond(close, to int) (sub *rewriter, end int, err error) {
	p := r.p
	toks := p.toks
	condFrom, depth := close+4, 0
	end = condFrom
	for ; end < to && (depth > 0 || !toks[end].isOp(")")); end++ {
		switch {
		case toks[end].isOp("("):
			depth++
		case toks[end].isOp(")"):
			depth--
		}
	}
	if end >= to || end == condFrom {
		return nil, 0, p.syntaxError(toks[min(end, to)])
	}
	sub = &rewriter{p: p}
	if err := sub.rewrite(condFrom, end); err != nil {
		return nil, 0, err
	}
	if len(sub.out) == 0 || sub.emits {
		return nil, 0, p.syntaxError(toks[condFrom])
	}
	sub.out[0].space = true
	return sub, end, nil
}

// valuesColumn ends a column of a VALUES row at token tok: the first row
// names it column<n>.
func (r *rewriter) valuesColumn(row *valuesRow, tok int) error {
	if len(r.out) == row.from {
		return r.p.syntaxError(r.p.toks[tok]) // an empty column
	}
	row.col++
	if row.first {
		r.emit("as column"+strconv.Itoa(row.col), tok, true)
	}
	row.from = len(r.out) + 1 // after the "," that follows
	return nil
}

// endValuesRow ends a VALUES row at its ")" (token i) and reports whether
// another row follows (", (" after it), in which case it has emitted the
// UNION ALL SELECT that begins it.
func (r *rewriter) endValuesRow(row *valuesRow, i, to int) (more bool, err error) {
	toks := r.p.toks
	if err := r.valuesColumn(row, i); err != nil {
		return false, err
	}
	if !row.first && row.col != row.want {
		return false, r.p.positioned(sqlerr.New(sqlerr.SyntaxError, "VALUES lists must all be the same length"), toks[i])
	}
	if i+2 < to && toks[i+1].isOp(",") && toks[i+2].isOp("(") {
		r.emit("union all select ", i+1, true)
		return true, nil
	}
	return false, nil
}

// alias emits the alias at token i and, if "(" follows, its column names
// (a derived table's "AS x(a, b)"), and returns the token after them.
// TiDB has no column lists on aliases: the names travel in the alias
// itself, separated by AliasColumnSep, and the binder takes them apart.
func (r *rewriter) alias(i, to int) (end int, err error) {
	toks := r.p.toks
	name := toks[i].Val
	end = i + 1
	if end < to && toks[end].isOp("(") {
		for end++; ; end += 2 {
			if end >= to || toks[end].Kind != tIdent && toks[end].Kind != tQIdent {
				return 0, r.p.syntaxError(toks[min(end, to)])
			}
			name += AliasColumnSep + toks[end].Val
			if end+1 < to && toks[end+1].isOp(")") {
				end += 2
				break
			}
			if end+1 >= to || !toks[end+1].isOp(",") {
				return 0, r.p.syntaxError(toks[min(end+1, to)])
			}
		}
	}
	r.emit(quoteIdent(name), i, true)
	return end, nil
}

// AliasColumnSep separates a table alias from the column names given with
// it ("AS x(a, b)") in the alias TiDB's AST carries; see Query.
const AliasColumnSep = "\x1f"

// nullsOrder wraps the sort item that begins at piece item (and ends with
// the last piece, or before a trailing ASC/DESC) in pg_nulls_first( ) or
// pg_nulls_last( ): TiDB has no NULLS FIRST/LAST, the binder unwraps it.
func (r *rewriter) nullsOrder(item int, first bool, tok int) error {
	if item >= len(r.out) {
		return r.p.syntaxError(r.p.toks[tok])
	}
	fn := "pg_nulls_last("
	if first {
		fn = "pg_nulls_first("
	}
	last := len(r.out) - 1
	if d := r.out[last].text; last > item && (d == "asc" || d == "desc") {
		r.out[last].pre = ")" + r.out[last].pre
	} else {
		r.emit(")", tok, false)
	}
	r.out[item].pre = fn + r.out[item].pre
	return nil
}

// typeLiteralStart are the words that can begin a type name in a typed
// literal (DATE '2026-01-31', BOOLEAN 'true', double precision '1.5').
var typeLiteralStart = map[string]bool{
	"date": true, "timestamp": true, "timestamptz": true, "boolean": true, "bool": true, "text": true, "varchar": true,
	"character": true, "int": true, "integer": true, "int2": true, "int4": true, "int8": true,
	"smallint": true, "bigint": true, "numeric": true, "decimal": true, "real": true, "float": true,
	"float4": true, "float8": true, "double": true, "time": true, "timetz": true, "uuid": true, "bytea": true,
}

// typedLiteral rewrites the typed literal `type 'string'` starting at
// toks[i] into pg_cast('string', 'type'), which is what PostgreSQL makes
// of it. ok is false (and nothing is emitted) if toks[i] does not start one.
func (r *rewriter) typedLiteral(i, to int, space bool) (end int, ok bool) {
	p := r.p
	save := p.i
	defer func() { p.i = save }()
	p.i = i
	typ, err := p.typeName()
	if err != nil || p.i >= to || p.toks[p.i].Kind != tString {
		return 0, false
	}
	r.emit("pg_cast("+quote(p.toks[p.i].Val)+", "+quote(typ.String())+")", i, space)
	return p.i + 1, true
}

// limitClause rewrites PostgreSQL's LIMIT, OFFSET and FETCH FIRST clauses,
// in either order, starting at toks[i], into TiDB's LIMIT count OFFSET skip
// and returns the index of the first token after them. TiDB takes only
// unsigned integers there, so LIMIT ALL, LIMIT NULL and a missing LIMIT
// become 9223372036854775807 (no limit), and a negative value is written
// as its 64-bit two's complement, which the binder (that knows a bigint
// cannot be larger than MaxInt64) reports as negative with PostgreSQL's
// 2201W / 2201X.
func (r *rewriter) limitClause(i, to int, space bool) (int, error) {
	p := r.p
	toks := p.toks
	const noLimit = "9223372036854775807"
	count, offset := "", ""
	start := i
	for i < to {
		t := toks[i]
		var err error
		switch {
		case t.is("limit") && count == "":
			i++
			if i < to && toks[i].is("all") {
				count, i = noLimit, i+1
				continue
			}
			if count, i, err = r.limitValue(i, to, noLimit); err != nil {
				return 0, err
			}
		case t.is("offset") && offset == "":
			if offset, i, err = r.limitValue(i+1, to, "0"); err != nil {
				return 0, err
			}
			if i < to && (toks[i].is("row") || toks[i].is("rows")) {
				i++
			}
		case t.is("fetch") && count == "" && i+1 < to && (toks[i+1].is("first") || toks[i+1].is("next")):
			i += 2
			count = "1"
			if i < to && !toks[i].is("row") && !toks[i].is("rows") {
				if count, i, err = r.limitValue(i, to, noLimit); err != nil {
					return 0, err
				}
			}
			if i >= to || !(toks[i].is("row") || toks[i].is("rows")) {
				return 0, p.syntaxError(toks[min(i, to)])
			}
			i++
			if i < to && toks[i].is("with") {
				return 0, p.notSupported(toks[i], "FETCH FIRST ... WITH TIES is not supported")
			}
			if i >= to || !toks[i].is("only") {
				return 0, p.syntaxError(toks[min(i, to)])
			}
			i++
		default:
			goto done
		}
	}
done:
	if count == "" {
		count = noLimit
	}
	if offset == "" {
		offset = "0"
	}
	r.emit("limit", start, space)
	r.limitPiece(count, start)
	r.emit("offset", start, true)
	r.limitPiece(offset, start)
	return i, nil
}

// limitPiece emits a LIMIT or OFFSET value; a parameter $N (as limitValue
// returns it) becomes TiDB's "?" marker, noted for the binder.
func (r *rewriter) limitPiece(v string, tok int) {
	k := r.emit(v, tok, true)
	if n, ok := strings.CutPrefix(v, "$"); ok {
		r.out[k].text = "?"
		r.out[k].param, _ = strconv.Atoi(n)
	}
}

// limitValue reads a LIMIT/OFFSET value at toks[i]: an optionally signed
// integer literal, or NULL (which means null, e.g. no limit).
func (r *rewriter) limitValue(i, to int, null string) (string, int, error) {
	p := r.p
	toks := p.toks
	if i < to && toks[i].is("null") {
		return null, i + 1, nil
	}
	if i < to && toks[i].Kind == tParam {
		return toks[i].Val, i + 1, nil
	}
	neg := false
	if i < to && (toks[i].isOp("-") || toks[i].isOp("+")) {
		neg = toks[i].isOp("-")
		i++
	}
	if i >= to || toks[i].Kind != tNumber {
		return "", 0, p.notSupported(toks[min(i, to)], "LIMIT and OFFSET must be integer constants")
	}
	t := toks[i]
	v, err := strconv.ParseInt(t.Val, 10, 64)
	if err != nil {
		if strings.ContainsAny(t.Val, ".eE") {
			return "", 0, p.notSupported(t, "LIMIT and OFFSET must be integer constants")
		}
		return "", 0, p.positioned(sqlerr.New(sqlerr.NumericOutOfRange, "bigint out of range"), t)
	}
	if neg {
		return strconv.FormatUint(uint64(-v), 10), i + 1, nil
	}
	return t.Val, i + 1, nil
}

// checkOpen reports an unclosed parenthesis as a syntax error at the end.
func (r *rewriter) checkOpen(stack []frame, to int) error {
	if len(stack) > 0 {
		return r.p.syntaxError(r.p.toks[to])
	}
	return nil
}

// castType handles "AS type )" closing CAST(x AS type); toks[i] is AS.
func (r *rewriter) castType(i, to int) error {
	p := r.p
	p.i = i + 1
	typ, err := p.typeName()
	if err != nil {
		return err
	}
	if p.i >= to || !p.toks[p.i].isOp(")") {
		return p.syntaxError(p.toks[min(p.i, to)])
	}
	p.i++
	r.emit(", "+quote(typ.String())+")", i, false)
	return nil
}

// asOf rewrites AS OF SAVEPOINT sp / AS OF CHECKPOINT n; toks[i] is AS.
func (r *rewriter) asOf(i, to int, space bool) error {
	p := r.p
	kind, arg := p.toks[i+2], p.toks[min(i+3, to)]
	if i+3 >= to {
		return p.syntaxError(p.toks[to])
	}
	var call string
	if kind.is("savepoint") {
		if arg.Kind != tIdent && arg.Kind != tQIdent {
			return p.syntaxError(arg)
		}
		call = "pg_asof_savepoint(" + quote(arg.Val) + ")"
	} else {
		if _, err := strconv.ParseUint(arg.Val, 10, 64); arg.Kind != tNumber || err != nil {
			return p.syntaxError(arg)
		}
		call = "pg_asof_checkpoint(" + arg.Val + ")"
	}
	r.emit("as of timestamp "+call, i, space)
	return nil
}

// tidbPool reuses TiDB parsers, which are costly to create and not safe for
// concurrent use.
var tidbPool = sync.Pool{New: func() any {
	p := tidb.New()
	p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat)
	return p
}}

// tidbParse parses exactly one statement with TiDB.
func tidbParse(text string) (node ast.StmtNode, err error) {
	p := tidbPool.Get().(*tidb.Parser)
	defer func() {
		// The TiDB parser is third-party code fed untrusted text: a panic
		// in it must not take the server down. The parser is not reused.
		if r := recover(); r != nil {
			node, err = nil, sqlerr.New(sqlerr.SyntaxError, "syntax error: %v", r)
			return
		}
		tidbPool.Put(p)
	}()
	stmts, _, err := p.ParseSQL(text)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error")
	}
	return stmts[0], nil
}

// tidbErrOffset finds the byte offset in text that a TiDB syntax error
// points at. TiDB says `line L column C near "REST"` where REST is the text
// from the offending token to the end (cut at 2048 bytes, then followed by
// "(total length N)").
func tidbErrOffset(text string, err error) (int, bool) {
	msg := err.Error()
	k := strings.Index(msg, ` near "`)
	if k < 0 {
		return 0, false
	}
	rest := msg[k+len(` near "`):]
	if j := strings.LastIndex(rest, "(total length "); j >= 0 {
		n, err := strconv.Atoi(strings.TrimSuffix(rest[j+len("(total length "):], ")"))
		if err == nil && n <= len(text) {
			return len(text) - n, true
		}
	}
	for off := 0; off <= len(text); off++ {
		if strings.HasPrefix(rest, text[off:]) && strings.HasPrefix(rest[len(text)-off:], `"`) {
			return off, true
		}
	}
	return 0, false
}

// nullSafeEq reports whether toks[i] and the next token are MySQL's
// <=> written together: the lexer has no <=> (PostgreSQL reads it as one
// operator, which does not exist), so it arrives as <= and an adjacent >.
func nullSafeEq(toks []token, i, to int) bool {
	return toks[i].isOp("<=") && i+1 < to && toks[i+1].isOp(">") && toks[i+1].Pos == toks[i].End
}

// renamedAggregates are aggregates TiDB's grammar reads under another name
// (stddev and std as stddev_pop, variance as var_pop, MySQL's group_concat,
// which string_agg is written as): called by the user, they are quoted, so
// TiDB reads an ordinary call and errors name what the user wrote.
// PostgreSQL's stddev and variance are the sample forms, not MySQL's.
// bit_xor is what array_agg is written as (jsonAggNames); cardinality(a),
// a word TiDB reserves, is quoted likewise.
var renamedAggregates = map[string]bool{"std": true, "stddev": true, "variance": true, "group_concat": true, "bit_xor": true,
	"cardinality": true}

func renamedAggregate(toks []token, i, to int) bool {
	return renamedAggregates[toks[i].Val] && i+1 < to && toks[i+1].isOp("(") && (i == 0 || !toks[i-1].isOp("."))
}

// stringAggArgs refuses, at the ) closing f, a string_agg call that
// TiDB's group_concat would take with a meaning PostgreSQL's string_agg
// does not have: one argument (group_concat's default delimiter is ',').
func (p *parser) stringAggArgs(f frame, toks []token, open, close int) error {
	if !f.stringAgg {
		return nil
	}
	switch {
	case close == open+1:
		return p.positioned(sqlerr.New(sqlerr.UndefinedFunction, "function string_agg() does not exist"), toks[close])
	case !f.sepSeen:
		return p.positioned(sqlerr.New(sqlerr.UndefinedFunction, "function string_agg with 1 argument does not exist"), toks[close])
	}
	return nil
}

// mysqlInfix reports whether the word at token i is one of MySQL's infix
// operators (a REGEXP b, a RLIKE b, a MOD b) standing between two
// operands, which TiDB would read as the operator. PostgreSQL has none of
// them (it reads the word as an alias and fails at the operand after it);
// mod(a, b) and the words as names are left alone.
func mysqlInfix(toks []token, i, from, to int) bool {
	w := toks[i].Val
	if w != "regexp" && w != "rlike" && w != "mod" || i == from || i+1 >= to {
		return false
	}
	prev, next := toks[i-1], toks[i+1]
	operandEnd := prev.Kind == tNumber || prev.Kind == tString || prev.Kind == tQIdent || prev.Kind == tParam ||
		prev.isOp(")") || prev.Kind == tIdent && !pgReserved[prev.Val]
	operandStart := next.Kind == tNumber || next.Kind == tString || next.Kind == tQIdent || next.Kind == tParam ||
		next.Kind == tIdent && !pgReserved[next.Val]
	return operandEnd && operandStart
}

// relationBefore reports whether a name after t names a relation (so
// "row (x)" there is a table with a column list, not ROW(x)).
func relationBefore(t token) bool {
	for _, k := range []string{"from", "join", "into", "table", "copy", "update", "references"} {
		if t.is(k) {
			return true
		}
	}
	return false
}

// oneField reports whether the parenthesis at toks[open] holds one
// expression: something, and no comma outside inner parentheses and
// brackets before its closing parenthesis.
func oneField(toks []token, open, to int) bool {
	depth := 0
	for k := open; k < to; k++ {
		switch t := toks[k]; {
		case t.isOp("(") || t.isOp("["):
			depth++
		case t.isOp(")") || t.isOp("]"):
			depth--
			if depth == 0 {
				return k > open+1
			}
		case t.isOp(",") && depth == 1:
			return false
		}
	}
	return false
}
