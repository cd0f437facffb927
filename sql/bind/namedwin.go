package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/sqlerr"
)

// namedWindows are a SELECT's WINDOW clause definitions, each resolved
// against the definitions before it, by lower-case name.
type namedWindows map[string]ast.WindowSpec

// resolveNamedWindows resolves a WINDOW clause as PostgreSQL does: a
// definition may build on an earlier one (WINDOW a AS (PARTITION BY g),
// b AS (a ORDER BY o)), and a name is defined once.
func resolveNamedWindows(defs []ast.WindowSpec) (namedWindows, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	named := make(namedWindows, len(defs))
	for _, d := range defs {
		name := d.Name
		if _, dup := named[name.L]; dup {
			return nil, sqlerr.New(sqlerr.WindowingError, "window %q is already defined", name.O)
		}
		d.Name = ast.CIStr{}
		r, err := named.resolve(d)
		if err != nil {
			return nil, err
		}
		named[name.L] = r
	}
	return named, nil
}

// resolve returns the window spec an OVER clause means: OVER w is w's
// definition; OVER (w ORDER BY ... frame) copies w's PARTITION BY (and its
// ORDER BY when the clause has none) and may add only what w lacks, with
// PostgreSQL's errors; a spec without a name is itself.
func (named namedWindows) resolve(spec ast.WindowSpec) (ast.WindowSpec, error) {
	if spec.OnlyAlias { // OVER w
		def, ok := named[spec.Name.L]
		if !ok {
			return spec, sqlerr.New(sqlerr.UndefinedObject, "window %q does not exist", spec.Name.O)
		}
		return def, nil
	}
	if spec.Ref.L == "" {
		return spec, nil
	}
	ref, ok := named[spec.Ref.L]
	switch {
	case !ok:
		return spec, sqlerr.New(sqlerr.UndefinedObject, "window %q does not exist", spec.Ref.O)
	case spec.PartitionBy != nil:
		return spec, sqlerr.New(sqlerr.WindowingError, "cannot override PARTITION BY clause of window %q", spec.Ref.O)
	case spec.OrderBy != nil && ref.OrderBy != nil:
		return spec, sqlerr.New(sqlerr.WindowingError, "cannot override ORDER BY clause of window %q", spec.Ref.O)
	case ref.Frame != nil:
		return spec, sqlerr.New(sqlerr.WindowingError, "cannot copy window %q because it has a frame clause", spec.Ref.O)
	}
	out := spec
	out.Ref = ast.CIStr{}
	out.PartitionBy = ref.PartitionBy
	if out.OrderBy == nil {
		out.OrderBy = ref.OrderBy
	}
	return out, nil
}

// checkNamedWindows binds the expressions of every WINDOW clause
// definition in c, as PostgreSQL does even for a definition no function
// uses, so an unknown column or a window function there is an error.
func (b *Binder) checkNamedWindows(c *ectx, defs []ast.WindowSpec) error {
	wc := *c
	wc.win, wc.noWin = nil, "window functions are not allowed in window definitions"
	for _, d := range defs {
		if d.PartitionBy != nil {
			for _, it := range d.PartitionBy.Items {
				if _, err := b.bindExpr(&wc, it.Expr); err != nil {
					return err
				}
			}
		}
		if d.OrderBy != nil {
			for _, it := range d.OrderBy.Items {
				if _, err := b.bindExpr(&wc, it.Expr); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
