package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// UPDATE, DELETE and INSERT ... ON CONFLICT DO UPDATE, for tables with a
// primary key. UPDATE binds to a plan whose rows are each changed row's
// old values then its new ones (2n columns for an n-column table), DELETE
// to the rows it deletes; sql/handle_dml.go nets them into the table.

// InsertTable returns an INSERT's target table.
func (b *Binder) InsertTable(n *ast.InsertStmt) (*storage.TableDef, error) {
	tn, ok := insertTarget(n)
	if !ok {
		return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT needs a single target table")
	}
	return b.lookupTable(tn)
}

// dmlTarget binds the single table of an UPDATE or DELETE.
func (b *Binder) dmlTarget(refs *ast.TableRefsClause, what string) (*planner.Scan, *scope, error) {
	if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s of more than one table is not supported", what)
	}
	ts, ok := refs.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s of more than one table is not supported", what)
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, nil, sqlerr.New(sqlerr.SyntaxError, "%s needs a table", what)
	}
	node, sc, err := b.bindTable(tn, ts.AsName.L)
	if err != nil {
		return nil, nil, err
	}
	scan := node.(*planner.Scan)
	if k := scan.Table.Kind; k == storage.KindView || k == storage.KindPlainView || k == storage.KindSystem || k == storage.KindSource {
		return nil, nil, sqlerr.New(sqlerr.WrongObjectType, "cannot %s %q: it is not a table", what, scan.Table.Name)
	}
	return scan, sc, nil
}

// BindUpdate binds UPDATE t SET ... [WHERE ...].
func (b *Binder) BindUpdate(n *ast.UpdateStmt) (*storage.TableDef, planner.Node, error) {
	if n.MultipleTable || n.Order != nil || n.Limit != nil || n.With != nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "UPDATE supports SET and WHERE only")
	}
	scan, sc, err := b.dmlTarget(n.TableRefs, "update")
	if err != nil {
		return nil, nil, err
	}
	def := scan.Table
	c := &ectx{sc: sc, noAgg: "aggregate functions are not allowed in UPDATE", noWin: "window functions are not allowed in UPDATE"}
	var in planner.Node = scan
	if n.Where != nil {
		if in, err = b.bindWhere(c, scan, n.Where); err != nil {
			return nil, nil, err
		}
	}
	row, err := b.assignments(c, def, scan.Alias, n.List, 0)
	if err != nil {
		return nil, nil, err
	}
	p := &planner.Project{Input: in}
	for i, col := range def.Columns {
		p.Exprs = append(p.Exprs, &expr.ColRef{Idx: i, T: col.Type, Name: col.Name})
		p.Cols = append(p.Cols, planner.Column{Name: col.Name, T: col.Type})
	}
	for i, col := range def.Columns {
		p.Exprs = append(p.Exprs, row[i])
		p.Cols = append(p.Cols, planner.Column{Name: col.Name, T: col.Type})
	}
	b.finishParams()
	return def, p, nil
}

// assignments binds a SET list over c: the row it makes, each column its
// assigned value (with PostgreSQL's assignment cast) or, unassigned, the
// column of the old row at base+i.
func (b *Binder) assignments(c *ectx, def *storage.TableDef, alias string, list []*ast.Assignment, base int) ([]expr.Expr, error) {
	row := make([]expr.Expr, len(def.Columns))
	for _, a := range list {
		if q := a.Column.Table.L; q != "" && q != alias {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", q+"."+a.Column.Name.O, def.Name)
		}
		i := def.Column(a.Column.Name.O)
		if i < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", a.Column.Name.O, def.Name)
		}
		if row[i] != nil {
			return nil, sqlerr.New(sqlerr.SyntaxError, "multiple assignments to same column %q", a.Column.Name.O)
		}
		col := def.Columns[i]
		var v expr.Expr
		if _, isDefault := a.Expr.(*ast.DefaultExpr); isDefault && col.Default != "" {
			var err error
			if v, _, _, err = b.ColumnDefault(col.Default, col, def.Name); err != nil {
				return nil, err
			}
		} else if isDefault {
			if col.NotNull {
				return nil, notNull(col, def.Name)
			}
			v = &expr.Const{D: types.Null, T: col.Type}
		} else {
			x, err := b.bindExpr(c, a.Expr)
			if err != nil {
				return nil, err
			}
			if v, err = b.assign(x, col, def.Name); err != nil {
				return nil, err
			}
		}
		row[i] = v
	}
	for i, col := range def.Columns {
		if row[i] == nil {
			row[i] = &expr.ColRef{Idx: base + i, T: col.Type, Name: col.Name}
		}
	}
	return row, nil
}

// BindDelete binds DELETE FROM t [WHERE ...]: the rows to delete.
func (b *Binder) BindDelete(n *ast.DeleteStmt) (*storage.TableDef, planner.Node, error) {
	if n.IsMultiTable || n.Order != nil || n.Limit != nil || n.With != nil {
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "DELETE supports WHERE only")
	}
	scan, sc, err := b.dmlTarget(n.TableRefs, "delete from")
	if err != nil {
		return nil, nil, err
	}
	var in planner.Node = scan
	if n.Where != nil {
		c := &ectx{sc: sc, noAgg: "aggregate functions are not allowed in WHERE", noWin: "window functions are not allowed in WHERE"}
		if in, err = b.bindWhere(c, scan, n.Where); err != nil {
			return nil, nil, err
		}
	}
	p := &planner.Project{Input: in}
	for i, col := range scan.Table.Columns {
		p.Exprs = append(p.Exprs, &expr.ColRef{Idx: i, T: col.Type, Name: col.Name})
		p.Cols = append(p.Cols, planner.Column{Name: col.Name, T: col.Type})
	}
	b.finishParams()
	return scan.Table, p, nil
}

// ConflictUpdate is a bound ON CONFLICT DO UPDATE: expressions over the
// existing row's columns then the proposed row's (EXCLUDED).
type ConflictUpdate struct {
	Row   []expr.Expr // the new row
	Where expr.Expr   // nil: every conflicting row
}

// BindConflictUpdate binds DO UPDATE's SET list and WHERE for def, where
// the table's columns are the existing row's and excluded's the proposed.
func (b *Binder) BindConflictUpdate(def *storage.TableDef, up *ast.UpdateStmt) (*ConflictUpdate, error) {
	var cols []planner.Column
	for _, q := range []string{def.Name, "excluded"} {
		for _, c := range def.Columns {
			cols = append(cols, planner.Column{Name: c.Name, T: c.Type, Table: q})
		}
	}
	sc := newScope(cols)
	sc.star = sc.star[:len(def.Columns)]
	for i := len(def.Columns); i < len(cols); i++ {
		sc.cols[i].usingHidden = true // excluded.c only qualified, as in PostgreSQL
	}
	c := &ectx{sc: sc, noAgg: "aggregate functions are not allowed in ON CONFLICT DO UPDATE", noWin: "window functions are not allowed in ON CONFLICT DO UPDATE"}
	row, err := b.assignments(c, def, def.Name, up.List, 0)
	if err != nil {
		return nil, err
	}
	out := &ConflictUpdate{Row: row}
	if up.Where != nil {
		if out.Where, err = b.bindBool(c, up.Where, "WHERE"); err != nil {
			return nil, err
		}
	}
	b.finishParams()
	return out, nil
}
