package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Temporal (lookup) joins (the dialect layer marks them, sql/parse
// lookup.go):
//
//	s [LEFT] JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() ON s.k = dim.k [AND ...]
//
// bind as an ordinary inner or left join with Lookup set. A batch query
// runs it as that join over the table's current rows; a continuous query
// joins each left row once with the dimension's rows at processing time
// and never retracts it when the dimension changes (exec lookupjoin.go).
// As in RisingWave, the right side must be a table with a PRIMARY KEY
// and ON must equate each of its key columns with an expression of the
// left side, so a left row meets at most one dimension row; other
// conditions in ON filter the pairs.

// isLookupMarker reports whether n is the marker call.
func isLookupMarker(n ast.Node) bool {
	f, ok := n.(*ast.FuncCallExpr)
	return ok && f.FnName.L == parse.LookupMarker && len(f.Args) == 0
}

// isLookupJoin reports whether the dialect layer marked j as a lookup join.
func isLookupJoin(j *ast.Join) bool {
	return j.Right != nil && j.On != nil && contains(j.On.Expr, isLookupMarker)
}

func errLookup(format string, args ...any) error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "temporal join (FOR SYSTEM_TIME AS OF PROCTIME()): "+format, args...)
}

// bindLookupJoin binds a lookup join (see above).
func (b *Binder) bindLookupJoin(j *ast.Join) (planner.Node, *scope, error) {
	join, scan, _, sc, err := b.bindTemporalJoin(j, isLookupMarker, errLookup, "a table with a PRIMARY KEY")
	if err != nil {
		return nil, nil, err
	}
	def := scan.Table
	switch {
	case def.Kind == storage.KindView:
		return nil, nil, errLookup("the right side must be a table with a PRIMARY KEY; %q is a materialized view", def.Name)
	case def.Kind == storage.KindSource:
		return nil, nil, errLookup("the right side must be a table with a PRIMARY KEY; %q is a source", def.Name)
	case def.Kind != storage.KindStream:
		return nil, nil, errLookup("the right side must be a table with a PRIMARY KEY; %q is not one", def.Name)
	case len(def.KeyCols) == 0:
		return nil, nil, errLookup("the right side must be a table with a PRIMARY KEY; %q is an append-only table (declare a PRIMARY KEY to make it a changelog table)", def.Name)
	}
	nl, nr := len(join.Left.Schema()), len(join.Right.Schema())
	covered := map[int]bool{}
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		f, ok := e.(*expr.Func)
		if !ok {
			return
		}
		if f.Name == "and" {
			for _, a := range f.Args {
				walk(a)
			}
			return
		}
		if f.Name != "=" || len(f.Args) != 2 {
			return
		}
		for k := 0; k < 2; k++ {
			l, r := f.Args[k], f.Args[1-k]
			if c, ok := uncast(r).(*expr.ColRef); ok && c.Idx >= nl && c.Idx < nl+nr && exprSide(l, nl, nr) == sideL {
				covered[c.Idx-nl] = true
			}
		}
	}
	walk(join.On)
	var missing []string
	for _, k := range def.KeyCols {
		if !covered[k] {
			missing = append(missing, def.Columns[k].Name)
		}
	}
	if len(missing) > 0 {
		return nil, nil, errLookup("ON must equate every PRIMARY KEY column of %q with an expression of the left side; missing: %s", def.Name, strings.Join(missing, ", "))
	}
	out := *join
	out.Lookup = true
	return &out, sc, nil
}

// uncast strips casts from e.
func uncast(e expr.Expr) expr.Expr {
	for {
		c, ok := e.(*expr.Cast)
		if !ok {
			return e
		}
		e = c.E
	}
}

// bindTemporalJoin binds a temporal join, j with its marker conjunct (one
// isMarker accepts) taken out of ON: an inner or left join whose right
// side is a table named directly (a Scan), what it must be. It returns the
// join, the right side's scan, the marker and the join's scope; errf
// makes its errors.
func (b *Binder) bindTemporalJoin(j *ast.Join, isMarker func(ast.Node) bool, errf func(string, ...any) error, what string) (*planner.Join, *planner.Scan, ast.ExprNode, *scope, error) {
	if j.StraightJoin || j.Tp == ast.RightJoin {
		return nil, nil, nil, nil, errf("RIGHT and FULL joins are not supported (JOIN and LEFT JOIN are)")
	}
	if ts, ok := j.Right.(*ast.TableSource); !ok {
		return nil, nil, nil, nil, errf("the right side must be %s, not a join", what)
	} else if _, ok := ts.Source.(*ast.TableName); !ok {
		return nil, nil, nil, nil, errf("the right side must be %s, not a subquery", what)
	}
	var rest, marker ast.ExprNode
	for _, c := range andConjuncts(j.On.Expr, nil) {
		if isMarker(c) {
			marker = c
			continue
		}
		if contains(c, isMarker) {
			return nil, nil, nil, nil, errf("ON must be conditions joined by AND (write an OR in parentheses)")
		}
		if rest == nil {
			rest = c
		} else {
			rest = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: rest, R: c}
		}
	}
	if marker == nil || rest == nil {
		return nil, nil, nil, nil, errf("ON must be conditions joined by AND (write an OR in parentheses)")
	}
	plain := *j
	plain.On = &ast.OnCondition{Expr: rest}
	node, sc, err := b.bindJoin(&plain)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	join, ok := node.(*planner.Join)
	if !ok {
		return nil, nil, nil, nil, errf("the right side must be %s", what)
	}
	scan, ok := join.Right.(*planner.Scan)
	if !ok {
		return nil, nil, nil, nil, errf("the right side must be %s, not a view", what)
	}
	return join, scan, marker, sc, nil
}
