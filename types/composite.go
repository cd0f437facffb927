package types

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/streamdb/streamdb/sqlerr"
)

// Named composite types (CREATE TYPE name AS (field type, ...)) and
// STRUCT<field type, ...> column types are record types (record.go) whose
// registered shape also carries the type's name and pg_type oid, or the
// struct mark. EncodeType writes the whole shape, so a column's type is
// self-contained in the catalog and in Arrow schema metadata; the names
// users can write in DDL and casts are the ones the engine registers from
// its catalog (RegisterComposite), which TypeNamed looks up.

var composites struct {
	mu     sync.RWMutex
	byName map[string]T
}

// CompositeOf returns the named composite type name with the given pg_type
// oid and fields (it is not registered under its name: RegisterComposite).
func CompositeOf(name string, oid uint32, fields []RecordField) T {
	return registerShape(recordShape{fields: fields, name: name, oid: oid})
}

// RegisterComposite makes t (a CompositeOf type) known by its name.
func RegisterComposite(t T) {
	composites.mu.Lock()
	defer composites.mu.Unlock()
	if composites.byName == nil {
		composites.byName = map[string]T{}
	}
	composites.byName[shape(t).name] = t
}

// UnregisterComposite forgets the composite type name (DROP TYPE).
func UnregisterComposite(name string) {
	composites.mu.Lock()
	defer composites.mu.Unlock()
	delete(composites.byName, name)
}

// TypeNamed returns the registered composite type called name.
func TypeNamed(name string) (T, bool) {
	composites.mu.RLock()
	defer composites.mu.RUnlock()
	t, ok := composites.byName[name]
	return t, ok
}

// Composites returns every registered composite type.
func Composites() []T {
	composites.mu.RLock()
	defer composites.mu.RUnlock()
	out := make([]T, 0, len(composites.byName))
	for _, t := range composites.byName {
		out = append(out, t)
	}
	return out
}

// CompositeName returns the name of a named composite type ("" for any
// other type).
func CompositeName(t T) string { return shape(t).name }

// IsStruct reports whether t is a STRUCT<...> type.
func IsStruct(t T) bool { return shape(t).strukt }

// Uses reports whether type t is or contains (as a field, at any depth)
// the composite type c.
func Uses(t, c T) bool {
	if t == c {
		return true
	}
	for _, f := range RecordFields(t) {
		if Uses(f.T, c) {
			return true
		}
	}
	return false
}

// recordName is T.String of a record type: a composite's name,
// struct<name type, ...> for a STRUCT, else record.
func recordName(t T) string {
	sh := shape(t)
	switch {
	case sh.name != "":
		return sh.name
	case sh.strukt:
		var b strings.Builder
		b.WriteString("struct<")
		for i, f := range sh.fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteByte(' ')
			b.WriteString(f.T.String())
		}
		b.WriteByte('>')
		return b.String()
	}
	return "record"
}

// recordOID is T.OID of a record type: a composite's own oid, else record's.
func recordOID(t T) uint32 {
	if sh := shape(t); sh.oid != 0 {
		return sh.oid
	}
	return OIDRecord
}

// tJSON is T's default JSON form.
type tJSON T

// tRecordJSON is a record type's JSON form: its Prec is an index into this
// process's registry, so the shape itself (EncodeType) is written instead.
type tRecordJSON struct {
	Kind  Kind
	Shape string
}

// MarshalJSON writes t; a record type as its shape (catalog entries keep
// column types as JSON and must survive a restart).
func (t T) MarshalJSON() ([]byte, error) {
	if t.Kind == Record && t.Prec > 0 {
		return json.Marshal(tRecordJSON{Kind: Record, Shape: EncodeType(t)})
	}
	return json.Marshal(tJSON(t))
}

// UnmarshalJSON reads MarshalJSON's form.
func (t *T) UnmarshalJSON(b []byte) error {
	var r tRecordJSON
	if err := json.Unmarshal(b, &r); err == nil && r.Kind == Record && r.Shape != "" {
		rt, ok := DecodeType(r.Shape)
		if !ok {
			return sqlerr.New(sqlerr.Internal, "bad record type %q", r.Shape)
		}
		*t = rt
		return nil
	}
	return json.Unmarshal(b, (*tJSON)(t))
}

// parseRecordText is record_in: "(f1,f2,...)" with each field read by its
// type's input function; an empty unquoted field is NULL, a field may be
// double-quoted ("" and \ escape inside), and outside quotes a backslash
// escapes the next character. Malformed text is 22P02, as PostgreSQL's.
func parseRecordText(s string, t T) (Datum, error) {
	fs := RecordFields(t)
	if t.Prec <= 0 {
		return Null, errRecordInput()
	}
	bad := func(detail string) error {
		e := sqlerr.New(sqlerr.InvalidTextRep, "malformed record literal: \"%s\"", s)
		e.Detail = detail
		return e
	}
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i >= len(s) || s[i] != '(' {
		return Null, bad("Missing left parenthesis.")
	}
	i++
	r := &RecordValue{Fields: make([]Datum, len(fs))}
	var buf []byte
	for k, f := range fs {
		if k > 0 {
			if i >= len(s) || s[i] != ',' {
				return Null, bad("Too few columns.")
			}
			i++
		}
		if i < len(s) && (s[i] == ',' || s[i] == ')') {
			r.Fields[k] = Null
			continue
		}
		buf = buf[:0]
		inQuote := false
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' {
				if i+1 >= len(s) {
					return Null, bad("Unexpected end of input.")
				}
				i++
				buf = append(buf, s[i])
				continue
			}
			if c == '"' {
				if inQuote && i+1 < len(s) && s[i+1] == '"' {
					buf = append(buf, '"')
					i++
					continue
				}
				inQuote = !inQuote
				continue
			}
			if !inQuote && (c == ',' || c == ')') {
				break
			}
			buf = append(buf, c)
		}
		if i >= len(s) {
			return Null, bad("Unexpected end of input.")
		}
		d, err := ParseText(string(buf), f.T)
		if err != nil {
			return Null, err
		}
		r.Fields[k] = d
	}
	if i >= len(s) || s[i] != ')' {
		return Null, bad("Too many columns.")
	}
	i++
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i < len(s) {
		return Null, bad("Junk after right parenthesis.")
	}
	return Datum{R: r}, nil
}

// RecordKey returns a text equal for two records of type t exactly when
// PostgreSQL's record = finds them equal (NULL fields equal): record_out's
// form of the fields' keys (float -0 written 0, arrays by ArrayKey, nested
// records by RecordKey, jsonb by JSONBKey). Grouping, DISTINCT and joins on a record use it.
func RecordKey(d Datum, t T) string {
	return string(appendRecordKey(nil, d, t))
}

func appendRecordKey(buf []byte, d Datum, t T) []byte {
	buf = append(buf, '(')
	for k, f := range RecordFields(t) {
		if k > 0 {
			buf = append(buf, ',')
		}
		v := d.R.Fields[k]
		switch {
		case v.Null:
		case f.T.IsFloat() && v.F == 0:
			buf = append(buf, '0')
		case f.T.Kind == TextArray:
			buf = appendRecordField(buf, ArrayKey(v.A, f.T))
		case f.T.Kind == Record:
			buf = appendRecordField(buf, RecordKey(v, f.T))
		case f.T.Kind == JSONB:
			k, _ := JSONBKey(v.S)
			buf = appendRecordField(buf, JSONBOut(k))
		case f.T.Kind == Interval:
			// '24:00:00' = '1 day': the field keys as its equality
			// class's representative, as a scalar interval key does.
			c, _ := CanonInterval(v.IV)
			buf = appendRecordField(buf, TextOf(Datum{IV: c}, f.T))
		default:
			buf = appendRecordField(buf, TextOf(v, f.T))
		}
	}
	return append(buf, ')')
}

// CompareDatum orders two non-NULL values of type t as PostgreSQL's btree
// comparison does: NaN above every float, records field by field with a
// NULL field after any value (record_cmp), arrays by CompareArrays.
func CompareDatum(a, b Datum, t T) int {
	switch t.Physical() {
	case PhysBool, PhysInt64:
		return Cmp3(a.I < b.I, a.I > b.I)
	case PhysFloat64:
		return Cmp3(FloatLess(a.F, b.F), FloatLess(b.F, a.F))
	case PhysDecimal:
		return a.D.Cmp(b.D)
	case PhysString:
		if t.Kind == JSONB {
			return JSONBCompare(a.S, b.S)
		}
		return strings.Compare(a.S, b.S)
	case PhysUUID: // the canonical texts sort as the bytes do
		return strings.Compare(a.S, b.S)
	case PhysInterval:
		return IntervalSpan(a.IV).Cmp(IntervalSpan(b.IV))
	case PhysList:
		return CompareArrays(a.A, b.A, t)
	case PhysStruct:
		for k, f := range RecordFields(t) {
			x, y := a.R.Fields[k], b.R.Fields[k]
			switch {
			case x.Null && y.Null:
				continue
			case x.Null || y.Null:
				return Cmp3(y.Null, x.Null)
			}
			if c := CompareDatum(x, y, f.T); c != 0 {
				return c
			}
		}
	}
	return 0
}

// Cmp3 is -1 when less, 1 when greater, else 0.
func Cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// FloatLess orders floats with NaN above everything (and equal to itself).
func FloatLess(x, y float64) bool {
	if x != x {
		return false
	}
	if y != y {
		return true
	}
	return x < y
}

// castRecord converts record d of type from to record type to field by
// field (42846 when the arity differs).
func castRecord(d Datum, from, to T, explicit bool) (Datum, error) {
	ff, tf := RecordFields(from), RecordFields(to)
	if len(ff) != len(tf) || from.Prec <= 0 || to.Prec <= 0 {
		e := sqlerr.New("42846", "cannot cast type %s to %s", from, to)
		switch {
		case len(ff) < len(tf):
			e.Detail = "Input has too few columns."
		case len(ff) > len(tf):
			e.Detail = "Input has too many columns."
		}
		return Null, e
	}
	r := &RecordValue{Fields: make([]Datum, len(tf))}
	for k, f := range tf {
		v, err := castDatum(d.R.Fields[k], ff[k].T, f.T, explicit)
		if err != nil {
			return Null, err
		}
		r.Fields[k] = v
	}
	return Datum{R: r}, nil
}
