package kafka

import (
	"encoding/binary"
	"fmt"
	"math/big"
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
	"github.com/twmb/franz-go/pkg/kgo"
)

const avroV1 = `{"type": "record", "name": "Click", "namespace": "t", "fields": [
	{"name": "user_id", "type": "long"},
	{"name": "url", "type": ["null", "string"], "default": null},
	{"name": "n", "type": "int"},
	{"name": "score", "type": "float"},
	{"name": "ok", "type": "boolean"},
	{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "day", "type": {"type": "int", "logicalType": "date"}},
	{"name": "region", "type": "string", "default": "eu"}]}`

// avroV2 evolves v1 as a BACKWARD-compatible writer would: region is
// gone (the reader's default fills it), n is written as a long (which
// the reader's int cannot take, so n's column is read through the
// declared BIGINT), and new fields the reader skips, nested ones too.
const avroV2 = `{"type": "record", "name": "Click", "namespace": "t", "fields": [
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "user_id", "type": "int"},
	{"name": "url", "type": ["null", "string"], "default": null},
	{"name": "attrs", "type": {"type": "map", "values": {"type": "record", "name": "A", "fields": [{"name": "x", "type": "double"}, {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}}]}}},
	{"name": "n", "type": "int"},
	{"name": "score", "type": "double"},
	{"name": "ok", "type": "boolean"},
	{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY", "SHARE"]}},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "day", "type": {"type": "int", "logicalType": "date"}}]}`

// avroSource makes a stored avro source over reader schema avroV1 with
// the given columns (none: all of v1's), without a broker or a registry.
func avroSource(t *testing.T, cols []connector.Column) *kafka {
	t.Helper()
	return avroSourceOf(t, avroV1, cols)
}

// avroSourceOf is avroSource over reader schema schema.
func avroSourceOf(t *testing.T, schema string, cols []connector.Column) *kafka {
	t.Helper()
	if cols == nil {
		rec, err := readerRecord(schema)
		if err != nil {
			t.Fatal(err)
		}
		if cols, err = avroColumns(rec); err != nil {
			t.Fatal(err)
		}
	}
	c, err := connector.New(cols, map[string]string{"connector": "kafka", "topic": "clicks", "properties.bootstrap.servers": "127.0.0.1:9092",
		"__splits": "1", "format": "avro", "schema.registry": "http://127.0.0.1:1", avroSchemaKey: schema, avroSchemaIDKey: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return c.(*kafka)
}

func frame(t *testing.T, id int, schema string, v any) []byte {
	t.Helper()
	sc, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := avro.Marshal(sc, v)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...)
}

// decodeAvro decodes msgs (writer schemas by id in writers) and returns
// the rows as text, and the bad messages' codes.
func decodeAvro(t *testing.T, c *kafka, writers map[int32]string, msgs ...[]byte) (rows []string, bad []string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	r := &kafkaReader{c: c, progs: map[int32]*avroProg{}}
	defer r.Close()
	for id, w := range writers {
		r.progs[id] = compileProg(w, id, c.cols, c.fields, c.reader)
	}
	var recs []*kgo.Record
	for i, m := range msgs {
		recs = append(recs, &kgo.Record{Value: m, Offset: int64(i)})
	}
	rec := r.decodeBatch(mem, recs)
	defer rec.Release()
	for i := 0; i < int(rec.NumRows()); i++ {
		var fs []string
		for j, ty := range c.ts {
			d := types.DatumAt(rec.Column(j), i, ty)
			if d.Null {
				fs = append(fs, "NULL")
			} else {
				fs = append(fs, types.TextOf(d, ty))
			}
		}
		rows = append(rows, strings.Join(fs, "|"))
	}
	for _, b := range r.TakeBad() {
		bad = append(bad, fmt.Sprintf("%d %s", b.Offset, b.Code))
	}
	return rows, bad
}

func TestAvroColumns(t *testing.T) {
	c := avroSource(t, nil)
	var got []string
	for i, col := range c.cols {
		got = append(got, col.name+" "+c.ts[i].String())
	}
	want := "user_id bigint, url text, n integer, score real, ok boolean, kind text, ts timestamp with time zone, day date, region text"
	if strings.Join(got, ", ") != want {
		t.Fatalf("columns %s, want %s", strings.Join(got, ", "), want)
	}
	// A column list narrows the fields; names and types are checked.
	c = avroSource(t, []connector.Column{{Name: "n", Type: types.TInt64}, {Name: "_kafka_offset", Type: types.TInt64}, {Name: "URL", Type: types.TText}})
	if fmt.Sprint(c.fields) != "[n  url]" {
		t.Fatalf("fields %q", c.fields)
	}
	for _, tc := range []struct {
		col  connector.Column
		code string
	}{
		{connector.Column{Name: "nope", Type: types.TInt64}, sqlerr.UndefinedColumn},
		{connector.Column{Name: "user_id", Type: types.TInt32}, sqlerr.DatatypeMismatch},
		{connector.Column{Name: "url", Type: types.TInt64}, sqlerr.DatatypeMismatch},
		{connector.Column{Name: "ts", Type: types.TDate}, sqlerr.DatatypeMismatch},
	} {
		_, err := connector.New([]connector.Column{tc.col}, map[string]string{"connector": "kafka", "topic": "clicks", "properties.bootstrap.servers": "127.0.0.1:9092",
			"__splits": "1", "format": "avro", "schema.registry": "http://127.0.0.1:1", avroSchemaKey: avroV1, avroSchemaIDKey: "1"})
		if se := sqlerr.As(err); err == nil || se.Code != tc.code || !strings.Contains(se.Msg, tc.col.Name) {
			t.Errorf("%v: got %v, want %s", tc.col, err, tc.code)
		}
	}
	// A field no column type holds is refused unless a column list leaves it out.
	rec, err := readerRecord(`{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": ["null", "int", "string"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := avroColumns(rec); sqlerr.As(err).Code != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("union field: %v", err)
	}
}

func TestAvroDecode(t *testing.T) {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	v1 := func(u int64, url any) map[string]any {
		return map[string]any{"user_id": u, "url": url, "n": 7, "score": float32(1.5), "ok": true, "kind": "BUY", "ts": ts, "day": day, "region": "us"}
	}
	c := avroSource(t, nil)
	rows, bad := decodeAvro(t, c, map[int32]string{1: avroV1},
		frame(t, 1, avroV1, v1(1, "/a")),
		frame(t, 1, avroV1, v1(2, nil)),
		[]byte("{\"json\": 1}"),                     // no magic byte
		frame(t, 1, avroV1, v1(3, "/c"))[:9],        // truncated
		append(frame(t, 1, avroV1, v1(4, "/d")), 0), // a byte after the record
		frame(t, 9, avroV1, v1(5, "/e")),            // an unknown writer: no program
		frame(t, 1, avroV1, v1(6, "é")),
	)
	want := []string{
		"1|/a|7|1.5|t|BUY|2026-03-04 05:06:07.89+00|2026-03-04|us",
		"2|NULL|7|1.5|t|BUY|2026-03-04 05:06:07.89+00|2026-03-04|us",
		"6|é|7|1.5|t|BUY|2026-03-04 05:06:07.89+00|2026-03-04|us",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if fmt.Sprint(bad) != "[2 22P03 3 22P03 4 22P03 5 XX000]" {
		t.Fatalf("bad %v", bad)
	}

	// Evolution: v2 records through the v1 reader, narrowed to columns
	// v2 can give (n as BIGINT, score as DOUBLE).
	c = avroSource(t, []connector.Column{{Name: "user_id", Type: types.TInt64}, {Name: "n", Type: types.TInt64}, {Name: "score", Type: types.TFloat64},
		{Name: "kind", Type: types.TText}, {Name: "region", Type: types.TText}, {Name: "ts", Type: types.TTimestamp}})
	v2 := map[string]any{"tags": []string{"a", "b"}, "user_id": 7, "url": "/x",
		"attrs": map[string]any{"k1": map[string]any{"x": 1.0, "f": [3]byte{1, 2, 3}}, "k2": map[string]any{"x": 2.0, "f": [3]byte{}}},
		"n":     8, "score": 2.25, "ok": false, "kind": "SHARE", "ts": ts, "day": day}
	rows, bad = decodeAvro(t, c, map[int32]string{1: avroV1, 2: avroV2},
		frame(t, 2, avroV2, v2), frame(t, 1, avroV1, v1(1, "/a")))
	want = []string{"7|8|2.25|SHARE|eu|2026-03-04 05:06:07.89", "1|7|1.5|BUY|us|2026-03-04 05:06:07.89"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") || len(bad) != 0 {
		t.Fatalf("rows:\n%s\nbad %v", strings.Join(rows, "\n"), bad)
	}
	// The derived columns read v2 records as bad: score is a float in the
	// reader, and v2 writes a double.
	c = avroSource(t, nil)
	_, bad = decodeAvro(t, c, map[int32]string{2: avroV2}, frame(t, 2, avroV2, v2))
	if fmt.Sprint(bad) != "[0 22P03]" {
		t.Fatalf("bad %v", bad)
	}
	if p := compileProg(avroV2, 2, c.cols, c.fields, c.reader); p.err == nil || !strings.Contains(p.err.Error(), "score") {
		t.Fatalf("v2 against v1: %v", p.err)
	}
	// A union branch the column cannot take is a bad record.
	const v3 = `{"type": "record", "name": "Click", "namespace": "t", "fields": [{"name": "user_id", "type": ["long", "string"]}]}`
	c = avroSource(t, []connector.Column{{Name: "user_id", Type: types.TInt64}})
	rows, bad = decodeAvro(t, c, map[int32]string{3: v3},
		frame(t, 3, v3, map[string]any{"user_id": map[string]any{"long": int64(5)}}),
		frame(t, 3, v3, map[string]any{"user_id": map[string]any{"string": "x"}}))
	if fmt.Sprint(rows, bad) != "[5] [1 22P03]" {
		t.Fatalf("union: %v %v", rows, bad)
	}
}

// TestAvroDecodeAllocs: decoding a batch allocates nothing per record.
func TestAvroDecodeAllocs(t *testing.T) {
	c := avroSource(t, nil)
	r := &kafkaReader{c: c, progs: map[int32]*avroProg{1: compileProg(avroV1, 1, c.cols, c.fields, c.reader)}}
	defer r.Close()
	msg := frame(t, 1, avroV1, map[string]any{"user_id": int64(1), "url": "/a", "n": 7, "score": float32(1.5), "ok": true, "kind": "BUY",
		"ts": time.Unix(0, 0), "day": time.Unix(0, 0), "region": "us"})
	small := make([]*kgo.Record, 10)
	big := make([]*kgo.Record, 5000)
	for i := range big {
		big[i] = &kgo.Record{Value: msg}
	}
	copy(small, big)
	run := func(recs []*kgo.Record) float64 {
		return testing.AllocsPerRun(5, func() { r.decodeBatch(memory.DefaultAllocator, recs).Release() })
	}
	run(big) // grow the builders
	a, b := run(small), run(big)
	// The builders' buffers grow (a few dozen times, logarithmically);
	// nothing else may.
	if b-a > float64(len(big))/20 {
		t.Fatalf("allocations grow with records: %v for 10, %v for %d", a, b, len(big))
	}
}

// TestAvroSinkEncode: rows the sink encodes decode with hamba/avro against
// the schema it derives, and through the source's decoder back to the
// same values.
func TestAvroSinkEncode(t *testing.T) {
	cols := []connector.Column{{Name: "b", Type: types.TBool}, {Name: "i", Type: types.TInt32}, {Name: "l", Type: types.TInt64},
		{Name: "f", Type: types.TFloat32}, {Name: "d", Type: types.TFloat64}, {Name: "s", Type: types.TText},
		{Name: "ts", Type: types.TTimestamp}, {Name: "day", Type: types.TDate}, {Name: "num x", Type: types.TNumeric}}
	texts := [][]string{
		{"t", "-7", "9000000000", "1.5", "-2.25", "héllo", "2026-03-04 05:06:07.123456", "2026-03-04", "12.345"},
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
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
				t.Fatal(err)
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

	schema := sinkAvroSchema("v 1", cols, nil)
	if !strings.Contains(schema, `"name":"num_x"`) || !strings.Contains(schema, `"name":"v_1"`) {
		t.Fatalf("names: %s", schema)
	}
	e := newSinkEncoder("s", "", "avro", "v", cols, nil)
	e.avroVal = 4
	sc, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	var back [][]byte
	for i := range texts {
		msg := e.rowOf(rec, i)
		var m map[string]any
		if err := avro.Unmarshal(sc, msg[5:], &m); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		for k, v := range m {
			if (i == 1) != (v == nil) {
				t.Errorf("row %d: %s = %v", i, k, v)
			}
		}
		if r, ok := m["num_x"].(*big.Rat); i == 0 && (!ok || r.FloatString(3) != "12.345" || m["s"] != "héllo" || m["l"] != int64(9000000000)) {
			t.Errorf("row 0: %v", m)
		}
		back = append(back, msg)
	}
	// Through the source's decoder, with the sink's schema as the reader
	// ("num x", written as num_x, left out by the column list).
	k, err := connector.New(cols[:8], map[string]string{"connector": "kafka", "topic": "t", "properties.bootstrap.servers": "127.0.0.1:9092",
		"__splits": "1", "format": "avro", "schema.registry": "http://127.0.0.1:1", avroSchemaKey: schema, avroSchemaIDKey: "4"})
	if err != nil {
		t.Fatal(err)
	}
	rows, bad := decodeAvro(t, k.(*kafka), map[int32]string{4: schema}, back...)
	want := []string{strings.Join(texts[0][:8], "|"), strings.Join(texts[1][:8], "|")}
	if len(bad) != 0 || strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s\nbad %v", strings.Join(rows, "\n"), strings.Join(want, "\n"), bad)
	}
}
