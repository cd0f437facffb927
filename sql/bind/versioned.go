package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Event-time temporal joins, joins with a versioned table (the dialect
// layer marks them, sql/parse lookup.go):
//
//	o [LEFT] JOIN rates FOR SYSTEM_TIME AS OF o.ts [AS r] ON o.k = r.k [AND ...]
//
// bind as an inner or left join with Versioned set (exec versionjoin):
// each left row joins the version of its key whose time is the latest at
// or before o.ts. The right side must be a table with a PRIMARY KEY and a
// WATERMARK (its WATERMARK column is the version time); ON must be
// equalities only, between expressions of the left side and the right
// side's PRIMARY KEY columns, each key column once; o.ts must be the
// WATERMARK column of the stream or source the left side reads, so both
// sides have event time and a watermark to emit by.

// isVersionedMarker reports whether n is the marker call.
func isVersionedMarker(n ast.Node) bool {
	f, ok := n.(*ast.FuncCallExpr)
	return ok && f.FnName.L == parse.VersionedMarker && len(f.Args) == 1
}

// isVersionedJoin reports whether the dialect layer marked j as a versioned join.
func isVersionedJoin(j *ast.Join) bool {
	return j.Right != nil && j.On != nil && contains(j.On.Expr, isVersionedMarker)
}

func errVersioned(format string, args ...any) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "temporal join (FOR SYSTEM_TIME AS OF a time column): "+format, args...)
}

// bindVersionedJoin binds a versioned join (see above).
func (b *Binder) bindVersionedJoin(j *ast.Join) (planner.Node, *scope, error) {
	join, scan, marker, sc, err := b.bindTemporalJoin(j, isVersionedMarker, errVersioned, "a table with a PRIMARY KEY and a WATERMARK")
	if err != nil {
		return nil, nil, err
	}
	at := marker.(*ast.FuncCallExpr).Args[0]
	def := scan.Table
	switch {
	case def.Kind == storage.KindView:
		return nil, nil, errVersioned("the right side must be a table with a PRIMARY KEY and a WATERMARK; %q is a materialized view", def.Name)
	case def.Kind == storage.KindSource:
		return nil, nil, errVersioned("the right side must be a table with a PRIMARY KEY and a WATERMARK; %q is a source (sources as versioned tables are not supported yet)", def.Name)
	case def.Kind != storage.KindStream:
		return nil, nil, errVersioned("the right side must be a table with a PRIMARY KEY and a WATERMARK; %q is not one", def.Name)
	case len(def.KeyCols) == 0:
		return nil, nil, errVersioned("the right side must be a versioned table: %q has no PRIMARY KEY (declare one: its rows' versions are kept by key)", def.Name)
	case def.Watermark == nil:
		return nil, nil, errVersioned("the right side must be a versioned table: %q has no WATERMARK (declare WATERMARK FOR its version-time column)", def.Name)
	}
	nl, nr := len(join.Left.Schema()), len(join.Right.Schema())
	buildTime := def.Column(def.Watermark.Column)
	if buildTime < 0 || buildTime >= nr {
		return nil, nil, errVersioned("the WATERMARK column of %q is not among its columns", def.Name)
	}
	// ON: equalities of a left-side expression and a key column, each once.
	covered := map[int]bool{}
	for _, c := range conjunctsOf(join.On) {
		f, ok := c.(*expr.Func)
		if !ok || f.Name != "=" || len(f.Args) != 2 {
			return nil, nil, errVersioned("ON must be equalities only (left expression = key column of %q) joined by AND; found %s", def.Name, c)
		}
		k := -1
		for s := 0; s < 2; s++ {
			l, r := f.Args[s], f.Args[1-s]
			if col, ok := uncast(r).(*expr.ColRef); ok && col.Idx >= nl && col.Idx < nl+nr && exprSide(l, nl, nr) == sideL {
				k = col.Idx - nl
			}
		}
		if k < 0 || !isKeyCol(def, k) {
			return nil, nil, errVersioned("ON must be equalities only (left expression = key column of %q) joined by AND; found %s", def.Name, c)
		}
		if covered[k] {
			return nil, nil, errVersioned("ON equates PRIMARY KEY column %q of %q twice", def.Columns[k].Name, def.Name)
		}
		covered[k] = true
	}
	var missing []string
	for _, k := range def.KeyCols {
		if !covered[k] {
			missing = append(missing, def.Columns[k].Name)
		}
	}
	if len(missing) > 0 {
		return nil, nil, errVersioned("ON must equate every PRIMARY KEY column of %q with an expression of the left side; missing: %s", def.Name, strings.Join(missing, ", "))
	}
	// AS OF: the left side's event-time (WATERMARK) column.
	c := &ectx{sc: sc, noAgg: "aggregate functions are not allowed in FOR SYSTEM_TIME AS OF",
		noWin: "window functions are not allowed in FOR SYSTEM_TIME AS OF"}
	t, err := b.bindExpr(c, at)
	if err != nil {
		return nil, nil, err
	}
	col, ok := t.(*expr.ColRef)
	if !ok || col.Idx >= nl {
		return nil, nil, errVersioned("AS OF must name a time column of the left side, not %s", t)
	}
	if col.T.Kind != types.Timestamp {
		return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, "FOR SYSTEM_TIME AS OF column must be of type timestamp, not %s", col.T)
	}
	if name, ok := watermarkColumn(join.Left, col.Idx); !ok {
		return nil, nil, errVersioned("AS OF must name the WATERMARK column of the stream or source the left side reads (%s is not one), so the join knows when a row's version is final", name)
	}
	out := *join
	out.Versioned = &planner.VersionedJoin{ProbeTime: col.Idx, BuildTime: buildTime}
	return &out, sc, nil
}

func isKeyCol(def *storage.TableDef, c int) bool {
	for _, k := range def.KeyCols {
		if k == c {
			return true
		}
	}
	return false
}

// conjunctsOf flattens the top-level ANDs of e.
func conjunctsOf(e expr.Expr) []expr.Expr {
	if f, ok := e.(*expr.Func); ok && f.Name == "and" {
		var out []expr.Expr
		for _, a := range f.Args {
			out = append(out, conjunctsOf(a)...)
		}
		return out
	}
	return []expr.Expr{e}
}

// watermarkColumn reports whether column idx of n is the WATERMARK column
// of the stream or source n reads (through filters, and projections of
// the column), and the column's name.
func watermarkColumn(n planner.Node, idx int) (string, bool) {
	name := ""
	if idx < len(n.Schema()) {
		name = n.Schema()[idx].Name
	}
	for {
		switch x := n.(type) {
		case *planner.Filter:
			n = x.Input
			continue
		case *planner.Project:
			c, ok := x.Exprs[idx].(*expr.ColRef)
			if !ok {
				return name, false
			}
			n, idx = x.Input, c.Idx
			continue
		case *planner.Scan:
			def := x.Table
			if def.Watermark == nil || def.Kind != storage.KindStream && def.Kind != storage.KindSource {
				return name, false
			}
			return name, idx < len(def.Columns) && def.Column(def.Watermark.Column) == idx
		}
		return name, false
	}
}
