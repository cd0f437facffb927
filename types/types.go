// Package types is streamdb's SQL type system: the PostgreSQL types users see,
// how each is laid out in Arrow arrays, and Datum, the boxed scalar used
// outside hot loops (constants, parameters, I/O).
//
// Physical layout (one Arrow type per kind, chosen so kernels have few cases):
//
//	BOOLEAN                               arrow Boolean
//	SMALLINT, INTEGER, BIGINT             arrow Int64 (range checked on write)
//	TIMESTAMP                             arrow Int64, microseconds since 1970-01-01 00:00:00
//	DATE                                  arrow Int64, days since 1970-01-01
//	REAL, DOUBLE PRECISION                arrow Float64 (REAL rounded to float32 on write)
//	NUMERIC(p,s)                          arrow Decimal128(38, s); unconstrained NUMERIC uses s = 16
//	TEXT, VARCHAR(n)                      arrow String
//	INTERVAL                              arrow MonthDayNanoInterval
//	TEXT[]                                arrow List<String> (elements may be NULL)
//	JSON, JSONB                           arrow String: json's text as written, jsonb's binary layout (jsonb.go)
//	UUID                                  arrow FixedSizeBinary(16): the 16 bytes (uuid.go)
//	BYTEA                                 arrow String: the bytes (bytea.go)
//	TIME                                  arrow Int64: microseconds since midnight (timeofday.go)
//	TIMETZ                                arrow Int64: time and zone packed in integer order (timetz.go)
//	RECORD                                arrow Struct of its fields' layouts (record.go)
package types

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Kind is a SQL type without its modifiers.
type Kind uint8

const (
	Unknown Kind = iota // the type of an untyped NULL or string literal before coercion
	Bool
	Int16
	Int32
	Int64
	Float32
	Float64
	Numeric
	Text
	Timestamp
	Date
	Interval
	TextArray // text[]: one-dimensional, lower bound 1 (see array.go)
	Record    // an anonymous composite (record.go): Prec indexes its fields
	JSON      // json: its input text, validated (json.go)
	JSONB     // jsonb: its binary layout (jsonb.go)
	UUID      // uuid: 16 bytes in Arrow, its canonical lowercase text as a Datum (uuid.go)
	Bytea     // bytea: its bytes (bytea.go)
	Time      // time without time zone: microseconds since midnight (timeofday.go)
	TimeTZ    // time with time zone: time and zone packed (timetz.go)
)

// UnconstrainedScale is the storage scale of NUMERIC without a declared scale.
const UnconstrainedScale = 16

// T is a SQL type with its modifiers.
type T struct {
	Kind Kind
	// TZ marks TIMESTAMP WITH TIME ZONE (timestamptz): the same UTC
	// microseconds, its input's zone applied, printed with the session's
	// offset (+00: TimeZone is UTC only).
	TZ bool `json:",omitempty"`
	// Prec and Scale are NUMERIC's precision and scale; Prec 0 means unconstrained.
	// For Text, Prec is VARCHAR's length limit (0: none).
	Prec, Scale int32
	// Pad marks CHARACTER(n) (bpchar), a Text with Prec n: values are
	// stored without trailing spaces, so comparison, grouping, length and
	// casts to text ignore them as PostgreSQL does, and are blank-padded
	// to n characters on output (text, binary, COPY).
	Pad bool `json:",omitempty"`
}

// Common types.
var (
	TUnknown   = T{Kind: Unknown}
	TBool      = T{Kind: Bool}
	TInt16     = T{Kind: Int16}
	TInt32     = T{Kind: Int32}
	TInt64     = T{Kind: Int64}
	TFloat32   = T{Kind: Float32}
	TFloat64   = T{Kind: Float64}
	TNumeric   = T{Kind: Numeric, Scale: UnconstrainedScale}
	TText      = T{Kind: Text}
	TTimestamp = T{Kind: Timestamp}
	// TTimestampTZ is timestamp with time zone.
	TTimestampTZ = T{Kind: Timestamp, TZ: true}
	TDate        = T{Kind: Date}
	TInterval    = T{Kind: Interval}
	TTextArray   = T{Kind: TextArray}
	TJSON        = T{Kind: JSON}
	TJSONB       = T{Kind: JSONB}
	TUUID        = T{Kind: UUID}
	TBytea       = T{Kind: Bytea}
	TTime        = T{Kind: Time}
	TTimeTZ      = T{Kind: TimeTZ}
)

// CharOf returns CHARACTER(n).
func CharOf(n int32) T { return T{Kind: Text, Prec: n, Pad: true} }

// NumericOf returns NUMERIC(prec, scale).
func NumericOf(prec, scale int32) T { return T{Kind: Numeric, Prec: prec, Scale: scale} }

// IsInteger reports whether t is SMALLINT, INTEGER or BIGINT.
func (t T) IsInteger() bool { return t.Kind == Int16 || t.Kind == Int32 || t.Kind == Int64 }

// IsFloat reports whether t is REAL or DOUBLE PRECISION.
func (t T) IsFloat() bool { return t.Kind == Float32 || t.Kind == Float64 }

// IsNumeric reports whether t is any number type.
func (t T) IsNumeric() bool { return t.IsInteger() || t.IsFloat() || t.Kind == Numeric }

// Physical is the Arrow layout class of a kind.
type Physical uint8

const (
	PhysNull Physical = iota
	PhysBool
	PhysInt64
	PhysFloat64
	PhysDecimal
	PhysString
	PhysInterval
	PhysList   // List<the element type's layout> (ArrayArrow)
	PhysStruct // Struct of the fields' layouts (records)
	PhysUUID   // FixedSizeBinary(16): uuid's bytes; its Datum is the canonical text (uuid.go)
)

// Physical returns t's Arrow layout class.
func (t T) Physical() Physical {
	switch t.Kind {
	case Bool:
		return PhysBool
	case Int16, Int32, Int64, Timestamp, Date, Time, TimeTZ:
		return PhysInt64
	case Float32, Float64:
		return PhysFloat64
	case Numeric:
		return PhysDecimal
	case Text, JSON, JSONB, Bytea:
		return PhysString
	case UUID:
		return PhysUUID
	case Interval:
		return PhysInterval
	case TextArray:
		return PhysList
	case Record:
		return PhysStruct
	}
	return PhysNull
}

// Arrow returns the Arrow type that holds values of t.
func (t T) Arrow() arrow.DataType {
	switch t.Physical() {
	case PhysBool:
		return arrow.FixedWidthTypes.Boolean
	case PhysInt64:
		return arrow.PrimitiveTypes.Int64
	case PhysFloat64:
		return arrow.PrimitiveTypes.Float64
	case PhysDecimal:
		return &arrow.Decimal128Type{Precision: 38, Scale: t.Scale}
	case PhysString:
		return arrow.BinaryTypes.String
	case PhysInterval:
		return arrow.FixedWidthTypes.MonthDayNanoInterval
	case PhysUUID:
		return UUIDArrow
	case PhysList:
		return ArrayArrow(t)
	case PhysStruct:
		return recordArrow(t)
	}
	return arrow.Null
}

// PostgreSQL type OIDs (pg_type.oid).
const (
	OIDBool        = 16
	OIDInt8        = 20
	OIDInt2        = 21
	OIDInt4        = 23
	OIDText        = 25
	OIDFloat4      = 700
	OIDFloat8      = 701
	OIDUnknown     = 705
	OIDVarchar     = 1043
	OIDBpchar      = 1042
	OIDDate        = 1082
	OIDTimestamp   = 1114
	OIDTimestampTZ = 1184
	OIDInterval    = 1186
	OIDNumeric     = 1700
	OIDTextArray   = 1009
	OIDInt2Array   = 1005
	OIDInt4Array   = 1007
	OIDInt8Array   = 1016
	OIDJSON        = 114
	OIDJSONB       = 3802
	OIDUUID        = 2950
	OIDBytea       = 17
	OIDTime        = 1083
	OIDTimeTZ      = 1266
)

// OID returns the PostgreSQL type OID of t.
func (t T) OID() uint32 {
	switch t.Kind {
	case Bool:
		return OIDBool
	case Int16:
		return OIDInt2
	case Int32:
		return OIDInt4
	case Int64:
		return OIDInt8
	case Float32:
		return OIDFloat4
	case Float64:
		return OIDFloat8
	case Numeric:
		return OIDNumeric
	case Text:
		if t.Pad {
			return OIDBpchar
		}
		if t.Prec > 0 {
			return OIDVarchar
		}
		return OIDText
	case Timestamp:
		if t.TZ {
			return OIDTimestampTZ
		}
		return OIDTimestamp
	case Date:
		return OIDDate
	case Interval:
		return OIDInterval
	case TextArray:
		return arrayOIDs[ArrayElem(t).Kind]
	case Record:
		return recordOID(t)
	case JSON:
		return OIDJSON
	case JSONB:
		return OIDJSONB
	case UUID:
		return OIDUUID
	case Bytea:
		return OIDBytea
	case Time:
		return OIDTime
	case TimeTZ:
		return OIDTimeTZ
	}
	return OIDText // untyped literals are sent as text, as PostgreSQL does
}

// FromOID returns the type for a PostgreSQL OID; ok is false for OIDs streamdb does not know.
func FromOID(oid uint32) (T, bool) {
	switch oid {
	case OIDBool:
		return TBool, true
	case OIDInt2:
		return TInt16, true
	case OIDInt4:
		return TInt32, true
	case OIDInt8:
		return TInt64, true
	case OIDFloat4:
		return TFloat32, true
	case OIDFloat8:
		return TFloat64, true
	case OIDNumeric:
		return TNumeric, true
	case OIDText, OIDVarchar, OIDBpchar:
		return TText, true
	case OIDTimestamp:
		return TTimestamp, true
	case OIDTimestampTZ:
		return TTimestampTZ, true
	case OIDDate:
		return TDate, true
	case OIDInterval:
		return TInterval, true
	case OIDTextArray:
		return TTextArray, true
	case OIDJSON:
		return TJSON, true
	case OIDJSONB:
		return TJSONB, true
	case OIDUUID:
		return TUUID, true
	case OIDBytea:
		return TBytea, true
	case OIDTime:
		return TTime, true
	case OIDTimeTZ:
		return TTimeTZ, true
	case 0, OIDUnknown:
		return TUnknown, true
	}
	return arrayFromOID(oid)
}

// Size is the pg_type.typlen reported in RowDescription (-1 for variable length).
func (t T) Size() int16 {
	switch t.Kind {
	case Bool:
		return 1
	case Int16:
		return 2
	case Int32, Float32, Date:
		return 4
	case Int64, Float64, Timestamp, Time:
		return 8
	case TimeTZ:
		return 12
	case Interval, UUID:
		return 16
	}
	return -1
}

// Modifier is the atttypmod reported in RowDescription (-1 if none).
func (t T) Modifier() int32 {
	switch {
	case t.Kind == Numeric && t.Prec > 0:
		return (t.Prec<<16 | t.Scale) + 4
	case t.Kind == Text && t.Prec > 0:
		return t.Prec + 4
	}
	return -1
}

// String returns the type's name as PostgreSQL prints it.
func (t T) String() string {
	switch t.Kind {
	case Bool:
		return "boolean"
	case Int16:
		return "smallint"
	case Int32:
		return "integer"
	case Int64:
		return "bigint"
	case Float32:
		return "real"
	case Float64:
		return "double precision"
	case Numeric:
		if t.Prec > 0 {
			return fmt.Sprintf("numeric(%d,%d)", t.Prec, t.Scale)
		}
		return "numeric"
	case Text:
		if t.Pad && t.Prec > 0 {
			return fmt.Sprintf("character(%d)", t.Prec)
		}
		if t.Pad {
			return "bpchar"
		}
		if t.Prec > 0 {
			return fmt.Sprintf("character varying(%d)", t.Prec)
		}
		return "text"
	case Timestamp:
		if t.TZ {
			return "timestamp with time zone"
		}
		return "timestamp without time zone"
	case Date:
		return "date"
	case Interval:
		return "interval"
	case TextArray:
		if t.Prec != 0 {
			return ArrayElem(t).String() + "[]"
		}
		return "text[]"
	case Record:
		return recordName(t)
	case JSON:
		return "json"
	case JSONB:
		return "jsonb"
	case UUID:
		return "uuid"
	case Bytea:
		return "bytea"
	case Time:
		return "time without time zone"
	case TimeTZ:
		return "time with time zone"
	}
	return "unknown"
}

// Datum is one boxed value of some type T (the type travels beside it).
// Which field holds the value depends on T.Physical(): PhysBool and
// PhysInt64 use I (bool as 0/1), PhysFloat64 F, PhysDecimal D (at T.Scale),
// PhysString S, PhysUUID S (the canonical text), PhysInterval IV, PhysList
// A, PhysStruct R.
type Datum struct {
	Null bool
	I    int64
	F    float64
	S    string
	D    decimal128.Num
	DS   int8 // an unconstrained NUMERIC's display scale + 1; 0: not known (dscale.go)
	IV   arrow.MonthDayNanoInterval
	A    *Array       // a pointer, so Datum stays comparable
	R    *RecordValue // likewise
}

// Null is the NULL datum.
var Null = Datum{Null: true}

// Int returns an integer-kind datum.
func Int(v int64) Datum { return Datum{I: v} }

// Float returns a float datum.
func Float(v float64) Datum { return Datum{F: v} }

// Str returns a text datum.
func Str(s string) Datum { return Datum{S: s} }

// Boolean returns a boolean datum.
func Boolean(b bool) Datum {
	if b {
		return Datum{I: 1}
	}
	return Datum{}
}
