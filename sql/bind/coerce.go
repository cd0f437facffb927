package bind

import "github.com/streamdb/streamdb/types"

// This file holds the type-system rules the binder needs beyond package
// types: assignment casts and the names PostgreSQL gives cast columns.

// numRank orders the number types by PostgreSQL's implicit-cast direction.
func numRank(k types.Kind) int {
	switch k {
	case types.Int16:
		return 1
	case types.Int32:
		return 2
	case types.Int64:
		return 3
	case types.Numeric:
		return 4
	case types.Float32:
		return 5
	case types.Float64:
		return 6
	}
	return 0
}

// canAssign reports whether a value of type from may be stored in a column
// of type to (PostgreSQL's implicit and assignment casts).
func canAssign(from, to types.T) bool {
	switch {
	case from.Kind == to.Kind, from.Kind == types.Unknown:
		return true
	case from.IsNumeric() && to.IsNumeric():
		return true
	case to.Kind == types.Text:
		return true
	case from.Kind == types.Date && to.Kind == types.Timestamp, from.Kind == types.Timestamp && to.Kind == types.Date:
		return true
	}
	return false
}

// typeName is how PostgreSQL names a type in error messages
// (format_type_be): without modifiers, so numeric(10,2) is numeric and
// varchar(5) is character varying.
func typeName(t types.T) string {
	switch {
	case t.Kind == types.Numeric:
		return "numeric"
	case t.Pad:
		return "character"
	case t.Kind == types.Text && t.Prec > 0:
		return "character varying"
	}
	return t.String()
}

// pgTypeName is the internal name PostgreSQL gives a cast's output column
// (SELECT 1::int is named int4).
func pgTypeName(t types.T) string {
	switch t.Kind {
	case types.Bool:
		return "bool"
	case types.Int16:
		return "int2"
	case types.Int32:
		return "int4"
	case types.Int64:
		return "int8"
	case types.Float32:
		return "float4"
	case types.Float64:
		return "float8"
	case types.Numeric:
		return "numeric"
	case types.Text:
		if t.Pad {
			return "bpchar"
		}
		if t.Prec > 0 {
			return "varchar"
		}
		return "text"
	case types.Timestamp:
		if t.TZ {
			return "timestamptz"
		}
		return "timestamp"
	case types.Date:
		return "date"
	case types.Interval:
		return "interval"
	case types.JSON:
		return "json"
	case types.JSONB:
		return "jsonb"
	case types.UUID:
		return "uuid"
	case types.Bytea:
		return "bytea"
	case types.Time:
		return "time"
	case types.TimeTZ:
		return "timetz"
	case types.Record:
		if n := types.CompositeName(t); n != "" {
			return n
		}
		return "record"
	}
	return "?column?"
}

// commonType is types.CommonType, except that two NUMERICs with the same
// static display scale meet at that scale (numeric(10,2) and numeric(12,2)
// give NUMERIC(38,2)). Mixed scales give unconstrained NUMERIC, stored at a
// scale that keeps every digit: in PostgreSQL each value keeps its own
// scale (COALESCE(NULL, 1, 2.5) prints 1), which trimming reproduces
// better than padding to the widest scale would.
func commonType(a, b types.T) (types.T, bool) {
	t, ok := types.CommonType(a, b)
	if ok && t.Kind == types.Numeric && t.Prec == 0 && a.Kind != types.Unknown && b.Kind != types.Unknown {
		t = numericResult(a, b, func(sa, sb int32) int32 { return max(sa, sb) })
		if t.Prec > 0 && (a.Kind != b.Kind || a.Scale != b.Scale) {
			t = types.T{Kind: types.Numeric, Scale: max(t.Scale, types.UnconstrainedScale)}
		}
	}
	return t, ok
}
