package bind

import (
	"sort"
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// The size functions psql's \dt+ and \dm+ call: pg_relation_size,
// pg_table_size, pg_total_relation_size and pg_indexes_size take a
// relation (an oid, 'name'::regclass or a name literal) and answer the
// bytes the catalog reports for it when the statement is bound
// (PgLookup "relsize" and "tablesize": a CASE over the relations, NULL for
// an oid that is no relation, as PostgreSQL); pg_size_pretty(bigint) and
// pg_size_pretty(numeric) format a byte count (an untyped literal or
// parameter is taken as bigint, where PostgreSQL finds the call ambiguous).

// sizeFunc binds the size functions; ok is false for any other name.
func (b *Binder) sizeFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	name := n.FnName.L
	lo, hi := 1, 1
	lookup := ""
	switch name {
	case "pg_size_pretty":
	case "pg_relation_size":
		hi, lookup = 2, "relsize"
	case "pg_table_size", "pg_total_relation_size":
		lookup = "tablesize"
	case "pg_indexes_size":
		lookup = "indexes" // no indexes: 0 for every relation
	default:
		return nil, false, nil
	}
	if len(n.Args) < lo || len(n.Args) > hi {
		return nil, true, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(n.Args))
	}
	args, err := b.bindArgs(c, n.Args)
	if err != nil {
		return nil, true, err
	}
	if name == "pg_size_pretty" {
		a := args[0]
		switch a.Type().Kind {
		case types.Unknown:
			if a, err = b.coerce(a, types.TInt64); err != nil {
				return nil, true, err
			}
		case types.Int16, types.Int32:
			a = &expr.Cast{E: a, T: types.TInt64}
		case types.Int64, types.Numeric: // pg_size_pretty(bigint), pg_size_pretty(numeric)
		default:
			return nil, true, noFunction(name, args)
		}
		return call(name, types.TText, a), true, nil
	}
	if b.View {
		return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "%s() is not supported in a materialized view", name)
	}
	pc, ok := b.Cat.(PgCatalog)
	if !ok {
		return nil, false, nil
	}
	if len(args) == 2 {
		// The fork: only 'main' holds data; the others exist, empty.
		fork, err := constText(args[1], "the fork name")
		if err != nil {
			return nil, true, err
		}
		switch fork {
		case "main":
		case "fsm", "vm", "init":
			lookup = "indexes"
		default:
			return nil, true, sqlerr.New(sqlerr.InvalidParameterValue,
				"invalid fork name %q: valid fork names are \"main\", \"fsm\", \"vm\", and \"init\"", fork)
		}
	}
	rel := args[0]
	if k := rel.Type().Kind; k == types.Text || k == types.Unknown {
		cst, isConst := rel.(*expr.Const)
		if !isConst {
			return nil, true, noFunction(name, args)
		}
		if cst.D.Null {
			return &expr.Const{D: types.Null, T: types.TInt64}, true, nil
		}
		def, err := b.relationByName(cst.D.S)
		if err != nil {
			return nil, true, err
		}
		// Its oid: the relation of that name and kind on the search path.
		// (information_schema's are not on it: any of that name then).
		rel = nil
		visible := pc.PgLookup("visible")
		for oid, nm := range pc.PgLookup("relnames") {
			if nm != def.Name {
				continue
			}
			_, vis := visible[oid]
			if rel == nil || vis {
				rel = &expr.Const{D: types.Int(oid), T: types.TInt64}
			}
			if vis {
				break
			}
		}
		if rel == nil {
			return nil, true, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", cst.D.S)
		}
	}
	id, err := b.int64ID(rel)
	if err != nil {
		return nil, true, err
	}
	var sizes map[int64]string
	if lookup == "indexes" {
		// Every relation, with no bytes.
		sizes = pc.PgLookup("relnames")
		for k := range sizes {
			sizes[k] = "0"
		}
	} else {
		sizes = pc.PgLookup(lookup)
	}
	return sizeCase(id, sizes), true, nil
}

// sizeCase is CASE id WHEN k THEN bytes ... END (bigint) over m, whose
// values are decimal byte counts, in key order.
func sizeCase(id expr.Expr, m map[int64]string) expr.Expr {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	cs := &expr.Case{T: types.TInt64}
	for _, k := range keys {
		v, err := strconv.ParseInt(m[k], 10, 64)
		if err != nil {
			continue
		}
		cs.Whens = append(cs.Whens, expr.When{
			Cond: call("=", types.TBool, id, &expr.Const{D: types.Int(k), T: types.TInt64}),
			Then: &expr.Const{D: types.Int(v), T: types.TInt64},
		})
	}
	if len(cs.Whens) == 0 {
		return &expr.Const{D: types.Null, T: types.TInt64}
	}
	return cs
}
