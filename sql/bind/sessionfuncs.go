package bind

import (
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// SessionInfo answers the functions about the session that runs a
// statement: pg_backend_pid() and the has_*_privilege family, which answer
// from the real privilege model.
type SessionInfo interface {
	// BackendPID is the process id the client got in BackendKeyData.
	BackendPID() int64
	// RolePrivilege reports whether role holds priv (SELECT, INSERT, ...)
	// on t; roleOK is false if there is no such role.
	RolePrivilege(role string, t *storage.TableDef, priv string) (has, roleOK bool)
	// RoleSuperuser reports whether role is a superuser; roleOK as above.
	RoleSuperuser(role string) (super, roleOK bool)
	// SetConfig applies set_config(name, value, local) as SET [LOCAL]
	// and returns the setting's new value (sql/setconfig.go).
	SetConfig(name, value string, local bool) (string, error)
}

// tablePrivileges are the privilege names has_table_privilege takes.
var tablePrivileges = map[string]bool{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true,
	"TRUNCATE": true, "REFERENCES": true, "TRIGGER": true}

// sessionFunc binds pg_backend_pid() and has_table_privilege,
// has_schema_privilege, has_database_privilege; ok is false for any other
// name. Without a session (a statement bound to check privileges) they are
// NULL of their type; a materialized view refuses them (0A000): their value
// belongs to one session.
func (b *Binder) sessionFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	var lo, hi int
	t := types.TBool
	switch name {
	case "pg_backend_pid":
		t = types.TInt32
	case "has_table_privilege", "has_schema_privilege", "has_database_privilege":
		lo, hi = 2, 3
	default:
		return nil, false, nil
	}
	if len(n.Args) < lo || len(n.Args) > hi {
		return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
	}
	if b.View {
		return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "%s() is not supported in a materialized view", name)
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	if b.Session == nil {
		return &expr.Const{D: types.Null, T: t}, true, nil
	}
	if name == "pg_backend_pid" {
		return &expr.Const{D: types.Int(b.Session.BackendPID()), T: t}, true, nil
	}
	role := b.User
	if len(args) == 3 {
		if role, err = b.roleArg(args[0]); err != nil {
			return nil, true, err
		}
		args = args[1:]
	}
	privs, err := b.privilegeArg(name, args[1])
	if err != nil {
		return nil, true, err
	}
	super, roleOK := b.Session.RoleSuperuser(role)
	if !roleOK {
		return nil, true, sqlerr.New(sqlerr.UndefinedObject, "role %q does not exist", role)
	}
	switch name {
	case "has_schema_privilege":
		s, err := constText(args[0], "a schema name")
		if err != nil {
			return nil, true, err
		}
		switch s {
		case SchemaPublic:
			// Any role may create streams and views (in public).
			return boolConst(true), true, nil
		case SchemaCatalog, SchemaInfoSchema:
			return boolConst(super || privs["USAGE"]), true, nil
		}
		return nil, true, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", s)
	case "has_database_privilege":
		d, err := constText(args[0], "a database name")
		if err != nil {
			return nil, true, err
		}
		if pc, ok := b.Cat.(PgCatalog); ok && d != pc.DatabaseName() {
			return nil, true, sqlerr.New(sqlerr.InvalidCatalogName, "database %q does not exist", d)
		}
		// Any role that may log in may connect; CREATE (schemas) and
		// TEMPORARY (temporary tables) are a superuser's, as streamdb
		// has neither for other roles.
		return boolConst(super || privs["CONNECT"]), true, nil
	}
	has := func(def *storage.TableDef) bool {
		for p := range privs {
			if ok, _ := b.Session.RolePrivilege(role, def, p); ok {
				return true
			}
		}
		return false
	}
	tbl := args[0]
	if k := tbl.Type().Kind; k == types.Text || k == types.Unknown {
		if cst, ok := tbl.(*expr.Const); ok {
			if cst.D.Null {
				return &expr.Const{D: types.Null, T: t}, true, nil
			}
			def, err := b.relationByName(cst.D.S)
			if err != nil {
				return nil, true, err
			}
			return boolConst(has(def)), true, nil
		}
	}
	// An oid (a column of pg_class, say): CASE over every relation.
	pc, ok := b.Cat.(PgCatalog)
	if !ok {
		return nil, false, nil
	}
	id, err := b.int64ID(tbl)
	if err != nil {
		return nil, true, err
	}
	names := pc.PgLookup("relnames")
	keys := make([]int64, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	cs := &expr.Case{T: types.TBool}
	for _, k := range keys {
		def, ok := b.Cat.Table(names[k])
		if !ok {
			def, ok = b.Cat.Table(SchemaInfoSchema + "." + names[k])
		}
		if !ok {
			continue
		}
		cs.Whens = append(cs.Whens, expr.When{
			Cond: call("=", types.TBool, id, &expr.Const{D: types.Int(k), T: types.TInt64}),
			Then: boolConst(has(def)),
		})
	}
	if len(cs.Whens) == 0 {
		return &expr.Const{D: types.Null, T: t}, true, nil
	}
	return cs, true, nil
}

func boolConst(v bool) expr.Expr { return &expr.Const{D: types.Boolean(v), T: types.TBool} }

// constText reads a constant text argument.
func constText(e expr.Expr, what string) (string, error) {
	if c, ok := e.(*expr.Const); ok && !c.D.Null {
		if k := c.T.Kind; k == types.Text || k == types.Unknown {
			return c.D.S, nil
		}
	}
	return "", sqlerr.New(sqlerr.FeatureNotSupported, "%s must be a constant text here", what)
}

// roleArg reads the role argument: a name or a role's oid, constant.
func (b *Binder) roleArg(e expr.Expr) (string, error) {
	if c, ok := e.(*expr.Const); ok && !c.D.Null && c.T.IsInteger() {
		if pc, ok := b.Cat.(PgCatalog); ok {
			if n, ok := pc.PgLookup("roles")[c.D.I]; ok {
				return n, nil
			}
		}
		return "", sqlerr.New(sqlerr.UndefinedObject, "role with OID %d does not exist", c.D.I)
	}
	s, err := constText(e, "a role")
	if err != nil {
		return "", err
	}
	if strings.EqualFold(s, "public") {
		return "public", nil
	}
	return s, nil
}

// privilegeArg reads a constant privilege list ("SELECT, INSERT", any
// with WITH GRANT OPTION) for the function name.
func (b *Binder) privilegeArg(name string, e expr.Expr) (map[string]bool, error) {
	s, err := constText(e, "the privilege")
	if err != nil {
		return nil, err
	}
	valid := tablePrivileges
	switch name {
	case "has_schema_privilege":
		valid = map[string]bool{"USAGE": true, "CREATE": true}
	case "has_database_privilege":
		valid = map[string]bool{"CONNECT": true, "CREATE": true, "TEMPORARY": true, "TEMP": true}
	}
	out := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.ToUpper(strings.TrimSpace(p))
		p = strings.TrimSpace(strings.TrimSuffix(p, " WITH GRANT OPTION"))
		if !valid[p] {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized privilege type: %q", p)
		}
		out[p] = true
	}
	return out, nil
}

// relationByName resolves has_table_privilege's relation name, possibly
// qualified by a schema.
func (b *Binder) relationByName(s string) (*storage.TableDef, error) {
	tn := &ast.TableName{Name: ast.NewCIStr(s)}
	if schema, rel, ok := strings.Cut(s, "."); ok {
		tn = &ast.TableName{Schema: ast.NewCIStr(schema), Name: ast.NewCIStr(rel)}
	}
	return b.lookupTable(tn)
}
