package sql

import (
	"encoding/json"
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Plain views (CREATE VIEW) are catalog entries of KindPlainView: the
// query's text, its result columns and the relations it names
// (Options["sources"], for DROP's dependency check). The binder expands the
// query where the view is named, so a view is read as its query over the
// catalog of the moment; a materialized view may be defined over one.

// createPlainView runs CREATE [OR REPLACE] VIEW.
func (e *Engine) createPlainView(n *parse.CreatePlainView, owner string) (*Result, error) {
	rs, ok := n.Query.Node.(ast.ResultSetNode)
	if !ok {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE VIEW needs a query")
	}
	plan, err := (&bind.Binder{Cat: e}).BindQuery(rs)
	if err != nil {
		return nil, err
	}
	cols := columnsOf(plan)
	if len(n.Columns) > len(cols) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE VIEW specifies more column names than columns")
	}
	def := &storage.TableDef{Name: n.Name, Kind: storage.KindPlainView, SQL: n.Query.SQL, Owner: owner}
	seen := map[string]bool{}
	for i, c := range cols {
		name := c.Name
		if i < len(n.Columns) {
			name = n.Columns[i]
		}
		if seen[name] {
			return nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q specified more than once", name)
		}
		seen[name] = true
		def.Columns = append(def.Columns, storage.ColumnDef{Name: name, Type: c.T})
	}
	sources := referencedTables(n.Query.Node)
	if slices.Contains(sources, n.Name) {
		return nil, sqlerr.New(sqlerr.InvalidObjectDefinition, "view %q cannot read itself", n.Name)
	}
	src, _ := json.Marshal(sources)
	def.Options = map[string]string{"sources": string(src)}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.mu.tables[n.Name]; ok {
		if !n.OrReplace || old.Kind != storage.KindPlainView {
			if old.Kind == storage.KindPlainView || !n.OrReplace {
				return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", n.Name)
			}
			return nil, sqlerr.New(sqlerr.WrongObjectType, "%q is not a view", n.Name)
		}
		// As PostgreSQL: the new query may add columns at the end only.
		if len(def.Columns) < len(old.Columns) {
			return nil, sqlerr.New(sqlerr.InvalidTableDefinition, "cannot drop columns from view")
		}
		for i, c := range old.Columns {
			if nc := def.Columns[i]; nc.Name != c.Name || nc.Type != c.Type {
				return nil, sqlerr.New(sqlerr.InvalidTableDefinition,
					"cannot change name or data type of view column %q", c.Name)
			}
		}
		def.ID, def.Grants = old.ID, old.Grants
		b := e.db.NewBatch()
		storage.PutTable(b, def)
		if err := e.db.Commit(b, true); err != nil {
			return nil, err
		}
		e.mu.tables[n.Name] = def
		return &Result{Tag: "CREATE VIEW"}, nil
	}
	if err := e.addTableLocked(def); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE VIEW"}, nil
}

// referencedTables lists the relation names a query reads, once each.
func referencedTables(n ast.Node) []string {
	v := &tableNames{}
	n.Accept(v)
	return v.names
}

type tableNames struct{ names []string }

func (v *tableNames) Enter(n ast.Node) (ast.Node, bool) {
	if tn, ok := n.(*ast.TableName); ok && !slices.Contains(v.names, tn.Name.O) {
		v.names = append(v.names, tn.Name.O)
	}
	return n, false
}

func (v *tableNames) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// dependsOn says whether view t reads the relation name.
func dependsOn(t *storage.TableDef, name string) bool {
	switch t.Kind {
	case storage.KindView, storage.KindPlainView:
	default:
		return false
	}
	if slices.Contains(viewSources(t), name) {
		return true
	}
	// A materialized view over a plain view records the streams under it;
	// its query names the plain view.
	stmts, err := parse.ParseAll(t.SQL)
	if err != nil || len(stmts) != 1 {
		return false
	}
	switch s := stmts[0].(type) {
	case *parse.CreateView:
		return slices.Contains(referencedTables(s.Query.Node), name)
	case *parse.Query:
		return slices.Contains(referencedTables(s.Node), name)
	}
	return false
}
