package sqllogic

import (
	"context"
	"testing"
)

// TestSessionFunctions: pg_backend_pid() is the pid of the session's
// BackendKeyData, and has_table_privilege, has_schema_privilege and
// has_database_privilege answer from the roles and grants.
func TestSessionFunctions(t *testing.T) {
	srv := StartServer(t, "")
	su := srv.Conn(t)
	ctx := context.Background()
	execAll(t, su, "CREATE TABLE words (word TEXT, n BIGINT)", "CREATE TABLE secret (x BIGINT)",
		"CREATE ROLE alice LOGIN PASSWORD 'pw1'", "GRANT SELECT ON words TO alice")
	alice := mustConnAs(t, srv, "alice", "pw1")

	t.Run("pg_backend_pid", func(t *testing.T) {
		for _, c := range []struct {
			name string
			pid  uint32
			q    func() (int32, error)
		}{
			{"superuser", su.PgConn().PID(), func() (pid int32, err error) {
				return pid, su.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
			}},
			{"alice", alice.PgConn().PID(), func() (pid int32, err error) {
				return pid, alice.QueryRow(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pid)
			}},
		} {
			got, err := c.q()
			if err != nil || uint32(got) != c.pid || got == 0 {
				t.Errorf("%s: pg_backend_pid() = %d, %v; BackendKeyData pid %d", c.name, got, err, c.pid)
			}
		}
	})

	t.Run("has_table_privilege", func(t *testing.T) {
		for _, tc := range []struct{ q, want string }{
			{`SELECT has_table_privilege('words', 'SELECT'), has_table_privilege('secret', 'INSERT, UPDATE')`, "true true"},
			{`SELECT has_table_privilege('alice', 'words', 'SELECT'), has_table_privilege('alice', 'words', 'INSERT')`, "true false"},
			{`SELECT has_table_privilege('alice', 'secret', 'SELECT'), has_table_privilege('alice', 'public.words', 'insert, select')`, "false true"},
			{`SELECT has_table_privilege('alice', 'pg_catalog.pg_class', 'SELECT'), has_table_privilege('alice', 'pg_class', 'INSERT')`, "true false"},
			{`SELECT has_table_privilege('alice', 'words', 'SELECT WITH GRANT OPTION')`, "true"},
			// By oid, over pg_class's rows.
			{`SELECT relname FROM pg_class WHERE relnamespace = 2200 AND has_table_privilege('alice', oid, 'SELECT') ORDER BY relname`, "words"},
			{`SELECT has_schema_privilege('public', 'CREATE'), has_schema_privilege('alice', 'pg_catalog', 'USAGE'), has_schema_privilege('alice', 'pg_catalog', 'CREATE')`, "true true false"},
			{`SELECT has_database_privilege('streamdb', 'CONNECT'), has_database_privilege('alice', 'streamdb', 'CONNECT'), has_database_privilege('alice', 'streamdb', 'CREATE')`, "true true false"},
		} {
			var b []string
			rows, err := su.Query(ctx, tc.q)
			if err != nil {
				t.Fatalf("%s: %v", tc.q, err)
			}
			for rows.Next() {
				vs, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vs {
					b = append(b, fmtValue(v))
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", tc.q, err)
			}
			if got := joinSpace(b); got != tc.want {
				t.Errorf("%s: got %s, want %s", tc.q, got, tc.want)
			}
		}
		// The session's own role.
		var sel, ins bool
		if err := alice.QueryRow(ctx, `SELECT has_table_privilege('words', 'SELECT'), has_table_privilege('words', 'INSERT')`).Scan(&sel, &ins); err != nil || !sel || ins {
			t.Errorf("alice on words: select %v insert %v, %v; want true false", sel, ins, err)
		}
		queryErr(t, su, `SELECT has_table_privilege('words', 'FLY')`, "22023", `unrecognized privilege type: "FLY"`)
		queryErr(t, su, `SELECT has_table_privilege('nothing', 'SELECT')`, "42P01", `relation "nothing" does not exist`)
		queryErr(t, su, `SELECT has_table_privilege('nobody', 'words', 'SELECT')`, "42704", `role "nobody" does not exist`)
		queryErr(t, su, `SELECT has_schema_privilege('nope', 'USAGE')`, "3F000", `schema "nope" does not exist`)
		queryErr(t, su, `SELECT has_database_privilege('nope', 'CONNECT')`, "3D000", `database "nope" does not exist`)
		queryErr(t, su, `CREATE MATERIALIZED VIEW v AS SELECT word, pg_backend_pid() AS p FROM words`, "0A000", "pg_backend_pid() is not supported in a materialized view")
	})
}

func joinSpace(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}
