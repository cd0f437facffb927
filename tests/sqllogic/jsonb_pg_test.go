package sqllogic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestJSONBPG checks json and jsonb against PostgreSQL 15 over generated
// event payloads (random key order, duplicate keys, spacing, escapes,
// numbers written as 1.0, 1e2, -0): the same rows go into both by INSERT,
// COPY text and COPY CSV, then batch queries (operators -> ->> #> #>> @>
// <@ ? ?| ?&, = between jsonb values, casts, jsonb_typeof,
// jsonb_array_length, to_jsonb, jsonb_build_object/array, the
// set-returning functions, GROUP BY payload->>'k') and materialized views
// over the stream must print the same rows; jsonb in the binary result
// format and the RowDescription type OIDs must be byte-identical, as
// must rows inserted with binary json and jsonb parameters; bad
// input and unknown operators get PostgreSQL's SQLSTATEs. Last, a kill -9
// and restart: the views keep their state and go on with new rows.
//
// Not compared: GROUP BY / DISTINCT on a whole jsonb value whose numbers
// differ only in scale ({"a": 1.0} and {"a": 1} are one group in
// PostgreSQL, two in streamdb; docs/decisions/2026-12-06-jsonb.md).
// jsonb's ordering is TestJSONBOrderPG's.
func TestJSONBPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t, "CREATE TABLE ev (id INT, payload JSONB, raw JSON)")
	rng := rand.New(rand.NewPCG(30, 7))

	views := []string{
		"SELECT payload->>'user' AS u, count(*) AS c, sum((payload->>'n')::int) AS s FROM ev GROUP BY payload->>'user'",
		"SELECT id, payload->'nested' AS nested, payload @> '{\"flag\": true}' AS f, payload#>>'{nested,k}' AS k FROM ev WHERE payload ? 'user'",
		"SELECT payload->'user' AS u, max(id) AS m, count(payload->'tags') AS t FROM ev GROUP BY payload->'user'",
		"SELECT jsonb_typeof(payload->'x') AS t, count(*) AS c FROM ev GROUP BY jsonb_typeof(payload->'x')",
		"SELECT id, payload, raw FROM ev WHERE payload->>'user' <> 'u2'",
		"SELECT (payload->'n')::int % 3 AS g, count(*) AS c, min(payload->>'user') AS lo FROM ev WHERE payload ?| array['tags', 'flag'] GROUP BY (payload->'n')::int % 3",
	}
	batch := []string{
		"SELECT id, payload, raw FROM ev",
		"SELECT id, payload->'user', payload->>'n', payload->'tags'->0, payload->'tags'->>-1, payload#>'{nested,k}', payload#>>'{tags,1}', payload->'x' FROM ev",
		"SELECT id, payload @> '{\"user\": \"u1\"}', payload ? 'tags', payload ?| array['a', 'b'], payload ?& array['user', 'n'], '{\"user\": \"u1\"}' <@ payload, payload->'tags' @> '[1]' FROM ev",
		"SELECT id, jsonb_typeof(payload->'x'), jsonb_typeof(payload->'tags'), jsonb_typeof(payload) FROM ev",
		"SELECT id, jsonb_array_length(payload->'tags') FROM ev WHERE jsonb_typeof(payload->'tags') = 'array'",
		"SELECT payload->>'user' AS u, count(*), sum((payload->>'n')::int), sum((payload->'n')::bigint) FROM ev GROUP BY payload->>'user'",
		"SELECT id, (payload->'x')::numeric(30,4), (payload->>'x')::numeric(30,4), (payload->'x')::float8, (payload->'x')::int FROM ev WHERE jsonb_typeof(payload->'x') = 'number' AND (payload->>'x')::numeric < 1e9",
		"SELECT id, (payload->'flag')::boolean FROM ev WHERE jsonb_typeof(payload->'flag') = 'boolean'",
		"SELECT id, to_jsonb(id), to_jsonb(payload->>'user'), jsonb_build_object('id', id, 'u', payload->'user', 'n', payload->'n', 'z', NULL), jsonb_build_array(id, payload->>'user', NULL, true) FROM ev",
		"SELECT id, raw->'user', raw->>'user', raw->'tags', raw->'nested'->>'k', raw#>'{tags,0}', raw#>>'{nested,k}', raw->'n', raw->>'x', raw->'tags'->>0, json_typeof(raw->'x') FROM ev",
		`SELECT '{"a":1,"a":2}'::json -> 'a', '[1, "\u00e9"]'::json ->> 1, '"x"'::json -> 0, '[1]'::json -> -1`,
		"SELECT id, payload = raw::jsonb, raw::jsonb, raw::text, payload::text, payload::json FROM ev",
		"SELECT a.id, b.id FROM ev a, ev b WHERE a.payload = b.payload AND a.id < b.id",
		"SELECT id, payload->'nested' = '{\"k\": \"v\"}', payload->'x' = '1', payload->'x' <> '1.0' FROM ev",
		"SELECT id, jsonb_array_elements(payload->'tags') FROM ev WHERE jsonb_typeof(payload->'tags') = 'array'",
		"SELECT id, jsonb_array_elements_text(payload->'tags') FROM ev WHERE jsonb_typeof(payload->'tags') = 'array'",
		"SELECT id, jsonb_each(payload) FROM ev",
		"SELECT id, jsonb_each_text(payload) FROM ev",
		"SELECT * FROM jsonb_array_elements('[1, \"a\", {\"b\": [2.50]}, null, 1e2]')",
		"SELECT * FROM jsonb_array_elements_text('[1, \"a\\\"b\", {\"b\": 2}, null]')",
		`SELECT * FROM jsonb_each('{"b": [1, 2.50], "a": "x\"y", "c": null, "a": 1e2}')`,
		`SELECT e.key, e.value, length(e.value) FROM jsonb_each_text('{"b": [1], "a": "x\"y", "c": null}') e`,
		`SELECT k, v FROM jsonb_each('{"a": {"b": 1}}') AS t(k, v)`,
		"SELECT id FROM ev WHERE payload->>'user' = 'u1' AND (payload->>'n')::int > 2",
		"SELECT payload->'nested'->>'k' AS k, count(*) FROM ev GROUP BY payload->'nested'->>'k'",
		"SELECT DISTINCT payload->'user' FROM ev",
		"SELECT id, payload->'nested' ? 'k', payload->>'user' || '!', length(payload->>'user') FROM ev",
		// Aggregates (batch only): jsonb_object_agg's keys are unique, so
		// its result does not depend on the order rows arrive in; jsonb_agg
		// is compared through order-free functions of it.
		"SELECT payload->>'user', jsonb_object_agg(id, payload), jsonb_object_agg(id::text || 'k', payload->'x') FROM ev GROUP BY payload->>'user'",
		"SELECT payload->>'user', jsonb_array_length(jsonb_agg(payload->'n')), jsonb_agg(payload->'n') @> '[1]', jsonb_agg(payload->'n') <@ '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]', jsonb_typeof(jsonb_agg(payload->'x')) FROM ev GROUP BY payload->>'user'",
		"SELECT jsonb_agg(id), jsonb_object_agg(id, 1) FROM ev WHERE id < 0",
		"SELECT id, COALESCE(payload->'tags', '[]'), CASE WHEN payload ? 'x' THEN payload->'x' ELSE 'null' END FROM ev",
		"SELECT payload->'user' FROM ev UNION ALL SELECT '\"zz\"'::jsonb",
		"SELECT id FROM ev WHERE payload->'user' IN ('\"u1\"', '\"u3\"')",
		"SELECT count(*), count(payload->'x'), sum(CASE WHEN payload->'x' = 'null' THEN 1 ELSE 0 END) FROM ev",
		"SELECT NULL::jsonb, '{}'::jsonb ? NULL, '[1,2]'::jsonb -> NULL::int, '[1,2]'::jsonb -> 1::smallint",
		"SELECT id, payload #> '{}', payload #>> '{}', payload #> '{tags,-1}', payload->'tags' ?& '{}' FROM ev",
		"SELECT id, payload->'nested'->'deep'->'a' @> (payload->'nested'->'deep'->'a'), payload->'nested'->'deep' <@ (payload->'nested') FROM ev",
		"SELECT id, to_jsonb(payload), to_jsonb(raw), to_jsonb(ARRAY['a', NULL]), to_jsonb(1.5::float8), to_jsonb(true), to_jsonb('2026-01-02 03:04:05'::timestamp), to_jsonb('2026-01-02'::date) FROM ev",
		"SELECT payload->>'user' AS u, count(DISTINCT payload->'user'), max(payload->>'n') FROM ev GROUP BY 1",
		// numeric's range as jsonb input meets it, and json, which checks only the grammar
		`SELECT '[1e1001, -0e-16383, 1.5e-16382, 0e1073741822]'::jsonb::text, length('[1e131071]'::jsonb::text), length('[10e131070, 0.1e131072]'::jsonb::text), '[1e131072, 0e-16384, 1e99999999999]'::json`,
		`SELECT '{"b": {"y": [1, {"d": 1, "c": 2, "d": 3}], "x": "\u00e9\n"}, "a": 1, "b": 2, "": []}'::jsonb, '{"b": {"y": 1}, "a": 1}'::jsonb -> 'b'`,
	}
	cases := d.viewAndBatchCases("j", "jsonb", views, batch)

	nextID := 0
	gen := func(n int) [][2]string { // (payload, raw) pairs as JSON text
		out := make([][2]string, n)
		for i := range out {
			out[i] = [2]string{jsonEvent(rng), jsonEvent(rng)}
		}
		return out
	}
	ingest := func(round int, rows [][2]string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var b strings.Builder
		switch round % 3 {
		case 0:
			var vals []string
			for _, r := range rows {
				nextID++
				vals = append(vals, fmt.Sprintf("(%d, '%s', '%s')", nextID, r[0], r[1]))
			}
			ins := "INSERT INTO ev VALUES " + strings.Join(vals, ", ")
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
			return
		case 1: // COPY text: backslashes doubled (the JSON holds no tab or newline)
			for _, r := range rows {
				nextID++
				fmt.Fprintf(&b, "%d\t%s\t%s\n", nextID, strings.ReplaceAll(r[0], `\`, `\\`), strings.ReplaceAll(r[1], `\`, `\\`))
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY ev FROM STDIN"); err != nil {
					t.Fatalf("COPY text: %v", err)
				}
			}
		case 2: // COPY CSV: quotes doubled inside quoted fields
			for _, r := range rows {
				nextID++
				fmt.Fprintf(&b, "%d,\"%s\",\"%s\"\n", nextID, strings.ReplaceAll(r[0], `"`, `""`), strings.ReplaceAll(r[1], `"`, `""`))
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY ev FROM STDIN (FORMAT csv)"); err != nil {
					t.Fatalf("COPY csv: %v", err)
				}
			}
		}
	}
	checkAll := func(round int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	for round := 0; round < 3; round++ {
		ingest(round, gen(15))
		checkAll(round)
	}
	jsonbBinaryAndOIDs(t, d)
	jsonbErrors(t, d)
	// Parameters in the binary format (pgx sends json and jsonb so: jsonb
	// with its version byte), through the extended protocol.
	for i, r := range gen(5) {
		for _, c := range []*pgx.Conn{d.sdb, d.pg} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			var payload map[string]any
			if err := json.Unmarshal([]byte(r[0]), &payload); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Exec(ctx, "INSERT INTO ev VALUES ($1, $2, $3)", 1000+i, payload, json.RawMessage(r[1])); err != nil {
				t.Fatalf("INSERT with json parameters: %v", err)
			}
			// The binary format itself, whatever pgx prefers.
			res := c.PgConn().ExecParams(ctx, "INSERT INTO ev VALUES ($1, $2, $3)",
				[][]byte{[]byte(fmt.Sprint(2000 + i)), append([]byte{1}, r[0]...), []byte(r[1])},
				[]uint32{23, 3802, 114}, []int16{0, 1, 1}, nil).Read()
			if res.Err != nil {
				t.Fatalf("INSERT with binary json parameters: %v", res.Err)
			}
			cancel()
		}
	}
	checkAll(2)

	// kill -9: the views come back from their checkpointed state and take new rows.
	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	checkAll(3)
	ingest(3, gen(10))
	checkAll(4)
}

// jsonEvent returns a random event payload as JSON text, written with
// random spacing, key order and duplicate keys.
func jsonEvent(rng *rand.Rand) string {
	sp := func() string { return []string{"", " ", "  ", "\u0020"}[rng.IntN(4)] }
	num := func() string {
		return []string{"0", "1", "-3", "1.0", "2.50", "1e2", "-0", "0.001", "12345678901234567890", "1.5E-3", "7", "-12.5e1", "0.0"}[rng.IntN(13)]
	}
	str := func() string {
		return []string{`"u1"`, `"x\"y"`, `"é"`, `"tab\there"`, `"line\nbreak"`, `"\u00e9\u0041"`, `"a/b"`, `"\/"`, `""`, `"\ud83d\ude00"`, `"back\\slash"`}[rng.IntN(11)]
	}
	var scalar func() string
	scalar = func() string {
		switch rng.IntN(6) {
		case 0, 1:
			return num()
		case 2, 3:
			return str()
		case 4:
			return []string{"true", "false"}[rng.IntN(2)]
		}
		return "null"
	}
	arr := func() string {
		n := rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = sp() + scalar() + sp()
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	var pairs []string
	pairs = append(pairs, fmt.Sprintf(`"user":%s"u%d"`, sp(), 1+rng.IntN(3)))
	pairs = append(pairs, fmt.Sprintf(`"n":%s%d`, sp(), rng.IntN(10)))
	if rng.IntN(3) > 0 {
		pairs = append(pairs, `"x":`+sp()+scalar())
	}
	if rng.IntN(2) == 0 {
		if rng.IntN(4) == 0 {
			pairs = append(pairs, `"tags":`+sp()+scalar())
		} else {
			pairs = append(pairs, `"tags":`+sp()+arr())
		}
	}
	if rng.IntN(3) == 0 {
		pairs = append(pairs, fmt.Sprintf(`"nested":%s{"k":%s,%s"deep":%s{"a":%s}}`, sp(), str(), sp(), sp(), arr()))
	}
	if rng.IntN(3) == 0 {
		pairs = append(pairs, `"flag":`+[]string{"true", "false"}[rng.IntN(2)])
	}
	if rng.IntN(4) == 0 {
		pairs = append(pairs, `"a":`+scalar(), `"b":`+scalar())
	}
	if rng.IntN(4) == 0 { // a duplicate key: the last one wins in jsonb
		pairs = append(pairs, fmt.Sprintf(`"n":%d`, rng.IntN(10)))
	}
	rng.Shuffle(len(pairs), func(i, j int) {
		if !strings.HasPrefix(pairs[i], `"n"`) && !strings.HasPrefix(pairs[j], `"n"`) {
			pairs[i], pairs[j] = pairs[j], pairs[i]
		}
	})
	return "{" + sp() + strings.Join(pairs, ","+sp()) + sp() + "}"
}

// jsonbBinaryAndOIDs compares the binary result format and the
// RowDescription of json and jsonb columns and expressions.
func jsonbBinaryAndOIDs(t *testing.T, d *diffRun) {
	t.Helper()
	binaryAndCatalogsMatchPG(t, d,
		"SELECT id, payload, raw, payload->'tags', raw->'user', payload->>'user' FROM ev ORDER BY id",
		// The catalogs name the column types as PostgreSQL does.
		"SELECT attname, format_type(atttypid, atttypmod), atttypid FROM pg_attribute WHERE attrelid = 'ev'::regclass AND attnum > 0",
		"SELECT column_name, data_type, udt_name FROM information_schema.columns WHERE table_name = 'ev'",
		"SELECT oid, typname, typlen FROM pg_type WHERE typname IN ('json', 'jsonb')")
}

// binaryAndCatalogsMatchPG runs q on both servers asking for binary
// results: the RowDescription's type oids and sizes and every value's
// bytes must equal PostgreSQL's; then each catalog query must give
// PostgreSQL's rows.
func binaryAndCatalogsMatchPG(t *testing.T, d *diffRun, q string, catalogs ...string) {
	t.Helper()
	run := func(c *pgconn.PgConn) (*pgconn.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r := c.ExecParams(ctx, q, nil, nil, nil, []int16{1}).Read()
		return r, r.Err
	}
	want, err := run(d.pg.PgConn())
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	got, err := run(d.sdb.PgConn())
	if err != nil {
		t.Fatalf("streamdb binary results: %v", err)
	}
	for i, f := range want.FieldDescriptions {
		if g := got.FieldDescriptions[i]; g.DataTypeOID != f.DataTypeOID || g.DataTypeSize != f.DataTypeSize {
			t.Errorf("column %d: type oid %d size %d, PostgreSQL %d size %d", i, g.DataTypeOID, g.DataTypeSize, f.DataTypeOID, f.DataTypeSize)
		}
	}
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("binary results: %d rows, PostgreSQL %d", len(got.Rows), len(want.Rows))
	}
	for i := range want.Rows {
		for j := range want.Rows[i] {
			if !bytes.Equal(got.Rows[i][j], want.Rows[i][j]) {
				t.Errorf("binary row %d column %d: %q, PostgreSQL %q", i, j, got.Rows[i][j], want.Rows[i][j])
			}
		}
	}
	for _, cat := range catalogs {
		if diff := diffWithPG(t, d.sdb, d.pg, cat); diff != "" {
			t.Errorf("catalog %s:\n%s", cat, diff)
		}
	}
}

// jsonbErrors checks that streamdb refuses what PostgreSQL refuses, with its SQLSTATE.
func jsonbErrors(t *testing.T, d *diffRun) {
	t.Helper()
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return fmt.Sprint(err)
	}
	for _, q := range []string{
		`SELECT '{"a":'::jsonb`,
		`SELECT '01'::jsonb`,
		`SELECT '{"a" 1}'::json`,
		`SELECT '[1,]'::jsonb`,
		`SELECT '"\u0000"'::jsonb`,
		`SELECT '[1e131072]'::jsonb`,
		`SELECT '[1e-16384]'::jsonb`,
		`SELECT '[0e-16384]'::jsonb`,
		`SELECT '[0.5e-16383]'::jsonb`,
		`SELECT '[1e1073741823]'::jsonb`,
		`SELECT '"\ud800"'::jsonb`,
		`SELECT '{"a":1}'::jsonb -> 1.5`,
		`SELECT 1 -> 'a'`,
		`SELECT '{"a":1}'::json @> '{}'::json`,
		`SELECT '{"a":1}'::json = '{"a":1}'::json`,
		`SELECT jsonb_nosuch('{}'::jsonb)`,
		`SELECT jsonb_array_length('{}')`,
		`SELECT jsonb_array_length('1')`,
		`SELECT jsonb_array_elements('{"a":1}')`,
		`SELECT ('"x"'::jsonb)::int`,
		`SELECT 1::jsonb`,
		`SELECT jsonb_build_object('a')`,
		`SELECT jsonb_build_object(NULL, 1)`,
		`INSERT INTO ev VALUES (999, '{bad', '{}')`,
		`SELECT raw FROM ev ORDER BY raw`,
		`SELECT jsonb_object_agg(NULL::text, 1) FROM ev`,
		`SELECT '{"n":1}'::jsonb->'n' + 1`,
		`SELECT '{"n":1}'::jsonb->5::bigint`,
		`SELECT '{"n":1}'::jsonb #> 'a'`,
		`SELECT min(payload) FROM ev`,
		`SELECT max(raw) FROM ev`,
		`SELECT raw, count(*) FROM ev GROUP BY raw`,
		`SELECT DISTINCT raw FROM ev`,
		`SELECT '{"a":1}'::jsonb @> '{}'::jsonb -> 'a'`, // one level, left to right: (j @> j) -> 'a'
	} {
		_, perr := queryRows(d.pg, q)
		_, serr := queryRows(d.sdb, q)
		want := code(perr)
		if perr == nil {
			t.Fatalf("PostgreSQL accepts %s", q)
		}
		if got := code(serr); got != want {
			t.Errorf("%s: streamdb %s (%v), want %s (PostgreSQL: %v)", q, got, serr, want, perr)
		}
	}
}
