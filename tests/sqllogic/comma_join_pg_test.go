package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Comma joins (FROM a, b WHERE a.k = b.k) are bound as cross joins under a
// filter; the planner must make the WHERE's equalities the joins' hash keys
// whatever sits between them (IN/EXISTS/NOT IN subqueries, a scalar
// subquery, correlated or not) and whatever the order of the FROM list
// (issue 33, bug 2). Each
// case's EXPLAIN must have no cross join but the ones pairing rows with a
// single row (a scalar subquery's value, NOT IN's counts), and the batch
// query and a view over the same rows must equal PostgreSQL 15's answer.

type commaJoinCase struct {
	name string
	sql  string
	// singleRowCrosses is how many joins without keys the plan may have:
	// each pairs the rows with one row (SingleRow or a global aggregate).
	singleRowCrosses int
	keys             []string // lines the EXPLAIN output must contain
	// batchOnly: a view refuses the query (correlated value subqueries).
	batchOnly bool
}

var commaJoinCases = []commaJoinCase{
	{name: "cj_in", sql: `SELECT o.ok, l.q FROM orders o, lineitem l
		WHERE o.ok = l.ok AND o.ok IN (SELECT pk FROM part WHERE kind = 1)`,
		keys: []string{"HashJoin Inner left=[o.ok] right=[l.ok]"}},
	{name: "cj_exists", sql: `SELECT o.ok, l.part FROM orders o, lineitem l
		WHERE o.ok = l.ok AND EXISTS (SELECT 1 FROM part p WHERE p.pk = l.part AND p.kind < 3)`,
		keys: []string{"HashJoin Inner left=[o.ok] right=[l.ok]"}},
	{name: "cj_not_in", sql: `SELECT o.ok, l.q FROM orders o, lineitem l
		WHERE l.ok = o.ok AND l.part NOT IN (SELECT pk FROM part WHERE kind = 2)`,
		singleRowCrosses: 1, keys: []string{"HashJoin Inner left=[o.ok] right=[l.ok]"}},
	{name: "cj_scalar", sql: `SELECT o.ok, l.q FROM orders o, lineitem l
		WHERE o.ok = l.ok AND l.q > (SELECT count(*) FROM part) / 20`,
		singleRowCrosses: 1, keys: []string{"HashJoin Inner left=[o.ok] right=[l.ok]"}},
	// l and c have no equality: the join order must not pair them first.
	{name: "cj_three_reordered", sql: `SELECT o.ok, c.region, l.q FROM lineitem l, cust c, orders o
		WHERE o.cust = c.ck AND l.ok = o.ok AND c.region IN (SELECT kind FROM part)`,
		keys: []string{"left=[l.ok] right=[o.ok]", "left=[o.cust] right=[c.ck]"}},
	{name: "cj_four_in_exists", sql: `SELECT o.ok, p.kind, c.region FROM part p, cust c, orders o, lineitem l
		WHERE l.part = p.pk AND o.cust = c.ck AND o.ok = l.ok
		  AND o.ok IN (SELECT ok FROM lineitem WHERE q > 5)
		  AND NOT EXISTS (SELECT 1 FROM part p2 WHERE p2.pk = l.part AND p2.kind = 4)`,
		keys: []string{"left=[p.pk] right=[l.part]"}},
	// A condition over three tables stays a filter; the equalities are keys.
	{name: "cj_three_table_cond", sql: `SELECT o.ok, l.q, c.region FROM orders o, lineitem l, cust c
		WHERE o.ok = l.ok AND c.ck = o.cust AND o.v + l.q > c.region * 10`,
		keys: []string{"HashJoin Inner left=[o.ok] right=[l.ok]", "HashJoin Inner left=[o.cust] right=[c.ck]"}},
	// Expressions over one table's columns are keys too.
	{name: "cj_expr_keys", sql: `SELECT o.ok, l.q FROM orders o, lineitem l
		WHERE o.ok + 1 = l.ok + 1 AND l.part IN (SELECT pk FROM part WHERE kind > 1)`,
		keys: []string{"HashJoin Inner left=[CAST((CAST(o.ok AS bigint) + 1) AS integer)]"}},
	// Any expression a row determines is a key, as in PostgreSQL (coalesce,
	// CASE, abs were filters over a cross join).
	{name: "cj_func_keys", sql: `SELECT o.ok, l.q FROM orders o, lineitem l
		WHERE o.ok = coalesce(l.ok, 0) AND o.v = CASE WHEN l.q > 4 THEN abs(l.q - 100) - 50 ELSE l.q END`,
		keys: []string{"HashJoin Inner left=[o.ok, o.v] right=[coalesce(l.ok, 0), CASE WHEN"}},
	// Equalities common to every arm of an OR are keys (TPC-H q19's shape;
	// PostgreSQL factors them out of the OR).
	{name: "cj_or_common", sql: `SELECT o.ok, l.q, p.kind FROM orders o, lineitem l, part p
		WHERE (l.part = p.pk AND o.ok = l.ok AND p.kind = 1 AND l.q < 5)
		   OR (p.pk = l.part AND l.ok = o.ok AND p.kind = 2 AND l.q >= 5)
		   OR (o.ok = l.ok AND l.part = p.pk AND o.v > 45)`,
		keys: []string{"right=[l.ok]", "right=[p.pk]"}},
	// A correlated value subquery is decorrelated over the distinct outer
	// values, an aggregate over a copy of the FROM input: that copy must be
	// keyed too (TPC-H q17 and q2 shapes), not o x l.
	{name: "cj_corr_scalar", sql: `SELECT o.ok, l.q FROM orders o, lineitem l
		WHERE o.ok = l.ok AND l.q >= (SELECT max(l2.q) FROM lineitem l2 WHERE l2.ok = o.ok)`,
		batchOnly: true, keys: []string{"HashJoin Inner left=[o.ok] right=[l.ok]"}},
	{name: "cj_corr_select", sql: `SELECT o.ok, l.part, (SELECT count(*) FROM lineitem l2 WHERE l2.part = l.part) AS n
		FROM orders o, lineitem l WHERE o.ok = l.ok AND o.v < 25`,
		batchOnly: true, keys: []string{"HashJoin Inner left=[o.ok] right=[l.ok]"}},
	{name: "cj_corr_three", sql: `SELECT c.region, l.q FROM cust c, orders o, lineitem l
		WHERE c.ck = o.cust AND o.ok = l.ok AND l.q < (SELECT avg(l2.q) FROM lineitem l2 WHERE l2.part = l.part)`,
		batchOnly: true, keys: []string{"left=[c.ck] right=[o.cust]"}},
	{name: "cj_agg", sql: `SELECT c.region, count(*) AS n, sum(l.q) AS q FROM cust c, orders o, lineitem l
		WHERE c.ck = o.cust AND o.ok = l.ok AND l.part IN (SELECT pk FROM part WHERE kind <> 0)
		GROUP BY c.region`,
		keys: []string{"left=[c.ck] right=[o.cust]"}},
}

// Under -short only the plans are checked (the comparison with PostgreSQL
// starts a cluster: about ten seconds).
func TestCommaJoinKeysPG(t *testing.T) {
	t.Parallel()
	srv := StartServer(t, "")
	sdb := srv.Conn(t)
	ddls := []string{
		"CREATE TABLE orders (ok int, cust int, v int)",
		"CREATE TABLE lineitem (ok int, part int, q int)",
		"CREATE TABLE part (pk int, kind int)",
		"CREATE TABLE cust (ck int, region int)",
	}
	for _, ddl := range ddls {
		mustExec(t, sdb, "streamdb", ddl)
	}
	for _, c := range commaJoinCases {
		plan, err := queryRows(sdb, "EXPLAIN "+c.sql)
		if err != nil {
			t.Fatalf("%s: EXPLAIN: %v", c.name, err)
		}
		text := strings.ReplaceAll(strings.Join(plan, "\n"), "'", "")
		if n := strings.Count(text, "left=[] right=[]"); n != c.singleRowCrosses {
			t.Errorf("%s: %d joins without keys, want %d:\n%s", c.name, n, c.singleRowCrosses, text)
		}
		for _, k := range c.keys {
			if !strings.Contains(text, k) {
				t.Errorf("%s: EXPLAIN lacks %q:\n%s", c.name, k, text)
			}
		}
	}
	if t.Failed() {
		t.FailNow() // views over cross joins would only grow
	}
	if testing.Short() {
		return
	}
	pgc := StartPG(t).Conn(t)
	for _, ddl := range ddls {
		mustExec(t, pgc, "PostgreSQL", ddl)
	}
	for _, c := range commaJoinCases {
		if !c.batchOnly {
			mustExec(t, sdb, "streamdb", "CREATE MATERIALIZED VIEW "+c.name+" AS "+c.sql)
		}
	}
	rng := rand.New(rand.NewPCG(33, 2))
	for round := 0; round < 2; round++ {
		for _, ins := range commaJoinRows(rng, round) {
			mustExec(t, sdb, "streamdb", ins)
			mustExec(t, pgc, "PostgreSQL", ins)
		}
		mustExec(t, sdb, "streamdb", "CHECKPOINT")
		for _, c := range commaJoinCases {
			want, err := queryRows(pgc, c.sql)
			if err != nil {
				t.Fatalf("%s: PostgreSQL: %v", c.name, err)
			}
			if len(want) == 0 {
				t.Fatalf("%s: PostgreSQL returns no rows: the data does not exercise the case", c.name)
			}
			qs := []string{c.sql, "SELECT * FROM " + c.name}
			if c.batchOnly {
				qs = qs[:1]
			}
			for _, q := range qs {
				got, err := queryRows(sdb, q)
				if err != nil {
					t.Fatalf("%s round %d: %s: %v", c.name, round, q, err)
				}
				if d := diffRows(got, want); d != "" {
					t.Errorf("%s round %d: %s:\n%s", c.name, round, q, d)
				}
			}
		}
	}
}

// commaJoinRows makes one round of INSERTs: orders keyed 0..299 per round,
// three line items per order on average, parts and customers.
func commaJoinRows(rng *rand.Rand, round int) []string {
	var ins []string
	add := func(table string, n int, row func(i int) string) {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s VALUES ", table)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(row(i))
		}
		ins = append(ins, b.String())
	}
	base := round * 300
	add("part", 40, func(i int) string { return fmt.Sprintf("(%d, %d)", round*40+i, rng.IntN(5)) })
	add("cust", 30, func(i int) string { return fmt.Sprintf("(%d, %d)", round*30+i, rng.IntN(4)) })
	add("orders", 300, func(i int) string {
		return fmt.Sprintf("(%d, %d, %d)", base+i, rng.IntN(30*(round+1)), rng.IntN(50))
	})
	add("lineitem", 900, func(i int) string {
		return fmt.Sprintf("(%d, %d, %d)", rng.IntN(300*(round+1)), rng.IntN(40*(round+1)), rng.IntN(10))
	})
	return ins
}
