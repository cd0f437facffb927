package sql

import (
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// information_schema's tables (infoSchemaGen): tables, columns, schemata
// and views, over the same relations pg_class lists.

func init() {
	pgTables["information_schema.tables"] = facet(infoSchemaGen.isTables)
	pgTables["information_schema.columns"] = facet(infoSchemaGen.isColumns)
	pgTables["information_schema.schemata"] = facet(infoSchemaGen.isSchemata)
	pgTables["information_schema.views"] = facet(infoSchemaGen.isViews)
	pgTables["information_schema.table_constraints"] = isTableConstraints
	pgTables["information_schema.key_column_usage"] = isKeyColumnUsage
}

func (e infoSchemaGen) isTables() *table {
	t := &table{cols: textCols("table_catalog", "table_schema", "table_name", "table_type",
		"self_referencing_column_name", "reference_generation", "user_defined_type_catalog",
		"user_defined_type_schema", "user_defined_type_name", "is_insertable_into", "is_typed", "commit_action")}
	for _, r := range e.relations() {
		typ, ins := "BASE TABLE", "YES"
		switch r.kind {
		case "m", "v":
			typ, ins = "VIEW", "NO"
		case "f":
			typ, ins = "FOREIGN", "NO"
		}
		if r.def.Kind == storage.KindSystem {
			ins = "NO"
		}
		t.add(str(databaseName), str(nsName(r.ns)), str(r.name), str(typ), null, null, null, null, null, str(ins), str("NO"), null)
	}
	return t
}

func (e infoSchemaGen) isColumns() *table {
	t := &table{cols: []Column{{Name: "table_catalog", T: types.TText}, {Name: "table_schema", T: types.TText}, {Name: "table_name", T: types.TText},
		{Name: "column_name", T: types.TText}, {Name: "ordinal_position", T: types.TInt32}, {Name: "column_default", T: types.TText},
		{Name: "is_nullable", T: types.TText}, {Name: "data_type", T: types.TText}, {Name: "character_maximum_length", T: types.TInt32},
		{Name: "numeric_precision", T: types.TInt32}, {Name: "numeric_scale", T: types.TInt32}, {Name: "datetime_precision", T: types.TInt32},
		{Name: "udt_catalog", T: types.TText}, {Name: "udt_schema", T: types.TText}, {Name: "udt_name", T: types.TText},
		{Name: "is_identity", T: types.TText}, {Name: "is_generated", T: types.TText}, {Name: "is_updatable", T: types.TText}}}
	for _, r := range e.relations() {
		for i, c := range r.def.Columns {
			maxLen, prec, scale, dtPrec := null, null, null, null
			switch c.Type.Kind {
			case types.Text:
				if c.Type.Prec > 0 {
					maxLen = i64(int64(c.Type.Prec))
				}
			case types.Int16:
				prec, scale = i64(16), i64(0)
			case types.Int32:
				prec, scale = i64(32), i64(0)
			case types.Int64:
				prec, scale = i64(64), i64(0)
			case types.Float32:
				prec = i64(24)
			case types.Float64:
				prec = i64(53)
			case types.Numeric:
				if c.Type.Prec > 0 {
					prec, scale = i64(int64(c.Type.Prec)), i64(int64(c.Type.Scale))
				}
			case types.Timestamp, types.Time, types.TimeTZ:
				dtPrec = i64(6)
			case types.Date:
				dtPrec = i64(0)
			}
			dataType := bind.FormatTypeName(c.Type)
			udtSchema := bind.SchemaCatalog
			switch {
			case c.Type.Kind == types.TextArray:
				dataType = "ARRAY"
			case types.CompositeName(c.Type) != "":
				dataType, udtSchema = "USER-DEFINED", "public"
			}
			upd := "YES"
			if r.kind != "r" || r.def.Kind == storage.KindSystem {
				upd = "NO"
			}
			nullable := "YES"
			if c.NotNull {
				nullable = "NO"
			}
			colDefault := null
			if c.Default != "" {
				colDefault = str(c.Default)
			}
			t.add(str(databaseName), str(nsName(r.ns)), str(r.name), str(c.Name), i64(int64(i+1)), colDefault, str(nullable),
				str(dataType), maxLen, prec, scale, dtPrec, str(databaseName), str(udtSchema),
				str(bind.PgTypeName(c.Type)), str("NO"), str("NEVER"), str(upd))
		}
	}
	return t
}

func (e infoSchemaGen) isSchemata() *table {
	t := &table{cols: textCols("catalog_name", "schema_name", "schema_owner", "default_character_set_catalog",
		"default_character_set_schema", "default_character_set_name", "sql_path")}
	for _, ns := range []string{bind.SchemaInfoSchema, bind.SchemaCatalog, bind.SchemaPublic} {
		t.add(str(databaseName), str(ns), str(BootstrapRole), null, null, null, null)
	}
	return t
}

func (e infoSchemaGen) isViews() *table {
	t := &table{cols: textCols("table_catalog", "table_schema", "table_name", "view_definition", "check_option",
		"is_updatable", "is_insertable_into", "is_trigger_updatable", "is_trigger_deletable", "is_trigger_insertable_into")}
	for _, r := range e.relations() {
		if r.kind == "m" || r.kind == "v" {
			t.add(str(databaseName), str(bind.SchemaPublic), str(r.name), str(viewDef(r.def)), str("NONE"),
				str("NO"), str("NO"), str("NO"), str("NO"), str("NO"))
		}
	}
	return t
}
