package sql

import (
	"hash/fnv"
	"sort"
	"strings"

	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// The pg_catalog and information_schema system tables psql, drivers and
// ORMs read to learn the schema. Each is computed from the live catalog
// (streams, views, system tables, roles, settings) when read, as the
// streamdb_* tables are; none is a stored copy. Object ids:
//
//   - namespaces: pg_catalog 11, public 2200 (PostgreSQL's), information_schema 13000;
//   - streams and views: 16384 + their catalog id (stable across restarts);
//   - system tables: 12000 + their index in name order (stable for a build);
//   - roles: a hash of the name (stable across restarts; a role has no id);
//   - types: PostgreSQL's type OIDs (types.T.OID, as the wire protocol sends).
//
// Columns typed oid, regproc, xid in PostgreSQL are bigint here, name and
// "char" are text, aclitem[] and other arrays text[] (always NULL).
const (
	oidCatalogNS  = 11
	oidPublicNS   = 2200
	oidInfoNS     = 13000
	oidFirstUser  = 16384
	oidFirstSys   = 12000
	oidDatabase   = 16383
	encodingUTF8  = 6
	databaseName  = "streamdb"
	tablespaceDef = 0
)

// catalogTypes are the types pg_type lists: every column type streamdb has.
var catalogTypes = []types.T{types.TBool, types.TInt16, types.TInt32, types.TInt64, types.TFloat32,
	types.TFloat64, types.TNumeric, types.TText, {Kind: types.Text, Prec: 1}, types.CharOf(1), types.TTimestamp,
	types.TTimestampTZ, types.TDate, types.TInterval, types.TTextArray, types.TJSON, types.TJSONB, types.TUUID, types.TBytea, types.TTime, types.TTimeTZ,
	types.ArrayOf(types.Bool), types.ArrayOf(types.Int16), types.ArrayOf(types.Int32), types.ArrayOf(types.Int64),
	types.ArrayOf(types.Float32), types.ArrayOf(types.Float64), types.ArrayOf(types.Date), types.ArrayOf(types.Timestamp),
	types.ArrayOf(types.UUID), types.ArrayOf(types.Numeric)}

type catCol struct {
	name string
	t    types.T
}

var (
	tOID  = types.TInt64
	tName = types.TText
	tBool = types.TBool
	tI16  = types.TInt16
	tI32  = types.TInt32
	tArr  = types.TTextArray
	// tI2Arr is int2vector and int2[] (attribute numbers): psql subscripts
	// them and compares the elements with attnum.
	tI2Arr = types.IntArray(types.Int16)
	tStamp = types.TTimestamp
)

func catCols(cs ...catCol) []Column {
	out := make([]Column, len(cs))
	for i, c := range cs {
		out[i] = Column{Name: c.name, T: c.t}
	}
	return out
}

var (
	null  = types.Null
	dTrue = types.Boolean(true)
	dFals = types.Boolean(false)
)

func i64(v int64) types.Datum { return types.Int(v) }

// pgTables generates each pg_catalog (and information_schema.*) table
// (set in init: pg_class lists the system tables, pgTables among them).
var pgTables map[string]func(catGen) *table

func init() {
	pgTables = map[string]func(catGen) *table{
		"pg_namespace":   catGen.pgNamespace,
		"pg_class":       catGen.pgClass,
		"pg_attribute":   catGen.pgAttribute,
		"pg_type":        catGen.pgType,
		"pg_database":    catGen.pgDatabase,
		"pg_am":          catGen.pgAm,
		"pg_proc":        catGen.pgProc,
		"pg_description": catGen.pgDescription,
		"pg_attrdef":     catGen.pgAttrdef,
		"pg_collation":   catGen.pgCollation,
		"pg_settings":    catGen.pgSettings,
		"pg_tables":      catGen.pgTablesView,
		"pg_views":       catGen.pgViews,
		"pg_matviews":    catGen.pgMatviews,
	}
}

// isPgTableName reports whether name may name a pg_catalog or
// information_schema table (Engine.Table's prefix test).
func isPgTableName(name string) bool {
	return strings.HasPrefix(name, "pg_") || strings.HasPrefix(name, bind.SchemaInfoSchema+".")
}

// catGen generates a pg_catalog table: its columns only (colsOnly, which
// is how the binder learns them, and which keeps pg_class from reading
// pg_class's rows to list its own columns) or its rows too.
type catGen struct {
	catalogReader
	colsOnly bool
	sess     *Session // whose settings pg_settings lists
}

// The catalog tables come in families, each a type wrapping catGen with
// its generators in a file of its own: information_schema
// (infoSchemaGen, pgcatalog_infoschema.go), roles (roleGen,
// pgcatalog_roles.go), the views' keys (keyGen, pgcatalog_keys.go), what
// psql's \d reads and streamdb has none of (describeGen,
// pgcatalog_describe.go) and the sources as foreign tables (foreignGen,
// pgcatalog_foreign.go). catGen keeps pg_class, pg_attribute, pg_type and
// the tables that list every relation.
type (
	infoSchemaGen struct{ catGen }
	roleGen       struct{ catGen }
	keyGen        struct{ catGen }
	describeGen   struct{ catGen }
	foreignGen    struct{ catGen }
)

// facet adapts a generator of one of catGen's families to pgTables' form:
// facet(roleGen.pgRoles) is a func(catGen) *table.
func facet[F ~struct{ catGen }](gen func(F) *table) func(catGen) *table {
	return func(g catGen) *table { return gen(F{g}) }
}

func (e catGen) relations() []relation {
	if e.colsOnly {
		return nil
	}
	return e.catalogReader.relations()
}

func (e catGen) roleDefs() []storage.RoleDef {
	if e.colsOnly {
		return nil
	}
	return e.catalogReader.roleDefs()
}

// relation is one row of pg_class.
type relation struct {
	oid  int64
	ns   int64
	name string
	kind string // r, m, v
	def  *storage.TableDef
}

// systemNames lists the system tables' names in order (their oids).
func systemNames() []string {
	var names []string
	for n := range systemTables {
		names = append(names, n)
	}
	for n := range pgTables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// relations lists every relation: the system tables, then the streams and
// views in name order.
func (e catalogSource) relations() []relation {
	var out []relation
	for i, n := range systemNames() {
		def, ok := e.systemTable(n)
		if !ok {
			continue
		}
		schema, rel := bind.SystemTableSchema(n)
		ns := int64(oidCatalogNS)
		if schema == bind.SchemaInfoSchema {
			ns = oidInfoNS
		}
		out = append(out, relation{oid: int64(oidFirstSys + i), ns: ns, name: rel, kind: "r", def: def})
	}
	e.mu.Lock()
	var user []relation
	for _, t := range e.mu.tables {
		kind := "r"
		switch t.Kind {
		case storage.KindView:
			kind = "m"
		case storage.KindPlainView:
			kind = "v"
		case storage.KindSource:
			// A source's rows come from outside through its connector:
			// PostgreSQL's foreign table ('f'), which \d lists as such
			// and \dt, pg_tables and table reflection leave out.
			kind = "f"
		}
		user = append(user, relation{oid: oidFirstUser + int64(t.ID), ns: oidPublicNS, name: t.Name, kind: kind, def: t})
	}
	e.mu.Unlock()
	sort.Slice(user, func(i, j int) bool { return user[i].name < user[j].name })
	return append(out, user...)
}

// roleOID is a role's oid: stable across restarts, as roles have no id.
func roleOID(name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int64(oidFirstUser) + int64(h.Sum32()%(1<<30))
}

func (e catalogSource) ownerOID(t *storage.TableDef) int64 {
	if t.Kind == storage.KindSystem {
		return roleOID(BootstrapRole)
	}
	return roleOID(e.roleStore.ownerOf(t))
}

func nsName(ns int64) string {
	switch ns {
	case oidCatalogNS:
		return bind.SchemaCatalog
	case oidInfoNS:
		return bind.SchemaInfoSchema
	}
	return bind.SchemaPublic
}

func (e catGen) pgNamespace() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"nspname", tName}, catCol{"nspowner", tOID}, catCol{"nspacl", tArr})}
	owner := i64(roleOID(BootstrapRole))
	t.add(i64(oidCatalogNS), str(bind.SchemaCatalog), owner, null)
	t.add(i64(oidPublicNS), str(bind.SchemaPublic), owner, null)
	t.add(i64(oidInfoNS), str(bind.SchemaInfoSchema), owner, null)
	return t
}

func (e catGen) pgClass() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"relname", tName}, catCol{"relnamespace", tOID},
		catCol{"reltype", tOID}, catCol{"reloftype", tOID}, catCol{"relowner", tOID}, catCol{"relam", tOID},
		catCol{"relfilenode", tOID}, catCol{"reltablespace", tOID}, catCol{"relpages", tI32},
		catCol{"reltuples", types.TFloat32}, catCol{"relallvisible", tI32}, catCol{"reltoastrelid", tOID},
		catCol{"relhasindex", tBool}, catCol{"relisshared", tBool}, catCol{"relpersistence", tName},
		catCol{"relkind", tName}, catCol{"relnatts", tI16}, catCol{"relchecks", tI16},
		catCol{"relhasrules", tBool}, catCol{"relhastriggers", tBool}, catCol{"relhassubclass", tBool},
		catCol{"relrowsecurity", tBool}, catCol{"relforcerowsecurity", tBool}, catCol{"relispopulated", tBool},
		catCol{"relreplident", tName}, catCol{"relispartition", tBool}, catCol{"relrewrite", tOID},
		catCol{"relacl", tArr}, catCol{"reloptions", tArr}, catCol{"relpartbound", types.TText})}
	zero := i64(0)
	jobs := e.jobFacts()
	keys := allIndexes(e)
	keyed := map[int64]bool{}
	for _, k := range keys {
		keyed[k.rel.oid] = true
	}
	for _, r := range e.relations() {
		t.add(i64(r.oid), str(r.name), i64(r.ns), zero, zero, i64(e.ownerOID(r.def)), zero, zero, zero,
			i64(0), types.Float(-1), i64(0), zero, types.Boolean(keyed[r.oid]), dFals, str("p"), str(r.kind),
			i64(int64(len(r.def.Columns))), i64(0), dFals, dFals, dFals, dFals, dFals, dTrue, str("d"),
			dFals, zero, null, relOptions(r, jobs), null)
	}
	for _, k := range keys {
		t.add(i64(k.indexOID()), str(k.name()), i64(k.rel.ns), zero, zero, i64(e.ownerOID(k.rel.def)), i64(oidBtree), zero, zero,
			i64(0), types.Float(-1), i64(0), zero, dFals, dFals, str("p"), str("i"),
			i64(int64(len(k.attrs))), i64(0), dFals, dFals, dFals, dFals, dFals, dTrue, str("n"),
			dFals, zero, null, null, null)
	}
	return t
}

// typmod is PostgreSQL's atttypmod of t: varchar(n) n+4, numeric(p,s)
// (p<<16 | s)+4, otherwise -1.
func typmod(t types.T) int64 {
	switch {
	case t.Kind == types.Text && t.Prec > 0:
		return int64(t.Prec) + 4
	case t.Kind == types.Numeric && t.Prec > 0:
		return int64(t.Prec)<<16 | int64(t.Scale) + 4
	case t.Kind == types.TextArray && types.ArrayElem(t).Kind == types.Numeric:
		return typmod(types.ArrayElem(t)) // numeric(p,s)[]: the element's, as PostgreSQL
	case types.IsStruct(t):
		// As PostgreSQL gives an anonymous record's shape a typmod, so
		// format_type(2249, typmod) names the STRUCT<...> (for this process).
		return int64(t.Prec)
	}
	return -1
}

// composites are the composite types (CREATE TYPE) in name order.
func composites() []types.T {
	cs := types.Composites()
	sort.Slice(cs, func(i, j int) bool { return types.CompositeName(cs[i]) < types.CompositeName(cs[j]) })
	return cs
}

// typeLen is pg_type.typlen of t (-1: variable length).
func typeLen(t types.T) int64 {
	switch t.Kind {
	case types.Bool:
		return 1
	case types.Int16:
		return 2
	case types.Int32, types.Float32, types.Date:
		return 4
	case types.Int64, types.Float64, types.Timestamp, types.Time:
		return 8
	case types.TimeTZ:
		return 12
	case types.Interval, types.UUID:
		return 16
	}
	return -1
}

func (e catGen) pgAttribute() *table {
	t := &table{cols: catCols(catCol{"attrelid", tOID}, catCol{"attname", tName}, catCol{"atttypid", tOID},
		catCol{"attstattarget", tI32}, catCol{"attlen", tI16}, catCol{"attnum", tI16}, catCol{"attndims", tI32},
		catCol{"attcacheoff", tI32}, catCol{"atttypmod", tI32}, catCol{"attbyval", tBool},
		catCol{"attalign", tName}, catCol{"attstorage", tName}, catCol{"attcompression", tName},
		catCol{"attnotnull", tBool}, catCol{"atthasdef", tBool}, catCol{"atthasmissing", tBool},
		catCol{"attidentity", tName}, catCol{"attgenerated", tName}, catCol{"attisdropped", tBool},
		catCol{"attislocal", tBool}, catCol{"attinhcount", tI32}, catCol{"attcollation", tOID},
		catCol{"attacl", tArr}, catCol{"attoptions", tArr}, catCol{"attfdwoptions", tArr})}
	for _, r := range e.relations() {
		for i, c := range r.def.Columns {
			l := typeLen(c.Type)
			coll := int64(0)
			if c.Type.Kind == types.Text {
				coll = 100 // "default"
			}
			t.add(i64(r.oid), str(c.Name), i64(int64(c.Type.OID())), i64(-1), i64(l), i64(int64(i+1)), i64(0),
				i64(-1), i64(typmod(c.Type)), types.Boolean(l > 0 && l <= 8), str(align(l)), str(attStorage(l)), str(""),
				types.Boolean(c.NotNull), types.Boolean(c.Default != ""), dFals, str(""), str(""), dFals, dTrue, i64(0), i64(coll), null, null, null)
		}
	}
	// A view's key index has one attribute per key column, as PostgreSQL's.
	for _, k := range allIndexes(e) {
		for i, a := range k.attrs {
			c := k.rel.def.Columns[a-1]
			l := typeLen(c.Type)
			coll := int64(0)
			if c.Type.Kind == types.Text {
				coll = 100
			}
			t.add(i64(k.indexOID()), str(c.Name), i64(int64(c.Type.OID())), i64(-1), i64(l), i64(int64(i+1)), i64(0),
				i64(-1), i64(typmod(c.Type)), types.Boolean(l > 0 && l <= 8), str(align(l)), str(attStorage(l)), str(""),
				dFals, dFals, dFals, str(""), str(""), dFals, dTrue, i64(0), i64(coll), null, null, null)
		}
	}
	return t
}

func align(l int64) string {
	switch l {
	case 1:
		return "c"
	case 2:
		return "s"
	case 8, 16:
		return "d"
	}
	return "i"
}

func attStorage(l int64) string {
	if l < 0 {
		return "x"
	}
	return "p"
}

func (e catGen) pgType() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"typname", tName}, catCol{"typnamespace", tOID},
		catCol{"typowner", tOID}, catCol{"typlen", tI16}, catCol{"typbyval", tBool}, catCol{"typtype", tName},
		catCol{"typcategory", tName}, catCol{"typispreferred", tBool}, catCol{"typisdefined", tBool},
		catCol{"typdelim", tName}, catCol{"typrelid", tOID}, catCol{"typelem", tOID}, catCol{"typarray", tOID},
		catCol{"typnotnull", tBool}, catCol{"typbasetype", tOID}, catCol{"typtypmod", tI32},
		catCol{"typndims", tI32}, catCol{"typcollation", tOID}, catCol{"typdefault", types.TText})}
	// record, the pseudo-type of ROW(...) values and STRUCT columns.
	t.add(i64(types.OIDRecord), str("record"), i64(oidCatalogNS), i64(roleOID(BootstrapRole)), i64(-1),
		dFals, str("p"), str("P"), dFals, dTrue, str(","), i64(0), i64(0), i64(0), dFals, i64(0), i64(-1), i64(0), i64(0), null)
	for _, ty := range composites() {
		t.add(i64(int64(ty.OID())), str(types.CompositeName(ty)), i64(oidPublicNS), i64(roleOID(BootstrapRole)), i64(-1),
			dFals, str("c"), str("C"), dFals, dTrue, str(","), i64(0), i64(0), i64(0), dFals, i64(0), i64(-1), i64(0), i64(0), null)
	}
	for _, ty := range catalogTypes {
		l := typeLen(ty)
		elem, arr, coll := int64(0), int64(0), int64(0)
		cat := typeCategory(ty)
		if ty.Kind == types.TextArray {
			elem = int64(types.ArrayElem(ty).OID())
		} else if ty.Kind != types.Text || ty.Prec == 0 {
			arr = int64(types.ArrayOIDOf(ty))
		}
		if ty.Kind == types.Text {
			coll = 100
		}
		t.add(i64(int64(ty.OID())), str(bind.PgTypeName(ty)), i64(oidCatalogNS), i64(roleOID(BootstrapRole)), i64(l),
			types.Boolean(l > 0 && l <= 8), str("b"), str(cat), types.Boolean(cat == "S" && ty.Prec == 0 || ty.Kind == types.Float64 || ty.Kind == types.Bool || ty.TZ),
			dTrue, str(","), i64(0), i64(elem), i64(arr), dFals, i64(0), i64(-1), i64(0), i64(coll), null)
	}
	return t
}

// typeCategory is pg_type.typcategory.
func typeCategory(t types.T) string {
	switch {
	case t.Kind == types.Bool:
		return "B"
	case t.IsNumeric():
		return "N"
	case t.Kind == types.Text:
		return "S"
	case t.Kind == types.Timestamp || t.Kind == types.Date || t.Kind == types.Time || t.Kind == types.TimeTZ:
		return "D"
	case t.Kind == types.Interval:
		return "T"
	case t.Kind == types.TextArray:
		return "A"
	}
	return "U"
}

func (e catGen) pgDatabase() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"datname", tName}, catCol{"datdba", tOID},
		catCol{"encoding", tI32}, catCol{"datlocprovider", tName}, catCol{"datistemplate", tBool},
		catCol{"datallowconn", tBool}, catCol{"datconnlimit", tI32}, catCol{"dattablespace", tOID},
		catCol{"datcollate", types.TText}, catCol{"datctype", types.TText}, catCol{"daticulocale", types.TText},
		catCol{"datcollversion", types.TText}, catCol{"datacl", tArr})}
	t.add(i64(oidDatabase), str(databaseName), i64(roleOID(BootstrapRole)), i64(encodingUTF8), str("c"), dFals, dTrue,
		i64(-1), i64(tablespaceDef), str("C"), str("C"), null, null, null)
	return t
}

func (e catalogSource) roleDefs() []storage.RoleDef {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]storage.RoleDef, 0, len(e.mu.roles))
	for _, r := range e.mu.roles {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// pgAm has btree, the access method the views' key indexes show
// (pgcatalog_keys.go); streams and views have no table access method.
func (e catGen) pgAm() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"amname", tName}, catCol{"amhandler", tOID}, catCol{"amtype", tName})}
	t.add(i64(oidBtree), str("btree"), i64(330), str("i")) // PostgreSQL's oids: btree, bthandler
	return t
}

// pgProc is empty: streamdb has no user-defined functions, and its
// built-ins are not catalog objects.
func (e catGen) pgProc() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"proname", tName}, catCol{"pronamespace", tOID},
		catCol{"proowner", tOID}, catCol{"prolang", tOID}, catCol{"prokind", tName}, catCol{"proretset", tBool},
		catCol{"prorettype", tOID}, catCol{"pronargs", tI16}, catCol{"proargtypes", tArr}, catCol{"prosrc", types.TText})}
}

// pgDescription is empty: streamdb has no COMMENT ON.
func (e catGen) pgDescription() *table {
	return &table{cols: catCols(catCol{"objoid", tOID}, catCol{"classoid", tOID}, catCol{"objsubid", tI32}, catCol{"description", types.TText})}
}

// pgAttrdef is empty: columns have no defaults.
func (e catGen) pgAttrdef() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"adrelid", tOID}, catCol{"adnum", tI16}, catCol{"adbin", types.TText})}
	attrdefRows(t, e.relations())
	return t
}

// pgCollation is empty: text compares bytewise (collation C) and columns
// have no collation of their own (psql's \d reads it).
func (e catGen) pgCollation() *table {
	return &table{cols: catCols(catCol{"oid", tOID}, catCol{"collname", tName}, catCol{"collnamespace", tOID},
		catCol{"collowner", tOID}, catCol{"collprovider", tName}, catCol{"collencoding", tI32},
		catCol{"collcollate", types.TText}, catCol{"collctype", types.TText})}
}

// noShowAll are the settings PostgreSQL keeps out of pg_settings
// (GUC_NO_SHOW_ALL): SHOW names them one at a time only.
var noShowAll = map[string]bool{"is_superuser": true, "session_characteristics": true}

// pgSettings lists the settings, as SHOW ALL does in the session reading it.
func (e catGen) pgSettings() *table {
	t := &table{cols: catCols(catCol{"name", types.TText}, catCol{"setting", types.TText}, catCol{"unit", types.TText},
		catCol{"category", types.TText}, catCol{"short_desc", types.TText}, catCol{"context", types.TText},
		catCol{"vartype", types.TText}, catCol{"source", types.TText})}
	if e.colsOnly {
		return t
	}
	all, err := (sessionShow{e.sess}).showTable(&parse.Show{Name: "all"})
	if err != nil {
		return t
	}
	for _, r := range all.rows {
		if noShowAll[r[0].S] {
			continue
		}
		t.add(r[0], r[1], null, str("streamdb"), r[2], str("user"), str("string"), str("default"))
	}
	return t
}

func (e catGen) pgTablesView() *table {
	t := &table{cols: catCols(catCol{"schemaname", tName}, catCol{"tablename", tName}, catCol{"tableowner", tName},
		catCol{"tablespace", tName}, catCol{"hasindexes", tBool}, catCol{"hasrules", tBool},
		catCol{"hastriggers", tBool}, catCol{"rowsecurity", tBool})}
	for _, r := range e.relations() {
		if r.kind == "r" {
			t.add(str(nsName(r.ns)), str(r.name), str(e.ownerName(r.def)), null, dFals, dFals, dFals, dFals)
		}
	}
	return t
}

func (e catalogSource) ownerName(t *storage.TableDef) string {
	if t.Kind == storage.KindSystem {
		return BootstrapRole
	}
	return e.roleStore.ownerOf(t)
}

// pgViews lists the plain views (CREATE VIEW); materialized views are in
// pg_matviews.
func (e catGen) pgViews() *table {
	t := &table{cols: catCols(catCol{"schemaname", tName}, catCol{"viewname", tName}, catCol{"viewowner", tName}, catCol{"definition", types.TText})}
	for _, r := range e.relations() {
		if r.kind == "v" {
			t.add(str(bind.SchemaPublic), str(r.name), str(e.ownerName(r.def)), str(viewDef(r.def)))
		}
	}
	return t
}

func (e catGen) pgMatviews() *table {
	t := &table{cols: catCols(catCol{"schemaname", tName}, catCol{"matviewname", tName}, catCol{"matviewowner", tName},
		catCol{"tablespace", tName}, catCol{"hasindexes", tBool}, catCol{"ispopulated", tBool}, catCol{"definition", types.TText})}
	for _, r := range e.relations() {
		if r.kind == "m" {
			t.add(str(bind.SchemaPublic), str(r.name), str(e.ownerName(r.def)), null, dFals, dTrue, str(viewDef(r.def)))
		}
	}
	return t
}

// viewDef is a view's definition as pg_get_viewdef prints it: the query as
// the user wrote it, ending with a semicolon.
func viewDef(t *storage.TableDef) string {
	q := strings.TrimSpace(t.SQL)
	if i := strings.Index(strings.ToLower(q), " as "); strings.HasPrefix(strings.ToLower(q), "create") && i >= 0 {
		q = strings.TrimSpace(q[i+4:])
	}
	return " " + strings.TrimSuffix(q, ";") + ";"
}

// PgLookup implements bind.PgCatalog.
func (e catalogSource) PgLookup(what string) map[int64]string {
	out := map[int64]string{}
	switch what {
	case "roles":
		for _, r := range e.roleDefs() {
			out[roleOID(r.Name)] = r.Name
		}
	case "types":
		out[types.OIDRecord] = "record"
		for _, t := range composites() {
			out[int64(t.OID())] = types.CompositeName(t)
		}
		for _, t := range catalogTypes {
			if t.Kind == types.Text && t.Prec > 0 {
				out[int64(t.OID())] = bind.FormatTypeName(t)
				continue
			}
			out[int64(t.OID())] = bind.FormatTypeName(t)
		}
	case "views":
		for _, r := range e.relations() {
			if r.kind == "m" || r.kind == "v" {
				out[r.oid] = viewDef(r.def)
			}
		}
	case "typmods":
		for _, r := range e.relations() {
			for _, c := range r.def.Columns {
				if tm := typmod(c.Type); tm >= 0 {
					out[int64(c.Type.OID())<<32|tm] = c.Type.String()
				}
			}
		}
	case "indexdefs", "indexcols", "constraintdefs":
		return (catGen{catalogReader: e}).keyDefs(what)
	case "relnames":
		for _, r := range e.relations() {
			out[r.oid] = r.name
		}
		for _, k := range allIndexes(catGen{catalogReader: e}) { // 'word_counts_pkey'::regclass
			out[k.indexOID()] = k.name()
		}
	case "relsize":
		return e.relationSizes(false)
	case "tablesize":
		return e.relationSizes(true)
	case "namespaces":
		for _, ns := range []int64{oidCatalogNS, oidPublicNS, oidInfoNS} {
			out[ns] = nsName(ns)
		}
	case "visible":
		for _, r := range e.relations() {
			if r.ns != oidInfoNS {
				out[r.oid] = ""
			}
		}
		for _, k := range allIndexes(catGen{catalogReader: e}) { // a key index is in its view's schema
			out[k.indexOID()] = ""
		}
	}
	return out
}

// DatabaseName implements bind.PgCatalog.
func (e catalogSource) DatabaseName() string { return databaseName }

// PgLookup implements bind.PgCatalog for the binder that authorizes a query.
func (c *recordingCatalog) PgLookup(what string) map[int64]string { return c.e.PgLookup(what) }

// DatabaseName implements bind.PgCatalog.
func (c *recordingCatalog) DatabaseName() string { return c.e.DatabaseName() }

// catalogReader is what the pg_catalog and information_schema builders
// (catGen) read the catalog through.
type catalogReader interface {
	relations() []relation
	roleDefs() []storage.RoleDef
	ownerOID(t *storage.TableDef) int64
	ownerName(t *storage.TableDef) string
	planView(def *storage.TableDef) (plan.Plan, error)
	showJobs() *table
}
