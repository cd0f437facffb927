package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// setConfigFunc binds set_config(name, value, is_local): SET (or SET
// LOCAL) from inside a query, returning the new value as text. The
// setting is applied while the statement is bound for execution
// (ParamValues set), never when it is only described, so its refusals are
// the statement's errors. The arguments must be constants (0A000): a
// setting per row would need the function to run inside the batch
// evaluation, which has no session. A materialized view refuses it.
func (b *Binder) setConfigFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	if n.FnName.L != "set_config" {
		return nil, false, nil
	}
	if s := n.Schema.L; s != "" && s != SchemaCatalog {
		return nil, true, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", n.Schema.O)
	}
	if len(n.Args) != 3 {
		return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function set_config with %d arguments does not exist", len(n.Args))
	}
	if b.View {
		return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "set_config() is not supported in a materialized view")
	}
	var vals [3]types.Datum
	for i, a := range n.Args {
		x, err := b.bindExpr(c, a)
		if err != nil {
			return nil, true, err
		}
		want := types.TText
		if i == 2 {
			want = types.TBool
		}
		if x, err = b.coerce(x, want); err != nil {
			return nil, true, err
		}
		if x.Type().Kind != want.Kind {
			return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function set_config(text, text, boolean) does not accept %s as argument %d", typeName(x.Type()), i+1)
		}
		k, ok := x.(*expr.Const)
		if !ok {
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "set_config() arguments must be constants")
		}
		vals[i] = k.D
	}
	if vals[0].Null {
		return nil, true, sqlerr.New(sqlerr.NullValueNotAllowed, "SET requires parameter name")
	}
	value := vals[1].S
	if vals[1].Null {
		value = ""
	}
	local := !vals[2].Null && vals[2].I != 0
	if b.Session == nil || b.ParamValues == nil {
		// Described, not executed: the value as given.
		return &expr.Const{D: types.Str(value), T: types.TText}, true, nil
	}
	v, err := b.Session.SetConfig(vals[0].S, value, local)
	if err != nil {
		return nil, true, err
	}
	return &expr.Const{D: types.Str(v), T: types.TText}, true, nil
}
