package parse

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
)

// roleString prints a role statement with its options' values.
func roleString(s Statement) string {
	opts := func(o RoleOptions) string {
		var parts []string
		if o.Login != nil {
			parts = append(parts, fmt.Sprintf("login=%v", *o.Login))
		}
		if o.Superuser != nil {
			parts = append(parts, fmt.Sprintf("superuser=%v", *o.Superuser))
		}
		if o.Password != nil {
			parts = append(parts, fmt.Sprintf("password=%q", *o.Password))
		}
		if o.PasswordNull {
			parts = append(parts, "password=null")
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	switch s := s.(type) {
	case *CreateRole:
		return fmt.Sprintf("create %s user=%v %s", s.Name, s.User, opts(s.Options))
	case *AlterRole:
		return fmt.Sprintf("alter %s rename=%q %s", s.Name, s.RenameTo, opts(s.Options))
	}
	return describe(s)
}

func TestRoleStatements(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		{"CREATE ROLE alice", "create alice user=false []"},
		{"CREATE USER Bob WITH PASSWORD 'p''w' SUPERUSER", `create bob user=true [superuser=true password="p'w"]`},
		{`CREATE ROLE "Carol" NOLOGIN NOSUPERUSER ENCRYPTED PASSWORD 'x' INHERIT`, `create Carol user=false [login=false superuser=false password="x"]`},
		{"ALTER ROLE alice WITH LOGIN PASSWORD NULL", "alter alice rename=\"\" [login=true password=null]"},
		{"ALTER USER alice RENAME TO al", `alter alice rename="al" []`},
		{"DROP ROLE IF EXISTS a, b", "{Names:[a b] IfExists:true}"},
		{"DROP USER a", "{Names:[a] IfExists:false}"},
		{"GRANT SELECT, INSERT ON TABLE s, v TO alice, bob", "{Revoke:false Privileges:[SELECT INSERT] Tables:[s v] Roles:[alice bob]}"},
		{"GRANT ALL PRIVILEGES ON s TO public", "{Revoke:false Privileges:[DELETE INSERT SELECT UPDATE] Tables:[s] Roles:[public]}"},
		{"REVOKE SELECT ON s FROM alice CASCADE", "{Revoke:true Privileges:[SELECT] Tables:[s] Roles:[alice]}"},
		{"SHOW ROLES", "{What:roles}"},
		{"CREATE ROLE a LOGIN NOLOGIN", "error 42601: conflicting or redundant options"},
		{"CREATE ROLE a CREATEDB", "error 0A000: role option CREATEDB is not supported"},
		{"CREATE ROLE a PASSWORD", "error 42601: syntax error at end of input"},
		{"CREATE ROLE a FOO", `error 42601: unrecognized role option "foo"`},
		{"GRANT UPDATE, DELETE ON s TO a", "{Revoke:false Privileges:[UPDATE DELETE] Tables:[s] Roles:[a]}"},
		{"GRANT TRUNCATE ON s TO a", "error 0A000: privilege TRUNCATE is not supported (SELECT, INSERT, UPDATE and DELETE can be granted)"},
		{"GRANT SELECT ON s TO a WITH GRANT OPTION", "error 0A000: WITH GRANT OPTION is not supported"},
		{"GRANT SELECT ON SCHEMA public TO a", "error 0A000: GRANT ON SCHEMA is not supported (privileges are granted on tables and materialized views)"},
		{"REVOKE SELECT ON s TO a", `error 42601: syntax error at or near "TO"`},
		{"ALTER ROLE a SET search_path = x", "error 0A000: ALTER ROLE ... SET is not supported"},
	} {
		stmts, err := ParseAll(tc.sql)
		var got string
		if err != nil {
			got = fmt.Sprintf("error %s: %s", sqlerr.Code(err), err.Error())
		} else {
			got = roleString(stmts[0])
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}
