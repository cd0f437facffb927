package sql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Privileges, as in PostgreSQL: a superuser may do anything. Any other role
// may create streams and views (it owns them), read what it owns or was
// granted SELECT on, insert (INSERT, COPY FROM) into streams it owns or was
// granted INSERT on, UPDATE and DELETE (keyed tables) what it owns or was
// granted UPDATE or DELETE on (plus SELECT when the statement reads the
// table's columns, and UPDATE for INSERT ... ON CONFLICT DO UPDATE), drop
// and grant on what it owns. A query needs SELECT
// on every relation it names, including those in subqueries; a view's own
// definition is not rechecked (it runs with its owner's rights, checked
// when the view was created). Database settings, checkpoints, savepoints,
// RESTORE, jobs, view settings and roles are for superusers; a role may
// change its own password. System tables (streamdb_*) are readable by all.

// superuser reports whether the session's role is a superuser now (a role
// dropped during the session has no rights).
func (s sessionAuth) superuser() bool {
	_, _, su, ok := s.e.Role(s.user)
	return ok && su
}

// Superuser reports whether the session's role is a superuser; the wire
// server keeps superuser_reserved_connections for them.
func (s *Session) Superuser() bool { return (sessionAuth{s}).superuser() }

// setSuperuserVar sets the is_superuser session setting from the role.
func (s sessionAuth) setSuperuserVar() {
	s.vars["is_superuser"] = "off"
	if s.superuser() {
		s.vars["is_superuser"] = "on"
	}
}

// recordingCatalog is the binder's catalog for privilege checks: it
// remembers every relation the statement names.
type recordingCatalog struct {
	e    *Engine
	seen []*storage.TableDef
}

func (c *recordingCatalog) Table(name string) (*storage.TableDef, bool) {
	t, ok := c.e.Table(name)
	if ok {
		c.seen = append(c.seen, t)
	}
	return t, ok
}

func permissionDenied(t *storage.TableDef) error {
	return sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied for %s %s", kindWord(t), t.Name)
}

func mustBeSuperuser(what string) error {
	return sqlerr.New(sqlerr.InsufficientPrivilege, "must be superuser to %s", what)
}

// may reports whether the (non-superuser) session holds priv on t.
func (s sessionAuth) may(t *storage.TableDef, priv string) bool {
	if t.Kind == storage.KindSystem {
		return priv == storage.PrivSelect
	}
	return s.e.roleStore.ownerOf(t) == s.user || t.Has(s.user, priv) || t.Has(publicRole, priv)
}

func (s sessionAuth) need(t *storage.TableDef, priv string) error {
	if !s.may(t, priv) {
		return permissionDenied(t)
	}
	return nil
}

// mustOwn is PostgreSQL's ownership check (DROP, GRANT, CREATE OR REPLACE).
func (s sessionAuth) mustOwn(t *storage.TableDef) error {
	if t.Kind == storage.KindSystem || s.e.roleStore.ownerOf(t) != s.user {
		return sqlerr.New(sqlerr.InsufficientPrivilege, "must be owner of %s %s", kindWord(t), t.Name)
	}
	return nil
}

// authorize checks that the session may run st. Statements it does not
// refuse are checked no further here; errors that are not about privileges
// (unknown tables, bad queries) are left for execution to report.
func (s sessionAuth) authorize(st *Stmt) error {
	if s.superuser() {
		return nil
	}
	switch n := planOf(st).impl.(type) {
	case *parse.Query:
		return s.authorizeQuery(st, n)
	case *parse.Declare:
		return s.authorizeQuery(&Stmt{}, n.Query)
	case *parse.CreateView:
		if n.FromSavepoint != "" {
			return mustBeSuperuser("create a materialized view from a savepoint")
		}
		if old, ok := s.e.Table(n.Name); ok && n.OrReplace && !n.IfNotExists {
			if err := s.mustOwn(old); err != nil {
				return err
			}
		}
		return s.authorizeQuery(&Stmt{}, n.Query)
	case *parse.Drop:
		if n.Kind == parse.ObjSavepoint {
			return mustBeSuperuser("drop savepoints")
		}
		return s.authorizeDrop(n.Names)
	case *parse.Copy:
		if n.Query != nil {
			return s.authorizeQuery(&Stmt{}, n.Query)
		}
		t, ok := s.e.Table(n.Table)
		if !ok {
			return nil
		}
		if n.From {
			return s.need(t, storage.PrivInsert)
		}
		return s.need(t, storage.PrivSelect)
	case *parse.Set:
		return s.authorizeSet(n.Name)
	case *parse.Reset:
		return s.authorizeSet(n.Name)
	case *parse.Checkpoint:
		return mustBeSuperuser("do CHECKPOINT")
	case *parse.AlterCluster:
		return mustBeSuperuser("rebalance the cluster")
	case *parse.CreateSink, *parse.DropSink:
		return mustBeSuperuser("create or drop sinks")
	case *parse.CreateSavepoint:
		return mustBeSuperuser("create savepoints")
	case *parse.Restore:
		return mustBeSuperuser("run RESTORE")
	case *parse.StopJob:
		return mustBeSuperuser("stop jobs")
	case *parse.StartJob:
		return mustBeSuperuser("start jobs")
	case *parse.AlterView:
		return mustBeSuperuser("alter materialized view settings")
	case *parse.CreateRole:
		return sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied to create role")
	case *parse.AlterRole:
		o := n.Options
		if n.Name == s.user && n.RenameTo == "" && o.Login == nil && o.Superuser == nil {
			return nil // a role may change its own password
		}
		return &sqlerr.Error{Code: sqlerr.InsufficientPrivilege, Msg: fmt.Sprintf("permission denied to alter role %q", n.Name),
			Detail: "Only superusers may alter roles; a role may change its own password."}
	case *parse.DropRole:
		return sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied to drop role")
	case *parse.Grant:
		for _, name := range n.Tables {
			if t, ok := s.e.Table(name); ok && t.Kind != storage.KindSystem && s.e.roleStore.ownerOf(t) != s.user {
				return permissionDenied(t)
			}
		}
	}
	return nil
}

func (s sessionAuth) authorizeSet(name string) error {
	if _, ok := dbSettings[strings.ToLower(name)]; ok {
		return sqlerr.New(sqlerr.InsufficientPrivilege, "permission denied to set parameter %q", name)
	}
	return nil
}

func (s sessionAuth) authorizeDrop(names []string) error {
	for _, name := range names {
		if t, ok := s.e.Table(name); ok {
			if err := s.mustOwn(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// authorizeQuery binds q to learn the relations it reads (and writes).
func (s sessionAuth) authorizeQuery(st *Stmt, q *parse.Query) error {
	cat := &recordingCatalog{e: s.e}
	b := &bind.Binder{Cat: cat, Params: append([]types.T(nil), st.ParamTypes...)}
	node := q.Node
	if ex, ok := node.(*ast.ExplainStmt); ok {
		node = ex.Stmt
	}
	switch n := node.(type) {
	case ast.ResultSetNode:
		if _, err := b.BindQuery(n); err != nil {
			return nil
		}
	case *ast.InsertStmt:
		if _, _, err := b.BindInsert(n); err != nil {
			return nil
		}
		// The binder looks up the target first.
		target := cat.seen[0]
		if err := s.need(target, storage.PrivInsert); err != nil {
			return err
		}
		cat.seen = cat.seen[1:]
		if q.Returning != nil {
			cat.seen = append(cat.seen, target) // RETURNING reads the rows
		}
		if oc := q.OnConflict; oc != nil {
			if oc.Update != nil {
				if err := s.need(target, storage.PrivUpdate); err != nil {
					return err
				}
			}
			if oc.Cols != nil {
				// The conflict target's columns are read (DO UPDATE must
				// name them), so SELECT is needed too, as in PostgreSQL.
				cat.seen = append(cat.seen, target)
			}
		}
	case *ast.UpdateStmt, *ast.DeleteStmt:
		var err error
		priv := storage.PrivUpdate
		if up, ok := n.(*ast.UpdateStmt); ok {
			_, _, err = b.BindUpdate(up)
		} else {
			priv = storage.PrivDelete
			_, _, err = b.BindDelete(n.(*ast.DeleteStmt))
		}
		if err != nil || len(cat.seen) == 0 {
			return nil
		}
		// The binder looks up the target first; SELECT on it is needed
		// only when the statement reads its columns, as in PostgreSQL.
		target := cat.seen[0]
		if err := s.need(target, priv); err != nil {
			return err
		}
		if !readsColumns(n) && q.Returning == nil {
			cat.seen = slices.DeleteFunc(cat.seen, func(t *storage.TableDef) bool { return t.ID == target.ID })
		}
	case *ast.DropTableStmt:
		var names []string
		for _, t := range n.Tables {
			names = append(names, t.Name.L)
		}
		return s.authorizeDrop(names)
	case *ast.SetStmt:
		for _, v := range n.Variables {
			if err := s.authorizeSet(v.Name); err != nil {
				return err
			}
		}
	}
	for _, t := range cat.seen {
		if err := s.need(t, storage.PrivSelect); err != nil {
			return err
		}
	}
	return nil
}

// sessionInfo answers the binder's session functions (bind.SessionInfo).
type sessionInfo struct{ s *Session }

func (i sessionInfo) BackendPID() int64 { return i.s.pid }

// RolePrivilege is has_table_privilege's answer: a superuser holds every
// privilege; otherwise the rules of Session.may, for any role.
func (i sessionInfo) RolePrivilege(role string, t *storage.TableDef, priv string) (has, roleOK bool) {
	e := i.s.e
	if role == publicRole {
		return t.Kind == storage.KindSystem && priv == storage.PrivSelect || t.Has(publicRole, priv), true
	}
	_, _, su, ok := e.Role(role)
	switch {
	case !ok:
		return false, false
	case su:
		return true, true
	case t.Kind == storage.KindSystem:
		return priv == storage.PrivSelect, true
	}
	return e.roleStore.ownerOf(t) == role || t.Has(role, priv) || t.Has(publicRole, priv), true
}

func (i sessionInfo) RoleSuperuser(role string) (super, roleOK bool) {
	if role == publicRole {
		return false, true
	}
	_, _, su, ok := i.s.e.Role(role)
	return su, ok
}

// readsColumns reports whether the UPDATE or DELETE n reads a column:
// PostgreSQL then needs SELECT on the table besides UPDATE or DELETE. A
// column inside a subquery counts too, which may ask for SELECT where
// PostgreSQL, knowing the column is another table's, would not.
func readsColumns(n ast.Node) bool {
	v := &columnFinder{}
	switch n := n.(type) {
	case *ast.UpdateStmt:
		for _, a := range n.List {
			a.Expr.Accept(v)
		}
		if n.Where != nil {
			n.Where.Accept(v)
		}
	case *ast.DeleteStmt:
		if n.Where != nil {
			n.Where.Accept(v)
		}
	}
	return v.found
}

// columnFinder looks for a column reference.
type columnFinder struct{ found bool }

func (v *columnFinder) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.ColumnNameExpr); ok {
		v.found = true
	}
	return n, v.found
}

func (v *columnFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }
