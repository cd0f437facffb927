package sqllogic

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// jsonArrayLiteral is a flat jsonb array's text in a result row.
var jsonArrayLiteral = regexp.MustCompile(`\[[^\[\]{}]*\]`)

// sortCollected sorts the elements of each array and flat jsonb array in
// a row, so they compare as multisets where PostgreSQL leaves their order
// undefined. The test's elements have no commas, quotes or brackets.
func sortCollected(row string) string {
	return sortElems(sortArrayElems(row), jsonArrayLiteral, ", ")
}

// TestCollectFormsPG: FILTER (WHERE ...) on array_agg, jsonb_agg,
// jsonb_object_agg and string_agg (plain, with ORDER BY and with DISTINCT
// inside; a filter that keeps no row of a group gives NULL), and the four
// as window functions (the default frame, ROWS frames, partitions without
// ORDER BY, FILTER), as batch queries and as materialized
// views over a keyed table that rounds of INSERT, UPDATE (of the grouping
// and order columns too) and DELETE change, equal PostgreSQL 15's, also
// after a kill -9 and restart. Where PostgreSQL's element order is defined
// (ORDER BY inside the call, DISTINCT, a window ORDER BY ending in the
// key) the results are compared exactly; elsewhere as multisets.
func TestCollectFormsPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t, "CREATE TABLE cf (id int PRIMARY KEY, g int, i int, s text, f float8)")
	const w = "PARTITION BY g ORDER BY i, id"
	exact := []string{
		// FILTER with ORDER BY or DISTINCT inside.
		"SELECT g, array_agg(i ORDER BY s DESC NULLS LAST, id) FILTER (WHERE f IS NOT NULL) AS a, " +
			"string_agg(s, ',' ORDER BY i, id) FILTER (WHERE i % 2 = 0) AS s FROM cf GROUP BY g",
		"SELECT g, jsonb_agg(i ORDER BY id DESC) FILTER (WHERE s < 'c') AS j, " +
			"jsonb_object_agg(s, i ORDER BY id) FILTER (WHERE s IS NOT NULL AND i > 0) AS o FROM cf GROUP BY g",
		"SELECT g, array_agg(DISTINCT i) FILTER (WHERE i < 30) AS a, string_agg(DISTINCT s, '|') FILTER (WHERE f < 1) AS s, " +
			"jsonb_agg(DISTINCT f) FILTER (WHERE i > 5) AS f, count(*) FROM cf GROUP BY g",
		// A global aggregate, and a filter no row passes (always NULL).
		"SELECT array_agg(i ORDER BY f NULLS FIRST, id) FILTER (WHERE g = 1) AS a, jsonb_agg(s ORDER BY id) FILTER (WHERE g = 7) AS j, " +
			"array_agg(s ORDER BY id) FILTER (WHERE g = 7) AS b, count(*) FROM cf",
		// Window functions over a total order: the default frame, ROWS frames.
		"SELECT id, g, string_agg(s, ',') OVER (" + w + ") AS a, array_agg(i) OVER (" + w + " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS b, " +
			"jsonb_agg(f) OVER (" + w + " ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS c FROM cf",
		"SELECT id, jsonb_object_agg(s, i) OVER (PARTITION BY g ORDER BY id) AS o, string_agg(s, ';') OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS t, " +
			"array_agg(f) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS u, " +
			"jsonb_object_agg(s, f) FILTER (WHERE i > 0) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS v FROM cf WHERE s IS NOT NULL",
		"SELECT id, string_agg(s, ',') FILTER (WHERE i > 0) OVER (" + w + ") AS a, array_agg(s) OVER (" + w + " ROWS BETWEEN 2 FOLLOWING AND 3 FOLLOWING) AS b, " +
			"array_agg(i) FILTER (WHERE s <> 'a1') OVER (" + w + " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS c, jsonb_agg(s) FILTER (WHERE i > 10) OVER (" + w + ") AS d FROM cf",
	}
	multiset := []string{
		// FILTER without ORDER BY inside: PostgreSQL lists the rows as they come.
		"SELECT g, array_agg(i) FILTER (WHERE i > 10) AS a, array_agg(s) FILTER (WHERE f > 0) AS b, count(*) FROM cf GROUP BY g",
		"SELECT g, jsonb_agg(i) FILTER (WHERE s > 'b') AS j FROM cf GROUP BY g",
		// Partitions without ORDER BY, and peers of the default frame.
		"SELECT id, array_agg(s) OVER (PARTITION BY g) AS a, jsonb_agg(i) OVER (PARTITION BY g) AS j FROM cf",
		"SELECT id, array_agg(s) OVER (PARTITION BY g ORDER BY i) AS a, jsonb_agg(f) OVER () AS j, array_agg(i) FILTER (WHERE f > 0) OVER (PARTITION BY g) AS b FROM cf",
	}
	cases := d.viewAndBatchCases("cfx", "collect exact", exact, nil)
	unordered := d.viewAndBatchCases("cfm", "collect multiset", multiset, nil)
	rng := rand.New(rand.NewPCG(41, 3))
	ch := &churn{d: d, table: "cf", cols: []string{"g", "i", "s", "f"}, rng: rng}
	ch.run(t, srv, 3, 2, func(r int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, r, func(s string) string { return s })
		}
		for _, c := range unordered {
			d.checkNorm(c, r, sortCollected)
		}
	})
}

// TestAnyUntypedArrayPG: x = ANY('{...}') reads the untyped literal as an
// array of x's type, as PostgreSQL does (it compared by text before, so
// 1.5 = ANY('{1.50}') and 3 = ANY('{03}') were false), as batch queries
// and as materialized views.
func TestAnyUntypedArrayPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t, "CREATE TABLE au (id int, f float8, i int, d date, s text, b bool)",
		"INSERT INTO au VALUES (1, 1.5, 3, '2026-01-02', 'x', true), (2, 2, 4, '2026-03-04', 'y', false), (3, NULL, NULL, NULL, NULL, NULL)")
	views := []string{
		"SELECT id, f = ANY('{1.50,2e0}') AS f, i = ANY('{03,5}') AS i, d = ANY('{2026-1-2}') AS d, s = ANY('{x,z}') AS s, b = ANY('{t}') AS b FROM au",
		"SELECT id FROM au WHERE i = ANY('{+4, 7}') OR f = ANY('{1.500}')",
	}
	for _, c := range d.viewAndBatchCases("auv", "any literal", views, nil) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.checkNorm(c, 0, func(s string) string { return s })
	}
}
