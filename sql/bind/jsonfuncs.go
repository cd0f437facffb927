package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// driverFunc binds functions drivers' catalog queries call:
// json_build_object(k, v, ...) (a JSON object as text: streamdb has no json
// type) and pg_get_serial_sequence(table, column), which is NULL: streamdb
// has no sequences, so no column owns one. ok is false for other names.
func (b *Binder) driverFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	switch name {
	case "json_build_object", "pg_get_serial_sequence":
	default:
		return nil, false, nil
	}
	if s := n.Schema.L; s != "" && s != SchemaCatalog {
		return nil, true, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", n.Schema.O)
	}
	args := make([]expr.Expr, len(n.Args))
	for i, a := range n.Args {
		if args[i], err = b.bindExpr(c, a); err != nil {
			return nil, true, err
		}
		if args[i], err = b.coerce(args[i], types.TText); err != nil {
			return nil, true, err
		}
	}
	if name == "pg_get_serial_sequence" {
		if len(args) != 2 || args[0].Type().Kind != types.Text || args[1].Type().Kind != types.Text {
			return nil, true, noFunction(name, args)
		}
		return &expr.Const{D: types.Null, T: types.TText}, true, nil
	}
	if len(args)%2 != 0 {
		return nil, true, &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Msg: "argument list must have even number of elements",
			Hint: "The arguments of json_build_object() must consist of alternating keys and values."}
	}
	for i := 0; i < len(args); i += 2 {
		if k := args[i].Type().Kind; k == types.TextArray {
			return nil, true, sqlerr.New(sqlerr.InvalidParameterValue, "key value must be scalar, not array, composite, or json")
		}
	}
	return call("json_build_object", types.TText, args...), true, nil
}
