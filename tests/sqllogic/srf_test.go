package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// orderedRows is a query's rows in the order they come, a line each.
func orderedRows(t *testing.T, c *pgx.Conn, q string, args ...any) string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			if tm, ok := v.(time.Time); ok {
				v = tm.UTC().Format(time.DateTime)
			}
			parts = append(parts, fmt.Sprint(v))
		}
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(out, "\n")
}

// TestSetReturningFunctionsInFrom: generate_series over integers and
// timestamps and unnest of a text[] as FROM items, with PostgreSQL's
// column names, joins with other FROM items, parameters, and errors.
func TestSetReturningFunctionsInFrom(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	check := func(q string, want string, args ...any) {
		t.Helper()
		if got := orderedRows(t, c, q, args...); got != want {
			t.Errorf("%s:\n got %q\nwant %q", q, got, want)
		}
	}
	check("SELECT * FROM generate_series(1, 3)", "1\n2\n3")
	check("SELECT s, s * 2 FROM pg_catalog.generate_series(10, 1, -4) s", "10 20\n6 12\n2 4")
	check("SELECT n FROM generate_series(1, 3) AS g(n) WHERE n <> 2", "1\n3")
	check("SELECT count(*), sum(n)::text FROM generate_series(1::bigint, 200000) n", "200000 20000100000")
	check("SELECT x FROM unnest(ARRAY['a', NULL, 'c']) AS u(x)", "a\n<nil>\nc")
	check("SELECT unnest FROM unnest('{}'::text[])", "")
	// Month steps accumulate, as in PostgreSQL (Jan 31, Feb 28, Mar 28).
	check("SELECT g FROM generate_series('2026-01-31'::timestamp, '2026-03-31', '1 month') g",
		"2026-01-31 00:00:00\n2026-02-28 00:00:00\n2026-03-28 00:00:00")
	// Joined with a stream, and with a parameter.
	execAll(t, c, "CREATE TABLE words (w TEXT)", "INSERT INTO words VALUES ('a'), ('b')")
	check("SELECT w, s FROM words, generate_series(1, 2) s ORDER BY w, s", "a 1\na 2\nb 1\nb 2")
	check("SELECT s FROM generate_series(1, $1::int) s", "1\n2", 2)
	// A NULL argument: no rows.
	check("SELECT * FROM generate_series(1, NULL::int)", "")
	var name string
	rows, err := c.Query(ctx, "SELECT * FROM generate_series(1, 1)")
	if err != nil {
		t.Fatal(err)
	}
	name = rows.FieldDescriptions()[0].Name
	rows.Close()
	if name != "generate_series" {
		t.Errorf("column %q, want generate_series", name)
	}
	for _, q := range []struct{ sql, code string }{
		{"SELECT * FROM generate_series(1, 3, 0)", "22023"},
		{"SELECT * FROM generate_series(1.5, 3)", "42883"},
		{"SELECT * FROM unnest(1)", "42883"},
		{"CREATE MATERIALIZED VIEW v AS SELECT * FROM generate_series(1, 3)", "0A000"},
	} {
		_, err := c.Exec(ctx, q.sql, pgx.QueryExecModeSimpleProtocol)
		wantCode(t, q.sql, err, q.code)
	}
}

// TestStringAgg: string_agg(text, delimiter) skips NULLs, is NULL for no
// values, works per group, and is refused in a materialized view.
func TestStringAgg(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	check := func(q, want string) {
		t.Helper()
		if got := orderedRows(t, c, q); got != want {
			t.Errorf("%s:\n got %q\nwant %q", q, got, want)
		}
	}
	check("SELECT string_agg(x, ', ') FROM (VALUES ('a'), (NULL), ('c')) AS v(x)", "a, c")
	check("SELECT k, string_agg(x, '-') FROM (VALUES (1, 'a'), (1, 'b'), (2, NULL)) AS v(k, x) GROUP BY k ORDER BY k", "1 a-b\n2 <nil>")
	check("SELECT string_agg(g::text, ',') FROM generate_series(1, 5) g", "1,2,3,4,5")
	check("SELECT string_agg(x, ',') FROM (VALUES ('a')) AS v(x) WHERE false", "<nil>")
	rows, err := c.Query(ctx, "SELECT string_agg('a', 'b')")
	if err != nil {
		t.Fatal(err)
	}
	if name := rows.FieldDescriptions()[0].Name; name != "string_agg" {
		t.Errorf("column %q, want string_agg", name)
	}
	rows.Close()
	execAll(t, c, "CREATE TABLE words (w TEXT)")
	// In a view the values are sorted (decision 2026-12-07-ordered-aggregates).
	execAll(t, c, "CREATE MATERIALIZED VIEW v AS SELECT string_agg(w, ',') FROM words",
		"INSERT INTO words VALUES ('b'), ('a'), (NULL), ('c')", "CHECKPOINT")
	check("SELECT * FROM v", "a,b,c")
	_, err = c.Exec(ctx, "SELECT string_agg(1, ',')")
	wantCode(t, "string_agg of an integer", err, "42883")
}
