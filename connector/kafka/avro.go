package kafka

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/hamba/avro/v2"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Avro messages in the Confluent wire format: a zero byte, the writer
// schema's registry id (4 bytes, big-endian), then the record in Avro's
// binary encoding. The source keeps one reader schema (the subject's latest
// when the source was created, stored in the catalog so a restart reads the
// same columns); each writer schema id met is fetched once, resolved
// against the reader schema by Avro's rules (fields matched by name, a
// reader field the writer lacks takes its default, a writer field the
// reader lacks is skipped, int -> long -> float -> double and string <->
// bytes promote) and compiled into an avroProg that decodes a record's
// bytes straight into the batch's Arrow builders. hamba/avro parses the
// schemas; the binary decoding is ours, so nothing is allocated per record.

// Catalog options that keep the reader schema (StoredOptions).
const (
	avroSchemaKey   = "__avro_schema"
	avroSchemaIDKey = "__avro_schema_id"
)

// parseAvro parses a schema on its own, so two versions of one named
// record never meet in hamba's process-wide cache.
func parseAvro(s string) (avro.Schema, error) {
	return avro.ParseWithCache(s, "", &avro.SchemaCache{})
}

// readerRecord parses a reader schema, which must be a record.
func readerRecord(s string) (*avro.RecordSchema, error) {
	sc, err := parseAvro(s)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid avro schema: %v", err)
	}
	rec, ok := deref(sc).(*avro.RecordSchema)
	if !ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the avro schema is a %s, not a record", sc.Type())
	}
	return rec, nil
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func logicalOf(s avro.Schema) avro.LogicalType {
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		return l.Logical().Type()
	}
	return ""
}

// decimalOf is a decimal logical type's precision and scale.
func decimalOf(s avro.Schema) (int, int) {
	if l, ok := s.(avro.LogicalTypeSchema); ok {
		if d, ok := l.Logical().(*avro.DecimalLogicalSchema); ok {
			return d.Precision(), d.Scale()
		}
	}
	return 0, 0
}

// nonNull is the schema a nullable union [null, T] holds (T), or s; ok
// false for a union of anything else.
func nonNull(s avro.Schema) (avro.Schema, bool) {
	u, isU := deref(s).(*avro.UnionSchema)
	if !isU {
		return deref(s), true
	}
	if !u.Nullable() || len(u.Types()) != 2 {
		return s, false
	}
	_, i := u.Indices()
	return deref(u.Types()[i]), true
}

// avroColType is the SQL type of a reader field's schema: a primitive, a
// logical type, an enum (text), a record (a STRUCT of its fields' types),
// an array of scalars that have array types (that array type), any other
// array or a map (jsonb), or a union of null and one of those (nullable,
// as every SQL column is). What a column cannot hold (wider unions,
// decimals wider than 38 digits, durations, recursive records) is 0A000
// naming the field (path: its dotted name; open: the records being
// derived, to find recursion).
func avroColType(path string, s avro.Schema, open map[string]bool) (types.T, error) {
	s, ok := nonNull(s)
	if !ok {
		return types.T{}, sqlerr.New(sqlerr.FeatureNotSupported, "avro field %q is the union %s: a column holds only a union of null and one type; name the columns to read in CREATE SOURCE to leave it out", path, s)
	}
	lt := logicalOf(s)
	switch s.Type() {
	case avro.Boolean:
		return types.TBool, nil
	case avro.Int:
		switch lt {
		case "":
			return types.TInt32, nil
		case avro.Date:
			return types.TDate, nil
		case avro.TimeMillis:
			return types.TTime, nil
		}
	case avro.Long:
		switch lt {
		case "":
			return types.TInt64, nil
		case avro.TimeMicros:
			return types.TTime, nil
		case avro.TimestampMillis, avro.TimestampMicros:
			return types.TTimestampTZ, nil
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return types.TTimestamp, nil
		}
	case avro.Float:
		return types.TFloat32, nil
	case avro.Double:
		return types.TFloat64, nil
	case avro.String:
		if lt == avro.UUID {
			return types.TUUID, nil
		}
		return types.TText, nil
	case avro.Enum:
		return types.TText, nil
	case avro.Bytes, avro.Fixed:
		switch lt {
		case "":
			return types.TBytea, nil
		case avro.Decimal:
			if p, sc := decimalOf(s); p <= types.MaxNumericPrecision && sc <= p {
				return types.NumericOf(int32(p), int32(sc)), nil
			}
		}
	case avro.Record:
		rec := s.(*avro.RecordSchema)
		if open[rec.FullName()] {
			return types.T{}, sqlerr.New(sqlerr.FeatureNotSupported, "avro field %q is the recursive record %s, which no column type holds; name the columns to read in CREATE SOURCE to leave it out", path, rec.FullName())
		}
		if open == nil {
			open = map[string]bool{}
		}
		open[rec.FullName()] = true
		defer delete(open, rec.FullName())
		fs := make([]types.RecordField, len(rec.Fields()))
		for i, f := range rec.Fields() {
			ft, err := avroColType(dotted(path, f.Name()), f.Type(), open)
			if err != nil {
				return types.T{}, err
			}
			fs[i] = types.RecordField{Name: f.Name(), T: ft}
		}
		return types.StructOf(fs), nil
	case avro.Array:
		items, ok := nonNull(s.(*avro.ArraySchema).Items())
		if ok && items.Type() != avro.Record && items.Type() != avro.Array && items.Type() != avro.Map {
			if et, err := avroColType(path, items, open); err == nil && types.ArrayElemOK(et) {
				return types.ArrayExprOf(et), nil
			}
		}
		return types.TJSONB, nil
	case avro.Map:
		return types.TJSONB, nil
	}
	return types.T{}, sqlerr.New(sqlerr.FeatureNotSupported, "avro field %q of type %s has no column type; name the columns to read in CREATE SOURCE to leave it out", path, s)
}

// dotted is a nested field's name: record.field.
func dotted(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// avroColumns are the columns of a reader schema, in field order.
func avroColumns(rec *avro.RecordSchema) ([]connector.Column, error) {
	var cols []connector.Column
	for _, f := range rec.Fields() {
		t, err := avroColType(f.Name(), f.Type(), nil)
		if err != nil {
			return nil, err
		}
		cols = append(cols, connector.Column{Name: f.Name(), Type: t})
	}
	return cols, nil
}

// readerField finds the reader field of a declared column: the same name,
// else the same name in another case.
func readerField(rec *avro.RecordSchema, name string) *avro.Field {
	fs := rec.Fields()
	if i := fieldIndexFold(len(fs), func(i int) string { return fs[i].Name() }, name); i >= 0 {
		return fs[i]
	}
	return nil
}

// checkAvroColumn checks a declared column against its reader field: it
// must exist (42703) and its type hold the field's (42804: the field's
// own type, or a wider integer or float).
func checkAvroColumn(rec *avro.RecordSchema, col connector.Column) (string, error) {
	f := readerField(rec, col.Name)
	if f == nil {
		return "", sqlerr.New(sqlerr.UndefinedColumn, "column %q is no field of the source's avro schema %s", col.Name, rec.FullName())
	}
	ft, err := avroColType(f.Name(), f.Type(), nil)
	if err != nil {
		return "", err
	}
	if !avroFits(ft, col.Type) {
		return "", sqlerr.New(sqlerr.DatatypeMismatch, "column %q is %s, but avro field %q is %s (%s)", col.Name, col.Type, f.Name(), ft, f.Type())
	}
	return f.Name(), nil
}

// avroFits reports whether a column of type got can hold the values of a
// field of SQL type want: the same type (a numeric of another scale
// rounds), a wider integer or float, text for a uuid or an enum, a STRUCT
// whose fields (matched by name) each hold a field of the record, an
// array whose elements hold the field's, json, jsonb or text (as JSON) for
// a record, array or map, a timestamp with or without time zone for either.
func avroFits(want, got types.T) bool {
	w, g := want.Kind, got.Kind
	switch {
	case w == types.Record && g == types.Record:
		for _, gf := range types.RecordFields(got) {
			wf, ok := recordField(types.RecordFields(want), gf.Name)
			if !ok || !avroFits(wf.T, gf.T) {
				return false
			}
		}
		return true
	case w == types.TextArray && g == types.TextArray:
		return avroFits(types.ArrayElem(want), types.ArrayElem(got))
	case w == g:
		return true
	case w == types.Int32 && g == types.Int64, w == types.Float32 && g == types.Float64:
		return true
	case w == types.UUID && g == types.Text:
		return true
	case (w == types.JSONB || w == types.Record || w == types.TextArray) && (g == types.JSONB || g == types.JSON || g == types.Text):
		return true
	}
	return false
}

// recordField finds a record field by name, else by name in another case.
func recordField(fs []types.RecordField, name string) (types.RecordField, bool) {
	if i := fieldIndexFold(len(fs), func(i int) string { return fs[i].Name }, name); i >= 0 {
		return fs[i], true
	}
	return types.RecordField{}, false
}

// fieldIndexFold is the index of name among n names (exact, else in
// another case), or -1.
func fieldIndexFold(n int, nameOf func(int) string, name string) int {
	fold := -1
	for i := 0; i < n; i++ {
		if nameOf(i) == name {
			return i
		}
		if fold < 0 && strings.EqualFold(nameOf(i), name) {
			fold = i
		}
	}
	return fold
}

// avNode is a compiled writer schema node: how to skip a value, read one
// into a column, or write it as JSON (a record, array or map read into a
// jsonb column).
type avNode struct {
	kind  avro.Type
	lt    avro.LogicalType
	mul   int64 // an int or long read into a timestamp or time: microseconds per unit
	size  int   // fixed
	scale int32 // decimal
	syms  []string
	names []string  // record fields
	kids  []*avNode // union branches, record fields, array items, map values
	// conv: for a union read into a column, whether each branch converts
	// to the column's type (a branch that does not is a bad record).
	conv []bool
	// A record read into a STRUCT column: the struct field each writer
	// field goes to (-1: skipped) with its type, and the defaults of the
	// struct fields the writer lacks.
	cols []int
	fts  []types.T
	defs []avDefault
}

// compileSkip compiles a writer schema for skipping or writing as JSON;
// memo closes cycles of recursive records.
func compileSkip(s avro.Schema, memo map[avro.Schema]*avNode) *avNode {
	s = deref(s)
	if n, ok := memo[s]; ok {
		return n
	}
	n := &avNode{kind: s.Type(), lt: logicalOf(s), mul: 1}
	memo[s] = n
	switch n.lt {
	case avro.Decimal:
		_, sc := decimalOf(s)
		n.scale = int32(sc)
	case avro.TimeMillis, avro.TimestampMillis, avro.LocalTimestampMillis:
		n.mul = 1000
	}
	switch x := s.(type) {
	case *avro.RecordSchema:
		for _, f := range x.Fields() {
			n.names = append(n.names, f.Name())
			n.kids = append(n.kids, compileSkip(f.Type(), memo))
		}
	case *avro.UnionSchema:
		for _, t := range x.Types() {
			n.kids = append(n.kids, compileSkip(t, memo))
		}
	case *avro.ArraySchema:
		n.kids = []*avNode{compileSkip(x.Items(), memo)}
	case *avro.MapSchema:
		n.kids = []*avNode{compileSkip(x.Values(), memo)}
	case *avro.FixedSchema:
		n.size = x.Size()
	case *avro.EnumSchema:
		n.syms = x.Symbols()
	}
	return n
}

// compileRead compiles a writer field's schema for reading into a column
// of type t; r is the reader's schema of the column (nil: unknown), whose
// defaults fill the fields of a STRUCT the writer's record lacks. ok false
// if no value of it converts.
func compileRead(s avro.Schema, t types.T, r avro.Schema) (*avNode, bool) {
	if u, isU := deref(s).(*avro.UnionSchema); isU {
		n := &avNode{kind: avro.Union}
		any := false
		for _, b := range u.Types() {
			k, ok := compileRead(b, t, r)
			if !ok {
				k = compileSkip(b, map[avro.Schema]*avNode{})
			}
			n.kids = append(n.kids, k)
			n.conv = append(n.conv, ok)
			any = any || (ok && k.kind != avro.Null)
		}
		return n, any
	}
	n := compileSkip(s, map[avro.Schema]*avNode{})
	lt := n.lt
	k := t.Kind
	switch n.kind {
	case avro.Null:
		return n, true
	case avro.Boolean:
		return n, k == types.Bool
	case avro.Int:
		switch lt {
		case avro.Date:
			return n, k == types.Date
		case avro.TimeMillis:
			return n, k == types.Time
		}
		return n, lt == "" && (k == types.Int32 || k == types.Int64 || k == types.Float32 || k == types.Float64)
	case avro.Long:
		switch lt {
		case avro.TimestampMillis, avro.LocalTimestampMillis, avro.TimestampMicros, avro.LocalTimestampMicros:
			return n, k == types.Timestamp
		case avro.TimeMicros:
			return n, k == types.Time
		}
		return n, lt == "" && (k == types.Int64 || k == types.Float32 || k == types.Float64)
	case avro.Float:
		return n, k == types.Float32 || k == types.Float64
	case avro.Double:
		return n, k == types.Float64
	case avro.String:
		if lt == avro.UUID {
			return n, k == types.UUID || k == types.Text
		}
		return n, k == types.Text || k == types.Bytea
	case avro.Bytes, avro.Fixed:
		if lt == avro.Decimal {
			return n, k == types.Numeric
		}
		return n, lt == "" && (k == types.Bytea || k == types.Text && n.kind == avro.Bytes)
	case avro.Enum:
		return n, k == types.Text
	case avro.Record:
		if k == types.Record {
			return compileStruct(deref(s).(*avro.RecordSchema), t, r)
		}
		return n, k == types.JSONB || k == types.JSON || k == types.Text
	case avro.Array:
		if k == types.TextArray {
			item, ok := compileRead(deref(s).(*avro.ArraySchema).Items(), types.ArrayElem(t), nil)
			return &avNode{kind: avro.Array, kids: []*avNode{item}}, ok
		}
		return n, k == types.JSONB || k == types.JSON || k == types.Text
	case avro.Map:
		return n, k == types.JSONB || k == types.JSON || k == types.Text
	}
	return n, false
}

// compileStruct compiles a writer record for reading into STRUCT column
// type t: writer fields by name (else in another case) into the struct's,
// the others skipped; a struct field the writer lacks takes the default of
// the reader's field (r: the reader's record, possibly in a nullable
// union), and without one nothing converts.
func compileStruct(w *avro.RecordSchema, t types.T, r avro.Schema) (*avNode, bool) {
	fs := types.RecordFields(t)
	n := &avNode{kind: avro.Record}
	used := make([]bool, len(fs))
	for _, wf := range w.Fields() {
		i := fieldIndexFold(len(fs), func(i int) string { return fs[i].Name }, wf.Name())
		if i < 0 || used[i] {
			n.kids = append(n.kids, compileSkip(wf.Type(), map[avro.Schema]*avNode{}))
			n.cols = append(n.cols, -1)
			n.fts = append(n.fts, types.T{})
			continue
		}
		used[i] = true
		var rs avro.Schema
		if rf := nestedReaderField(r, fs[i].Name); rf != nil {
			rs = rf.Type()
		}
		kid, ok := compileRead(wf.Type(), fs[i].T, rs)
		if !ok {
			return n, false
		}
		n.kids = append(n.kids, kid)
		n.cols = append(n.cols, i)
		n.fts = append(n.fts, fs[i].T)
	}
	for i, f := range fs {
		if used[i] {
			continue
		}
		rf := nestedReaderField(r, f.Name)
		if rf == nil || !rf.HasDefault() {
			return n, false
		}
		d, err := defaultDatum(rf.Default(), f.T)
		if err != nil {
			return n, false
		}
		n.defs = append(n.defs, avDefault{col: i, d: d, t: f.T})
	}
	return n, true
}

// nestedReaderField is the field name of reader record r (possibly in a
// nullable union; nil: none).
func nestedReaderField(r avro.Schema, name string) *avro.Field {
	if r == nil {
		return nil
	}
	s, _ := nonNull(r)
	if rec, ok := s.(*avro.RecordSchema); ok {
		return readerField(rec, name)
	}
	return nil
}

// avroProg decodes records of one writer schema into a source's builders.
type avroProg struct {
	steps    []avStep // the writer's fields, in order
	defaults []avDefault
	err      error // the writer schema cannot be read with the reader's: every record is bad
	dec      avDec
}

type avStep struct {
	n   *avNode
	col int // the builder, -1 to skip the field
	t   types.T
}

type avDefault struct {
	col int
	d   types.Datum
	t   types.T
}

// compileProg resolves writer against the reader schema for the source's
// payload columns (cols[i].meta == "", read from reader field names[i]).
func compileProg(writerJSON string, id int32, cols []kafkaCol, fields []string, reader *avro.RecordSchema) *avroProg {
	p := &avroProg{}
	ws, err := parseAvro(writerJSON)
	if err != nil {
		p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d does not parse: %v", id, err)
		return p
	}
	wrec, ok := deref(ws).(*avro.RecordSchema)
	if !ok {
		p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d is a %s, not a record", id, ws.Type())
		return p
	}
	return compileRec(wrec, id, cols, fields, reader)
}

// compileRec is compileProg of a parsed writer record.
func compileRec(wrec *avro.RecordSchema, id int32, cols []kafkaCol, fields []string, reader *avro.RecordSchema) *avroProg {
	p := &avroProg{}
	if wrec.FullName() != reader.FullName() {
		p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d is record %s, the source reads %s", id, wrec.FullName(), reader.FullName())
		return p
	}
	colOf := map[string]int{}
	for i, c := range cols {
		if c.meta == "" {
			colOf[fields[i]] = i
		}
	}
	seen := map[int]bool{}
	memo := map[avro.Schema]*avNode{}
	for _, wf := range wrec.Fields() {
		i, read := colOf[wf.Name()]
		if !read {
			p.steps = append(p.steps, avStep{n: compileSkip(wf.Type(), memo), col: -1})
			continue
		}
		var rs avro.Schema
		if rf := readerField(reader, fields[i]); rf != nil {
			rs = rf.Type()
		}
		n, ok := compileRead(wf.Type(), cols[i].t, rs)
		if !ok {
			p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d: field %q of type %s cannot be read as column %q %s", id, wf.Name(), wf.Type(), cols[i].name, cols[i].t)
			return p
		}
		seen[i] = true
		p.steps = append(p.steps, avStep{n: n, col: i, t: cols[i].t})
	}
	for i, c := range cols {
		if c.meta != "" || seen[i] {
			continue
		}
		rf := readerField(reader, fields[i])
		if rf == nil || !rf.HasDefault() {
			p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d has no field %q and the reader schema gives it no default", id, fields[i])
			return p
		}
		d, err := defaultDatum(rf.Default(), c.t)
		if err != nil {
			p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "field %q: %v", fields[i], err)
			return p
		}
		p.defaults = append(p.defaults, avDefault{col: i, d: d, t: c.t})
	}
	return p
}

// defaultDatum converts a reader field's default (as hamba parsed it).
func defaultDatum(v any, t types.T) (types.Datum, error) {
	if v == nil {
		return types.Null, nil
	}
	var d types.Datum
	switch x := v.(type) {
	case bool:
		d = types.Boolean(x)
	case int:
		d = types.Int(int64(x))
	case int32:
		d = types.Int(int64(x))
	case int64:
		d = types.Int(x)
	case float32:
		d = types.Float(float64(x))
	case float64:
		d = types.Float(x)
		if t.Physical() == types.PhysInt64 {
			d = types.Int(int64(x))
		}
	case string:
		d = types.Str(x)
	case []byte:
		d = types.Str(string(x))
	default:
		return types.Null, sqlerr.New(sqlerr.FeatureNotSupported, "default %v of type %T", v, v)
	}
	switch t.Physical() {
	case types.PhysFloat64:
		if d.F == 0 && d.I != 0 {
			d = types.Float(float64(d.I))
		}
	case types.PhysInt64:
		if t.Kind == types.Timestamp && d.I != 0 {
			d = types.Int(d.I * 1000) // the default of a timestamp-millis field
		}
	}
	return d, nil
}

// avDec reads one record's Avro binary encoding.
type avDec struct {
	b     []byte
	i     int
	depth int
	js    []byte // a value written as JSON
}

func errAvro(format string, args ...any) error {
	return sqlerr.New(sqlerr.InvalidBinaryRep, "malformed avro record: "+format, args...)
}

func (d *avDec) long() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if d.i >= len(d.b) {
			return 0, errAvro("truncated at byte %d", d.i)
		}
		c := d.b[d.i]
		d.i++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errAvro("varint too long at byte %d", d.i)
}

func (d *avDec) take(n int64) ([]byte, error) {
	if n < 0 || n > int64(len(d.b)-d.i) {
		return nil, errAvro("length %d at byte %d past the end", n, d.i)
	}
	b := d.b[d.i : d.i+int(n)]
	d.i += int(n)
	return b, nil
}

func (d *avDec) bytes() ([]byte, error) {
	n, err := d.long()
	if err != nil {
		return nil, err
	}
	return d.take(n)
}

// maxAvroDepth bounds nested values (records in arrays in records...).
const maxAvroDepth = 200

// skip reads past a value of n.
func (d *avDec) skip(n *avNode) error {
	switch n.kind {
	case avro.Null:
	case avro.Boolean:
		_, err := d.take(1)
		return err
	case avro.Int, avro.Long, avro.Enum:
		_, err := d.long()
		return err
	case avro.Float:
		_, err := d.take(4)
		return err
	case avro.Double:
		_, err := d.take(8)
		return err
	case avro.String, avro.Bytes:
		_, err := d.bytes()
		return err
	case avro.Fixed:
		_, err := d.take(int64(n.size))
		return err
	case avro.Union:
		k, err := d.long()
		if err != nil {
			return err
		}
		if k < 0 || k >= int64(len(n.kids)) {
			return errAvro("union branch %d of %d", k, len(n.kids))
		}
		return d.skip(n.kids[k])
	case avro.Record:
		if d.depth++; d.depth > maxAvroDepth {
			return errAvro("nested too deep")
		}
		for _, k := range n.kids {
			if err := d.skip(k); err != nil {
				return err
			}
		}
		d.depth--
	case avro.Array, avro.Map:
		if d.depth++; d.depth > maxAvroDepth {
			return errAvro("nested too deep")
		}
		for {
			cnt, err := d.long()
			if err != nil {
				return err
			}
			if cnt == 0 {
				break
			}
			if cnt < 0 { // a block with its size: jump over it
				size, err := d.long()
				if err != nil {
					return err
				}
				if _, err := d.take(size); err != nil {
					return err
				}
				continue
			}
			if cnt > int64(len(d.b)-d.i) {
				return errAvro("block of %d items past the end", cnt)
			}
			for ; cnt > 0; cnt-- {
				if n.kind == avro.Map {
					if _, err := d.bytes(); err != nil {
						return err
					}
				}
				if err := d.skip(n.kids[0]); err != nil {
					return err
				}
			}
		}
		d.depth--
	default:
		return errAvro("cannot skip a %s", n.kind)
	}
	return nil
}

// value reads a value of n into builder bl of column type t (compileRead
// checked that it converts).
func (d *avDec) value(n *avNode, bl array.Builder, t types.T) error {
	switch n.kind {
	case avro.Null:
		bl.AppendNull()
	case avro.Boolean:
		b, err := d.boolean()
		if err != nil {
			return err
		}
		bl.(*array.BooleanBuilder).Append(b)
	case avro.Int, avro.Long:
		v, err := d.integer(n)
		if err != nil {
			return err
		}
		if t.Physical() == types.PhysFloat64 {
			bl.(*array.Float64Builder).Append(float64(v))
			return nil
		}
		if n.mul != 1 {
			if v > math.MaxInt64/n.mul || v < math.MinInt64/n.mul {
				return sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range: %d", v)
			}
			v *= n.mul
		}
		if t.Kind == types.Time && (v < 0 || v > 24*3600*1000000) {
			return sqlerr.New(sqlerr.DatetimeFieldOverflow, "time out of range: %d microseconds", v)
		}
		bl.(*array.Int64Builder).Append(v)
	case avro.Float, avro.Double:
		f, err := d.float(n)
		if err != nil {
			return err
		}
		bl.(*array.Float64Builder).Append(f)
	case avro.String, avro.Bytes, avro.Fixed:
		var b []byte
		var err error
		if n.kind == avro.Fixed {
			b, err = d.take(int64(n.size))
		} else {
			b, err = d.bytes()
		}
		if err != nil {
			return err
		}
		switch {
		case n.lt == avro.Decimal:
			return appendDecimal(bl, b, n.scale, t)
		case t.Kind == types.Bytea:
			bl.(*array.StringBuilder).BinaryBuilder.Append(b)
			return nil
		case t.Kind == types.UUID:
			u, err := types.ParseText(string(b), types.TUUID)
			if err != nil {
				return err
			}
			types.AppendDatum(bl, u, t)
			return nil
		}
		return appendText(bl, t, b)
	case avro.Record, avro.Array, avro.Map:
		switch t.Kind {
		case types.Record:
			return d.record(n, bl.(*array.StructBuilder))
		case types.TextArray:
			return d.list(n, bl.(*array.ListBuilder), types.ArrayElem(t))
		}
		var err error
		if d.js, err = d.json(n, d.js[:0]); err != nil {
			return err
		}
		if t.Kind != types.JSONB {
			bl.(*array.StringBuilder).BinaryBuilder.Append(d.js)
			return nil
		}
		j, err := types.EncodeJSONB(string(d.js))
		if err != nil {
			return err
		}
		bl.(*array.StringBuilder).Append(j)
	case avro.Enum:
		sym, err := d.symbol(n)
		if err != nil {
			return err
		}
		if t.Prec == 0 {
			bl.(*array.StringBuilder).Append(sym)
			return nil
		}
		return appendText(bl, t, []byte(sym))
	case avro.Union:
		kid, err := d.branch(n, t)
		if err != nil {
			return err
		}
		return d.value(kid, bl, t)
	default:
		return errAvro("cannot read a %s", n.kind)
	}
	return nil
}

// record reads a record into a STRUCT column (compileStruct's node).
func (d *avDec) record(n *avNode, sb *array.StructBuilder) error {
	if d.depth++; d.depth > maxAvroDepth {
		return errAvro("nested too deep")
	}
	sb.Append(true)
	for k, kid := range n.kids {
		var err error
		if n.cols[k] < 0 {
			err = d.skip(kid)
		} else {
			err = d.value(kid, sb.FieldBuilder(n.cols[k]), n.fts[k])
		}
		if err != nil {
			return err
		}
	}
	for _, df := range n.defs {
		types.AppendDatum(sb.FieldBuilder(df.col), df.d, df.t)
	}
	d.depth--
	return nil
}

// list reads an array of scalars into an array column, in the array's
// typed layout (types/elemarray.go: List<Int64>, List<Float64>,
// List<Bool>, or List<String> of canonical text).
func (d *avDec) list(n *avNode, lb *array.ListBuilder, et types.T) error {
	lb.Append(true)
	vb := lb.ValueBuilder()
	for {
		cnt, err := d.long()
		if err != nil {
			return err
		}
		if cnt == 0 {
			return nil
		}
		if cnt < 0 { // a block with its size
			cnt = -cnt
			if _, err := d.long(); err != nil {
				return err
			}
		}
		if cnt > int64(len(d.b)-d.i) {
			return errAvro("block of %d items past the end", cnt)
		}
		for ; cnt > 0; cnt-- {
			if err := d.elem(n.kids[0], vb, et); err != nil {
				return err
			}
		}
	}
}

// branch reads a union's branch index and returns the branch, which must
// convert to t (compileRead's conv).
func (d *avDec) branch(n *avNode, t types.T) (*avNode, error) {
	k, err := d.long()
	if err != nil {
		return nil, err
	}
	if k < 0 || k >= int64(len(n.kids)) {
		return nil, errAvro("union branch %d of %d", k, len(n.kids))
	}
	if !n.conv[k] {
		return nil, sqlerr.New(sqlerr.InvalidBinaryRep, "union branch %d (%s) cannot be %s", k, n.kids[k].kind, t)
	}
	return n.kids[k], nil
}

// boolean reads a boolean.
func (d *avDec) boolean() (bool, error) {
	b, err := d.take(1)
	if err != nil {
		return false, err
	}
	if b[0] > 1 {
		return false, errAvro("boolean byte %d", b[0])
	}
	return b[0] == 1, nil
}

// integer reads an int (held to its range) or a long.
func (d *avDec) integer(n *avNode) (int64, error) {
	v, err := d.long()
	if err == nil && n.kind == avro.Int && (v < math.MinInt32 || v > math.MaxInt32) {
		err = errAvro("int %d out of range", v)
	}
	return v, err
}

// symbol reads an enum's symbol.
func (d *avDec) symbol(n *avNode) (string, error) {
	k, err := d.long()
	if err != nil {
		return "", err
	}
	if k < 0 || k >= int64(len(n.syms)) {
		return "", errAvro("enum symbol %d of %d", k, len(n.syms))
	}
	return n.syms[k], nil
}

// float reads a float or a double.
func (d *avDec) float(n *avNode) (float64, error) {
	if n.kind == avro.Float {
		v, err := d.take(4)
		if err != nil {
			return 0, err
		}
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(v))), nil
	}
	v, err := d.take(8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(v)), nil
}

// elem reads one array element of n, of element type et, into vb: the
// element's builder of the array's layout.
func (d *avDec) elem(n *avNode, vb array.Builder, et types.T) error {
	switch n.kind {
	case avro.Null:
		vb.AppendNull()
		return nil
	case avro.Union:
		kid, err := d.branch(n, et)
		if err != nil {
			return err
		}
		return d.elem(kid, vb, et)
	}
	var v types.Datum
	switch n.kind {
	case avro.Boolean:
		b, err := d.boolean()
		if err != nil {
			return err
		}
		v = types.Boolean(b)
	case avro.Int, avro.Long:
		i, err := d.integer(n)
		if err != nil {
			return err
		}
		if et.Physical() == types.PhysFloat64 {
			v = types.Float(float64(i))
			break
		}
		if i > math.MaxInt64/n.mul || i < math.MinInt64/n.mul {
			return sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range: %d", i)
		}
		v = types.Int(i * n.mul)
	case avro.Float, avro.Double:
		f, err := d.float(n)
		if err != nil {
			return err
		}
		v = types.Float(f)
	case avro.String, avro.Bytes:
		b, err := d.bytes()
		if err != nil {
			return err
		}
		if et.Kind == types.UUID {
			if v, err = types.ParseText(string(b), types.TUUID); err != nil {
				return err
			}
			break
		}
		if err := types.CheckText(b); err != nil {
			return err
		}
		vb.(*array.StringBuilder).BinaryBuilder.Append(b)
		return nil
	case avro.Enum:
		sym, err := d.symbol(n)
		if err != nil {
			return err
		}
		vb.(*array.StringBuilder).Append(sym)
		return nil
	default:
		return errAvro("cannot read a %s as an array element", n.kind)
	}
	if sb, ok := vb.(*array.StringBuilder); ok { // text and uuid elements
		d.js = types.AppendText(d.js[:0], v, et)
		sb.BinaryBuilder.Append(d.js)
		return nil
	}
	types.AppendDatum(vb, v, et)
	return nil
}

// appendText appends a string, held to the rules of text from a client
// (valid UTF-8, no NUL: 22021) and to a VARCHAR(n)'s length.
func appendText(bl array.Builder, t types.T, b []byte) error {
	if err := types.CheckText(b); err != nil {
		return err
	}
	if t.Prec == 0 {
		bl.(*array.StringBuilder).BinaryBuilder.Append(b)
		return nil
	}
	d, err := types.ParseText(string(b), t)
	if err != nil {
		return err
	}
	types.AppendDatum(bl, d, t)
	return nil
}

// decode decodes one record body into the builders: every payload column
// gets one value (the writer's or the reader's default).
func (p *avroProg) decode(body []byte, bls []array.Builder) error {
	if p == nil {
		return sqlerr.New(sqlerr.Internal, "avro writer schema not resolved")
	}
	if p.err != nil {
		return p.err
	}
	d := &p.dec
	d.b, d.i, d.depth = body, 0, 0
	for _, s := range p.steps {
		var err error
		if s.col < 0 {
			err = d.skip(s.n)
		} else {
			err = d.value(s.n, bls[s.col], s.t)
		}
		if err != nil {
			return err
		}
	}
	if d.i != len(d.b) {
		return errAvro("%d bytes after the record", len(d.b)-d.i)
	}
	for _, df := range p.defaults {
		types.AppendDatum(bls[df.col], df.d, df.t)
	}
	return nil
}

// avroHeader splits a message in the Confluent wire format into its
// schema id and record body.
func avroHeader(v []byte) (int32, []byte, error) {
	if v == nil {
		return 0, nil, sqlerr.New(sqlerr.InvalidBinaryRep, "message has no value (a tombstone)")
	}
	if len(v) < 5 || v[0] != 0 {
		return 0, nil, sqlerr.New(sqlerr.InvalidBinaryRep, "message is not in the schema registry's wire format (magic byte 0 and a 4-byte schema id)")
	}
	return int32(binary.BigEndian.Uint32(v[1:5])), v[5:], nil
}

// avroSubject is the registry subject of a topic's value schema
// (Confluent's TopicNameStrategy).
func avroSubject(topic string) string { return topic + "-value" }

// fetchReader makes the subject's latest schema the source's reader
// schema (CREATE SOURCE) and returns its columns.
func (c *kafka) fetchReader(regURL string) ([]connector.Column, error) {
	reg, err := schemaRegistry(regURL)
	if err != nil {
		return nil, err
	}
	ss, err := reg.latest(avroSubject(c.topic))
	if err != nil {
		return nil, err
	}
	rec, err := readerRecord(ss.Schema)
	if err != nil {
		return nil, err
	}
	c.reg, c.readerJSON, c.readerID, c.reader = reg, ss.Schema, ss.ID, rec
	return avroColumns(rec)
}

// setupAvro takes the reader schema (the stored one, or the registry's
// latest at CREATE SOURCE) and finds each payload column's reader field.
func (c *kafka) setupAvro(cols []connector.Column, regURL, stored, storedID string, hasStored bool) ([]connector.Column, error) {
	if c.reg == nil {
		reg, err := schemaRegistry(regURL)
		if err != nil {
			return nil, err
		}
		c.reg = reg
	}
	switch {
	case c.reader != nil:
	case hasStored:
		rec, err := readerRecord(stored)
		if err != nil {
			return nil, sqlerr.New(sqlerr.Internal, "stored avro schema of kafka source: %s", sqlerr.As(err).Msg)
		}
		id, _ := strconv.Atoi(storedID)
		c.reader, c.readerJSON, c.readerID = rec, stored, int32(id)
	default:
		if _, err := c.fetchReader(regURL); err != nil {
			return nil, err
		}
	}
	c.fields = make([]string, len(c.cols))
	for i, col := range c.cols {
		if col.meta != "" {
			continue
		}
		name, err := checkAvroColumn(c.reader, connector.Column{Name: col.name, Type: col.t})
		if err != nil {
			return nil, err
		}
		c.fields[i] = name
	}
	return cols, nil
}

// decimalNum reads a decimal's two's-complement big-endian unscaled value.
func decimalNum(b []byte) (decimal128.Num, error) {
	var buf [16]byte
	neg := len(b) > 0 && b[0]&0x80 != 0
	if neg {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	if len(b) > 16 {
		// Only sign extension may stand before the last 16 bytes.
		for _, c := range b[:len(b)-16] {
			if neg && c != 0xff || !neg && c != 0 {
				return decimal128.Num{}, sqlerr.New(sqlerr.NumericOutOfRange, "avro decimal of %d bytes out of range", len(b))
			}
		}
		b = b[len(b)-16:]
		if (b[0]&0x80 != 0) != neg {
			return decimal128.Num{}, sqlerr.New(sqlerr.NumericOutOfRange, "avro decimal out of range")
		}
	}
	copy(buf[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:])), nil
}

// appendDecimal appends an avro decimal of the given scale to a NUMERIC
// column, rounded to its scale and held to its precision (22003).
func appendDecimal(bl array.Builder, b []byte, scale int32, t types.T) error {
	n, err := decimalNum(b)
	if err != nil {
		return err
	}
	if n, err = types.Rescale(n, scale, t.Scale); err != nil {
		return err
	}
	if err := types.NumericFit(n, t); err != nil {
		return err
	}
	d := types.Datum{D: n}
	if t.Prec == 0 {
		d.DS = types.PackDScale(min(scale, t.Scale))
	}
	types.AppendDatum(bl, d, t)
	return nil
}

// json writes a value of n as JSON (a record, array or map read into a
// jsonb column): logical types as their SQL text (decimals as numbers),
// bytes and fixed as bytea's hex text.
func (d *avDec) json(n *avNode, b []byte) ([]byte, error) {
	switch n.kind {
	case avro.Null:
		return append(b, "null"...), nil
	case avro.Boolean:
		v, err := d.boolean()
		if err != nil {
			return b, err
		}
		return strconv.AppendBool(b, v), nil
	case avro.Int, avro.Long:
		v, err := d.long()
		if err != nil {
			return b, err
		}
		var t types.T
		switch n.lt {
		case avro.Date:
			t = types.TDate
		case avro.TimeMillis, avro.TimeMicros:
			t = types.TTime
		case avro.TimestampMillis, avro.TimestampMicros:
			t = types.TTimestampTZ
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			t = types.TTimestamp
		default:
			return strconv.AppendInt(b, v, 10), nil
		}
		if v > math.MaxInt64/n.mul || v < math.MinInt64/n.mul {
			return b, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range: %d", v)
		}
		b = append(b, '"')
		return append(types.AppendText(b, types.Int(v*n.mul), t), '"'), nil
	case avro.Float, avro.Double:
		f, err := d.float(n)
		if err != nil {
			return b, err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(b, `"`+strconv.FormatFloat(f, 'g', -1, 64)+`"`...), nil
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), nil
	case avro.String, avro.Bytes, avro.Fixed:
		var v []byte
		var err error
		if n.kind == avro.Fixed {
			v, err = d.take(int64(n.size))
		} else {
			v, err = d.bytes()
		}
		if err != nil {
			return b, err
		}
		switch {
		case n.lt == avro.Decimal:
			num, err := decimalNum(v)
			if err != nil {
				return b, err
			}
			return types.AppendNumeric(b, num, n.scale), nil
		case n.kind == avro.String:
			if err := types.CheckText(v); err != nil {
				return b, err
			}
			return types.AppendJSONString(b, string(v)), nil
		}
		b = append(b, `"\\x`...)
		b = hex.AppendEncode(b, v)
		return append(b, '"'), nil
	case avro.Enum:
		sym, err := d.symbol(n)
		if err != nil {
			return b, err
		}
		return types.AppendJSONString(b, sym), nil
	case avro.Union:
		k, err := d.long()
		if err != nil {
			return b, err
		}
		if k < 0 || k >= int64(len(n.kids)) {
			return b, errAvro("union branch %d of %d", k, len(n.kids))
		}
		return d.json(n.kids[k], b)
	case avro.Record:
		if d.depth++; d.depth > maxAvroDepth {
			return b, errAvro("nested too deep")
		}
		b = append(b, '{')
		for i, k := range n.kids {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(types.AppendJSONString(b, n.names[i]), ':')
			var err error
			if b, err = d.json(k, b); err != nil {
				return b, err
			}
		}
		d.depth--
		return append(b, '}'), nil
	case avro.Array, avro.Map:
		if d.depth++; d.depth > maxAvroDepth {
			return b, errAvro("nested too deep")
		}
		open, close := byte('['), byte(']')
		if n.kind == avro.Map {
			open, close = '{', '}'
		}
		b = append(b, open)
		first := true
		for {
			cnt, err := d.long()
			if err != nil {
				return b, err
			}
			if cnt == 0 {
				break
			}
			if cnt < 0 { // a block with its size
				cnt = -cnt
				if _, err := d.long(); err != nil {
					return b, err
				}
			}
			if cnt > int64(len(d.b)-d.i) {
				return b, errAvro("block of %d items past the end", cnt)
			}
			for ; cnt > 0; cnt-- {
				if !first {
					b = append(b, ',')
				}
				first = false
				if n.kind == avro.Map {
					k, err := d.bytes()
					if err != nil {
						return b, err
					}
					if err := types.CheckText(k); err != nil {
						return b, err
					}
					b = append(types.AppendJSONString(b, string(k)), ':')
				}
				if b, err = d.json(n.kids[0], b); err != nil {
					return b, err
				}
			}
		}
		d.depth--
		return append(b, close), nil
	}
	return b, errAvro("cannot read a %s", n.kind)
}
