package sqllogic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestJSONBOrderPG checks the binary jsonb layout against PostgreSQL 15 over
// generated JSON values: nested objects and arrays, numbers in different
// textual forms of one value (1, 1.0, 1.00, 1e0), unicode and escaped
// strings, top-level scalars. Batch queries and materialized views must
// print PostgreSQL's rows for the accessors (-> ->> #> #>> by key, index
// and path), the predicates (@> <@ ? ?| ?&), jsonb's btree ordering (= < <=
// > >= between every pair of values, ORDER BY through row_number and
// top-N), jsonb_typeof, the set-returning functions, jsonb_build_object,
// jsonb_agg, jsonb_object_agg, to_jsonb and the casts; GROUP BY, DISTINCT
// and joins key on a second column k. The views survive a kill -9 (their
// state holds the binary values) and go on with new rows, and two keyed by
// jsonb are restored from a savepoint and replay.
//
// k's values spell each number one way: GROUP BY on a whole jsonb value
// whose numbers differ only in scale ({"a": 1.0}, {"a": 1}) is one group in
// PostgreSQL and two in streamdb (docs/decisions/2026-12-07-jsonb-binary.md).
func TestJSONBOrderPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t, "CREATE TABLE jv (id INT, j JSONB, k JSONB)")
	rng := rand.New(rand.NewPCG(7, 2026))

	views := []string{
		"SELECT id, j->'a' AS a, j->>'a' AS at, j->0 AS e0, j->>-1 AS el, j#>'{a,0}' AS p, j#>>'{b,c}' AS pt, jsonb_typeof(j) AS ty FROM jv",
		`SELECT id, j @> '{"a": 1}' AS c1, j <@ '{"a": 1, "b": [1, "é"]}' AS c2, j ? 'a' AS e, j ?| array['b', 'é'] AS eany, j ?& array['a', 'b'] AS eall FROM jv`,
		"SELECT k, count(*) AS c, sum(id) AS s FROM jv GROUP BY k",
		"SELECT DISTINCT k FROM jv",
		"SELECT jsonb_typeof(j) AS t, count(*) AS c, count(DISTINCT k) AS dk FROM jv GROUP BY jsonb_typeof(j)",
		`SELECT id, j = '1'::jsonb AS one, j < '{"a": 1}'::jsonb AS lt, j >= '[1, 2]'::jsonb AS ge, j = k AS jk, j > k AS gt FROM jv`,
		"SELECT k->>'a' AS a, count(*) AS c FROM jv GROUP BY k->>'a'",
	}
	batch := []string{
		"SELECT id, j, k, j::text, j::json, (j::text)::jsonb = j FROM jv",
		"SELECT a.id, b.id, a.j = b.j, a.j <> b.j, a.j < b.j, a.j <= b.j, a.j > b.j, a.j >= b.j, a.j @> b.j, a.j <@ b.j FROM jv a, jv b WHERE a.id < b.id",
		"SELECT id, row_number() OVER (ORDER BY j, id) FROM jv",
		"SELECT id, row_number() OVER (ORDER BY j DESC, id) FROM jv",
		"SELECT id, rank() OVER (ORDER BY k) FROM jv",
		"SELECT id, j FROM jv ORDER BY j DESC, id LIMIT 9",
		"SELECT id, j->'a', j->>'a', j->'é', j->0, j->>1, j->-1, j#>'{a,0}', j#>>'{b,c}', j#>'{0,a}', j#>>'{}' FROM jv",
		`SELECT id, j ? 'a', j ? 'é', j ?| array['a', 'x'], j ?& array['a', 'b'], j @> '[1]', j @> '1', j @> '{"b": {}}' FROM jv`,
		"SELECT id, jsonb_typeof(j), jsonb_typeof(j->'a') FROM jv",
		"SELECT id, jsonb_array_length(j) FROM jv WHERE jsonb_typeof(j) = 'array'",
		"SELECT id, jsonb_array_elements(j) FROM jv WHERE jsonb_typeof(j) = 'array'",
		"SELECT id, jsonb_array_elements_text(j) FROM jv WHERE jsonb_typeof(j) = 'array'",
		"SELECT id, jsonb_each(j) FROM jv WHERE jsonb_typeof(j) = 'object'",
		"SELECT id, jsonb_each_text(j) FROM jv WHERE jsonb_typeof(j) = 'object'",
		"SELECT id, jsonb_build_object('j', j, 'k', k, 'id', id), jsonb_build_array(j, k), to_jsonb(j), to_jsonb(j->>'a') FROM jv",
		"SELECT jsonb_typeof(j), jsonb_object_agg(id::text, j), jsonb_array_length(jsonb_agg(k)) FROM jv GROUP BY jsonb_typeof(j)",
		"SELECT id, j::numeric(30,6), j::float8, j::text, j::int FROM jv WHERE jsonb_typeof(j) = 'number' AND abs(j::float8) < 1e9",
		"SELECT id, j::boolean FROM jv WHERE jsonb_typeof(j) = 'boolean'",
		"SELECT k, count(*), min(id) FROM jv GROUP BY k",
		"SELECT DISTINCT k FROM jv",
		"SELECT a.id, b.id FROM jv a JOIN jv b ON a.k = b.k WHERE a.id < b.id",
		"SELECT id FROM jv WHERE j IN ('1', '[]', '{}', '\"é\"', 'null')",
	}
	cases := d.viewAndBatchCases("jo", "jsonb", views, batch)

	nextID := 0
	ingest := func(round, n int) {
		rows := make([][2]string, n)
		for i := range rows {
			rows[i] = [2]string{jsonValue(rng, 0, true), jsonValue(rng, 2, false)}
		}
		if round%2 == 0 {
			var vals []string
			for _, r := range rows {
				nextID++
				vals = append(vals, fmt.Sprintf("(%d, '%s', '%s')", nextID, strings.ReplaceAll(r[0], "'", "''"), strings.ReplaceAll(r[1], "'", "''")))
			}
			ins := "INSERT INTO jv VALUES " + strings.Join(vals, ", ")
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
			return
		}
		var b strings.Builder // COPY text: backslashes doubled
		for _, r := range rows {
			nextID++
			fmt.Fprintf(&b, "%d\t%s\t%s\n", nextID, strings.ReplaceAll(r[0], `\`, `\\`), strings.ReplaceAll(r[1], `\`, `\\`))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
			if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY jv FROM STDIN"); err != nil {
				t.Fatalf("COPY text: %v", err)
			}
		}
	}
	checkAll := func(round int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	ingest(0, 40)
	checkAll(0)
	ingest(1, 30)
	checkAll(1)
	// COPY TO in text and binary (streamdb's COPY TO has no CSV): the jsonb_out
	// text, binary with its version byte.
	binaryAndCatalogsMatchPG(t, d, "SELECT id, j, k, j->'a' FROM jv ORDER BY id")
	for _, q := range []string{"COPY (SELECT id, j, k FROM jv ORDER BY id) TO STDOUT",
		"COPY (SELECT id, j, k FROM jv ORDER BY id) TO STDOUT (FORMAT binary)"} {
		var got, want strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := d.sdb.PgConn().CopyTo(ctx, &got, q); err != nil {
			t.Fatalf("streamdb %s: %v", q, err)
		}
		if _, err := d.pg.PgConn().CopyTo(ctx, &want, q); err != nil {
			t.Fatalf("PostgreSQL %s: %v", q, err)
		}
		cancel()
		if got.String() != want.String() {
			t.Errorf("%s: streamdb's output differs from PostgreSQL's\n got: %q\nwant: %q", q, got.String(), want.String())
		}
	}

	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	checkAll(2)
	ingest(2, 30)
	checkAll(3)
	// A savepoint of views keyed by jsonb values, restored after more rows:
	// the views rewind to it and replay to the query over all input.
	d.mustExec(d.sdb, "streamdb", "CREATE SAVEPOINT jsp")
	ingest(3, 20)
	d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
	for _, v := range []string{"jov2", "jov3"} {
		d.mustExec(d.sdb, "streamdb", "RESTORE "+v+" FROM SAVEPOINT jsp")
	}
	checkAll(4)
}

// jsonValue returns a random JSON value as text: nested objects and
// arrays, numbers in several spellings of one value (scaled: 1.0, 1.00,
// 1e0; else one spelling each), strings with unicode and escapes.
func jsonValue(rng *rand.Rand, depth int, scaled bool) string {
	nums := []string{"0", "1", "-3", "2.5", "100", "0.001", "12345678901234567890", "-0.5"}
	if scaled {
		nums = append(nums, "1.0", "1.00", "1e0", "-0", "0.0", "2.50", "1e2", "25e-1", "-3.0", "1E-3")
	}
	strs := []string{`"a"`, `"b"`, `"aa"`, `""`, `"é"`, `"\u00e9"`, `"😀"`, `"x\"y"`, `"tab\there"`, `"Z"`, `"1"`}
	keys := []string{`"a"`, `"b"`, `"aa"`, `"c"`, `"é"`, `"ab"`}
	if depth >= 3 {
		switch rng.IntN(4) {
		case 0:
			return nums[rng.IntN(len(nums))]
		case 1:
			return strs[rng.IntN(len(strs))]
		case 2:
			return []string{"true", "false"}[rng.IntN(2)]
		}
		return "null"
	}
	switch rng.IntN(9) {
	case 0, 1:
		return nums[rng.IntN(len(nums))]
	case 2:
		return strs[rng.IntN(len(strs))]
	case 3:
		return []string{"true", "false", "null"}[rng.IntN(3)]
	case 4, 5:
		n := rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = jsonValue(rng, depth+1, scaled)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	n := rng.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = keys[rng.IntN(len(keys))] + ": " + jsonValue(rng, depth+1, scaled)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
