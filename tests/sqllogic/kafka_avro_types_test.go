package sqllogic

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/tests/schemareg"
	"github.com/twmb/franz-go/pkg/kgo"
)

// typedSchema has a field of every Avro logical type and nesting the
// Kafka source maps to a column.
const typedSchema = `{"type": "record", "name": "Typed", "namespace": "lt", "fields": [
	{"name": "id", "type": "int"},
	{"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
	{"name": "big", "type": {"type": "fixed", "name": "Big", "size": 12, "logicalType": "decimal", "precision": 20, "scale": 0}},
	{"name": "raw", "type": "bytes"},
	{"name": "mac", "type": {"type": "fixed", "name": "Mac", "size": 6}},
	{"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
	{"name": "day", "type": {"type": "int", "logicalType": "date"}},
	{"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
	{"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
	{"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "tsu", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": null},
	{"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
	{"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
	{"name": "addr", "type": {"type": "record", "name": "Addr", "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"], "default": null},
		{"name": "geo", "type": ["null", {"type": "record", "name": "Geo", "fields": [{"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]}], "default": null}]}},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "nums", "type": {"type": "array", "items": ["null", "long"]}},
	{"name": "days", "type": {"type": "array", "items": {"type": "int", "logicalType": "date"}}},
	{"name": "people", "type": {"type": "array", "items": {"type": "record", "name": "P", "fields": [{"name": "n", "type": "string"}]}}},
	{"name": "attrs", "type": {"type": "map", "values": "long"}}]}`

// TestKafkaAvroLogicalTypes: records with decimals (bytes and fixed),
// bytes, fixed, uuid, date, times, timestamps, an enum, a nested record,
// an array and a map, written by hamba/avro, read by an Avro source into
// NUMERIC, BYTEA, UUID, DATE, TIME, TIMESTAMPTZ, TIMESTAMP, TEXT and JSONB
// columns equal to the same values written as SQL literals; an Avro sink
// of them read back by a source gives the same rows.
func TestKafkaAvroLogicalTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a differential volume test of types and statements, run in the plain step")
	}
	_, addr := startKafka(t, 1, "typed", "typed_out")
	reg := schemareg.Start()
	defer reg.Close()
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	id, err := reg.Register("typed-value", typedSchema)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	recs := []map[string]any{
		{"id": 1, "price": big.NewRat(-12345, 1000), "big": big.NewRat(123456789012345678, 1), "raw": []byte{0, 1, 0xfe},
			"mac": [6]byte{10, 11, 12, 13, 14, 15}, "uid": "0e0f6a6c-5c7d-4b8a-9a1e-123456789abc", "day": at("2026-03-04 00:00:00"),
			"tm": 13*time.Hour + 5*time.Minute + 6789*time.Millisecond, "tu": time.Hour + 2*time.Minute + 3*time.Second + 4*time.Microsecond,
			"tsm": at("2026-03-04 05:06:07.89"), "tsu": nil, "lts": at("2026-03-04 05:06:07.123456"), "color": "GREEN",
			"addr": map[string]any{"city": "Oslo", "zip": 150, "geo": map[string]any{"lt.Geo": map[string]any{"lat": 59.9, "lon": 10.75}}}, "tags": []string{"a", "b c"},
			"nums": []any{int64(1), nil, int64(-3)}, "days": []time.Time{at("2026-03-04 00:00:00")}, "people": []map[string]any{{"n": "x"}},
			"attrs": map[string]any{"x": int64(1), "yy": int64(-2)}},
		{"id": 2, "price": big.NewRat(1, 2), "big": big.NewRat(-98765432109876, 1), "raw": []byte{}, "mac": [6]byte{},
			"uid": "FFFFFFFF-0000-4000-8000-000000000001", "day": at("1999-12-31 00:00:00"),
			"tm": time.Duration(0), "tu": 23*time.Hour + 59*time.Minute + 59*time.Second + 999999*time.Microsecond,
			"tsm": at("1970-01-01 00:00:00"), "tsu": at("2030-06-07 08:09:10.111213"), "lts": at("1969-07-20 20:17:40"), "color": "RED",
			"addr": map[string]any{"city": "Zürich \"q\"", "zip": nil, "geo": nil}, "tags": []string{}, "nums": []any{}, "days": []time.Time{},
			"people": []map[string]any{}, "attrs": map[string]any{}},
	}
	var msgs []*kgo.Record
	for _, r := range recs {
		b, err := schemareg.Encode(id, typedSchema, r)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, &kgo.Record{Topic: "typed", Value: b})
	}
	if err := kafkaClient(t, addr).ProduceSync(ctx, msgs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	with := func(topic string) string {
		return fmt.Sprintf("WITH (connector = 'kafka', topic = '%s', properties.bootstrap.servers = '%s', format = 'avro', schema.registry = '%s')", topic, addr, reg.URL)
	}
	execAll(t, c, "CREATE SOURCE typed "+with("typed"), "CREATE MATERIALIZED VIEW typed_v AS SELECT * FROM typed",
		`CREATE TABLE typed_oracle (id INT, price NUMERIC(12,3), big NUMERIC(20,0), raw BYTEA, mac BYTEA, uid UUID, day DATE,
			tm TIME, tu TIME, tsm TIMESTAMPTZ, tsu TIMESTAMPTZ, lts TIMESTAMP, color TEXT,
			addr STRUCT<city TEXT, zip INT, geo STRUCT<lat DOUBLE PRECISION, lon DOUBLE PRECISION>>, tags TEXT[], nums BIGINT[], days DATE[],
			people JSONB, attrs JSONB)`,
		`INSERT INTO typed_oracle VALUES
			(1, -12.345, 123456789012345678, '\x0001fe', '\x0a0b0c0d0e0f', '0e0f6a6c-5c7d-4b8a-9a1e-123456789abc', '2026-03-04',
			 '13:05:06.789', '01:02:03.000004', '2026-03-04 05:06:07.89+00', NULL, '2026-03-04 05:06:07.123456', 'GREEN',
			 ROW('Oslo', 150, ROW(59.9, 10.75)), '{a,"b c"}', '{1,NULL,-3}', '{2026-03-04}', '[{"n": "x"}]', '{"x": 1, "yy": -2}'),
			(2, 0.5, -98765432109876, '\x', '\x000000000000', 'ffffffff-0000-4000-8000-000000000001', '1999-12-31',
			 '00:00:00', '23:59:59.999999', '1970-01-01 00:00:00+00', '2030-06-07 08:09:10.111213+00', '1969-07-20 20:17:40', 'RED',
			 ROW('Zürich "q"', NULL, NULL), '{}', '{}', '{}', '[]', '{}')`)
	rows, err := c.Query(ctx, "SELECT * FROM typed LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fd := range rows.FieldDescriptions() {
		names = append(names, fmt.Sprintf("%s:%d", fd.Name, fd.DataTypeOID))
	}
	rows.Close()
	want := "id:23 price:1700 big:1700 raw:17 mac:17 uid:2950 day:1082 tm:1083 tu:1083 tsm:1184 tsu:1184 lts:1114 color:25 addr:2249 tags:1009 nums:1016 days:1182 people:3802 attrs:3802"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("columns\n%s\nwant\n%s", got, want)
	}
	oracle := strings.Join(oracleRows(t, c, "SELECT * FROM typed_oracle ORDER BY id"), "\n")
	waitQuery(t, c, "SELECT * FROM typed_v ORDER BY id", oracle)
	// Typed columns compute as their types.
	waitQuery(t, c, "SELECT sum(price), max(day), min(tsm), sum(length(raw)), max((addr).city), sum(((addr).geo).lat), sum(cardinality(nums)), max(nums[3]), max(tags[2]) FROM typed_v",
		strings.Join(oracleRows(t, c, "SELECT sum(price), max(day), min(tsm), sum(length(raw)), max((addr).city), sum(((addr).geo).lat), sum(cardinality(nums)), max(nums[3]), max(tags[2]) FROM typed_oracle"), "\n"))
	// A column list: the record as a STRUCT of some of its fields, or as
	// jsonb (as before records had STRUCT columns); the array as jsonb.
	execAll(t, c, "CREATE SOURCE typed_narrow (id INT, addr STRUCT<zip BIGINT, city TEXT>, tags JSONB) "+with("typed"),
		"CREATE MATERIALIZED VIEW typed_narrow_v AS SELECT id, addr, (addr).zip + 1 AS z, tags->>1 AS t1 FROM typed_narrow")
	if _, err := c.Exec(ctx, "CREATE SOURCE typed_bad (id INT, addr STRUCT<zip TEXT>) "+with("typed")); err == nil || !strings.Contains(err.Error(), "42804") {
		t.Fatalf("a struct field of another type: %v", err)
	}
	waitQuery(t, c, "SELECT * FROM typed_narrow_v ORDER BY id", "1 (150,Oslo) 151 b c\n2 (,\"Zürich \"\"q\"\"\") NULL NULL")

	// Through an Avro sink and back: the sink writes each type's logical
	// type (jsonb as its text).
	execAll(t, c, "CREATE SINK typed_out FROM typed_v "+with("typed_out"))
	execAll(t, c, "CHECKPOINT")
	deadline := time.Now().Add(2 * time.Minute)
	for len(readTopic(t, addr, "typed_out")) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the sink wrote nothing")
		}
		time.Sleep(100 * time.Millisecond)
	}
	execAll(t, c, "CREATE SOURCE typed_back "+with("typed_out"), "CREATE MATERIALIZED VIEW typed_back_v AS SELECT * FROM typed_back")
	waitQuery(t, c, "SELECT * FROM typed_back_v ORDER BY id", oracle)
}
