package sql

import (
	"github.com/streamdb/streamdb/types"
)

// The roles' catalog tables (roleGen): pg_roles, pg_user and
// pg_auth_members.

func init() {
	pgTables["pg_roles"] = facet(roleGen.pgRoles)
	pgTables["pg_user"] = facet(roleGen.pgUser)
	pgTables["pg_auth_members"] = facet(roleGen.pgAuthMembers)
}

func (e roleGen) pgRoles() *table {
	t := &table{cols: catCols(catCol{"rolname", tName}, catCol{"rolsuper", tBool}, catCol{"rolinherit", tBool},
		catCol{"rolcreaterole", tBool}, catCol{"rolcreatedb", tBool}, catCol{"rolcanlogin", tBool},
		catCol{"rolreplication", tBool}, catCol{"rolconnlimit", tI32}, catCol{"rolpassword", types.TText},
		catCol{"rolvaliduntil", tStamp}, catCol{"rolbypassrls", tBool}, catCol{"rolconfig", tArr}, catCol{"oid", tOID})}
	for _, r := range e.roleDefs() {
		pw := null
		if r.Verifier != "" {
			pw = str("********")
		}
		su := types.Boolean(r.Superuser)
		t.add(str(r.Name), su, dTrue, su, su, types.Boolean(r.Login), dFals, i64(-1), pw, null, su, null, i64(roleOID(r.Name)))
	}
	return t
}

func (e roleGen) pgUser() *table {
	t := &table{cols: catCols(catCol{"usename", tName}, catCol{"usesysid", tOID}, catCol{"usecreatedb", tBool},
		catCol{"usesuper", tBool}, catCol{"userepl", tBool}, catCol{"usebypassrls", tBool},
		catCol{"passwd", types.TText}, catCol{"valuntil", tStamp}, catCol{"useconfig", tArr})}
	for _, r := range e.roleDefs() {
		if !r.Login {
			continue
		}
		pw := null
		if r.Verifier != "" {
			pw = str("********")
		}
		su := types.Boolean(r.Superuser)
		t.add(str(r.Name), i64(roleOID(r.Name)), su, su, dFals, su, pw, null, null)
	}
	return t
}

// pgAuthMembers is empty: streamdb's roles have no membership (GRANT role
// TO role is not supported).
func (e roleGen) pgAuthMembers() *table {
	return &table{cols: catCols(catCol{"roleid", tOID}, catCol{"member", tOID},
		catCol{"grantor", tOID}, catCol{"admin_option", tBool})}
}
