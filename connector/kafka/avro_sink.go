package kafka

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/hamba/avro/v2"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// The Kafka sink's Avro formats: 'avro' (the row only, for append-only
// views, as 'json') and 'upsert-avro' (key: a record of the view's key
// columns, value: the row, a delete a tombstone, as 'upsert-json'). The
// sink derives a record schema from the view's columns (every field a
// union of null and its type, default null), registers the value schema
// under <topic>-value and the key schema under <topic>-key when it
// starts, and frames each record in the Confluent wire format.

// avroName makes a SQL name an Avro name: [A-Za-z_][A-Za-z0-9_]*.
func avroName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// avroFieldType is the Avro type a column of type t is written as; types
// Avro has no counterpart for are written as their PostgreSQL text. A
// record (STRUCT or composite) is a record named name (the view, column and
// field names joined by _, so every record of a schema has its own name)
// of its fields, each a union of null and its type; an array of a scalar
// is an array of unions of null and the element's type.
func avroFieldType(t types.T, name string) any {
	switch t.Kind {
	case types.Record:
		return avroRecordType(name, types.RecordFields(t))
	case types.TextArray:
		return map[string]any{"type": "array", "items": []any{"null", avroFieldType(types.ArrayElem(t), name)}}
	case types.Bool:
		return "boolean"
	case types.Int16, types.Int32:
		return "int"
	case types.Int64:
		return "long"
	case types.Float32:
		return "float"
	case types.Float64:
		return "double"
	case types.Timestamp:
		if t.TZ {
			return map[string]string{"type": "long", "logicalType": "timestamp-micros"}
		}
		return map[string]string{"type": "long", "logicalType": "local-timestamp-micros"}
	case types.Date:
		return map[string]string{"type": "int", "logicalType": "date"}
	case types.Time:
		return map[string]string{"type": "long", "logicalType": "time-micros"}
	case types.Numeric:
		p := t.Prec
		if p <= 0 {
			p = types.MaxNumericPrecision
		}
		return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": p, "scale": t.Scale}
	case types.Bytea:
		return "bytes"
	case types.UUID:
		return map[string]string{"type": "string", "logicalType": "uuid"}
	}
	return "string"
}

// sinkAvroRecord is the record schema of cols (nil: all) of a view.
func sinkAvroRecord(name string, cols []connector.Column, which []int) map[string]any {
	var fs []types.RecordField
	if which == nil {
		for _, c := range cols {
			fs = append(fs, types.RecordField{Name: c.Name, T: c.Type})
		}
	} else {
		for _, i := range which {
			fs = append(fs, types.RecordField{Name: cols[i].Name, T: cols[i].Type})
		}
	}
	r := avroRecordType(avroName(name), fs)
	r["namespace"] = "streamdb"
	return r
}

// avroRecordType is the record schema named name of fields fs, each a
// union of null and its type with default null.
func avroRecordType(name string, fs []types.RecordField) map[string]any {
	type field struct {
		Name    string `json:"name"`
		Type    any    `json:"type"`
		Default any    `json:"default"`
	}
	out := make([]field, len(fs))
	for i, f := range fs {
		out[i] = field{Name: avroName(f.Name), Type: []any{"null", avroFieldType(f.T, name+"_"+avroName(f.Name))}}
	}
	return map[string]any{"type": "record", "name": name, "fields": out}
}

// sinkAvroSchema is sinkAvroRecord as JSON.
func sinkAvroSchema(name string, cols []connector.Column, which []int) string {
	b, _ := json.Marshal(sinkAvroRecord(name, cols, which))
	return string(b)
}

// sinkEnvelopeSchema is a debezium-avro sink's value schema: Debezium's
// envelope of the view's row record, with before, after and op.
func sinkEnvelopeSchema(name string, cols []connector.Column) string {
	row := sinkAvroRecord(name, cols, nil)
	env := map[string]any{"type": "record", "name": avroName(name) + "_envelope", "namespace": "streamdb", "fields": []any{
		map[string]any{"name": "before", "type": []any{"null", row}, "default": nil},
		map[string]any{"name": "after", "type": []any{"null", "streamdb." + avroName(name)}, "default": nil},
		map[string]any{"name": "op", "type": "string"},
	}}
	b, _ := json.Marshal(env)
	return string(b)
}

// registerSinkSchemas registers a sink's value (and, upsert, key) schema
// and returns their ids.
func (s *kafkaSink) registerSinkSchemas() error {
	if s.avroVal != 0 {
		return nil
	}
	valSchema := sinkAvroSchema(s.spec.View, s.spec.Columns, nil)
	if s.o.format == FormatDebeziumAvro {
		valSchema = sinkEnvelopeSchema(s.spec.View, s.spec.Columns)
		rec, err := parseAvro(sinkAvroSchema(s.spec.View, s.spec.Columns, nil))
		if err != nil {
			return sqlerr.New(sqlerr.Internal, "sink %s: row schema: %v", s.spec.Name, err)
		}
		s.rowSkip = compileSkip(rec, map[avro.Schema]*avNode{})
	}
	val, err := s.o.reg.register(s.o.topic+"-value", valSchema)
	if err != nil {
		return err
	}
	if s.o.format != "avro" {
		keys := s.spec.KeyCols
		if len(keys) == 0 {
			keys = make([]int, len(s.spec.Columns))
			for i := range keys {
				keys[i] = i
			}
		}
		if s.avroKey, err = s.o.reg.register(s.o.topic+"-key", sinkAvroSchema(s.spec.View+"_key", s.spec.Columns, keys)); err != nil {
			return err
		}
	}
	s.avroVal = val
	return nil
}

// avroBody encodes row i's columns as the fields of an Avro record.
func (e *sinkEncoder) avroBody(rec arrow.RecordBatch, i int) []byte {
	var b []byte
	for c := range e.ts {
		b = appendAvroDatum(b, rec.Column(c), i, e.ts[c])
	}
	return b
}

// debeziumAvro frames a debezium-avro envelope: the before and after
// records (avroBody; nil: null) and the op.
func (e *sinkEncoder) debeziumAvro(before, after []byte, op string) []byte {
	b := make([]byte, 5, 8+len(before)+len(after))
	binary.BigEndian.PutUint32(b[1:], uint32(e.avroVal))
	for _, r := range [][]byte{before, after} {
		if r == nil {
			b = append(b, 0)
		} else {
			b = append(append(b, 2), r...)
		}
	}
	b = appendAvroLong(b, int64(len(op)))
	return append(b, op...)
}

// avroAfter is the after record of a debezium-avro envelope v (nil: none
// or v does not decode); row skips a row record.
func avroAfter(v []byte, row *avNode) []byte {
	if len(v) < 5 || row == nil {
		return nil
	}
	d := avDec{b: v[5:]}
	k, err := d.long()
	if err != nil || k == 1 && d.skip(row) != nil {
		return nil
	}
	if k, err = d.long(); err != nil || k != 1 {
		return nil
	}
	start := d.i
	if d.skip(row) != nil {
		return nil
	}
	return v[5+start : 5+d.i]
}

// avroRow encodes row i's columns cols (nil: all) as an Avro record in the
// wire format with schema id.
func (e *sinkEncoder) avroRow(rec arrow.RecordBatch, i int, cols []int, id int32) []byte {
	b := make([]byte, 5, 64)
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	if cols == nil {
		for c := range e.ts {
			b = appendAvroDatum(b, rec.Column(c), i, e.ts[c])
		}
		return b
	}
	for _, c := range cols {
		b = appendAvroDatum(b, rec.Column(c), i, e.ts[c])
	}
	return b
}

func appendAvroLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// appendAvroDatum writes a value of a ["null", T] field: the branch, then
// the value.
func appendAvroDatum(b []byte, a arrow.Array, i int, t types.T) []byte {
	if a.IsNull(i) {
		return append(b, 0)
	}
	b = append(b, 2) // branch 1, zigzag
	switch t.Kind {
	case types.Bool:
		if a.(*array.Boolean).Value(i) {
			return append(b, 1)
		}
		return append(b, 0)
	case types.Int16, types.Int32, types.Int64, types.Timestamp, types.Date, types.Time:
		return appendAvroLong(b, a.(*array.Int64).Value(i))
	case types.Numeric:
		return appendAvroDecimal(b, a.(*array.Decimal128).Value(i))
	case types.Bytea, types.JSON:
		s := a.(*array.String).Value(i)
		return append(appendAvroLong(b, int64(len(s))), s...)
	case types.UUID: // Avro's uuid logical type is the text
		b = appendAvroLong(b, types.UUIDTextLen)
		return types.AppendUUIDText(b, a.(*array.FixedSizeBinary).Value(i))
	case types.Float32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(a.(*array.Float64).Value(i))))
	case types.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(a.(*array.Float64).Value(i)))
	case types.Text:
		s := a.(*array.String).Value(i)
		return append(appendAvroLong(b, int64(len(s))), s...)
	case types.Record:
		st := a.(*array.Struct)
		for k, f := range types.RecordFields(t) {
			b = appendAvroDatum(b, st.Field(k), i, f.T)
		}
		return b
	case types.TextArray:
		return appendAvroArray(b, a.(*array.List), i, types.ArrayElem(t))
	}
	s := types.TextOf(types.DatumAt(a, i, t), t)
	return append(appendAvroLong(b, int64(len(s))), s...)
}

// checkSinkRegistry is CREATE SINK's check that the registry answers.
func checkSinkRegistry(r *registry) error {
	var subs []string
	return r.do("GET", "/subjects", nil, &subs)
}

// avroSinkFormat reports whether a sink format is one of the Avro ones,
// and refuses those not written yet.
func avroSinkFormat(f string) (bool, error) {
	switch f {
	case "avro", "upsert-avro", "debezium-avro":
		return true, nil
	}
	return strings.HasSuffix(f, "-avro"), nil
}

// appendAvroDecimal writes a decimal's unscaled value as Avro bytes: its
// shortest two's-complement big-endian form.
func appendAvroDecimal(b []byte, n decimal128.Num) []byte {
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], uint64(n.HighBits()))
	binary.BigEndian.PutUint64(buf[8:], n.LowBits())
	i := 0
	for i < 15 && (buf[i] == 0 && buf[i+1]&0x80 == 0 || buf[i] == 0xff && buf[i+1]&0x80 != 0) {
		i++
	}
	return append(appendAvroLong(b, int64(16-i)), buf[i:]...)
}

// appendAvroArray writes row i of an array column as an Avro array of
// unions of null and the element type (avroFieldType): one block of its
// elements, read from the array's typed layout (text and uuid elements
// are their canonical text).
func appendAvroArray(b []byte, l *array.List, i int, et types.T) []byte {
	start, end := l.ValueOffsets(i)
	if end > start {
		b = appendAvroLong(b, end-start)
	}
	vals := l.ListValues()
	for j := int(start); j < int(end); j++ {
		if vals.IsNull(j) {
			b = append(b, 0)
			continue
		}
		b = append(b, 2)
		if s, ok := vals.(*array.String); ok {
			v := s.Value(j)
			b = append(appendAvroLong(b, int64(len(v))), v...)
			continue
		}
		if u, ok := vals.(*array.FixedSizeBinary); ok { // uuid[]: each element's text
			b = types.AppendUUIDText(appendAvroLong(b, types.UUIDTextLen), u.Value(j))
			continue
		}
		d := types.DatumAt(vals, j, et)
		switch et.Kind {
		case types.Bool:
			if d.I != 0 {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case types.Float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(d.F)))
		case types.Float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(d.F))
		default: // integers, date, timestamp
			b = appendAvroLong(b, d.I)
		}
	}
	return append(b, 0)
}
