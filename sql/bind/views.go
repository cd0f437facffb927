package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// maxViewDepth bounds views over views (a cycle can only be made by
// CREATE OR REPLACE VIEW; PostgreSQL reports it the same way).
const maxViewDepth = 32

// plainView returns the catalog entry of a plain view named by tn, if it
// is one.
func (b *Binder) plainView(tn *ast.TableName) (*storage.TableDef, bool) {
	def, ok := b.Cat.Table(tn.Name.O)
	return def, ok && def.Kind == storage.KindPlainView
}

// bindPlainView expands a plain view where it is read: its stored query is
// bound as a subquery in FROM named alias (the view's name by default),
// with the view's column names.
func (b *Binder) bindPlainView(def *storage.TableDef, tn *ast.TableName, alias string) (planner.Node, []planner.Column, error) {
	if tn.AsOf != nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "AS OF is only supported for materialized views; %q is a view", def.Name)
	}
	if b.viewDepth >= maxViewDepth {
		return nil, nil, sqlerr.New(sqlerr.InvalidObjectDefinition, "infinite recursion detected in rules for relation %q", def.Name)
	}
	stmts, err := parse.ParseAll(def.SQL)
	if err != nil {
		return nil, nil, err
	}
	q, ok := stmts[0].(*parse.Query)
	rs, isQuery := q.Node.(ast.ResultSetNode)
	if len(stmts) != 1 || !ok || !isQuery {
		return nil, nil, sqlerr.New(sqlerr.DataCorrupted, "the stored query of view %q is not a query", def.Name)
	}
	if alias == "" {
		alias = def.Name
	}
	prev, prevLimits := b.outer, b.LimitParams
	b.outer, b.LimitParams = nil, nil // the view's query is a scope (and text) of its own
	b.viewDepth++
	p, err := b.bindResultSet(rs, false)
	b.viewDepth--
	b.outer, b.LimitParams = prev, prevLimits
	if err != nil {
		return nil, nil, err
	}
	cols := append([]planner.Column(nil), p.Schema()...)
	for i := range cols {
		if i < len(def.Columns) {
			cols[i].Name = def.Columns[i].Name
		}
		cols[i].Table = alias
	}
	return p, cols, nil
}
