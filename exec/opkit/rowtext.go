package opkit

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/types"
)

// RowText renders row i of rec as (v1, v2, ...).
func RowText(rec arrow.RecordBatch, i int) string {
	var b strings.Builder
	b.WriteByte('(')
	for c := 0; c < int(rec.NumCols()); c++ {
		if c > 0 {
			b.WriteString(", ")
		}
		col := rec.Column(c)
		if col.IsNull(i) {
			b.WriteString("NULL")
			continue
		}
		t := TypeOfArrow(col)
		b.WriteString(types.TextOf(types.DatumAt(col, i, t), t))
	}
	b.WriteByte(')')
	return b.String()
}

// TypeOfArrow recovers a SQL type that has rec's physical layout.
func TypeOfArrow(a arrow.Array) types.T { return TypeOfArrowType(a.DataType()) }

func TypeOfArrowType(dt arrow.DataType) types.T {
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return types.TBool
	case *arrow.Int64Type:
		return types.TInt64
	case *arrow.Float64Type:
		return types.TFloat64
	case *arrow.Decimal128Type:
		return types.NumericOf(38, dt.Scale)
	case *arrow.StringType:
		return types.TText
	case *arrow.MonthDayNanoIntervalType:
		return types.TInterval
	case *arrow.FixedSizeBinaryType:
		return types.TUUID
	case *arrow.ListType: // an array: a list of one of these layouts
		return types.ArrayOfArrow(dt.Elem())
	case *arrow.StructType: // a record: one of its fields' layouts
		fs := make([]types.RecordField, dt.NumFields())
		for i, f := range dt.Fields() {
			fs[i] = types.RecordField{Name: f.Name, T: TypeOfArrowType(f.Type)}
		}
		return types.RecordOf(fs)
	}
	return types.TUnknown
}
