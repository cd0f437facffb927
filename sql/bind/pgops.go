package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// pgTypeofFunc binds pg_typeof(any): the name of its argument's type as
// PostgreSQL prints a regtype (no type modifier: numeric, character
// varying; an untyped literal or NULL is unknown). The type is known when
// the statement is bound, so the call is a constant of type text (streamdb
// has no regtype; DECISIONS.md "pg_typeof"). ok is false for other names.
func (b *Binder) pgTypeofFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	if n.FnName.L != "pg_typeof" {
		return nil, false, nil
	}
	args := make([]expr.Expr, len(n.Args))
	for i, a := range n.Args {
		if args[i], err = b.bindExpr(c, a); err != nil {
			return nil, true, err
		}
	}
	if len(args) != 1 {
		return nil, true, noFunction(n.FnName.L, args)
	}
	return &expr.Const{D: types.Str(typeName(args[0].Type())), T: types.TText}, true, nil
}
