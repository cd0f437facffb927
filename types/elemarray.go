package types

import (
	"encoding/binary"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrays of the scalar types (int4[], float8[], boolean[], ...):
// T{Kind: TextArray, Prec: int32(Int32)} is int4[] (ArrayOf). Prec 0 is
// text[]. In Arrow an array column is a List of the element type's own
// layout (ArrayArrow: List<Int64> for int4[], List<Float64> for float8[],
// List<String> for text[]); as a Datum (Array) the elements are the
// element type's canonical output text. Every write (text input, a cast, the binary format, ARRAY[...])
// checks each element as the element type's input does (22P02, 22003, ...)
// and writes it as that type's output does, so equal values have equal
// text except -0 and 0 of the float types (ArrayKey folds those). Ordering
// compares elements as the element type (CompareArrays).

// ArrayOf is the array type of element kind k (Text: text[], Numeric:
// unconstrained numeric[]).
func ArrayOf(k Kind) T {
	switch k {
	case Text:
		return TTextArray
	case Numeric:
		return ArrayOfT(TNumeric)
	}
	return T{Kind: TextArray, Prec: int32(k)}
}

// ArrayOfT is the array type of elements of type t (ArrayElemOK(t)). It
// is ArrayOf(t.Kind) except for NUMERIC, whose array keeps the element's
// precision and scale: numeric(p,s)[] is T{Kind: TextArray, Prec:
// Numeric | p<<8, Scale: s}, numeric[] has p 0 and the element's storage
// scale (UnconstrainedScale or more), so its list is Decimal128 at s.
func ArrayOfT(t T) T {
	if t.Kind == Numeric {
		return T{Kind: TextArray, Prec: int32(Numeric) | t.Prec<<8, Scale: t.Scale}
	}
	return ArrayOf(t.Kind)
}

// ArrayArrow is the Arrow type of an array of t: a List of the element
// type's layout.
func ArrayArrow(t T) arrow.DataType { return arrow.ListOf(ArrayElem(t).Arrow()) }

// ArrayOfArrow is an array type whose Arrow type is a List of dt: int8[],
// float8[], boolean[], uuid[], numeric[] or text[] (the layouts' own types), for data
// without SQL type metadata.
func ArrayOfArrow(dt arrow.DataType) T {
	switch dt.ID() {
	case arrow.INT64:
		return ArrayOf(Int64)
	case arrow.FLOAT64:
		return ArrayOf(Float64)
	case arrow.BOOL:
		return ArrayOf(Bool)
	case arrow.FIXED_SIZE_BINARY:
		return ArrayOf(UUID)
	case arrow.DECIMAL128: // numeric[] at the list's scale (its values may carry display scales)
		return ArrayOfT(T{Kind: Numeric, Scale: dt.(*arrow.Decimal128Type).Scale})
	}
	return TTextArray
}

// IntArray is the array type of integer kind k.
func IntArray(k Kind) T { return ArrayOf(k) }

// ArrayExprOf is the type of an array expression whose elements are of
// type t (array_agg, ARRAY[...], ARRAY(SELECT ...)): as in PostgreSQL an
// array value has no type modifier, so numeric(p,s) elements make a
// numeric[] (the elements keep their display scale s); varchar(n)
// elements make text[].
func ArrayExprOf(t T) T {
	if t.Kind == Numeric {
		return ArrayOfT(T{Kind: Numeric, Scale: max(t.Scale, UnconstrainedScale)})
	}
	return ArrayOf(t.Kind)
}

// ArrayElemOK reports whether arrays of t exist (ArrayOf(t.Kind)).
func ArrayElemOK(t T) bool {
	switch t.Kind {
	case Bool, Int16, Int32, Int64, Float32, Float64, Date, UUID, Numeric:
		return true
	case Text:
		return true // varchar(n)[] is text[]
	case Timestamp:
		return !t.TZ
	}
	return false
}

// ArrayElem is the element type of an array type.
func ArrayElem(t T) T {
	if t.Kind == TextArray && t.Prec != 0 {
		if k := Kind(t.Prec & 0xff); k == Numeric {
			return T{Kind: Numeric, Prec: t.Prec >> 8, Scale: t.Scale}
		}
		return T{Kind: Kind(t.Prec)}
	}
	return TText
}

// arrayOIDs maps an element kind to its array type's OID.
var arrayOIDs = map[Kind]uint32{
	Bool: 1000, Int16: OIDInt2Array, Int32: OIDInt4Array, Int64: OIDInt8Array, Text: OIDTextArray,
	Float32: 1021, Float64: 1022, Date: 1182, Timestamp: 1115, UUID: 2951, Numeric: 1231,
}

// ArrayOIDOf returns the OID of the array type whose elements are t (0: none).
func ArrayOIDOf(t T) uint32 {
	if !ArrayElemOK(t) {
		return 0
	}
	return arrayOIDs[t.Kind]
}

// arrayFromOID returns the array type of an array OID.
func arrayFromOID(oid uint32) (T, bool) {
	if oid == 1015 || oid == 1003 { // varchar[], name[]
		return TTextArray, true
	}
	for k, o := range arrayOIDs {
		if o == oid {
			return ArrayOf(k), true
		}
	}
	return T{}, false
}

// checkArrayElems returns a with each element read as t's element type.
func checkArrayElems(a *Array, t T) (Datum, error) {
	elem := ArrayElem(t)
	if a == nil || elem.Kind == Text {
		return Datum{A: a}, nil
	}
	out := &Array{Elems: make([]string, len(a.Elems)), Null: a.Null}
	var buf []byte
	for i, s := range a.Elems {
		if a.IsNull(i) {
			continue
		}
		d, err := ParseText(s, elem)
		if err != nil {
			return Null, err
		}
		buf = AppendText(buf[:0], d, elem)
		out.Elems[i] = string(buf)
	}
	return Datum{A: out}, nil
}

// ArrayElemDatum reads element s of an array of t (written by checkArrayElems).
func ArrayElemDatum(s string, t T) Datum {
	elem := ArrayElem(t)
	if elem.Kind == Text {
		return Str(s)
	}
	d, _ := ParseText(s, elem)
	return d
}

// CompareArrays orders two arrays of t as PostgreSQL's btree array_cmp:
// element by element (a NULL element after any value), then the shorter first.
func CompareArrays(x, y *Array, t T) int {
	elem := ArrayElem(t)
	for i := 0; i < len(x.Elems) && i < len(y.Elems); i++ {
		xn, yn := x.IsNull(i), y.IsNull(i)
		switch {
		case xn && yn:
			continue
		case xn:
			return 1
		case yn:
			return -1
		}
		if c := compareElems(x.Elems[i], y.Elems[i], elem); c != 0 {
			return c
		}
	}
	return cmpInt(len(x.Elems), len(y.Elems))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareElems(x, y string, elem T) int {
	switch elem.Physical() {
	case PhysString, PhysUUID:
		return strings.Compare(x, y)
	case PhysFloat64:
		a, _ := ParseText(x, elem)
		b, _ := ParseText(y, elem)
		an, bn := a.F != a.F, b.F != b.F // NaN above everything, equal to itself
		switch {
		case an || bn:
			return cmpInt(b2i(an), b2i(bn))
		case a.F < b.F:
			return -1
		case a.F > b.F:
			return 1
		}
		return 0
	case PhysDecimal:
		a, _ := ParseText(x, elem)
		b, _ := ParseText(y, elem)
		return a.D.Cmp(b.D)
	}
	a, _ := ParseText(x, elem)
	b, _ := ParseText(y, elem)
	switch {
	case a.I < b.I:
		return -1
	case a.I > b.I:
		return 1
	}
	return 0
}

// trimNumericText drops the trailing fractional zeros (and a bare point)
// of a numeric's output text.
func trimNumericText(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ArrayKey returns a text that is equal for two arrays of t exactly when
// PostgreSQL's = finds them equal: array_out's text, with float elements
// -0 written 0 and numeric elements without trailing fractional zeros
// (1.50 = 1.5). Grouping by an array groups by this key.
func ArrayKey(a *Array, t T) string {
	if ArrayElem(t).Kind == Numeric {
		c := &Array{Elems: make([]string, len(a.Elems)), Null: a.Null}
		for i, s := range a.Elems {
			c.Elems[i] = trimNumericText(s)
		}
		a = c
	}
	if k := ArrayElem(t).Kind; k == Float32 || k == Float64 {
		var c *Array
		for i, s := range a.Elems {
			if s == "-0" && !a.IsNull(i) {
				if c == nil {
					c = &Array{Elems: append([]string(nil), a.Elems...), Null: a.Null}
				}
				c.Elems[i] = "0"
			}
		}
		if c != nil {
			a = c
		}
	}
	return string(AppendTextArray(nil, a))
}

// appendElemArrayBinary writes array_send's layout of an array of a
// non-text element type (elements checked by checkArrayElems, so they parse).
func appendElemArrayBinary(buf []byte, a *Array, t T) []byte {
	elem := ArrayElem(t)
	hasNull := arrayHasNullFlag(a)
	ndim := uint32(1)
	if len(a.Elems) == 0 {
		ndim, hasNull = 0, 0
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	buf = binary.BigEndian.AppendUint32(buf, hasNull)
	buf = binary.BigEndian.AppendUint32(buf, elem.OID())
	if ndim == 0 {
		return buf
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(a.Elems)))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	for i, s := range a.Elems {
		if a.IsNull(i) {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		d, _ := ParseText(s, elem)
		at := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 0)
		buf = AppendBinary(buf, d, elem)
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf
}

// arrayHasNullFlag is array_send's has-nulls flag: set when an element
// is NULL. (PostgreSQL also sets it for a slice of an array with NULLs
// that has none itself, as it keeps the null bitmap; streamdb does not.)
func arrayHasNullFlag(a *Array) uint32 {
	for i := range a.Elems {
		if a.IsNull(i) {
			return 1
		}
	}
	return 0
}

// oldLayout reports whether field f holds a layout UpgradeArrayLayout
// rewrites, and the column's SQL type.
func oldLayout(f arrow.Field) (T, bool) {
	switch dt := f.Type.(type) {
	case *arrow.ListType:
		if dt.Elem().ID() != arrow.STRING {
			return T{}, false
		}
		t := TypeOfField(f)
		return t, t.Kind == TextArray && ArrayElem(t).Arrow().ID() != arrow.STRING
	case *arrow.StringType:
		t := TypeOfField(f)
		return t, t.Kind == UUID
	}
	return T{}, false
}

// UpgradeArrayLayout rewrites the columns of rec that hold a layout of
// before: arrays written before typed lists (List<String> of the elements'
// text, for an array whose element type is not text) into the List of the
// element type's layout, and uuid columns written as their canonical text
// (String) into FixedSizeBinary(16), reading each column's SQL type from
// its field metadata (MetaType; log blocks of tables and streams carry
// it). It returns rec itself (not retained again) when no column needs
// it; otherwise a new record, and rec is released.
func UpgradeArrayLayout(rec arrow.RecordBatch) arrow.RecordBatch {
	return upgradeLayout(rec, func(_ int, f arrow.Field) (T, bool) { return oldLayout(f) })
}

// HasOldLayout reports whether columns of types ts may have been written
// in a layout UpgradeLayoutTo rewrites (uuid, uuid[]).
func HasOldLayout(ts []T) bool {
	for _, t := range ts {
		if t.Kind == UUID || t.Kind == TextArray && ArrayElem(t).Kind == UUID {
			return true
		}
	}
	return false
}

// UpgradeLayoutTo is UpgradeArrayLayout for a block whose fields may lack
// the type metadata: column c is read as ts[c] (columns past ts as they
// are). It rewrites uuid columns held as String and uuid[] columns held as
// List<String>.
func UpgradeLayoutTo(rec arrow.RecordBatch, ts []T) arrow.RecordBatch {
	return upgradeLayout(rec, func(c int, f arrow.Field) (T, bool) {
		if c >= len(ts) {
			return T{}, false
		}
		t := ts[c]
		switch dt := f.Type.(type) {
		case *arrow.StringType:
			return t, t.Kind == UUID
		case *arrow.ListType:
			return t, dt.Elem().ID() == arrow.STRING && t.Kind == TextArray && ArrayElem(t).Kind == UUID
		}
		return T{}, false
	})
}

// upgradeLayout rewrites the columns of rec for which old says so into the
// layout of the type it returns.
func upgradeLayout(rec arrow.RecordBatch, old func(c int, f arrow.Field) (T, bool)) arrow.RecordBatch {
	var cols []arrow.Array
	var fields []arrow.Field
	for c, f := range rec.Schema().Fields() {
		t, ok := old(c, f)
		if !ok {
			continue
		}
		if cols == nil {
			cols = append([]arrow.Array(nil), rec.Columns()...)
			fields = append([]arrow.Field(nil), rec.Schema().Fields()...)
		}
		b := NewBuilder(memory.DefaultAllocator, t)
		switch old := rec.Column(c).(type) {
		case *array.List:
			for i := 0; i < old.Len(); i++ {
				if old.IsNull(i) {
					b.AppendNull()
					continue
				}
				// The old layout held each element's output text (checked on
				// write), which the typed builder reads back.
				AppendDatum(b, Datum{A: TextArrayAt(old, i, TTextArray)}, t)
			}
		case *array.String: // uuid as its canonical text
			for i := 0; i < old.Len(); i++ {
				AppendDatum(b, DatumAt(old, i, TText), t)
			}
		}
		cols[c] = b.NewArray()
		b.Release()
		fields[c] = Field(f.Name, t)
	}
	if cols == nil {
		return rec
	}
	md := rec.Schema().Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rec.NumRows())
	for c := range cols {
		if cols[c] != rec.Column(c) {
			cols[c].Release()
		}
	}
	rec.Release()
	return out
}
