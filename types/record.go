package types

import (
	"encoding/binary"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamdb/streamdb/sqlerr"
)

// Records: PostgreSQL's anonymous composite type (RECORD), a row of named,
// typed fields, such as information_schema._pg_expandarray's (x, n). As in
// PostgreSQL, where an anonymous record type is identified by a type
// modifier indexing a backend-local cache of tuple descriptors
// (assign_record_type_typmod), a record T is Kind Record with Prec the
// index of its shape in a process-wide registry: T stays a small
// comparable value, and equal shapes get the same index.
//
// Layout: an Arrow Struct whose children are the fields' layouts; a NULL
// record has NULL fields. Text output is record_out's, (a,b) with
// PostgreSQL's quoting; binary output is record_send's. There is no input
// (as for PostgreSQL's anonymous records: 0A000).

// RecordField is one field of a record type.
type RecordField struct {
	Name string
	T    T
}

// RecordValue is a record value: one Datum per field of its type.
type RecordValue struct {
	Fields []Datum
}

// OIDRecord is pg_type.oid of record.
const OIDRecord = 2249

// recordShape is one registered record type: its fields and, for a named
// composite type (CREATE TYPE name AS (...), composite.go), its name and
// pg_type oid; for a STRUCT<...> column type, struct is set.
type recordShape struct {
	fields []RecordField
	name   string
	oid    uint32
	strukt bool
}

var recordTypes struct {
	mu     sync.Mutex
	shapes []recordShape // index 0 unused: Prec 0 is a record of unknown shape
	byKey  map[string]int32
}

// RecordOf returns the record type with the given fields.
func RecordOf(fields []RecordField) T {
	return registerShape(recordShape{fields: fields})
}

// StructOf returns the STRUCT<...> type with the given fields: a record
// type that prints as struct<name type, ...> (composite.go).
func StructOf(fields []RecordField) T {
	return registerShape(recordShape{fields: fields, strukt: true})
}

func registerShape(sh recordShape) T {
	key := shapeKey(sh)
	recordTypes.mu.Lock()
	defer recordTypes.mu.Unlock()
	if id, ok := recordTypes.byKey[key]; ok {
		return T{Kind: Record, Prec: id}
	}
	if recordTypes.byKey == nil {
		recordTypes.byKey = map[string]int32{}
		recordTypes.shapes = []recordShape{{}}
	}
	id := int32(len(recordTypes.shapes))
	sh.fields = append([]RecordField(nil), sh.fields...)
	recordTypes.shapes = append(recordTypes.shapes, sh)
	recordTypes.byKey[key] = id
	return T{Kind: Record, Prec: id}
}

// shape returns t's registered shape (the zero shape for an unknown one).
func shape(t T) recordShape {
	if t.Kind != Record {
		return recordShape{}
	}
	recordTypes.mu.Lock()
	defer recordTypes.mu.Unlock()
	if t.Prec <= 0 || int(t.Prec) >= len(recordTypes.shapes) {
		return recordShape{}
	}
	return recordTypes.shapes[t.Prec]
}

// shapeKey is EncodeType's form of a registered shape: recordKey's, after
// composite "name" oid for a named type, struct for a STRUCT.
func shapeKey(sh recordShape) string {
	switch {
	case sh.name != "":
		return "composite " + strconv.Quote(sh.name) + " " + strconv.FormatUint(uint64(sh.oid), 10) + " " + recordKey(sh.fields)
	case sh.strukt:
		return "struct " + recordKey(sh.fields)
	}
	return recordKey(sh.fields)
}

// RecordFields returns the fields of record type t (nil for another type).
// The caller must not modify the slice.
func RecordFields(t T) []RecordField {
	return shape(t).fields
}

// FieldIndex returns the index of the field named name in record type t,
// or -1.
func FieldIndex(t T, name string) int {
	for i, f := range RecordFields(t) {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// recordKey is EncodeType's structural form of a record type.
func recordKey(fields []RecordField) string {
	var b strings.Builder
	b.WriteString("record(")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(f.Name))
		b.WriteByte(' ')
		b.WriteString(EncodeType(f.T))
	}
	b.WriteByte(')')
	return b.String()
}

// decodeRecordType parses shapeKey's output.
func decodeRecordType(s string) (T, bool) {
	var sh recordShape
	if rest, ok := strings.CutPrefix(s, "composite "); ok {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return T{}, false
		}
		sh.name, _ = strconv.Unquote(q)
		num, tail, ok := strings.Cut(rest[len(q)+1:], " ")
		oid, err := strconv.ParseUint(num, 10, 32)
		if !ok || err != nil {
			return T{}, false
		}
		sh.oid, s = uint32(oid), tail
	} else if rest, ok := strings.CutPrefix(s, "struct "); ok {
		sh.strukt, s = true, rest
	}
	fields, ok := decodeRecordFields(s)
	if !ok {
		return T{}, false
	}
	sh.fields = fields
	return registerShape(sh), true
}

// decodeRecordFields parses recordKey's output.
func decodeRecordFields(s string) ([]RecordField, bool) {
	rest, ok := strings.CutPrefix(s, "record(")
	if !ok || !strings.HasSuffix(rest, ")") {
		return nil, false
	}
	rest = rest[:len(rest)-1]
	var fields []RecordField
	for rest != "" {
		name, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, false
		}
		unq, _ := strconv.Unquote(name)
		rest = strings.TrimPrefix(rest[len(name):], " ")
		// The field's type runs to the next ", " outside parentheses.
		depth, end := 0, len(rest)
		for i := 0; i < len(rest); i++ {
			switch rest[i] {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 0 {
					end = i
				}
			}
			if end < len(rest) {
				break
			}
		}
		ft, ok := DecodeType(rest[:end])
		if !ok {
			return nil, false
		}
		fields = append(fields, RecordField{Name: unq, T: ft})
		rest = strings.TrimPrefix(rest[end:], ", ")
	}
	return fields, true
}

// recordArrow is the Arrow layout of record type t.
func recordArrow(t T) arrow.DataType {
	fs := RecordFields(t)
	afs := make([]arrow.Field, len(fs))
	for i, f := range fs {
		afs[i] = arrow.Field{Name: f.Name, Type: f.T.Arrow(), Nullable: true}
	}
	return arrow.StructOf(afs...)
}

func recordAt(a *array.Struct, i int, t T) Datum {
	fs := RecordFields(t)
	r := &RecordValue{Fields: make([]Datum, len(fs))}
	for k, f := range fs {
		r.Fields[k] = DatumAt(a.Field(k), i, f.T)
	}
	return Datum{R: r}
}

func appendRecord(b *array.StructBuilder, d Datum, t T) {
	b.Append(true)
	for k, f := range RecordFields(t) {
		AppendDatum(b.FieldBuilder(k), d.R.Fields[k], f.T)
	}
}

// appendRecordText writes record_out's form: (a,b), a NULL field empty, a
// field quoted when it is empty or holds a quote, backslash, parenthesis,
// comma or space (quotes and backslashes doubled inside).
func appendRecordText(buf []byte, d Datum, t T) []byte {
	buf = append(buf, '(')
	for k, f := range RecordFields(t) {
		if k > 0 {
			buf = append(buf, ',')
		}
		if v := d.R.Fields[k]; !v.Null {
			buf = appendRecordField(buf, TextOf(v, f.T))
		}
	}
	return append(buf, ')')
}

// appendRecordField writes one non-NULL field's text s as record_out does.
func appendRecordField(buf []byte, s string) []byte {
	if s != "" && !strings.ContainsAny(s, "\"\\(),") && !strings.ContainsFunc(s, func(r rune) bool { return r < 128 && isSpace(byte(r)) }) {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			buf = append(buf, s[i])
		}
		buf = append(buf, s[i])
	}
	return append(buf, '"')
}

// appendRecordBinary writes record_send's form: int32 field count, then
// per field its type oid, int32 length (-1 for NULL) and binary value.
func appendRecordBinary(buf []byte, d Datum, t T) []byte {
	fs := RecordFields(t)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(fs)))
	for k, f := range fs {
		buf = binary.BigEndian.AppendUint32(buf, f.T.OID())
		v := d.R.Fields[k]
		if v.Null {
			buf = binary.BigEndian.AppendUint32(buf, 0xffffffff)
			continue
		}
		at := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 0)
		buf = AppendBinary(buf, v, f.T)
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf
}

func errRecordInput() error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "input of anonymous composite types is not implemented")
}
