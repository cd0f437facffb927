package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// BindInsert binds INSERT INTO t [(cols)] VALUES ... | SELECT .... It
// returns the target and a plan whose rows have the target's full column
// list, in order and with its types (columns not listed are NULL).
func (b *Binder) BindInsert(n *ast.InsertStmt) (*storage.TableDef, planner.Node, error) {
	switch {
	case n.IsReplace:
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "REPLACE is not supported")
	case n.Setlist:
		return nil, nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \"SET\"")
	case len(n.OnDuplicate) > 0:
		return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "ON DUPLICATE KEY UPDATE is not supported")
	}
	tn, ok := insertTarget(n)
	if !ok {
		return nil, nil, sqlerr.New(sqlerr.SyntaxError, "INSERT needs a single target table")
	}
	def, err := b.lookupTable(tn)
	if err != nil {
		return nil, nil, err
	}
	if def.Kind == storage.KindView {
		return nil, nil, sqlerr.New("42809", "cannot change materialized view %q", def.Name)
	}
	// target[i] is the table column the i-th value goes to.
	var target []int
	explicit := len(n.Columns) > 0
	if explicit {
		seen := map[int]bool{}
		for _, c := range n.Columns {
			i := def.Column(c.Name.O)
			if i < 0 {
				return nil, nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", c.Name.O, def.Name)
			}
			if seen[i] {
				return nil, nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q specified more than once", c.Name.O)
			}
			seen[i] = true
			target = append(target, i)
		}
	} else {
		for i := range def.Columns {
			target = append(target, i)
		}
	}
	cols := make([]planner.Column, len(def.Columns))
	for i, c := range def.Columns {
		cols[i] = planner.Column{Name: c.Name, T: c.Type}
	}
	defaults, err := b.DefaultExprs(def)
	if err != nil {
		return nil, nil, err
	}

	var plan planner.Node
	if n.Select != nil {
		// As in PostgreSQL, an untyped select-list literal (SELECT NULL, '12')
		// takes the target column's type rather than text.
		q, err := b.bindResultSet(n.Select, true)
		if err != nil {
			return nil, nil, err
		}
		in := q.Schema()
		if err := checkArity(len(in), len(target), explicit); err != nil {
			return nil, nil, err
		}
		for i, c := range in {
			if c.T.Kind == types.Unknown {
				if q, err = b.retype(q, i, def.Columns[target[i]].Type); err != nil {
					return nil, nil, err
				}
			}
		}
		in = q.Schema()
		values := make([]expr.Expr, len(in))
		for i, c := range in {
			values[i] = &expr.ColRef{Idx: i, T: c.T, Name: c.Name}
		}
		row, err := b.assignRow(def, target, values, defaults)
		if err != nil {
			return nil, nil, err
		}
		plan = &planner.Project{Input: q, Exprs: row, Cols: cols}
	} else {
		vals := &planner.Values{Cols: cols}
		width := -1
		c := &ectx{sc: &scope{}, noAgg: "aggregate functions are not allowed in VALUES"}
		for _, list := range n.Lists {
			if width >= 0 && len(list) != width {
				return nil, nil, sqlerr.New(sqlerr.SyntaxError, "VALUES lists must all be the same length")
			}
			width = len(list)
			if err := checkArity(len(list), len(target), explicit); err != nil {
				return nil, nil, err
			}
			values := make([]expr.Expr, len(list))
			for i, v := range list {
				if _, isDefault := v.(*ast.DefaultExpr); isDefault {
					values[i] = &expr.Const{D: types.Null, T: types.TUnknown}
					if i < len(target) && defaults != nil && defaults[target[i]] != nil {
						values[i] = defaults[target[i]]
					}
					continue
				}
				var err error
				if values[i], err = b.bindExpr(c, v); err != nil {
					return nil, nil, err
				}
			}
			row, err := b.assignRow(def, target, values, defaults)
			if err != nil {
				return nil, nil, err
			}
			vals.Rows = append(vals.Rows, row)
		}
		plan = vals
	}
	b.finishParams()
	return def, plan, nil
}

func insertTarget(n *ast.InsertStmt) (*ast.TableName, bool) {
	if n.Table == nil || n.Table.TableRefs == nil || n.Table.TableRefs.Right != nil {
		return nil, false
	}
	ts, ok := n.Table.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, false
	}
	tn, ok := ts.Source.(*ast.TableName)
	return tn, ok
}

// checkArity compares the number of values with the target columns. Without
// a column list, fewer values fill the leading columns (the rest default).
func checkArity(values, targets int, explicit bool) error {
	switch {
	case values > targets:
		return sqlerr.New(sqlerr.SyntaxError, "INSERT has more expressions than target columns")
	case values < targets && explicit:
		return sqlerr.New(sqlerr.SyntaxError, "INSERT has more target columns than expressions")
	}
	return nil
}

// assignRow builds one full-width row: values[i] goes to column target[i],
// converted with assignment casts; other columns take their default
// (defaults[i], nil for none: NULL).
func (b *Binder) assignRow(def *storage.TableDef, target []int, values []expr.Expr, defaults []expr.Expr) ([]expr.Expr, error) {
	row := make([]expr.Expr, len(def.Columns))
	for i, v := range values {
		col := def.Columns[target[i]]
		e, err := b.assign(v, col, def.Name)
		if err != nil {
			return nil, err
		}
		row[target[i]] = e
	}
	for i, c := range def.Columns {
		if row[i] == nil && defaults != nil && defaults[i] != nil {
			row[i] = defaults[i]
		}
		if row[i] == nil {
			if c.NotNull {
				return nil, notNull(c, def.Name)
			}
			row[i] = &expr.Const{D: types.Null, T: c.Type}
		}
	}
	return row, nil
}

func notNull(c storage.ColumnDef, table string) error {
	return sqlerr.New(sqlerr.NotNullViolation, "null value in column %q of relation %q violates not-null constraint", c.Name, table)
}

// assign converts v for storing in column col (PostgreSQL's assignment casts).
func (b *Binder) assign(v expr.Expr, col storage.ColumnDef, table string) (expr.Expr, error) {
	if !canAssign(v.Type(), col.Type) {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, "column %q is of type %s but expression is of type %s",
			col.Name, typeName(col.Type), typeName(v.Type()))
	}
	var e expr.Expr
	var err error
	if k, ok := v.(*expr.Const); ok && !k.D.Null && k.T.Kind != types.Unknown {
		// Assignment, unlike an explicit cast, rejects an over-long VARCHAR.
		d, err := types.AssignDatum(k.D, k.T, col.Type)
		if err != nil {
			return nil, err
		}
		e = &expr.Const{D: d, T: col.Type}
	} else if e, err = b.assignCast(v, col.Type); err != nil {
		return nil, err
	}
	if k, ok := e.(*expr.Const); ok && k.D.Null && col.NotNull {
		return nil, notNull(col, table)
	}
	return e, nil
}

// assignCast converts a non-constant v to t for storage. It is castTo
// except for VARCHAR(n), where an assignment rejects an over-long value
// (22001) that an explicit cast would truncate.
func (b *Binder) assignCast(v expr.Expr, t types.T) (expr.Expr, error) {
	from := v.Type()
	if t.Kind != types.Text || t.Prec <= 0 || from.Kind == types.Unknown ||
		from.Kind == types.Text && from.Prec > 0 && from.Prec <= t.Prec && from.Pad == t.Pad {
		return b.castTo(v, t)
	}
	e, err := b.castTo(v, types.TText)
	if err != nil {
		return nil, err
	}
	return call("varchar_assign", t, e), nil
}
