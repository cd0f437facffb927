package bind

import (
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Schemas. A name without a schema is looked up as PostgreSQL's default
// search_path does: pg_catalog's tables and the user's streams and views
// (public); information_schema's only when qualified.
const (
	SchemaPublic     = "public"
	SchemaCatalog    = "pg_catalog"
	SchemaInfoSchema = "information_schema"
)

// PgCatalog is what a Catalog that serves the pg_catalog schema also
// answers, for the lookup functions psql and drivers call
// (pg_get_userbyid, format_type, pg_get_viewdef, pg_table_is_visible):
// the binder turns each into a CASE over the live catalog's rows.
type PgCatalog interface {
	// PgLookup returns an object id → text map: "roles" (role oid →
	// name), "types" (type oid → format_type's name), "views" (view oid →
	// definition), "visible" (oid of each relation on the search path → ""),
	// "relnames" (relation oid → name), "namespaces" (schema oid → name),
	// "typmods" (type oid<<32 | typmod → format_type's name, for each
	// type modifier a column has).
	PgLookup(what string) map[int64]string
	// DatabaseName is current_database().
	DatabaseName() string
}

// SystemTableSchema reports the schema of a system table's name (as
// Catalog.Table takes it) and its name within that schema.
func SystemTableSchema(name string) (schema, rel string) {
	if len(name) > len(SchemaInfoSchema)+1 && name[:len(SchemaInfoSchema)+1] == SchemaInfoSchema+"." {
		return SchemaInfoSchema, name[len(SchemaInfoSchema)+1:]
	}
	return SchemaCatalog, name
}

// lookupTable resolves a possibly schema-qualified table name.
func (b *Binder) lookupTable(tn *ast.TableName) (*storage.TableDef, error) {
	name := tn.Name.O
	switch tn.Schema.L {
	case "":
		if def, ok := b.Cat.Table(name); ok {
			return def, nil
		}
	case SchemaPublic:
		if def, ok := b.Cat.Table(name); ok && def.Kind != storage.KindSystem {
			return def, nil
		}
	case SchemaCatalog:
		if def, ok := b.Cat.Table(name); ok && def.Kind == storage.KindSystem {
			return def, nil
		}
	case SchemaInfoSchema:
		if def, ok := b.Cat.Table(SchemaInfoSchema + "." + name); ok {
			return def, nil
		}
	default:
		return nil, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", tn.Schema.O)
	}
	if tn.Schema.O != "" {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation \"%s.%s\" does not exist", tn.Schema.O, name)
	}
	return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
}

// bindRegex binds a ~ b and a !~ b (TiDB's REGEXP, from the dialect layer).
func (b *Binder) bindRegex(c *ectx, n *ast.PatternRegexpExpr) (expr.Expr, error) {
	l, r, err := b.bindPair(c, n.Expr, n.Pattern)
	if err != nil {
		return nil, err
	}
	if l, err = b.coerce(l, types.TText); err != nil {
		return nil, err
	}
	if r, err = b.coerce(r, types.TText); err != nil {
		return nil, err
	}
	if l.Type().Kind != types.Text || r.Type().Kind != types.Text {
		return nil, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: %s ~ %s", typeName(l.Type()), typeName(r.Type()))
	}
	var e expr.Expr = call("regex_test", types.TBool, l, r)
	if n.Not {
		e = call("not", types.TBool, e)
	}
	return e, nil
}

// pgFunc binds the pg_catalog functions that need the catalog or have no
// arguments to evaluate; ok is false for any other name. A schema other
// than pg_catalog on a function name is 3F000.
func (b *Binder) pgFunc(c *ectx, n *ast.FuncCallExpr) (e expr.Expr, ok bool, err error) {
	if s := n.Schema.L; s == SchemaInfoSchema && n.FnName.L == "_pg_expandarray" {
		return nil, false, nil // outside the select list (srfselect.go): no such function
	} else if s != "" && s != SchemaCatalog {
		return nil, true, sqlerr.New(sqlerr.InvalidSchemaName, "schema %q does not exist", n.Schema.O)
	}
	pc, _ := b.Cat.(PgCatalog)
	text := func(s string) expr.Expr { return &expr.Const{D: types.Str(s), T: types.TText} }
	null := &expr.Const{D: types.Null, T: types.TText}
	args := func(lo, hi int) ([]expr.Expr, error) {
		if len(n.Args) < lo || len(n.Args) > hi {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", n.FnName.L, len(n.Args))
		}
		return b.bindArgs(c, n.Args)
	}
	switch n.FnName.L {
	case "version":
		if _, err := args(0, 0); err != nil {
			return nil, true, err
		}
		return text(Version), true, nil
	case "current_database", "current_catalog":
		if _, err := args(0, 0); err != nil || pc == nil {
			return nil, pc != nil, err
		}
		return text(pc.DatabaseName()), true, nil
	case "current_user", "session_user", "current_role":
		if b.User == "" {
			return nil, false, nil
		}
		if _, err := args(0, 0); err != nil {
			return nil, true, err
		}
		return text(b.User), true, nil
	case "current_schema":
		if _, err := args(0, 0); err != nil {
			return nil, true, err
		}
		return text(SchemaPublic), true, nil
	case "pg_encoding_to_char":
		as, err := args(1, 1)
		if err != nil {
			return nil, true, err
		}
		e, err := b.lookup(as[0], map[int64]string{6: "UTF8"})
		return e, true, err
	case "pg_get_expr":
		// pg_attrdef.adbin holds the default's text (sql/coldefaults.go).
		as, err := args(2, 3)
		if err != nil {
			return nil, true, err
		}
		return &expr.Cast{E: as[0], T: types.TText}, true, nil
	case "obj_description", "col_description", "shobj_description",
		"pg_get_function_result", "pg_get_function_arguments":
		// streamdb has no comments, column defaults or user-defined
		// functions: these describe nothing that exists, which is NULL.
		if _, err := args(1, 3); err != nil {
			return nil, true, err
		}
		return null, true, nil
	case "pg_get_userbyid", "format_type", "pg_get_viewdef", "pg_table_is_visible", "pg_type_is_visible":
		if pc == nil {
			return nil, false, nil
		}
		hi := map[string]int{"format_type": 2, "pg_get_viewdef": 2}[n.FnName.L]
		as, err := args(1, max(hi, 1))
		if err != nil {
			return nil, true, err
		}
		what := map[string]string{"pg_get_userbyid": "roles", "format_type": "types", "pg_get_viewdef": "views", "pg_table_is_visible": "visible",
			"pg_type_is_visible": "types"}[n.FnName.L]
		m := pc.PgLookup(what)
		if what == "visible" || n.FnName.L == "pg_type_is_visible" { // every type is in pg_catalog, on the search path
			e, err := b.lookup(as[0], m)
			if err != nil {
				return nil, true, err
			}
			return call("is_not_null", types.TBool, e), true, nil
		}
		e, err := b.lookup(as[0], m)
		if err == nil && what == "types" && len(as) == 2 {
			e, err = b.withTypmod(as[0], as[1], pc.PgLookup("typmods"), e)
		}
		return e, true, err
	case "pg_get_indexdef", "pg_get_constraintdef":
		if pc == nil {
			return nil, false, nil
		}
		lo, hi := 1, 3
		if n.FnName.L == "pg_get_constraintdef" {
			hi = 2
		}
		as, err := args(lo, hi)
		if err == nil && n.FnName.L == "pg_get_indexdef" && len(as) == 2 {
			err = noFunction(n.FnName.L, as)
		}
		if err != nil {
			return nil, true, err
		}
		if len(as) > 1 { // the last argument is pretty (boolean): names print alike either way
			if as[len(as)-1], err = b.coerce(as[len(as)-1], types.TBool); err != nil {
				return nil, true, err
			}
			if as[len(as)-1].Type().Kind != types.Bool {
				return nil, true, noFunction(n.FnName.L, as)
			}
		}
		if n.FnName.L == "pg_get_constraintdef" {
			e, err := b.lookup(as[0], pc.PgLookup("constraintdefs"))
			return e, true, err
		}
		e, err := b.indexDef(as, pc.PgLookup("indexdefs"), pc.PgLookup("indexcols"))
		return e, true, err
	case "array_to_string":
		as, err := args(2, 2)
		if err != nil {
			return nil, true, err
		}
		if as[1], err = b.coerce(as[1], types.TText); err != nil {
			return nil, true, err
		}
		if as[0].Type().Kind != types.TextArray || as[1].Type().Kind != types.Text {
			return nil, true, noFunction("array_to_string", as)
		}
		return call("array_to_string", types.TText, as...), true, nil
	case "pg_reg": // x::regclass, x::regtype, ..., from the dialect layer
		if pc == nil || len(n.Args) != 2 {
			return nil, false, nil
		}
		kind, err := castKind(n.Args[1])
		if err != nil {
			return nil, true, err
		}
		as, err := args(2, 2)
		if err != nil {
			return nil, true, err
		}
		m := pc.PgLookup(map[string]string{"regtype": "types", "regclass": "relnames", "regrole": "roles",
			"regnamespace": "namespaces"}[kind])
		if k := as[0].Type().Kind; k == types.Text || k == types.Unknown {
			e, err := b.reverseLookup(as[0], m)
			return e, true, err
		}
		e, err := b.lookup(as[0], m)
		return e, true, err
	case ast.JSONMemberOf: // x = ANY(array), from the dialect layer
		as, err := args(2, 2)
		if err != nil {
			return nil, true, err
		}
		at, err := anyLiteralType(as[0].Type(), as[1].Type()) // arrayfuncs.go
		if err != nil {
			return nil, true, err
		}
		if as[1], err = b.coerce(as[1], at); err != nil {
			return nil, true, err
		}
		if as[1].Type().Kind != types.TextArray {
			return nil, true, sqlerr.New(sqlerr.WrongObjectType, "op ANY/ALL (array) requires array on right side")
		}
		// x of the elements' kind (or integer with integer, float with
		// float) compares typed with the list's values; otherwise x is
		// compared by its text form with the elements' text (an oid with an
		// oid[] of the catalog).
		if as[0].Type().Kind == types.Unknown {
			if as[0], err = b.coerce(as[0], types.ArrayElem(as[1].Type())); err != nil {
				return nil, true, err
			}
		}
		if x, ok := anyOperand(as[0], as[1].Type()); ok {
			return call("array_contains", types.TBool, x, as[1]), true, nil
		}
		if as[1].Type() != types.TTextArray {
			if as[1], err = b.castTo(as[1], types.TTextArray); err != nil {
				return nil, true, err
			}
		}
		if k := as[0].Type().Kind; k == types.Unknown {
			as[0], err = b.coerce(as[0], types.TText)
		} else if k != types.Text {
			as[0], err = b.castTo(as[0], types.TText)
		}
		if err != nil {
			return nil, true, err
		}
		return call("array_contains", types.TBool, as...), true, nil
	case "pg_get_statisticsobjdef_columns":
		// pg_statistic_ext is empty: no statistics object to describe.
		if _, err := args(1, 1); err != nil {
			return nil, true, err
		}
		return null, true, nil
	case "pg_relation_is_publishable":
		// streamdb has no publications (logical replication).
		if _, err := args(1, 1); err != nil {
			return nil, true, err
		}
		return &expr.Const{D: types.Boolean(false), T: types.TBool}, true, nil
	case "pg_function_is_visible":
		// pg_proc lists no functions, so no function oid is on the path.
		if _, err := args(1, 1); err != nil {
			return nil, true, err
		}
		return &expr.Const{D: types.Boolean(false), T: types.TBool}, true, nil
	}
	return nil, false, nil
}

// Version is version()'s text: PostgreSQL 15's form, which drivers parse
// for the server's version, naming streamdb.
const Version = "PostgreSQL 15.0 (streamdb) on x86_64-pc-linux-gnu, compiled by Go, 64-bit"

// withTypmod is format_type(oid, typmod): CASE WHEN id = oid AND tm =
// typmod THEN name ... ELSE base END over m (see PgCatalog "typmods").
func (b *Binder) withTypmod(id, tm expr.Expr, m map[int64]string, base expr.Expr) (expr.Expr, error) {
	var err error
	if id, err = b.int64ID(id); err != nil {
		return nil, err
	}
	if tm, err = b.int64ID(tm); err != nil {
		return nil, err
	}
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	c := &expr.Case{T: types.TText, Else: base}
	for _, k := range keys {
		c.Whens = append(c.Whens, expr.When{
			Cond: call("and", types.TBool,
				call("=", types.TBool, id, &expr.Const{D: types.Int(k >> 32), T: types.TInt64}),
				call("=", types.TBool, tm, &expr.Const{D: types.Int(k & 0xffffffff), T: types.TInt64})),
			Then: &expr.Const{D: types.Str(m[k]), T: types.TText},
		})
	}
	if len(c.Whens) == 0 {
		return base, nil
	}
	return c, nil
}

// int64ID coerces an object id or type modifier to bigint.
func (b *Binder) int64ID(id expr.Expr) (expr.Expr, error) {
	id, err := b.coerce(id, types.TInt64)
	if err != nil {
		return nil, err
	}
	if k := id.Type().Kind; k == types.Int16 || k == types.Int32 {
		return &expr.Cast{E: id, T: types.TInt64}, nil
	} else if k != types.Int64 {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, "an object id must be an integer, not %s", typeName(id.Type()))
	}
	return id, nil
}

// lookup is CASE id WHEN k THEN v ... END over m (NULL for other ids), in
// key order so that plans print deterministically.
func (b *Binder) lookup(id expr.Expr, m map[int64]string) (expr.Expr, error) {
	id, err := b.coerce(id, types.TInt64)
	if err != nil {
		return nil, err
	}
	if k := id.Type().Kind; k == types.Int16 || k == types.Int32 {
		id = &expr.Cast{E: id, T: types.TInt64}
	} else if k != types.Int64 {
		return nil, sqlerr.New(sqlerr.DatatypeMismatch, "an object id must be an integer, not %s", typeName(id.Type()))
	}
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	c := &expr.Case{T: types.TText}
	for _, k := range keys {
		c.Whens = append(c.Whens, expr.When{
			Cond: call("=", types.TBool, id, &expr.Const{D: types.Int(k), T: types.TInt64}),
			Then: &expr.Const{D: types.Str(m[k]), T: types.TText},
		})
	}
	if len(c.Whens) == 0 {
		return &expr.Const{D: types.Null, T: types.TText}, nil
	}
	return c, nil
}

// PgTypeName is pg_type.typname of t (int8, varchar, ...).
func PgTypeName(t types.T) string {
	if t.Kind == types.TextArray {
		return "_" + pgTypeName(types.ArrayElem(t))
	}
	return pgTypeName(t)
}

// FormatTypeName is format_type's name of t without a type modifier
// (character varying, numeric, text[], ...).
func FormatTypeName(t types.T) string {
	if t.Kind == types.TextArray {
		return typeName(types.ArrayElem(t)) + "[]"
	}
	return typeName(t)
}

// castKind reads pg_reg's type name literal.
func castKind(n ast.ExprNode) (string, error) {
	if v, ok := n.(ast.ValueExpr); ok {
		if s, ok := v.GetValue().(string); ok {
			return s, nil
		}
	}
	return "", sqlerr.New(sqlerr.SyntaxError, "pg_reg needs a type name literal")
}

// reverseLookup is CASE name WHEN v THEN k ... END over m: a name's oid
// ('words'::regclass), NULL for a name m lacks.
func (b *Binder) reverseLookup(name expr.Expr, m map[int64]string) (expr.Expr, error) {
	name, err := b.coerce(name, types.TText)
	if err != nil {
		return nil, err
	}
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	c := &expr.Case{T: types.TInt64}
	for _, k := range keys {
		c.Whens = append(c.Whens, expr.When{
			Cond: call("=", types.TBool, name, &expr.Const{D: types.Str(m[k]), T: types.TText}),
			Then: &expr.Const{D: types.Int(k), T: types.TInt64},
		})
	}
	if len(c.Whens) == 0 {
		return &expr.Const{D: types.Null, T: types.TInt64}, nil
	}
	return c, nil
}

// indexDef is pg_get_indexdef(oid) and pg_get_indexdef(oid, column,
// pretty) over the key indexes' definitions (defs) and column names
// (cols: one per line): column 0 is the whole definition, column k the
// k-th column's name, another column the empty string, as PostgreSQL; an
// oid that is no index gives NULL.
func (b *Binder) indexDef(as []expr.Expr, defs, cols map[int64]string) (expr.Expr, error) {
	id, err := b.int64ID(as[0])
	if err != nil {
		return nil, err
	}
	var col expr.Expr
	if len(as) == 3 {
		if col, err = b.int64ID(as[1]); err != nil {
			return nil, err
		}
	}
	keys := make([]int64, 0, len(defs))
	for k := range defs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	eq := func(x expr.Expr, v int64) expr.Expr {
		return call("=", types.TBool, x, &expr.Const{D: types.Int(v), T: types.TInt64})
	}
	text := func(s string) expr.Expr { return &expr.Const{D: types.Str(s), T: types.TText} }
	c := &expr.Case{T: types.TText}
	for _, k := range keys {
		if col == nil {
			c.Whens = append(c.Whens, expr.When{Cond: eq(id, k), Then: text(defs[k])})
			continue
		}
		c.Whens = append(c.Whens, expr.When{Cond: call("and", types.TBool, eq(id, k), eq(col, 0)), Then: text(defs[k])})
		for i, name := range strings.Split(cols[k], "\n") {
			c.Whens = append(c.Whens, expr.When{Cond: call("and", types.TBool, eq(id, k), eq(col, int64(i+1))), Then: text(name)})
		}
		c.Whens = append(c.Whens, expr.When{Cond: eq(id, k), Then: text("")})
	}
	if len(c.Whens) == 0 {
		return &expr.Const{D: types.Null, T: types.TText}, nil
	}
	return c, nil
}
