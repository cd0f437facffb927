package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A seeded generator of SQL queries over the streams a, b, c and the
// aggregate views va, vb, for TestDifferentialPG. Every query it makes is
// PostgreSQL SQL whose result is a deterministic multiset: output columns
// are named c0, c1, ... (so each can be a materialized view), floats never
// appear (avg is rounded numeric), and every LIMIT or ranking orders by all
// the columns it returns, so ties are between identical rows.

// genRel is a relation queries can read, with its columns by type.
type genRel struct {
	name  string
	ints  []string // the first is the join key k
	texts []string
	nums  []string // NUMERIC
}

func (r genRel) cols() []string {
	return append(append(append([]string(nil), r.ints...), r.texts...), r.nums...)
}

var (
	relA  = genRel{name: "a", ints: []string{"k", "x"}, texts: []string{"s"}}
	relB  = genRel{name: "b", ints: []string{"k", "y"}, texts: []string{"t"}}
	relC  = genRel{name: "c", ints: []string{"k"}, nums: []string{"z"}}
	relVA = genRel{name: "va", ints: []string{"k", "n", "sx"}, texts: []string{"ms"}}
	relVB = genRel{name: "vb", ints: []string{"k", "n", "nt", "my"}}
)

// diffDDL creates the streams (tables in PostgreSQL) in both systems.
var diffDDL = []string{
	"CREATE TABLE a (k BIGINT, x BIGINT, s TEXT)",
	"CREATE TABLE b (k BIGINT, y BIGINT, t TEXT)",
	"CREATE TABLE c (k BIGINT, z NUMERIC(10,2))",
}

// diffBaseViews are aggregate views that other queries read: materialized
// views in streamdb, plain views in PostgreSQL. Their groups change as rows
// arrive, so views over them see retractions.
var diffBaseViews = [][2]string{
	{"va", "SELECT k, count(*) AS n, sum(x) AS sx, max(s) AS ms FROM a GROUP BY k"},
	{"vb", "SELECT k, count(*) AS n, count(DISTINCT t) AS nt, min(y) AS my FROM b WHERE y IS NOT NULL GROUP BY k"},
}

// Query shapes, in the order of the summary.
const (
	shapeProject   = "project/filter"
	shapeGroupBy   = "group by"
	shapeDistinct  = "distinct"
	shapeNestedAgg = "nested agg"
	shapeJoin2     = "join 2-way"
	shapeJoin3     = "join 3-way"
	shapeJoinAgg   = "join + agg"
	shapeSemiAnti  = "semi/anti join"
	shapeLimit     = "top-n limit"
	shapeWindow    = "top-n window"
	shapeUnionAll  = "union all"
	shapeUnion     = "union"
	shapeViewView  = "view over view"
)

var diffShapes = []string{shapeProject, shapeGroupBy, shapeDistinct, shapeNestedAgg, shapeJoin2, shapeJoin3,
	shapeJoinAgg, shapeSemiAnti, shapeLimit, shapeWindow, shapeUnionAll, shapeUnion, shapeViewView}

type queryGen struct{ rng *rand.Rand }

func (g *queryGen) n(n int) int             { return g.rng.IntN(n) }
func (g *queryGen) pick(xs []string) string { return xs[g.n(len(xs))] }
func (g *queryGen) chance(p float64) bool   { return g.rng.Float64() < p }

// query returns a random query of the given shape.
func (g *queryGen) query(shape string) string {
	switch shape {
	case shapeProject:
		return g.project()
	case shapeGroupBy:
		return g.groupBy(g.pickStream(), "")
	case shapeDistinct:
		return g.distinct()
	case shapeNestedAgg:
		return g.nestedAgg()
	case shapeJoin2:
		return g.join2()
	case shapeJoin3:
		return g.join3()
	case shapeJoinAgg:
		return g.joinAgg()
	case shapeSemiAnti:
		return g.semiAnti()
	case shapeLimit:
		return g.limit()
	case shapeWindow:
		return g.window()
	case shapeUnionAll:
		return g.union("UNION ALL")
	case shapeUnion:
		return g.union("UNION")
	case shapeViewView:
		return g.viewOverView()
	}
	panic("unknown shape " + shape)
}

func (g *queryGen) pickStream() genRel { return []genRel{relA, relB, relC}[g.n(3)] }

func q(alias, col string) string {
	if alias == "" {
		return col
	}
	return alias + "." + col
}

// intExpr is an integer-valued expression over r's columns.
func (g *queryGen) intExpr(r genRel, alias string) string {
	c := q(alias, g.pick(r.ints))
	switch g.n(9) {
	case 0:
		return fmt.Sprintf("%s + %s", c, q(alias, g.pick(r.ints)))
	case 1:
		return c + " * 2"
	case 2:
		return fmt.Sprintf("coalesce(%s, -1)", c)
	case 3:
		return c + " % 3"
	case 4:
		return c + " / 2"
	case 5:
		return fmt.Sprintf("abs(%s - 3)", c)
	case 6:
		if len(r.texts) > 0 {
			return fmt.Sprintf("length(%s)", q(alias, g.pick(r.texts)))
		}
	}
	return c
}

// expr is an expression of any type over r's columns.
func (g *queryGen) expr(r genRel, alias string) string {
	switch {
	case len(r.texts) > 0 && g.chance(0.3):
		c := q(alias, g.pick(r.texts))
		return g.pick([]string{c, "upper(" + c + ")", c + " || '-'",
			fmt.Sprintf("CASE WHEN %s > 2 THEN 'hi' ELSE 'lo' END", q(alias, g.pick(r.ints)))})
	case len(r.nums) > 0 && g.chance(0.5):
		c := q(alias, g.pick(r.nums))
		return g.pick([]string{c, c + " * 2", c + " + " + q(alias, "k"), "round(" + c + ", 1)"})
	}
	return g.intExpr(r, alias)
}

// atom is a simple predicate over r's columns.
func (g *queryGen) atom(r genRel, alias string) string {
	if len(r.texts) > 0 && g.chance(0.3) {
		c := q(alias, g.pick(r.texts))
		return g.pick([]string{c + " LIKE 'p%'", c + " NOT LIKE '%p'", c + " IS NULL", c + " IS NOT NULL", c + " <> 'q'",
			c + " IN ('p', 'Q', '')", c + " >= 'q'", c + " = upper(" + c + ")"})
	}
	if len(r.nums) > 0 && g.chance(0.4) {
		c := q(alias, g.pick(r.nums))
		return g.pick([]string{c + " > 1.50", c + " IS NULL", c + " < 0", c + " BETWEEN 0 AND 5.25"})
	}
	c := q(alias, g.pick(r.ints))
	v := g.n(12) - 2
	switch g.n(11) {
	case 8:
		return fmt.Sprintf("%s NOT IN (1, 2, NULL)", c) // never true
	case 9:
		return fmt.Sprintf("%s NOT BETWEEN %d AND %d", c, v, v+g.n(6))
	case 10:
		return fmt.Sprintf("%s > %s * 2", c, q(alias, "k"))
	case 0:
		return fmt.Sprintf("%s > %d", c, v)
	case 1:
		return fmt.Sprintf("%s < %d", c, v)
	case 2:
		return c + " IS NULL"
	case 3:
		return c + " IS NOT NULL"
	case 4:
		return fmt.Sprintf("%s BETWEEN %d AND %d", c, v, v+g.n(6))
	case 5:
		return c + " % 2 = 0"
	case 6:
		return fmt.Sprintf("%s IN (0, 1, %d)", c, v)
	}
	return fmt.Sprintf("coalesce(%s, 0) <> %d", c, v)
}

// pred is a predicate of one or two atoms.
func (g *queryGen) pred(r genRel, alias string) string {
	p := g.atom(r, alias)
	switch g.n(5) {
	case 0:
		return p + " AND " + g.atom(r, alias)
	case 1:
		return "(" + p + " OR " + g.atom(r, alias) + ")"
	case 2:
		return "NOT (" + p + ")"
	}
	return p
}

// where is an optional WHERE clause.
func (g *queryGen) where(r genRel, alias string, p float64) string {
	if g.chance(p) {
		return " WHERE " + g.pred(r, alias)
	}
	return ""
}

// named joins expressions into a select list with aliases c0, c1, ...
func named(exprs []string) string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = fmt.Sprintf("%s AS c%d", e, i)
	}
	return strings.Join(out, ", ")
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c%d", i)
	}
	return out
}

func (g *queryGen) project() string {
	r := g.pickStream()
	exprs := []string{"k"}
	for i := 0; i < 1+g.n(3); i++ {
		exprs = append(exprs, g.expr(r, ""))
	}
	return fmt.Sprintf("SELECT %s FROM %s%s", named(exprs), r.name, g.where(r, "", 0.8))
}

// aggs returns 1-3 aggregate expressions over r.
func (g *queryGen) aggs(r genRel, alias string) []string {
	var out []string
	for i := 0; i < 1+g.n(3); i++ {
		ic := q(alias, "k")
		if len(r.ints) > 1 {
			ic = q(alias, g.pick(r.ints[1:]))
		}
		cands := []string{"count(*)", "count(" + ic + ")", "sum(" + ic + ")", "min(" + ic + ")", "max(" + ic + ")",
			"round(avg(" + ic + "), 6)", "count(DISTINCT " + ic + ")", "sum(" + ic + " * 2)", "max(coalesce(" + ic + ", 0))",
			"max(" + ic + ") - min(" + ic + ")", "count(*) + 1", "count(*) FILTER (WHERE " + ic + " > 0)"}
		if len(r.texts) > 0 {
			tc := q(alias, g.pick(r.texts))
			cands = append(cands, "max("+tc+")", "min("+tc+")", "count(DISTINCT "+tc+")")
		}
		if len(r.nums) > 0 {
			nc := q(alias, g.pick(r.nums))
			cands = append(cands, "sum("+nc+")", "max("+nc+")", "round(avg("+nc+"), 6)")
		}
		out = append(out, g.pick(cands))
	}
	return out
}

// groupKeys returns 1-2 grouping expressions over r.
func (g *queryGen) groupKeys(r genRel, alias string) []string {
	cands := []string{q(alias, "k"), q(alias, "k") + " % 3"}
	for _, c := range r.ints[1:] {
		cands = append(cands, q(alias, c), q(alias, c)+" % 4")
	}
	for _, c := range r.texts {
		cands = append(cands, q(alias, c), "lower("+q(alias, c)+")", q(alias, c)+" || 'z'")
	}
	if len(r.ints) > 1 {
		c := q(alias, r.ints[1])
		cands = append(cands, c+" / 3", "CASE WHEN "+c+" > 2 THEN 1 ELSE 0 END")
	}
	keys := []string{g.pick(cands)}
	if g.chance(0.3) {
		if k := g.pick(cands); k != keys[0] {
			keys = append(keys, k)
		}
	}
	return keys
}

// groupBy is a GROUP BY over one relation with aggregates and maybe HAVING;
// from is the FROM clause ("" for r itself).
func (g *queryGen) groupBy(r genRel, from string) string {
	if from == "" {
		from = r.name
	}
	keys := g.groupKeys(r, "")
	having := ""
	if g.chance(0.3) {
		ic := g.pick(r.ints)
		having = g.pick([]string{" HAVING count(*) > 1", fmt.Sprintf(" HAVING count(*) >= %d", 1+g.n(4)),
			fmt.Sprintf(" HAVING sum(%s) > %d", ic, g.n(10)), fmt.Sprintf(" HAVING max(%s) IS NOT NULL AND count(*) > 1", ic)})
	}
	return fmt.Sprintf("SELECT %s FROM %s%s GROUP BY %s%s", named(append(keys, g.aggs(r, "")...)), from,
		g.where(r, "", 0.5), strings.Join(keys, ", "), having)
}

func (g *queryGen) distinct() string {
	r := g.pickStream()
	var exprs []string
	for i := 0; i < 1+g.n(2); i++ {
		exprs = append(exprs, g.pick(g.groupKeys(r, "")))
	}
	return fmt.Sprintf("SELECT DISTINCT %s FROM %s%s", named(exprs), r.name, g.where(r, "", 0.5))
}

// nestedAgg aggregates over the groups of an inner GROUP BY.
func (g *queryGen) nestedAgg() string {
	r := g.pickStream()
	// The inner columns are n0, n1, n2, apart from the outer c0, c1, ... so
	// no name means both an input column and an output alias.
	innerQ := fmt.Sprintf("SELECT k, count(*) AS n0, sum(%s) AS n1, max(%s) AS n2 FROM %s%s GROUP BY k",
		g.pick(r.ints), g.pick(r.ints), r.name, g.where(r, "", 0.5))
	outerKey := g.pick([]string{"n0", "n0 % 2", "n2"})
	outer := []string{outerKey, g.pick([]string{"count(*)", "count(k)"}), g.pick([]string{"sum(n1)", "min(n1)", "max(k)", "round(avg(n0), 6)", "count(DISTINCT n2)"})}
	having := ""
	if g.chance(0.25) {
		having = " HAVING count(*) > 1"
	}
	return fmt.Sprintf("SELECT %s FROM (%s) AS t GROUP BY %s%s", named(outer), innerQ, outerKey, having)
}

var joinTypes = []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"}

// residual is an extra ON condition between two joined relations, or "".
func (g *queryGen) residual(l genRel, la string, r genRel, ra string) string {
	switch g.n(5) {
	case 0:
		return fmt.Sprintf(" AND %s < %s", q(la, g.pick(l.ints)), q(ra, g.pick(r.ints)))
	case 1:
		return " AND " + g.atom(r, ra)
	case 2:
		return " AND " + g.atom(l, la)
	}
	return ""
}

// joinCols picks output columns from both sides; always both keys, so outer
// joins show which side is missing.
func (g *queryGen) joinCols(l genRel, la string, r genRel, ra string) []string {
	out := []string{q(la, "k"), q(ra, "k")}
	for i := 0; i < 1+g.n(2); i++ {
		if g.chance(0.5) {
			out = append(out, q(la, g.pick(l.cols())))
		} else {
			out = append(out, q(ra, g.pick(r.cols())))
		}
	}
	return out
}

func (g *queryGen) join2() string {
	l := g.pickStream()
	r := g.pickStream()
	la, ra := "l", "r"
	where := ""
	if g.chance(0.3) {
		where = " WHERE " + g.atom(l, la)
	}
	return fmt.Sprintf("SELECT %s FROM %s AS %s %s %s AS %s ON %s.k = %s.k%s%s", named(g.joinCols(l, la, r, ra)),
		l.name, la, g.pick(joinTypes), r.name, ra, la, ra, g.residual(l, la, r, ra), where)
}

func (g *queryGen) join3() string {
	on2 := g.pick([]string{"a.k", "b.k"})
	cols := []string{"a.k", "b.k", "c.k", g.pick([]string{"a.x", "a.s"}), g.pick([]string{"b.y", "b.t"}), "c.z"}
	return fmt.Sprintf("SELECT %s FROM a %s b ON a.k = b.k%s %s c ON c.k = %s%s%s", named(cols),
		g.pick(joinTypes), g.residual(relA, "a", relB, "b"), g.pick(joinTypes), on2,
		g.residual(relB, "b", relC, "c"), g.where(relA, "a", 0.2))
}

// joinAgg groups the result of a two-way join.
func (g *queryGen) joinAgg() string {
	jt := g.pick(joinTypes[:2])
	key := g.pick([]string{"a.k", "a.s", "b.t", "a.k % 3"})
	aggs := []string{"count(*)", g.pick([]string{"sum(b.y)", "count(b.y)", "max(a.x)", "count(DISTINCT b.t)", "round(avg(b.y), 6)", "min(a.s)"})}
	return fmt.Sprintf("SELECT %s FROM a %s b ON a.k = b.k%s GROUP BY %s", named(append([]string{key}, aggs...)),
		jt, g.residual(relA, "a", relB, "b"), key)
}

func (g *queryGen) semiAnti() string {
	var sub string
	switch g.n(5) {
	case 0:
		sub = "k IN (SELECT k FROM b" + g.where(relB, "", 0.6) + ")"
	case 1:
		// NOT IN over a column with NULLs: no row qualifies once a NULL is in it.
		sub = "k NOT IN (SELECT k FROM c" + g.where(relC, "", 0.6) + ")"
	case 2:
		sub = "NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k" + g.pick([]string{"", " AND b.y > a.x", " AND " + g.atom(relB, "b")}) + ")"
	default:
		sub = "EXISTS (SELECT 1 FROM c WHERE c.k = a.k" + g.pick([]string{"", " AND c.z > 1.00", " AND " + g.atom(relC, "c")}) + ")"
	}
	if g.chance(0.4) {
		sub += " AND " + g.atom(relA, "a")
	}
	return fmt.Sprintf("SELECT %s FROM a WHERE %s", named([]string{"a.k", "a.x", "a.s"}), sub)
}

// orderAll orders by every one of cols, in a random order and directions, so
// the order is total up to identical rows.
func (g *queryGen) orderAll(cols []string) string {
	perm := g.rng.Perm(len(cols))
	out := make([]string, len(cols))
	for i, p := range perm {
		out[i] = cols[p] + g.pick([]string{"", " DESC", " ASC NULLS FIRST", " DESC NULLS LAST"})
	}
	return strings.Join(out, ", ")
}

func (g *queryGen) limitClause() string {
	s := fmt.Sprintf(" LIMIT %d", 1+g.n(8))
	if g.chance(0.4) {
		s += fmt.Sprintf(" OFFSET %d", g.n(5))
	}
	return s
}

func (g *queryGen) limit() string {
	if g.chance(0.3) { // top groups of an aggregate: the group key makes the order total
		r := g.pickStream()
		return fmt.Sprintf("SELECT k AS c0, count(*) AS c1 FROM %s GROUP BY k ORDER BY c1 DESC, c0%s", r.name, g.limitClause())
	}
	r := g.pickStream()
	cols := r.cols()
	if len(cols) > 2 && g.chance(0.5) {
		cols = cols[:2]
	}
	return fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s%s", named(cols), r.name, g.where(r, "", 0.4),
		g.orderAll(names(len(cols))), g.limitClause())
}

func (g *queryGen) window() string {
	r := g.pickStream()
	if g.chance(0.2) {
		r = relVA
	}
	cols := r.cols()
	part := g.pick([]string{"k", "k % 3", cols[len(cols)-1]})
	fn := g.pick([]string{"ROW_NUMBER()", "RANK()", "DENSE_RANK()"})
	inner := fmt.Sprintf("SELECT %s, %s OVER (PARTITION BY %s ORDER BY %s) AS rn FROM %s%s", named(cols), fn, part,
		g.orderAll(cols), r.name, g.where(r, "", 0.3))
	return fmt.Sprintf("SELECT %s, rn FROM (%s) AS t WHERE rn <= %d", strings.Join(names(len(cols)), ", "), inner, 1+g.n(3))
}

func (g *queryGen) union(op string) string {
	type branch struct {
		exprs []string
		from  string
	}
	branches := []branch{
		{[]string{"k", "x", "s"}, "a" + g.where(relA, "", 0.5)},
		{[]string{"k", "y", "t"}, "b" + g.where(relB, "", 0.5)},
		{[]string{"k", "k * 10", "'c'"}, "c" + g.where(relC, "", 0.5)},
	}
	if g.chance(0.3) {
		branches = append(branches, branch{[]string{"k", "x + 1", "upper(s)"}, "a" + g.where(relA, "", 0.8)})
	}
	g.rng.Shuffle(len(branches), func(i, j int) { branches[i], branches[j] = branches[j], branches[i] })
	n := 2 + g.n(len(branches)-1)
	parts := make([]string, n)
	for i, b := range branches[:n] {
		list := strings.Join(b.exprs, ", ")
		if i == 0 { // the first branch names the columns
			list = named(b.exprs)
		}
		parts[i] = "SELECT " + list + " FROM " + b.from
	}
	return strings.Join(parts, " "+op+" ")
}

// viewOverView reads the aggregate views va and vb.
func (g *queryGen) viewOverView() string {
	switch g.n(6) {
	case 0: // a join over an aggregate view: group counts change under it
		return fmt.Sprintf("SELECT %s FROM va %s b ON va.k = b.k%s", named([]string{"va.k", "va.n", "va.sx", "b.y"}),
			g.pick(joinTypes), g.pick([]string{"", " AND b.y < va.n", " AND va.n > 1"}))
	case 1:
		return fmt.Sprintf("SELECT %s FROM va %s vb ON va.k = vb.k", named([]string{"va.k", "vb.k", "va.n", "vb.nt"}), g.pick(joinTypes))
	case 2:
		return g.groupBy(relVA, "")
	case 3:
		return fmt.Sprintf("SELECT %s FROM vb%s", named([]string{"k", "n", "my"}), g.where(relVB, "", 0.9))
	case 4:
		return fmt.Sprintf("SELECT %s FROM va ORDER BY %s%s", named([]string{"k", "n"}), g.orderAll([]string{"c0", "c1"}), g.limitClause())
	}
	return fmt.Sprintf("SELECT %s FROM va WHERE k IN (SELECT k FROM vb WHERE n > %d)", named([]string{"k", "n", "ms"}), g.n(3))
}
