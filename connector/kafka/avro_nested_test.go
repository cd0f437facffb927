package kafka

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// nestedV1 has a nested record (with a record inside), arrays of scalars
// (nullable items too), an array of records and a map.
const nestedV1 = `{"type": "record", "name": "N", "namespace": "t", "fields": [
	{"name": "id", "type": "long"},
	{"name": "addr", "type": ["null", {"type": "record", "name": "Addr", "fields": [
		{"name": "city", "type": "string"},
		{"name": "zip", "type": ["null", "int"], "default": null},
		{"name": "geo", "type": {"type": "record", "name": "Geo", "fields": [{"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]}}]}], "default": null},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "nums", "type": {"type": "array", "items": ["null", "long"]}},
	{"name": "days", "type": {"type": "array", "items": {"type": "int", "logicalType": "date"}}},
	{"name": "ids", "type": {"type": "array", "items": {"type": "string", "logicalType": "uuid"}}},
	{"name": "flags", "type": {"type": "array", "items": "boolean"}},
	{"name": "ws", "type": {"type": "array", "items": "float"}},
	{"name": "people", "type": {"type": "array", "items": {"type": "record", "name": "P", "fields": [{"name": "n", "type": "string"}]}}},
	{"name": "m", "type": {"type": "map", "values": "int"}}]}`

// nestedV2 evolves v1: addr's record gains street and loses zip (the
// reader's default fills it), geo's fields come in another order.
const nestedV2 = `{"type": "record", "name": "N", "namespace": "t", "fields": [
	{"name": "id", "type": "long"},
	{"name": "addr", "type": ["null", {"type": "record", "name": "Addr", "fields": [
		{"name": "street", "type": "string"},
		{"name": "city", "type": "string"},
		{"name": "geo", "type": {"type": "record", "name": "Geo", "fields": [{"name": "lon", "type": "double"}, {"name": "lat", "type": "double"}]}}]}], "default": null},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "nums", "type": {"type": "array", "items": ["null", "long"]}},
	{"name": "days", "type": {"type": "array", "items": {"type": "int", "logicalType": "date"}}},
	{"name": "ids", "type": {"type": "array", "items": {"type": "string", "logicalType": "uuid"}}},
	{"name": "flags", "type": {"type": "array", "items": "boolean"}},
	{"name": "ws", "type": {"type": "array", "items": "float"}},
	{"name": "people", "type": {"type": "array", "items": {"type": "record", "name": "P", "fields": [{"name": "n", "type": "string"}]}}},
	{"name": "m", "type": {"type": "map", "values": "int"}}]}`

func nestedSource(t *testing.T, cols []connector.Column) *kafka {
	t.Helper()
	return avroSourceOf(t, nestedV1, cols)
}

// TestAvroNested: records read into STRUCT columns and arrays of scalars
// into array columns (derived and declared), across a writer that
// evolved the nested record; what no column holds is 0A000 naming the
// field, nested ones by their dotted name.
func TestAvroNested(t *testing.T) {
	c := nestedSource(t, nil)
	var got []string
	for i, col := range c.cols {
		got = append(got, col.name+" "+c.ts[i].String())
	}
	want := "id bigint, addr struct<city text, zip integer, geo struct<lat double precision, lon double precision>>, tags text[], nums bigint[], days date[], ids uuid[], flags boolean[], ws real[], people jsonb, m jsonb"
	if strings.Join(got, ", ") != want {
		t.Fatalf("columns\n%s\nwant\n%s", strings.Join(got, ", "), want)
	}
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	v1 := map[string]any{"id": 1, "addr": map[string]any{"t.Addr": map[string]any{"city": "Oslo", "zip": map[string]any{"int": 150}, "geo": map[string]any{"lat": 59.9, "lon": 10.75}}},
		"tags": []string{"a", "b c", ""}, "nums": []any{int64(1), nil, int64(-3)}, "days": []time.Time{day},
		"ids": []string{"0E0F6A6C-5C7D-4B8A-9A1E-123456789ABC"}, "flags": []bool{true, false}, "ws": []float32{1.5, -0.25},
		"people": []map[string]any{{"n": "x"}}, "m": map[string]int{"k": 1}}
	v1null := map[string]any{"id": 2, "addr": nil, "tags": []string{}, "nums": []any{}, "days": []time.Time{}, "ids": []string{}, "flags": []bool{},
		"ws": []float32{}, "people": []map[string]any{}, "m": map[string]int{}}
	v2 := map[string]any{"id": 3, "addr": map[string]any{"t.Addr": map[string]any{"street": "Main", "city": "Bergen", "geo": map[string]any{"lat": 60.4, "lon": 5.3}}},
		"tags": []string{"z"}, "nums": []any{nil}, "days": []time.Time{}, "ids": []string{}, "flags": []bool{}, "ws": []float32{}, "people": []map[string]any{}, "m": map[string]int{}}
	rows, bad := decodeAvro(t, c, map[int32]string{1: nestedV1, 2: nestedV2},
		frame(t, 1, nestedV1, v1), frame(t, 1, nestedV1, v1null), frame(t, 2, nestedV2, v2))
	wantRows := []string{
		`1|(Oslo,150,"(59.9,10.75)")|{a,"b c",""}|{1,NULL,-3}|{2026-03-04}|{0e0f6a6c-5c7d-4b8a-9a1e-123456789abc}|{t,f}|{1.5,-0.25}|[{"n": "x"}]|{"k": 1}`,
		`2|NULL|{}|{}|{}|{}|{}|{}|[]|{}`,
		`3|(Bergen,,"(60.4,5.3)")|{z}|{NULL}|{}|{}|{}|{}|[]|{}`,
	}
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") || len(bad) != 0 {
		t.Fatalf("rows:\n%s\nwant:\n%s\nbad %v", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"), bad)
	}

	// A column list: a STRUCT of some of the record's fields (another
	// order, a wider type), an array with wider elements, the record as
	// jsonb.
	geo := types.StructOf([]types.RecordField{{Name: "lon", T: types.TFloat64}})
	addr := types.StructOf([]types.RecordField{{Name: "zip", T: types.TInt64}, {Name: "geo", T: geo}, {Name: "CITY", T: types.TText}})
	c = nestedSource(t, []connector.Column{{Name: "id", Type: types.TInt64}, {Name: "addr", Type: addr}, {Name: "ws", Type: types.ArrayOf(types.Float64)}})
	rows, bad = decodeAvro(t, c, map[int32]string{1: nestedV1, 2: nestedV2}, frame(t, 1, nestedV1, v1), frame(t, 2, nestedV2, v2))
	if got := strings.Join(rows, "\n"); got != `1|(150,"(10.75)",Oslo)|{1.5,-0.25}`+"\n"+`3|(,"(5.3)",Bergen)|{}` || len(bad) != 0 {
		t.Fatalf("declared struct:\n%s\nbad %v", got, bad)
	}
	c = nestedSource(t, []connector.Column{{Name: "addr", Type: types.TJSONB}, {Name: "tags", Type: types.TJSONB}})
	rows, _ = decodeAvro(t, c, map[int32]string{1: nestedV1}, frame(t, 1, nestedV1, v1))
	if got := strings.Join(rows, "\n"); got != `{"geo": {"lat": 59.9, "lon": 10.75}, "zip": 150, "city": "Oslo"}|["a", "b c", ""]` {
		t.Fatalf("as jsonb: %s", got)
	}
	// Declared columns that cannot hold the field: 42804 naming it.
	for _, col := range []connector.Column{
		{Name: "addr", Type: types.StructOf([]types.RecordField{{Name: "nope", T: types.TText}})},
		{Name: "addr", Type: types.StructOf([]types.RecordField{{Name: "zip", T: types.TText}})},
		{Name: "nums", Type: types.ArrayOf(types.Int32)},
		{Name: "tags", Type: types.TInt64},
	} {
		_, err := connector.New([]connector.Column{col}, map[string]string{"connector": "kafka", "topic": "n", "properties.bootstrap.servers": "127.0.0.1:9092",
			"__splits": "1", "format": "avro", "schema.registry": "http://127.0.0.1:1", avroSchemaKey: nestedV1, avroSchemaIDKey: "1"})
		if se := sqlerr.As(err); err == nil || se.Code != sqlerr.DatatypeMismatch || !strings.Contains(se.Msg, col.Name) {
			t.Errorf("%v: got %v, want 42804", col, err)
		}
	}
	// Fields no column holds: 0A000 with the (dotted) name.
	for _, tc := range []struct{ schema, name string }{
		{`{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "record", "name": "S", "fields": [{"name": "u", "type": ["int", "string"]}]}}]}`, `"a.u"`},
		{`{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]}}]}`, `"a.next"`},
		{`{"type": "record", "name": "R", "fields": [{"name": "d", "type": {"type": "fixed", "name": "D", "size": 12, "logicalType": "duration"}}]}`, `"d"`},
	} {
		rec, err := readerRecord(tc.schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := avroColumns(rec); sqlerr.As(err).Code != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestAvroSinkNested: the sink writes STRUCT columns as Avro records and
// arrays as Avro arrays, which hamba/avro decodes and the source reads
// back to the same values.
func TestAvroSinkNested(t *testing.T) {
	geo := types.StructOf([]types.RecordField{{Name: "lat", T: types.TFloat64}, {Name: "lon", T: types.TFloat64}})
	addr := types.StructOf([]types.RecordField{{Name: "city", T: types.TText}, {Name: "zip", T: types.TInt32}, {Name: "geo", T: geo}})
	cols := []connector.Column{{Name: "id", Type: types.TInt64}, {Name: "addr", Type: addr}, {Name: "tags", Type: types.TTextArray},
		{Name: "nums", Type: types.ArrayOf(types.Int64)}, {Name: "days", Type: types.ArrayOf(types.Date)}, {Name: "flags", Type: types.ArrayOf(types.Bool)},
		{Name: "ws", Type: types.ArrayOf(types.Float64)}, {Name: "at", Type: types.ArrayOf(types.Timestamp)}}
	texts := [][]string{
		{"1", `(Oslo,150,"(59.9,10.75)")`, `{a,"b c",NULL}`, "{1,NULL,-3}", "{2026-03-04}", "{t,f}", "{1.5,-0.25}", `{"2026-03-04 05:06:07.5"}`},
		{"2", "NULL", "{}", "NULL", "{}", "{}", "{}", "{}"},
		{"3", `(,,)`, "{z}", "{NULL}", "{}", "{}", "{}", "{}"},
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ts := make([]types.T, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for j, c := range cols {
		ts[j] = c.Type
		b := types.NewBuilder(mem, c.Type)
		for _, row := range texts {
			if row[j] == "NULL" {
				b.AppendNull()
				continue
			}
			d, err := types.ParseText(row[j], c.Type)
			if err != nil {
				t.Fatalf("%s: %v", row[j], err)
			}
			types.AppendDatum(b, d, c.Type)
		}
		arrs[j] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(connector.SchemaOf(ts), arrs, int64(len(texts)))
	for _, a := range arrs {
		a.Release()
	}
	defer rec.Release()
	schema := sinkAvroSchema("v", cols, nil)
	sc, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatalf("%v\n%s", err, schema)
	}
	e := newSinkEncoder("s", "", "avro", "v", cols, nil)
	e.avroVal = 4
	var back [][]byte
	for i := range texts {
		msg := e.rowOf(rec, i)
		var m map[string]any
		if err := avro.Unmarshal(sc, msg[5:], &m); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if i == 0 && fmt.Sprint(m["addr"]) != "map[streamdb.v_addr:map[city:Oslo geo:map[streamdb.v_addr_geo:map[lat:59.9 lon:10.75]] zip:150]]" {
			t.Errorf("addr: %v", m["addr"])
		}
		back = append(back, msg)
	}
	k, err := connector.New(cols, map[string]string{"connector": "kafka", "topic": "t", "properties.bootstrap.servers": "127.0.0.1:9092",
		"__splits": "1", "format": "avro", "schema.registry": "http://127.0.0.1:1", avroSchemaKey: schema, avroSchemaIDKey: "4"})
	if err != nil {
		t.Fatal(err)
	}
	rows, bad := decodeAvro(t, k.(*kafka), map[int32]string{4: schema}, back...)
	var want []string
	for _, r := range texts {
		want = append(want, strings.Join(r, "|"))
	}
	if len(bad) != 0 || strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s\nbad %v", strings.Join(rows, "\n"), strings.Join(want, "\n"), bad)
	}
}
