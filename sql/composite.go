package sql

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// CREATE TYPE name AS (...) and DROP TYPE (decision record
// docs/decisions/2026-12-07-composite-types.md). A composite type is kept
// under its name in the catalog store (storage.PutType) as its encoded
// type, and registered by name in types (types.RegisterComposite) so DDL
// and casts can name it. A column of the type carries the whole type in
// its own catalog entry, so a table does not depend on the store's order.
// The oid is 16384 + a catalog id, as a relation's.

func init() {
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.CreateType, _ []types.Datum) (*Result, error) {
		return typeDDL{s.e}.create(n)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.DropType, _ []types.Datum) (*Result, error) {
		return typeDDL{s.e}.drop(n)
	})
}

type typeDDL struct{ e *Engine }

// loadComposites registers the stored composite types.
func loadComposites(db *storage.DB) error {
	stored, err := db.Catalog().LoadTypes()
	if err != nil {
		return err
	}
	for name, enc := range stored {
		t, ok := types.DecodeType(enc)
		if !ok || types.CompositeName(t) != name {
			return sqlerr.New(sqlerr.DataCorrupted, "composite type entry %q: %q", name, enc)
		}
		types.RegisterComposite(t)
	}
	return nil
}

// typeExists is 42710 for a name a type (built-in or composite) or a
// relation (which has a row type in PostgreSQL) already has.
func typeExists(name string) error {
	return sqlerr.New(sqlerr.DuplicateObject, "type \"%s\" already exists", name)
}

func (x typeDDL) create(n *parse.CreateType) (*Result, error) {
	e := x.e
	if _, err := parse.TypeFromName(n.Name, nil); err == nil {
		return nil, typeExists(n.Name)
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.mu.tables[n.Name]; ok {
		return nil, typeExists(n.Name)
	}
	b := e.db.NewBatch()
	oid := uint32(oidFirstUser + e.db.NewID(b))
	t := types.CompositeOf(n.Name, oid, n.Fields)
	storage.PutType(b, n.Name, types.EncodeType(t))
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	types.RegisterComposite(t)
	return &Result{Tag: "CREATE TYPE"}, nil
}

func (x typeDDL) drop(n *parse.DropType) (*Result, error) {
	e := x.e
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	res := &Result{Tag: "DROP TYPE"}
	var drop []types.T
	for _, name := range n.Names {
		t, ok := types.TypeNamed(name)
		if !ok {
			if _, err := parse.TypeFromName(name, nil); err == nil {
				return nil, sqlerr.New(sqlerr.DependentObjectsExist, "cannot drop type %s because it is required by the database system", name)
			}
			if n.IfExists {
				res.Notices = append(res.Notices, fmt.Sprintf("type \"%s\" does not exist, skipping", name))
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedObject, "type \"%s\" does not exist", name)
		}
		if dep := x.dependentLocked(t, n.Names); dep != "" {
			return nil, &sqlerr.Error{Code: sqlerr.DependentObjectsExist,
				Msg:    fmt.Sprintf("cannot drop type %s because other objects depend on it", name),
				Detail: dep,
				Hint:   "Use DROP ... CASCADE to drop the dependent objects too."}
		}
		drop = append(drop, t)
	}
	if len(drop) == 0 {
		return res, nil
	}
	b := e.db.NewBatch()
	for _, t := range drop {
		storage.DeleteType(b, types.CompositeName(t))
	}
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	for _, t := range drop {
		types.UnregisterComposite(types.CompositeName(t))
	}
	return res, nil
}

// dependentLocked names what uses composite type t: a column of a
// relation, or a field of another composite type that is not dropped with
// it (PostgreSQL's DETAIL); "" if nothing does.
func (x typeDDL) dependentLocked(t types.T, dropping []string) string {
	var deps []string
	for _, def := range x.e.mu.tables {
		for _, c := range def.Columns {
			if types.Uses(c.Type, t) {
				kind := "table"
				if def.Kind == storage.KindView {
					kind = "materialized view"
				}
				deps = append(deps, fmt.Sprintf("column %s of %s %s depends on type %s", c.Name, kind, def.Name, types.CompositeName(t)))
			}
		}
	}
	for _, other := range types.Composites() {
		name := types.CompositeName(other)
		if other == t || containsName(dropping, name) {
			continue
		}
		for _, f := range types.RecordFields(other) {
			if types.Uses(f.T, t) {
				deps = append(deps, fmt.Sprintf("column %s of composite type %s depends on type %s", f.Name, name, types.CompositeName(t)))
			}
		}
	}
	sort.Strings(deps)
	return strings.Join(deps, "\n")
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}
