package sql

import (
	"strconv"
	"strings"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// A materialized view's primary key, as pg_index and pg_constraint show
// it: the catalog's key columns, else, for a view over a grouping, the
// output columns that are its group keys (each exactly once: every group
// is one row), as Materialize and RisingWave expose a view's unique key.
// A view without one (a filter over a stream, a join) has no primary key.
// The key is an index named <view>_pkey (pg_class relkind 'i')
// and a constraint of that name (contype 'p'); the view's relhasindex is
// true, so psql's \d lists it under "Indexes:". Its access method is
// shown as btree, a PostgreSQL primary key's, which psql and drivers
// expect (the key is really that of the view's state in Pebble's LSM);
// pg_get_indexdef and pg_get_constraintdef describe it as PostgreSQL does
// a primary key's.

// oidBtree is pg_am.oid of btree, as in PostgreSQL.
const oidBtree = 403

func init() {
	pgTables["pg_index"] = facet(keyGen.pgIndex)
	pgTables["pg_constraint"] = facet(keyGen.pgConstraint)
	pgTables["pg_indexes"] = facet(pgIndexesView)
}

// pgIndexesView is the pg_indexes view: every index of pg_index with the
// definition pg_get_indexdef gives.
func pgIndexesView(e keyGen) *table {
	t := &table{cols: catCols(catCol{"schemaname", tName}, catCol{"tablename", tName}, catCol{"indexname", tName},
		catCol{"tablespace", tName}, catCol{"indexdef", types.TText})}
	defs := e.keyDefs("indexdefs")
	for _, k := range allIndexes(e.catGen) {
		t.add(str(nsName(k.rel.ns)), str(k.rel.name), str(k.name()), null, str(defs[k.indexOID()]))
	}
	return t
}

// Oids of a view's key index and constraint: above the relations'
// (oidFirstUser + id) and the roles' (oidFirstUser + a 30-bit hash), below
// 2^32 as PostgreSQL's oids.
const (
	oidFirstIndex      = oidFirstUser + 1<<31
	oidFirstConstraint = oidFirstUser + 1<<31 + 1<<30
)

// viewKey is a view's primary key: attribute numbers (1-based).
type viewKey struct {
	rel   relation
	attrs []int
	ix    *storage.IndexDef // a CREATE INDEX index (not unique); nil: the primary key
}

// allIndexes lists the primary keys and then the indexes made by CREATE
// INDEX (sql/index.go), which pg_class, pg_index and psql's \d show
// alike; pg_constraint has only the keys.
func allIndexes(e catGen) []viewKey {
	out := e.viewKeys()
	for _, r := range e.relations() {
		for i := range r.def.Indexes {
			ix := &r.def.Indexes[i]
			k := viewKey{rel: r, ix: ix}
			for _, c := range ix.Cols {
				k.attrs = append(k.attrs, c+1)
			}
			out = append(out, k)
		}
	}
	return out
}

// viewKeys lists the primary keys of the materialized views, by name.
func (e catGen) viewKeys() []viewKey {
	var out []viewKey
	for _, r := range e.relations() {
		if r.def.Kind != storage.KindView && !plan.Keyed(r.def) { // a table's PRIMARY KEY, or a view's
			continue
		}
		cols := r.def.KeyCols
		if len(cols) == 0 {
			plan, err := e.planView(r.def)
			if err != nil {
				continue
			}
			cols = groupKeyCols(plan)
		}
		if len(cols) == 0 {
			continue
		}
		k := viewKey{rel: r}
		for _, c := range cols {
			k.attrs = append(k.attrs, c+1)
		}
		out = append(out, k)
	}
	return out
}

// groupKeyCols returns the output columns of a grouping view's plan that
// are its group keys, one per key in key order, or nil if some key is not
// in the output.
func groupKeyCols(p plan.Plan) []int {
	var proj *plan.Project
	if pr, ok := p.(*plan.Project); ok {
		proj, p = pr, pr.In
	}
	for {
		f, ok := p.(*plan.Filter) // HAVING
		if !ok {
			break
		}
		p = f.In
	}
	agg, ok := p.(*plan.HashAgg)
	if !ok || len(agg.Keys) == 0 {
		return nil
	}
	out := make([]int, len(agg.Keys))
	if proj == nil {
		for i := range out {
			out[i] = i
		}
		return out
	}
	for i := range out {
		out[i] = -1
	}
	for i, x := range proj.Exprs {
		if c, ok := x.(*expr.ColRef); ok && c.Idx < len(agg.Keys) && out[c.Idx] < 0 {
			out[c.Idx] = i
		}
	}
	for _, o := range out {
		if o < 0 {
			return nil
		}
	}
	return out
}

func (k viewKey) constraintOID() int64 { return oidFirstConstraint + int64(k.rel.def.ID) }

// indexOID is the key's index oid; an index's catalog id comes from the
// relations' id sequence, so the two never collide.
func (k viewKey) indexOID() int64 {
	if k.ix != nil {
		return oidFirstIndex + int64(k.ix.ID)
	}
	return oidFirstIndex + int64(k.rel.def.ID)
}

func (k viewKey) name() string {
	if k.ix != nil {
		return k.ix.Name
	}
	return k.rel.name + "_pkey"
}

func (k viewKey) attrArray() types.Datum {
	elems := make([]string, len(k.attrs))
	for i, a := range k.attrs {
		elems[i] = strconv.Itoa(a)
	}
	return types.Datum{A: &types.Array{Elems: elems}}
}

// keyDefs is PgLookup's "indexdefs" (index oid → pg_get_indexdef's CREATE
// UNIQUE INDEX ... USING btree (cols)), "indexcols" (index oid → its
// column names, quoted as identifiers, one per line, for
// pg_get_indexdef(oid, column, pretty)) and "constraintdefs" (constraint
// oid → pg_get_constraintdef's PRIMARY KEY (cols)).
func (e catGen) keyDefs(what string) map[int64]string {
	out := map[int64]string{}
	for _, k := range allIndexes(e) {
		cols := make([]string, len(k.attrs))
		for i, a := range k.attrs {
			cols[i] = expr.QuoteIdent(k.rel.def.Columns[a-1].Name)
		}
		switch what {
		case "indexdefs":
			if k.ix != nil {
				out[k.indexOID()] = "CREATE INDEX " + expr.QuoteIdent(k.name()) + " ON " + expr.QuoteIdent(nsName(k.rel.ns)) +
					"." + expr.QuoteIdent(k.rel.name) + " USING btree (" + strings.Join(cols, ", ") + ")"
				continue
			}
			out[k.indexOID()] = "CREATE UNIQUE INDEX " + expr.QuoteIdent(k.name()) + " ON " + expr.QuoteIdent(nsName(k.rel.ns)) +
				"." + expr.QuoteIdent(k.rel.name) + " USING btree (" + strings.Join(cols, ", ") + ")"
		case "indexcols":
			out[k.indexOID()] = strings.Join(cols, "\n")
		case "constraintdefs":
			if k.ix != nil {
				continue
			}
			out[k.constraintOID()] = "PRIMARY KEY (" + strings.Join(cols, ", ") + ")"
		}
	}
	return out
}

// pgIndex holds the materialized views' primary keys (pgcatalog_keys.go)
// and the indexes CREATE INDEX made.
func (e keyGen) pgIndex() *table {
	t := &table{cols: catCols(catCol{"indexrelid", tOID}, catCol{"indrelid", tOID}, catCol{"indnatts", tI16},
		catCol{"indnkeyatts", tI16}, catCol{"indisunique", tBool}, catCol{"indnullsnotdistinct", tBool},
		catCol{"indisprimary", tBool}, catCol{"indisexclusion", tBool}, catCol{"indimmediate", tBool},
		catCol{"indisclustered", tBool}, catCol{"indisvalid", tBool}, catCol{"indcheckxmin", tBool},
		catCol{"indisready", tBool}, catCol{"indislive", tBool}, catCol{"indisreplident", tBool},
		catCol{"indkey", tI2Arr}, catCol{"indoption", tI2Arr}, catCol{"indexprs", types.TText}, catCol{"indpred", types.TText})}
	for _, k := range allIndexes(e.catGen) {
		n := i64(int64(len(k.attrs)))
		key := types.Boolean(k.ix == nil)
		opts := &types.Array{Elems: make([]string, len(k.attrs))}
		for i := range opts.Elems {
			opts.Elems[i] = "0" // ascending, NULLs last
		}
		t.add(i64(k.indexOID()), i64(k.rel.oid), n, n, key, dFals, key, dFals, dTrue, dFals, dTrue, dFals,
			dTrue, dTrue, dFals, k.attrArray(), types.Datum{A: opts}, null, null)
	}
	return t
}

// pgConstraint holds the materialized views' primary keys
// (pgcatalog_keys.go): streamdb has no unique, check or foreign keys.
func (e keyGen) pgConstraint() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"conname", tName}, catCol{"connamespace", tOID},
		catCol{"contype", tName}, catCol{"condeferrable", tBool}, catCol{"condeferred", tBool},
		catCol{"convalidated", tBool}, catCol{"conrelid", tOID}, catCol{"confrelid", tOID}, catCol{"conindid", tOID},
		catCol{"conkey", tI2Arr}, catCol{"confkey", tI2Arr})}
	for _, k := range e.viewKeys() {
		t.add(i64(k.constraintOID()), str(k.name()), i64(k.rel.ns), str("p"), dFals, dFals, dTrue, i64(k.rel.oid), i64(0),
			i64(k.indexOID()), k.attrArray(), null)
	}
	return t
}
