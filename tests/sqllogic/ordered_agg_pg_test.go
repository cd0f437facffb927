package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestOrderedAggPG: array_agg, string_agg, jsonb_agg and jsonb_object_agg
// with ORDER BY (directions, NULLS FIRST/LAST, several keys) and DISTINCT
// inside the call, over a keyed table that rounds of INSERT, UPDATE (of
// the grouping key too) and DELETE change, equal PostgreSQL 15's exactly,
// as batch queries and as materialized views, also after a kill -9 and
// restart. The ORDER BY lists end in the key, so PostgreSQL's order is
// defined. And without ORDER BY in a view, string_agg, jsonb_agg and
// jsonb_object_agg list their elements in the order the view documents:
// by the arguments ascending, NULLs last (PostgreSQL's ORDER BY x, or
// ORDER BY k, v, under the C locale the oracle runs with).
func TestOrderedAggPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t, "CREATE TABLE oa (id int PRIMARY KEY, g int, i int, s text, f float8)")
	views := []string{
		"SELECT g, array_agg(i ORDER BY s DESC NULLS LAST, id) AS a, string_agg(s, ',' ORDER BY i, id) AS s FROM oa GROUP BY g",
		"SELECT g, jsonb_agg(i ORDER BY id DESC) AS j, jsonb_object_agg(s, i ORDER BY id) AS o FROM oa WHERE s IS NOT NULL GROUP BY g",
		"SELECT g, array_agg(DISTINCT i) AS a, string_agg(DISTINCT s, '|') AS s, jsonb_agg(DISTINCT f) AS f, count(*) FROM oa GROUP BY g",
		"SELECT array_agg(i ORDER BY f NULLS FIRST, id) AS a, jsonb_agg(s ORDER BY f DESC NULLS FIRST, id DESC) AS j, count(*) FROM oa",
		"SELECT g, array_agg(DISTINCT s ORDER BY s DESC) AS a, jsonb_agg(DISTINCT i ORDER BY i DESC NULLS LAST) AS j FROM oa GROUP BY g",
		"SELECT g, array_agg(f ORDER BY i * 2 - id, id) AS a, array_agg(i ORDER BY i, id) AS b FROM oa GROUP BY g",
	}
	// defaults: views without ORDER BY, and the PostgreSQL query giving
	// the order a view documents.
	defaults := [][2]string{
		{"SELECT g, string_agg(s, ',') AS s, jsonb_agg(i) AS j FROM oa GROUP BY g",
			"SELECT g, string_agg(s, ',' ORDER BY s) AS s, jsonb_agg(i ORDER BY i) AS j FROM oa GROUP BY g"},
		{"SELECT g, jsonb_object_agg(s, f) AS o, jsonb_agg(f) AS f FROM oa WHERE s IS NOT NULL GROUP BY g",
			"SELECT g, jsonb_object_agg(s, f ORDER BY s, f) AS o, jsonb_agg(f ORDER BY f) AS f FROM oa WHERE s IS NOT NULL GROUP BY g"},
	}
	cases := d.viewAndBatchCases("oagg", "ordered aggregate", views, nil)
	for i, q := range defaults {
		d.mustExec(d.sdb, "streamdb", fmt.Sprintf("CREATE MATERIALIZED VIEW oadef%d AS %s", i, q[0]))
	}
	rng := rand.New(rand.NewPCG(30, 2))
	ch := &churn{d: d, table: "oa", cols: []string{"g", "i", "s", "f"}, rng: rng}
	checkAll := func(r int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, r, func(s string) string { return s })
		}
		for i, q := range defaults {
			want, err := queryRows(d.pg, q[1])
			if err != nil {
				t.Fatalf("PostgreSQL rejects %s: %v", q[1], err)
			}
			got, err := queryRows(d.sdb, fmt.Sprintf("SELECT * FROM oadef%d", i))
			if err != nil {
				t.Fatalf("round %d: view oadef%d: %v", r, i, err)
			}
			if diff := diffRows(got, want); diff != "" {
				t.Errorf("round %d: view oadef%d is not in its documented order\n  query: %s\n%s", r, i, q[1], diff)
			}
		}
	}
	ch.run(t, srv, 3, 2, checkAll)
}
