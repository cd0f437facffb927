package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Returning is an INSERT, UPDATE or DELETE's RETURNING list bound over
// one row of the target table (its columns in order): the expressions to
// evaluate over the rows the statement wrote, and the result's columns.
type Returning struct {
	Exprs []expr.Expr
	Cols  []planner.Column
}

// BindReturning binds the select list of sel (RETURNING's items, parsed
// as SELECT <items>) over def's row, which the statement names as alias
// (its own name if alias is ""). Aggregates, window functions and
// subqueries are refused, as PostgreSQL refuses the first two; its
// subqueries in RETURNING are a later step.
func (b *Binder) BindReturning(def *storage.TableDef, alias string, sel *ast.SelectStmt) (*Returning, error) {
	if alias == "" {
		alias = def.Name
	}
	cols := make([]planner.Column, len(def.Columns))
	for i, c := range def.Columns {
		cols[i] = planner.Column{Name: c.Name, T: c.Type, Table: alias}
	}
	c := &ectx{sc: newScope(cols), noAgg: "aggregate functions are not allowed in RETURNING",
		noWin: "window functions are not allowed in RETURNING"}
	out := &Returning{}
	for _, f := range sel.Fields.Fields {
		if f.WildCard != nil {
			idx, err := starCols(c.sc, f.WildCard.Table.L)
			if err != nil {
				return nil, err
			}
			for _, i := range idx {
				e, err := b.bindStarCol(c, i)
				if err != nil {
					return nil, err
				}
				out.Exprs = append(out.Exprs, e)
				out.Cols = append(out.Cols, planner.Column{Name: cols[i].Name, T: cols[i].T})
			}
			continue
		}
		if hasSubquery(f.Expr) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "subqueries in RETURNING are not supported")
		}
		e, err := b.bindExpr(c, f.Expr)
		if err != nil {
			return nil, err
		}
		name := f.AsName.O
		if name == "" {
			name = outputName(f.Expr)
		}
		out.Exprs = append(out.Exprs, e)
		out.Cols = append(out.Cols, planner.Column{Name: name, T: e.Type()})
	}
	b.finishParams()
	return out, nil
}

// DMLAlias is the name an UPDATE or DELETE gives its target: its alias,
// or "" for the table's own name.
func DMLAlias(refs *ast.TableRefsClause) string {
	if refs == nil || refs.TableRefs == nil {
		return ""
	}
	if ts, ok := refs.TableRefs.Left.(*ast.TableSource); ok {
		return ts.AsName.L
	}
	return ""
}
