package sql

import (
	"sort"

	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Sources are foreign tables (relkind 'f', see
// docs/decisions/2026-12-02-transaction-savepoints-set-config-srfs.md):
// psql's \d source reads their server and options here. Each connector
// (nexmark, kafka, ...) is a foreign server of that name, of the foreign
// data wrapper "streamdb"; a source's options are its WITH options
// ("name=value", by name), which \d prints as "FDW options".

func init() {
	pgTables["pg_foreign_table"] = facet(foreignGen.pgForeignTable)
	pgTables["pg_foreign_server"] = facet(foreignGen.pgForeignServer)
	pgTables["pg_foreign_data_wrapper"] = facet(foreignGen.pgForeignDataWrapper)
}

// oidStreamdbFDW is the one foreign data wrapper's oid.
var oidStreamdbFDW = roleOID("fdw:streamdb")

// serverOID is a connector's foreign server oid (stable: by name).
func serverOID(connector string) int64 { return roleOID("server:" + connector) }

// sourceConnector is a source's connector ("" if its options name none).
func sourceConnector(t *storage.TableDef) string { return t.Options["connector"] }

// foreignTableOptions is a source's WITH options as "name=value", by name.
func foreignTableOptions(t *storage.TableDef) types.Datum {
	var opts []string
	for k, v := range t.Options {
		opts = append(opts, k+"="+v)
	}
	if len(opts) == 0 {
		return types.Null
	}
	sort.Strings(opts)
	return types.Datum{A: &types.Array{Elems: opts}}
}

func (e foreignGen) pgForeignTable() *table {
	t := &table{cols: catCols(catCol{"ftrelid", tOID}, catCol{"ftserver", tOID}, catCol{"ftoptions", tArr})}
	for _, r := range e.relations() {
		if r.kind == "f" {
			t.add(i64(r.oid), i64(serverOID(sourceConnector(r.def))), foreignTableOptions(r.def))
		}
	}
	return t
}

func (e foreignGen) pgForeignServer() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"srvname", tName}, catCol{"srvowner", tOID},
		catCol{"srvfdw", tOID}, catCol{"srvtype", types.TText}, catCol{"srvversion", types.TText},
		catCol{"srvacl", tArr}, catCol{"srvoptions", tArr})}
	seen := map[string]bool{}
	var names []string
	for _, r := range e.relations() {
		if c := sourceConnector(r.def); r.kind == "f" && !seen[c] {
			seen[c] = true
			names = append(names, c)
		}
	}
	sort.Strings(names)
	owner := i64(roleOID(BootstrapRole))
	for _, n := range names {
		t.add(i64(serverOID(n)), str(n), owner, i64(oidStreamdbFDW), null, null, null, null)
	}
	return t
}

func (e foreignGen) pgForeignDataWrapper() *table {
	t := &table{cols: catCols(catCol{"oid", tOID}, catCol{"fdwname", tName}, catCol{"fdwowner", tOID},
		catCol{"fdwhandler", tOID}, catCol{"fdwvalidator", tOID}, catCol{"fdwacl", tArr}, catCol{"fdwoptions", tArr})}
	if !e.colsOnly {
		t.add(i64(oidStreamdbFDW), str("streamdb"), i64(roleOID(BootstrapRole)), i64(0), i64(0), null, null)
	}
	return t
}
