package sql

import (
	"github.com/streamdb/streamdb/types"
)

// information_schema.table_constraints and key_column_usage list the
// primary keys that pg_constraint holds (pgcatalog_keys.go): a table's
// declared PRIMARY KEY and a view's derived key, as SQLAlchemy, pgjdbc
// and schema tools read them.

func isTableConstraints(e catGen) *table {
	t := &table{cols: textCols("constraint_catalog", "constraint_schema", "constraint_name", "table_catalog",
		"table_schema", "table_name", "constraint_type", "is_deferrable", "initially_deferred", "enforced", "nulls_distinct")}
	for _, k := range e.viewKeys() {
		ns := nsName(k.rel.ns)
		t.add(str(databaseName), str(ns), str(k.name()), str(databaseName), str(ns), str(k.rel.name),
			str("PRIMARY KEY"), str("NO"), str("NO"), str("YES"), null)
	}
	return t
}

func isKeyColumnUsage(e catGen) *table {
	t := &table{cols: []Column{{Name: "constraint_catalog", T: types.TText}, {Name: "constraint_schema", T: types.TText},
		{Name: "constraint_name", T: types.TText}, {Name: "table_catalog", T: types.TText}, {Name: "table_schema", T: types.TText},
		{Name: "table_name", T: types.TText}, {Name: "column_name", T: types.TText}, {Name: "ordinal_position", T: types.TInt32},
		{Name: "position_in_unique_constraint", T: types.TInt32}}}
	for _, k := range e.viewKeys() {
		ns := nsName(k.rel.ns)
		for i, a := range k.attrs {
			t.add(str(databaseName), str(ns), str(k.name()), str(databaseName), str(ns), str(k.rel.name),
				str(k.rel.def.Columns[a-1].Name), i64(int64(i+1)), null)
		}
	}
	return t
}
