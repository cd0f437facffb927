package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// RETURNING of INSERT, UPDATE and DELETE: the list is bound over a row of
// the target table and evaluated over the rows the statement wrote (new
// rows of INSERT and UPDATE, including those ON CONFLICT DO UPDATE
// changed; deleted rows of DELETE), which become the statement's result
// rows; the command tag stays INSERT/UPDATE/DELETE with its count, as in
// PostgreSQL.

// dmlReturning collects a statement's RETURNING rows; nil when the
// statement has no RETURNING, and then its methods do nothing.
type dmlReturning struct {
	list *bind.Returning
	ts   []types.T
	recs []arrow.RecordBatch
}

// bindReturning binds q's RETURNING list over def (named alias in the
// statement, "" for its own name) and sets st's result columns.
func bindReturning(b *bind.Binder, st *Stmt, q *parse.Query, def *storage.TableDef, alias string) (*dmlReturning, error) {
	if q.Returning == nil {
		return nil, nil
	}
	list, err := b.BindReturning(def, alias, q.Returning)
	if err != nil {
		return nil, err
	}
	d := &dmlReturning{list: list}
	st.Columns = st.Columns[:0]
	for _, c := range list.Cols {
		t := c.T
		if t.Kind == types.Unknown {
			t = types.TText
		}
		d.ts = append(d.ts, t)
		st.Columns = append(st.Columns, Column{Name: c.Name, T: t})
	}
	return d, nil
}

// describeReturning sets st's result columns from q's RETURNING list, for
// Describe.
func describeReturning(b *bind.Binder, st *Stmt, q *parse.Query) error {
	if q.Returning == nil {
		return nil
	}
	var (
		def   *storage.TableDef
		alias string
		err   error
	)
	switch n := q.Node.(type) {
	case *ast.InsertStmt:
		def, err = b.InsertTable(n)
	case *ast.UpdateStmt:
		def, _, err = b.BindUpdate(n)
		alias = bind.DMLAlias(n.TableRefs)
	case *ast.DeleteStmt:
		def, _, err = b.BindDelete(n)
		alias = bind.DMLAlias(n.TableRefs)
	}
	if err != nil {
		return err
	}
	_, err = bindReturning(b, st, q, def, alias)
	return err
}

// add evaluates the list over rows (the target's columns, in order) and
// keeps the result.
func (d *dmlReturning) add(ectx *expr.Ctx, rows arrow.RecordBatch) error {
	if d == nil || rows.NumRows() == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, len(d.list.Exprs))
	for _, e := range d.list.Exprs {
		a, err := expr.Eval(ectx, e, rows)
		if err != nil {
			for _, c := range cols {
				c.Release()
			}
			return err
		}
		cols = append(cols, a)
	}
	d.recs = append(d.recs, plan.RecordOf(d.ts, cols, int(rows.NumRows())))
	return nil
}

// drop releases the rows kept so far (the statement failed).
func (d *dmlReturning) drop() {
	if d == nil {
		return
	}
	for _, r := range d.recs {
		r.Release()
	}
	d.recs = nil
}

// result is the statement's result: its tag, and its rows with RETURNING.
func (d *dmlReturning) result(tag string) *Result {
	if d == nil {
		return &Result{Tag: tag}
	}
	recs := d.recs
	d.recs = nil
	return &Result{Tag: tag, Rows: &sliceRows{recs: recs}}
}
