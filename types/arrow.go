package types

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Boxed access to Arrow arrays, for code outside hot loops. Kernels should
// type-switch on the array once and loop over its values directly.

// DatumAt returns element i of arr, which holds values of t in t's physical layout.
func DatumAt(arr arrow.Array, i int, t T) Datum {
	if arr.IsNull(i) {
		return Null
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return Boolean(a.Value(i))
	case *array.Int64:
		return Int(a.Value(i))
	case *array.Float64:
		return Float(a.Value(i))
	case *array.Decimal128:
		if ds := DScales(a); ds != nil {
			return Datum{D: a.Value(i), DS: ds[i]}
		}
		return Datum{D: a.Value(i)}
	case *array.String:
		return Str(a.Value(i))
	case *array.FixedSizeBinary:
		return Str(UUIDText(a.Value(i)))
	case *array.MonthDayNanoInterval:
		return Datum{IV: a.Value(i)}
	case *array.List:
		return Datum{A: TextArrayAt(a, i, t)}
	case *array.Struct:
		return recordAt(a, i, t)
	case *array.Null:
		return Null
	}
	panic(fmt.Sprintf("types: DatumAt on %s for %s", arr.DataType(), t))
}

// AppendDatum appends d to b, a builder for t's physical layout (see NewBuilder).
// REAL values are rounded to float32 on the way in.
func AppendDatum(b array.Builder, d Datum, t T) {
	if d.Null {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *DecimalBuilder:
		bb.AppendDS(d.D, d.DS)
	case *array.BooleanBuilder:
		bb.Append(d.I != 0)
	case *array.Int64Builder:
		bb.Append(d.I)
	case *array.Float64Builder:
		if t.Kind == Float32 {
			bb.Append(float64(float32(d.F)))
		} else {
			bb.Append(d.F)
		}
	case *array.Decimal128Builder:
		bb.Append(d.D)
	case *array.StringBuilder:
		bb.Append(d.S)
	case *array.FixedSizeBinaryBuilder:
		u := UUIDBytes(d.S)
		bb.Append(u[:])
	case *array.MonthDayNanoIntervalBuilder:
		bb.Append(d.IV)
	case *array.ListBuilder:
		appendTextArray(bb, d.A, t)
	case *NumericListBuilder:
		appendTextArray(bb, d.A, t)
	case *array.StructBuilder:
		appendRecord(bb, d, t)
	case *array.NullBuilder:
		bb.AppendNull()
	default:
		panic(fmt.Sprintf("types: AppendDatum to %T for %s", b, t))
	}
}

// NewBuilder returns a builder for arrays of t. The caller releases it.
func NewBuilder(mem memory.Allocator, t T) array.Builder {
	if t.Kind == Numeric && t.Prec == 0 {
		return NewDecimalBuilder(mem, t.Arrow().(*arrow.Decimal128Type))
	}
	if t.Kind == TextArray && ArrayElem(t).Kind == Numeric && ArrayElem(t).Prec == 0 {
		return NewNumericListBuilder(mem, t)
	}
	return array.NewBuilder(mem, t.Arrow())
}

// NewDecimalBuilder returns a builder of dt's decimals that carry their
// display scales.
func NewDecimalBuilder(mem memory.Allocator, dt *arrow.Decimal128Type) *DecimalBuilder {
	return &DecimalBuilder{Decimal128Builder: array.NewDecimal128Builder(mem, dt)}
}

// MetaType is the Arrow field metadata key that holds a column's SQL type.
const MetaType = "sql.type"

// Schema returns an Arrow schema for columns names of types ts (all
// nullable); each field records its SQL type under MetaType.
func Schema(names []string, ts []T) *arrow.Schema {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = Field(n, ts[i])
	}
	return arrow.NewSchema(fields, nil)
}

// Field returns a nullable Arrow field for a column of type t.
func Field(name string, t T) arrow.Field {
	return arrow.Field{
		Name:     name,
		Type:     t.Arrow(),
		Nullable: true,
		Metadata: arrow.NewMetadata([]string{MetaType}, []string{EncodeType(t)}),
	}
}

// TypesOf reads back the SQL types of a schema made by Schema. Fields
// without the metadata get the type their Arrow type suggests.
func TypesOf(s *arrow.Schema) []T {
	ts := make([]T, s.NumFields())
	for i, f := range s.Fields() {
		ts[i] = TypeOfField(f)
	}
	return ts
}

// TypeOfField returns the SQL type recorded in f, or one guessed from its Arrow type.
func TypeOfField(f arrow.Field) T {
	if v, ok := f.Metadata.GetValue(MetaType); ok {
		if t, ok := DecodeType(v); ok {
			return t
		}
	}
	switch dt := f.Type.(type) {
	case *arrow.BooleanType:
		return TBool
	case *arrow.Int64Type:
		return TInt64
	case *arrow.Float64Type:
		return TFloat64
	case *arrow.Decimal128Type:
		return T{Kind: Numeric, Scale: dt.Scale}
	case *arrow.StringType:
		return TText
	case *arrow.MonthDayNanoIntervalType:
		return TInterval
	case *arrow.FixedSizeBinaryType:
		if dt.ByteWidth == 16 {
			return TUUID
		}
	case *arrow.ListType:
		return ArrayOfArrow(dt.Elem())
	}
	return TUnknown
}

// EncodeType returns a string DecodeType turns back into t: the type's
// PostgreSQL name, except that an unconstrained NUMERIC stored at a scale
// other than UnconstrainedScale is written numeric(0,s).
func EncodeType(t T) string {
	if t.Kind == Numeric && t.Prec == 0 && t.Scale != UnconstrainedScale {
		return "numeric(0," + strconv.Itoa(int(t.Scale)) + ")"
	}
	if t.Kind == Record {
		return shapeKey(shape(t))
	}
	if t.Kind == TextArray && ArrayElem(t).Kind == Numeric {
		return EncodeType(ArrayElem(t)) + "[]"
	}
	return t.String()
}

// DecodeType parses EncodeType's output.
func DecodeType(s string) (T, bool) {
	switch s {
	case "boolean":
		return TBool, true
	case "smallint":
		return TInt16, true
	case "integer":
		return TInt32, true
	case "bigint":
		return TInt64, true
	case "real":
		return TFloat32, true
	case "double precision":
		return TFloat64, true
	case "numeric":
		return TNumeric, true
	case "text":
		return TText, true
	case "timestamp without time zone":
		return TTimestamp, true
	case "timestamp with time zone":
		return TTimestampTZ, true
	case "date":
		return TDate, true
	case "interval":
		return TInterval, true
	case "text[]":
		return TTextArray, true
	case "json":
		return TJSON, true
	case "jsonb":
		return TJSONB, true
	case "uuid":
		return TUUID, true
	case "bytea":
		return TBytea, true
	case "time without time zone":
		return TTime, true
	case "time with time zone":
		return TTimeTZ, true
	case "unknown":
		return TUnknown, true
	}
	if elem, ok := strings.CutSuffix(s, "[]"); ok {
		if e, ok := DecodeType(elem); ok && ArrayElemOK(e) {
			return ArrayOfT(e), true
		}
		return T{}, false
	}
	if strings.HasPrefix(s, "record(") || strings.HasPrefix(s, "composite ") || strings.HasPrefix(s, "struct ") {
		return decodeRecordType(s)
	}
	if args, ok := strings.CutPrefix(s, "numeric("); ok {
		p, sc, ok := strings.Cut(strings.TrimSuffix(args, ")"), ",")
		prec, err1 := strconv.ParseInt(p, 10, 32)
		scale, err2 := strconv.ParseInt(sc, 10, 32)
		if ok && err1 == nil && err2 == nil && strings.HasSuffix(args, ")") {
			return T{Kind: Numeric, Prec: int32(prec), Scale: int32(scale)}, true
		}
	}
	if args, ok := strings.CutPrefix(s, "character varying("); ok && strings.HasSuffix(args, ")") {
		n, err := strconv.ParseInt(strings.TrimSuffix(args, ")"), 10, 32)
		if err == nil && n > 0 && n <= math.MaxInt32 {
			return T{Kind: Text, Prec: int32(n)}, true
		}
	}
	if args, ok := strings.CutPrefix(s, "character("); ok && strings.HasSuffix(args, ")") {
		n, err := strconv.ParseInt(strings.TrimSuffix(args, ")"), 10, 32)
		if err == nil && n > 0 && n <= math.MaxInt32 {
			return CharOf(int32(n)), true
		}
	}
	return T{}, false
}

// NullArray is n NULLs of type t. A BIGINT-like, DOUBLE or text column of
// up to len(nullZeros)/8 rows allocates nothing: its bitmap, values and
// offsets are slices of one read-only zero buffer (a NULL's validity bit,
// value slot and offsets are zero; a buffer with no allocator is never
// freed or recycled, and Arrow arrays are not written after they are made).
func NullArray(mem memory.Allocator, t T, n int) arrow.Array {
	if n > 0 && 8*n <= len(nullZeros) {
		var bufs []*memory.Buffer
		switch t.Physical() {
		case PhysInt64, PhysFloat64:
			bufs = []*memory.Buffer{memory.NewBufferBytes(nullZeros[:(n+7)/8]), memory.NewBufferBytes(nullZeros[:8*n])}
		case PhysString:
			if t.Arrow().ID() == arrow.STRING {
				bufs = []*memory.Buffer{memory.NewBufferBytes(nullZeros[:(n+7)/8]), memory.NewBufferBytes(nullZeros[:4*(n+1)]), memory.NewBufferBytes(nil)}
			}
		}
		if bufs != nil {
			data := array.NewData(t.Arrow(), n, bufs, nil, n, 0)
			defer data.Release()
			return array.MakeFromData(data)
		}
	}
	b := NewBuilder(mem, t)
	defer b.Release()
	b.AppendNulls(n)
	return b.NewArray()
}

// nullZeros backs NullArray's columns.
var nullZeros = make([]byte, 8*(64<<10))
