package sql

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sql/scram"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Roles live in the catalog (storage.RoleDef, keys r/<name>). A data
// directory without roles (a fresh one, or one made before roles existed)
// gets the bootstrap superusers when it is opened; BootstrapRole always is
// one of them, and owns the objects made before roles existed.

// BootstrapRole is the superuser every database has.
const BootstrapRole = "streamdb"

// publicRole is PostgreSQL's PUBLIC: a grant to it is a grant to every role.
const publicRole = "public"

// scramIterations is PostgreSQL's default scram_iterations.

// loadRolesLocked reads the roles and creates the bootstrap superusers if
// there are none; password, if set, becomes BootstrapRole's password.
func (e *roleStore) loadRolesLocked(bootstrap []string, password string) error {
	defs, err := e.db.Catalog().LoadRoles()
	if err != nil {
		return err
	}
	e.mu.roles = map[string]*storage.RoleDef{}
	for _, r := range defs {
		e.mu.roles[r.Name] = r
	}
	b := e.db.NewBatch()
	changed := false
	if len(defs) == 0 {
		for _, name := range append([]string{BootstrapRole}, bootstrap...) {
			if name == "" || name == publicRole || e.mu.roles[name] != nil {
				continue
			}
			r := &storage.RoleDef{Name: name, Superuser: true, Login: true}
			e.mu.roles[name] = r
			storage.PutRole(b, r)
			changed = true
		}
	}
	if password != "" {
		r := e.mu.roles[BootstrapRole]
		if r == nil {
			r = &storage.RoleDef{Name: BootstrapRole, Superuser: true, Login: true}
		}
		nr := *r
		nr.Verifier = scram.Verifier(password)
		e.mu.roles[BootstrapRole] = &nr
		storage.PutRole(b, &nr)
		changed = true
	}
	if !changed {
		b.Close()
		return nil
	}
	return e.db.Commit(b, true)
}

// Role reports what authentication needs to know about a role: its SCRAM
// verifier ("" if it has no password), whether it may log in and whether it
// is a superuser. ok is false if there is no such role.
func (e *Engine) Role(name string) (verifier string, login, superuser, ok bool) {
	e.mu.Lock()
	r := e.mu.roles[name]
	e.mu.Unlock()
	if r == nil {
		return "", false, false, false
	}
	return r.Verifier, r.Login, r.Superuser, true
}

// AnyPassword reports whether some role that may log in has a password.
func (e *Engine) AnyPassword() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.mu.roles {
		if r.Login && r.Verifier != "" {
			return true
		}
	}
	return false
}

// AuthSecret is the database's secret for mock authentication of roles
// that do not exist (stable across restarts).
func (e *Engine) AuthSecret() ([]byte, error) { return e.db.Catalog().AuthSecret() }

// verifierFor turns the PASSWORD of CREATE/ALTER ROLE into what is stored: a
// ready SCRAM-SHA-256 verifier is kept as it is (as PostgreSQL does for
// pg_dump's output), anything else is a password. notice is set when an
// empty password clears the password, as in PostgreSQL.
func verifierFor(o parse.RoleOptions) (verifier string, set bool, notice string, err error) {
	switch {
	case o.PasswordNull:
		return "", true, "", nil
	case o.Password == nil:
		return "", false, "", nil
	case *o.Password == "":
		return "", true, "empty string is not a valid password, clearing password", nil
	}
	pw := *o.Password
	if _, _, _, _, ok := scram.ParseVerifier(pw); ok {
		return pw, true, "", nil
	}
	if len(pw) == 35 && strings.HasPrefix(pw, "md5") && isHexString(pw[3:]) {
		return "", false, "", sqlerr.New(sqlerr.FeatureNotSupported,
			"MD5 password hashes are not supported; give the password or a SCRAM-SHA-256 verifier")
	}
	return scram.Verifier(pw), true, "", nil
}

func isHexString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// checkRoleName refuses the names PostgreSQL reserves.
func checkRoleName(name string) error {
	if name == publicRole || name == "none" || name == "current_user" || name == "session_user" || name == "current_role" {
		return sqlerr.New(sqlerr.ReservedName, "role name %q is reserved", name)
	}
	if strings.HasPrefix(name, "pg_") {
		return &sqlerr.Error{Code: sqlerr.ReservedName, Msg: fmt.Sprintf("role name %q is reserved", name),
			Detail: `Role names starting with "pg_" are reserved.`}
	}
	return nil
}

func (e *roleStore) createRole(n *parse.CreateRole) (*Result, error) {
	if err := checkRoleName(n.Name); err != nil {
		return nil, err
	}
	verifier, _, notice, err := verifierFor(n.Options)
	if err != nil {
		return nil, err
	}
	r := &storage.RoleDef{Name: n.Name, Login: n.User, Verifier: verifier}
	if n.Options.Login != nil {
		r.Login = *n.Options.Login
	}
	if n.Options.Superuser != nil {
		r.Superuser = *n.Options.Superuser
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.roles[n.Name] != nil {
		return nil, sqlerr.New(sqlerr.DuplicateObject, "role %q already exists", n.Name)
	}
	if err := e.putRoleLocked(r); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE ROLE", Notices: notices(notice)}, nil
}

func notices(n string) []string {
	if n == "" {
		return nil
	}
	return []string{n}
}

func (e *roleStore) putRoleLocked(r *storage.RoleDef) error {
	b := e.db.NewBatch()
	storage.PutRole(b, r)
	if err := e.db.Commit(b, true); err != nil {
		return err
	}
	e.mu.roles[r.Name] = r
	return nil
}

// alterRole is ALTER ROLE; the session (of role current) has checked the
// caller's rights.
func (e *roleStore) alterRole(n *parse.AlterRole, current string) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.mu.roles[n.Name]
	if old == nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "role %q does not exist", n.Name)
	}
	if n.RenameTo != "" {
		if n.Name == current {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "session user cannot be renamed")
		}
		return e.renameRoleLocked(old, n.RenameTo)
	}
	r := *old
	verifier, set, notice, err := verifierFor(n.Options)
	if err != nil {
		return nil, err
	}
	if set {
		r.Verifier = verifier
	}
	if n.Options.Login != nil {
		r.Login = *n.Options.Login
	}
	if n.Options.Superuser != nil {
		if !*n.Options.Superuser && n.Name == BootstrapRole {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "permission denied: bootstrap superuser %q must remain a superuser", BootstrapRole)
		}
		r.Superuser = *n.Options.Superuser
	}
	if err := e.putRoleLocked(&r); err != nil {
		return nil, err
	}
	return &Result{Tag: "ALTER ROLE", Notices: notices(notice)}, nil
}

// renameRoleLocked renames a role and rewrites the owner and grants of its
// objects in the same batch. The password stays: a SCRAM verifier does not
// depend on the name (PostgreSQL clears only MD5 ones).
func (e *roleStore) renameRoleLocked(old *storage.RoleDef, to string) (*Result, error) {
	if err := checkRoleName(to); err != nil {
		return nil, err
	}
	if e.mu.roles[to] != nil {
		return nil, sqlerr.New(sqlerr.DuplicateObject, "role %q already exists", to)
	}
	if old.Name == BootstrapRole {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the bootstrap superuser %q cannot be renamed", BootstrapRole)
	}
	r := *old
	r.Name = to
	b := e.db.NewBatch()
	storage.DeleteRole(b, old.Name)
	storage.PutRole(b, &r)
	changed := map[string]*storage.TableDef{}
	for name, t := range e.mu.tables {
		nt, ok := renameInTable(t, old.Name, to)
		if ok {
			storage.PutTable(b, nt)
			changed[name] = nt
		}
	}
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	delete(e.mu.roles, old.Name)
	e.mu.roles[to] = &r
	for name, nt := range changed {
		e.mu.tables[name] = nt
	}
	return &Result{Tag: "ALTER ROLE"}, nil
}

func renameInTable(t *storage.TableDef, from, to string) (*storage.TableDef, bool) {
	_, granted := t.Grants[from]
	if t.Owner != from && !granted {
		return nil, false
	}
	nt := *t
	if nt.Owner == from {
		nt.Owner = to
	}
	if granted {
		nt.Grants = copyGrants(t.Grants)
		nt.Grants[to] = nt.Grants[from]
		delete(nt.Grants, from)
	}
	return &nt, true
}

func copyGrants(g map[string][]string) map[string][]string {
	out := make(map[string][]string, len(g))
	for k, v := range g {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// dropRole is DROP ROLE. Like PostgreSQL it refuses to drop a role that owns
// objects or holds privileges on them, and the bootstrap superuser.
func (e *roleStore) dropRole(n *parse.DropRole, current string) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var drop, skipped []string
	for _, name := range n.Names {
		if e.mu.roles[name] == nil {
			if n.IfExists {
				skipped = append(skipped, fmt.Sprintf("role %q does not exist, skipping", name))
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedObject, "role %q does not exist", name)
		}
		if name == BootstrapRole {
			return nil, sqlerr.New(sqlerr.DependentObjectsExist, "cannot drop role %s because it is required by the database system", name)
		}
		if name == current {
			return nil, sqlerr.New(sqlerr.ObjectInUse, "current user cannot be dropped")
		}
		if deps := e.roleDependentsLocked(name); len(deps) > 0 {
			return nil, &sqlerr.Error{Code: sqlerr.DependentObjectsExist,
				Msg:    fmt.Sprintf("role %q cannot be dropped because some objects depend on it", name),
				Detail: strings.Join(deps, "\n"),
				Hint:   "Drop the objects it owns, or revoke its privileges, first."}
		}
		drop = append(drop, name)
	}
	if len(drop) > 0 {
		b := e.db.NewBatch()
		for _, name := range drop {
			storage.DeleteRole(b, name)
		}
		if err := e.db.Commit(b, true); err != nil {
			return nil, err
		}
		for _, name := range drop {
			delete(e.mu.roles, name)
		}
	}
	return &Result{Tag: "DROP ROLE", Notices: skipped}, nil
}

// roleDependentsLocked lists, as PostgreSQL's DETAIL does, what refers to role.
func (e *roleStore) roleDependentsLocked(role string) []string {
	var out []string
	for _, t := range e.mu.tables {
		if t.Kind == storage.KindSystem {
			continue
		}
		if e.ownerOf(t) == role {
			out = append(out, fmt.Sprintf("owner of %s %s", kindWord(t), t.Name))
		}
		if _, ok := t.Grants[role]; ok {
			out = append(out, fmt.Sprintf("privileges for %s %s", kindWord(t), t.Name))
		}
	}
	sort.Strings(out)
	return out
}

// ownerOf is t's owner; objects made before roles existed belong to the
// bootstrap superuser.
func (e *roleStore) ownerOf(t *storage.TableDef) string {
	if t.Owner == "" {
		return BootstrapRole
	}
	return t.Owner
}

// kindWord names t's kind in messages as PostgreSQL does.
func kindWord(t *storage.TableDef) string {
	switch t.Kind {
	case storage.KindView:
		return "materialized view"
	case storage.KindSource:
		return "source"
	case storage.KindPlainView:
		return "view"
	}
	return "table"
}

// grant is GRANT/REVOKE; the session has checked that the caller owns the
// objects (or is a superuser).
func (e *roleStore) grant(n *parse.Grant) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, role := range n.Roles {
		if role != publicRole && e.mu.roles[role] == nil {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "role %q does not exist", role)
		}
	}
	b := e.db.NewBatch()
	changed := map[string]*storage.TableDef{}
	for _, name := range n.Tables {
		t, ok := e.mu.tables[name]
		if !ok || t.Kind == storage.KindSystem {
			b.Close()
			return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
		}
		if !n.Revoke && t.Kind == storage.KindView && onlyWrites(n.Privileges) {
			// PostgreSQL allows it; streamdb's views cannot be written, so say so.
			b.Close()
			return nil, sqlerr.New(sqlerr.WrongObjectType, "cannot grant %s on materialized view %q: views cannot be written", strings.Join(n.Privileges, ", "), name)
		}
		nt := *t
		nt.Grants = copyGrants(t.Grants)
		for _, role := range n.Roles {
			nt.Grants[role] = applyPrivileges(nt.Grants[role], n.Privileges, n.Revoke, t.Kind)
			if len(nt.Grants[role]) == 0 {
				delete(nt.Grants, role)
			}
		}
		if len(nt.Grants) == 0 {
			nt.Grants = nil
		}
		storage.PutTable(b, &nt)
		changed[name] = &nt
	}
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	for name, nt := range changed {
		e.mu.tables[name] = nt
	}
	if n.Revoke {
		return &Result{Tag: "REVOKE"}, nil
	}
	return &Result{Tag: "GRANT"}, nil
}

// onlyWrites reports whether privs has no SELECT: nothing a view can take.
func onlyWrites(privs []string) bool { return !slices.Contains(privs, storage.PrivSelect) }

// applyPrivileges adds (or removes) privs to have; views only take SELECT.
func applyPrivileges(have, privs []string, revoke bool, kind storage.TableKind) []string {
	set := map[string]bool{}
	for _, p := range have {
		set[p] = true
	}
	for _, p := range privs {
		if kind == storage.KindView && p != storage.PrivSelect {
			continue
		}
		set[p] = !revoke
	}
	var out []string
	for p, ok := range set {
		if ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// showRoles is SHOW ROLES.
func (e *roleStore) showRoles() *table {
	t := &table{cols: []Column{{Name: "name", T: types.TText}, {Name: "superuser", T: types.TBool}, {Name: "login", T: types.TBool},
		{Name: "password", T: types.TBool}}}
	e.mu.Lock()
	names := make([]string, 0, len(e.mu.roles))
	for n := range e.mu.roles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := e.mu.roles[n]
		t.add(str(r.Name), types.Boolean(r.Superuser), types.Boolean(r.Login), types.Boolean(r.Verifier != ""))
	}
	e.mu.Unlock()
	return t
}
