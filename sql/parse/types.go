package parse

import (
	"strings"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// TypeFromName returns the type a PostgreSQL type name denotes. name is
// lower case with words separated by single spaces ("double precision",
// "character varying", "timestamp without time zone"); mods are the
// parenthesized modifiers, e.g. [10 2] for numeric(10,2). An unknown name
// is 42704, bad modifiers 22023.
func TypeFromName(name string, mods []int) (types.T, error) {
	if elem, ok := strings.CutSuffix(name, "[]"); ok {
		// text[] is the one array type (types/array.go); varchar[] and
		// name[] are text[] as their elements are text.
		if elem == "name" {
			return types.TTextArray, nil
		}
		e, err := TypeFromName(elem, mods)
		if err != nil {
			return e, err
		}
		if !types.ArrayElemOK(e) {
			return e, sqlerr.New(sqlerr.FeatureNotSupported, "type %s[] is not supported: the array types are those of boolean, the integer and float types, numeric, text, varchar, date, timestamp and uuid", elem)
		}
		return types.ArrayOfT(e), nil
	}
	var t types.T
	maxMods := 0
	switch name {
	case "boolean", "bool":
		t = types.TBool
	case "smallint", "int2":
		t = types.TInt16
	case "integer", "int", "int4":
		t = types.TInt32
	case "bigint", "int8":
		t = types.TInt64
	case "real", "float4":
		t = types.TFloat32
	case "double precision", "float8":
		t = types.TFloat64
	case "float":
		// float(p): p <= 24 is real, otherwise double precision.
		t = types.TFloat64
		if len(mods) == 1 {
			if mods[0] < 1 || mods[0] > 53 {
				return t, sqlerr.New(sqlerr.InvalidParameterValue, "precision for type float must be between 1 and 53 bits")
			}
			if mods[0] <= 24 {
				t = types.TFloat32
			}
		}
		maxMods = 1
	case "numeric", "decimal":
		t = types.TNumeric
		maxMods = 2
		if len(mods) > 0 {
			p, s := mods[0], 0
			if len(mods) == 2 {
				s = mods[1]
			}
			if p < 1 || p > 38 {
				return t, sqlerr.New(sqlerr.InvalidParameterValue, "NUMERIC precision %d must be between 1 and 38", p)
			}
			if s < 0 || s > p {
				return t, sqlerr.New(sqlerr.InvalidParameterValue, "NUMERIC scale %d must be between 0 and precision %d", s, p)
			}
			t = types.NumericOf(int32(p), int32(s))
		}
	case "text":
		t = types.TText
	case "character", "bpchar":
		// character without a length is character(1); bpchar without one
		// keeps its trailing spaces in PostgreSQL, which streamdb's
		// trimmed storage cannot (docs/decisions/2026-12-06-char.md).
		if len(mods) == 0 && name == "bpchar" {
			return t, sqlerr.New(sqlerr.FeatureNotSupported, "type bpchar without a length is not supported, use character(n) or text")
		}
		maxMods = 1
		n := 1
		if len(mods) == 1 {
			if mods[0] < 1 {
				return t, sqlerr.New(sqlerr.InvalidParameterValue, "length for type char must be at least 1")
			}
			n = mods[0]
		}
		t = types.CharOf(int32(n))
	case "varchar", "character varying":
		t = types.TText
		maxMods = 1
		if len(mods) == 1 {
			if mods[0] < 1 {
				return t, sqlerr.New(sqlerr.InvalidParameterValue, "length for type varchar must be at least 1")
			}
			t.Prec = int32(mods[0])
		}
	case "timestamp", "timestamp without time zone":
		// The precision modifier is accepted and ignored.
		t = types.TTimestamp
		maxMods = 1
	case "timestamptz", "timestamp with time zone":
		t = types.TTimestampTZ
		maxMods = 1
	case "date":
		t = types.TDate
	case "interval":
		t = types.TInterval
	case "json":
		t = types.TJSON
	case "jsonb":
		t = types.TJSONB
	case "uuid":
		t = types.TUUID
	case "bytea":
		t = types.TBytea
	case "time", "time without time zone", "timetz", "time with time zone":
		t = types.TTime
		if name == "timetz" || name == "time with time zone" {
			t = types.TTimeTZ
		}
		maxMods = 1
		if len(mods) == 1 && mods[0] < 6 { // time(p) rounds to p digits; only microseconds are kept
			return t, sqlerr.New(sqlerr.FeatureNotSupported, "type %s(%d) is not supported: use %s (microseconds)", name, mods[0], name)
		}
	default:
		if ct, ok := types.TypeNamed(name); ok && len(mods) == 0 {
			return ct, nil
		}
		return t, sqlerr.New(sqlerr.UndefinedObject, "type \"%s\" does not exist", name)
	}
	if len(mods) > maxMods {
		return t, sqlerr.New(sqlerr.SyntaxError, "invalid type modifier for type %s", name)
	}
	return t, nil
}

// ParseTypeName parses a type name as written in SQL, e.g. "bigint",
// "numeric(10,2)", "varchar(5)", "double precision" (the second argument
// of pg_cast is such a string).
//
// Errors carry no Position: s is not the user's statement.
func ParseTypeName(s string) (types.T, error) {
	t, err := parseTypeName(s)
	if e, ok := err.(*sqlerr.Error); ok {
		e.Position = 0
	}
	return t, err
}

func parseTypeName(s string) (types.T, error) {
	toks, err := lex(s)
	if err != nil {
		return types.T{}, err
	}
	p := &parser{src: s, toks: toks}
	t, err := p.typeName()
	if err != nil {
		return t, err
	}
	if p.at().Kind != tEOF {
		return t, p.syntaxError(p.at())
	}
	return t, nil
}

// typeName parses a type name at the cursor: one or more words, then
// optional (n[, m]) modifiers. An unknown name is 42704 at its position.
func (p *parser) typeName() (types.T, error) {
	first := p.at()
	if first.Kind != tIdent && first.Kind != tQIdent || first.Kind == tIdent && notFuncKeywords[first.Val] {
		return types.T{}, p.syntaxError(first)
	}
	p.i++
	if first.Kind == tIdent && first.Val == "struct" && p.at().isOp("<") {
		return p.structType()
	}
	words := []string{first.Val}
	word := func(kw string) bool {
		if p.at().is(kw) {
			words = append(words, kw)
			p.i++
			return true
		}
		return false
	}
	switch first.Val {
	case "double":
		// DOUBLE alone, as Flink, RisingWave and MySQL write it, is
		// double precision (and is named so everywhere after).
		word("precision")
		words = []string{"double", "precision"}
	case "character", "char":
		word("varying")
		words[0] = "character"
	}
	var mods []int
	if p.at().isOp("(") {
		p.i++
		for {
			n := p.at()
			if n.Kind != tNumber || strings.ContainsAny(n.Val, ".eE") {
				return types.T{}, p.syntaxError(n)
			}
			v := 0
			for _, c := range n.Val {
				v = v*10 + int(c-'0')
				if v > 1<<20 {
					return types.T{}, p.positioned(sqlerr.New(sqlerr.InvalidParameterValue, "type modifier %s is out of range", n.Val), n)
				}
			}
			mods = append(mods, v)
			p.i++
			if p.at().isOp(",") {
				p.i++
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return types.T{}, err
			}
			break
		}
	}
	if (first.Val == "timestamp" || first.Val == "time") && (p.at().is("with") || p.at().is("without")) && p.peek(1).is("time") && p.peek(2).is("zone") {
		words = append(words, p.at().Val, "time", "zone")
		p.i += 3
	}
	name := strings.Join(words, " ")
	if p.at().isOp("[") && p.peek(1).isOp("]") {
		// An array type, name[] (one dimension).
		p.i += 2
		name += "[]"
	}
	t, err := TypeFromName(name, mods)
	if err != nil {
		return t, p.positioned(err, first)
	}
	return t, nil
}
