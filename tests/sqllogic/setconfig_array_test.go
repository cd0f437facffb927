package sqllogic

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestSetConfig: set_config(name, value, is_local) is SET / SET LOCAL from
// a query: it returns the new value, reports ParameterStatus, refuses what
// SET refuses, and is_local lasts until the block ends (COMMIT restores
// the value, as SET LOCAL does).
func TestSetConfig(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	str := func(q string) string {
		t.Helper()
		var s string
		if err := c.QueryRow(ctx, q, pgx.QueryExecModeSimpleProtocol).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	if got := str("SELECT set_config('application_name', 'app1', false)"); got != "app1" {
		t.Errorf("set_config returned %q", got)
	}
	if got := str("SHOW application_name"); got != "app1" {
		t.Errorf("application_name after set_config: %q", got)
	}
	if got := c.PgConn().ParameterStatus("application_name"); got != "app1" {
		t.Errorf("ParameterStatus application_name = %q, want app1", got)
	}
	// Over the extended protocol too (described, then executed once).
	var v string
	if err := c.QueryRow(ctx, "SELECT set_config('application_name', $1, false)", "app2").Scan(&v); err == nil {
		t.Errorf("set_config with a parameter: %q, want 0A000", v)
	} else {
		wantCode(t, "set_config with a parameter", err, "0A000")
	}
	if err := c.QueryRow(ctx, "SELECT set_config('statement_timeout', '2s', false)").Scan(&v); err != nil || v != "2s" {
		t.Errorf("extended set_config: %q %v", v, err)
	}
	if got := str("SHOW statement_timeout"); got != "2s" {
		t.Errorf("statement_timeout: %q, want 2s", got)
	}
	// is_local outside a block lasts for the statement only.
	if got := str("SELECT set_config('statement_timeout', '5s', true)"); got != "5s" {
		t.Errorf("local set_config returned %q", got)
	}
	if got := str("SHOW statement_timeout"); got != "2s" {
		t.Errorf("statement_timeout after a local set_config outside a block: %q, want 2s", got)
	}
	// Inside a block: until COMMIT, like SET LOCAL.
	execAll(t, c, "BEGIN")
	if got := str("SELECT set_config('statement_timeout', '7s', true)"); got != "7s" {
		t.Errorf("local set_config in a block returned %q", got)
	}
	execAll(t, c, "SET LOCAL application_name = 'local'")
	if got := str("SHOW statement_timeout") + " " + str("SHOW application_name"); got != "7s local" {
		t.Errorf("in the block: %q, want 7s local", got)
	}
	execAll(t, c, "COMMIT")
	if got := str("SHOW statement_timeout") + " " + str("SHOW application_name"); got != "2s app1" {
		t.Errorf("after COMMIT: %q, want 2s app1", got)
	}
	// SET's refusals.
	for _, q := range []struct{ sql, code string }{
		{"SELECT set_config('standard_conforming_strings', 'off', false)", "22023"},
		{"SELECT set_config('nosuch', 'x', false)", "42704"},
		{"SELECT set_config(NULL, 'x', false)", "22004"},
	} {
		_, err := c.Exec(ctx, q.sql, pgx.QueryExecModeSimpleProtocol)
		wantCode(t, q.sql, err, q.code)
	}
	execAll(t, c, "BEGIN")
	_, err := c.Exec(ctx, "SELECT set_config('checkpoint.interval', '2s', false)")
	wantCode(t, "a database setting in a block", err, "25001")
	execAll(t, c, "ROLLBACK")
	execAll(t, c, "CREATE ROLE plain LOGIN PASSWORD 'pw'")
	pc := mustConnAs(t, srv, "plain", "pw")
	_, err = pc.Exec(ctx, "SELECT set_config('checkpoint.interval', '2s', false)")
	wantCode(t, "a database setting by a plain role", err, "42501")
}

// TestArrayConstructors: ARRAY[...], ::text[] casts, || and array_upper
// over text[], the one array type.
func TestArrayConstructors(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	var a, e, cast, cat []*string
	var sub string
	var upper, length *int32
	err := c.QueryRow(ctx, `SELECT ARRAY['a', NULL, 'b c'], ARRAY[]::text[], '{x,"y z"}'::text[],
		ARRAY['a'] || '{b}' || 'c'::text, ARRAY['a', 'b'][2], array_upper(ARRAY['a', 'b'], 1), array_length('{}'::text[], 1)`).
		Scan(&a, &e, &cast, &cat, &sub, &upper, &length)
	if err != nil {
		t.Fatal(err)
	}
	strs := func(xs []*string) []string {
		out := []string{}
		for _, x := range xs {
			if x == nil {
				out = append(out, "NULL")
			} else {
				out = append(out, *x)
			}
		}
		return out
	}
	for _, chk := range []struct {
		what string
		got  []string
		want []string
	}{
		{"ARRAY[...]", strs(a), []string{"a", "NULL", "b c"}},
		{"ARRAY[]", strs(e), []string{}},
		{"::text[]", strs(cast), []string{"x", "y z"}},
		{"||", strs(cat), []string{"a", "b", "c"}},
	} {
		if len(chk.got) != len(chk.want) {
			t.Errorf("%s = %q, want %q", chk.what, chk.got, chk.want)
			continue
		}
		for i := range chk.got {
			if chk.got[i] != chk.want[i] {
				t.Errorf("%s = %q, want %q", chk.what, chk.got, chk.want)
				break
			}
		}
	}
	if sub != "b" || upper == nil || *upper != 2 || length != nil {
		t.Errorf("subscript %q, array_upper %v, array_length of {} %v", sub, upper, length)
	}
	// Per row, with a column; the output column is named "array".
	rows, err := c.Query(ctx, "SELECT ARRAY[w, 'z'] FROM (VALUES ('a'), (NULL)) AS v(w)")
	if err != nil {
		t.Fatal(err)
	}
	if f := rows.FieldDescriptions(); len(f) != 1 || f[0].Name != "array" {
		t.Errorf("column %v, want array", f)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[[]*string])
	if err != nil || len(got) != 2 || len(got[1]) != 2 || got[1][0] != nil || *got[1][1] != "z" {
		t.Errorf("rows %v %v", got, err)
	}
	// Integer arrays (psql casts int2vector columns to int2[]): elements
	// read as the integer type, a subscript of that type, over the wire
	// as int2[] in text and binary.
	var i2 []int16
	var elem int16
	var sum int64
	var i2text string
	if err := c.QueryRow(ctx, `SELECT '{3, 1,NULL}'::int2[] IS NOT NULL, ('{3,1}'::text[])::int2[], (' {3, -1}'::int2[])[2], (ARRAY['7', '8']::int2[])[1] + 1::bigint,
		'{ 03,1}'::int2[]::text`).Scan(new(bool), &i2, &elem, &sum, &i2text); err != nil {
		t.Fatal(err)
	}
	if len(i2) != 2 || i2[0] != 3 || i2[1] != 1 || elem != -1 || sum != 8 || i2text != "{3,1}" {
		t.Errorf("int2[]: %v, [2] = %d, [1] + 1 = %d, text %q", i2, elem, sum, i2text)
	}
	for _, q := range []struct{ sql, code string }{
		{"SELECT ARRAY[ARRAY[1]]", "0A000"},
		{"SELECT '{1.5}'::int4[]", "22P02"},
		{"SELECT '{1,70000}'::int2[]", "22003"},
		{"SELECT '{1,x}'::numeric[]", "22P02"}, // numeric[] exists (TestNumericArrayPG); its elements are checked
		{"SELECT '{123.5}'::numeric(3,1)[]", "22003"},
		{"CREATE TABLE bad (a interval[])", "0A000"},
		{"SELECT ARRAY['a') ", "42601"},
		{"SELECT ARRAY['a'] || 'c'", "22P02"}, // an untyped literal is read as an array, as in PostgreSQL
	} {
		_, err := c.Exec(ctx, q.sql)
		wantCode(t, q.sql, err, q.code)
	}
}
