package expr

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Test fixture: one batch of five rows. Column values are given as
// PostgreSQL text ("NULL" for NULL) and parsed with types.ParseText.
var fixture = []struct {
	name string
	t    types.T
	vals []string
}{
	{"a", types.TInt64, []string{"1", "2", "NULL", "-5", "0"}},
	{"b", types.TInt64, []string{"10", "0", "3", "NULL", "7"}},
	{"f", types.TFloat64, []string{"1.5", "-2.25", "NULL", "0", "NaN"}},
	{"s", types.TText, []string{"hello", "World", "NULL", "ab%c", ""}},
	{"p", types.TBool, []string{"t", "f", "NULL", "t", "f"}},
	{"q", types.TBool, []string{"t", "NULL", "NULL", "f", "NULL"}},
	{"d", types.NumericOf(10, 2), []string{"1.25", "-3.50", "NULL", "0.00", "100.99"}},
	{"ts", types.TTimestamp, []string{"2026-01-01 00:00:00", "2026-01-31 12:30:00", "NULL", "1969-12-31 23:59:59.5", "2026-03-15 08:00:07"}},
	{"iv", types.TInterval, []string{"1 day", "1 mon", "NULL", "02:00:00", "-3 days"}},
	{"big", types.TInt64, []string{"9223372036854775807", "-9223372036854775808", "NULL", "4611686018427387904", "-1"}},
	{"pat", types.TText, []string{"h%", "_orld", "x", "ab\\%c", "%"}},
	{"z", types.TInt64, []string{"NULL", "NULL", "NULL", "NULL", "NULL"}},
}

func col(name string) *ColRef {
	for i, c := range fixture {
		if c.name == name {
			return &ColRef{Idx: i, T: c.t, Name: name}
		}
	}
	panic("no column " + name)
}

func ci(v int64) *Const      { return &Const{D: types.Int(v), T: types.TInt64} }
func cf(v float64) *Const    { return &Const{D: types.Float(v), T: types.TFloat64} }
func cs(v string) *Const     { return &Const{D: types.Str(v), T: types.TText} }
func cb(v bool) *Const       { return &Const{D: types.Boolean(v), T: types.TBool} }
func cnull(t types.T) *Const { return &Const{D: types.Null, T: t} }
func fn(name string, t types.T, args ...Expr) *Func {
	return &Func{Name: name, T: t, Args: args}
}
func cast(e Expr, t types.T) *Cast { return &Cast{E: e, T: t} }
func cdec(s string, scale int32) *Const {
	t := types.NumericOf(38, scale)
	d, err := types.ParseText(s, t)
	if err != nil {
		panic(err)
	}
	return &Const{D: d, T: t}
}
func civ(s string) *Const {
	d, err := types.ParseText(s, types.TInterval)
	if err != nil {
		panic(err)
	}
	return &Const{D: d, T: types.TInterval}
}

func buildBatch(t testing.TB, mem memory.Allocator) arrow.RecordBatch {
	fields := make([]arrow.Field, len(fixture))
	cols := make([]arrow.Array, len(fixture))
	for i, c := range fixture {
		fields[i] = arrow.Field{Name: c.name, Type: c.t.Arrow(), Nullable: true}
		o := newColOut(mem, c.t, len(c.vals))
		for r, s := range c.vals {
			d := types.Null
			if s != "NULL" {
				var err error
				if d, err = types.ParseText(s, c.t); err != nil {
					t.Fatalf("fixture %s: %v", c.name, err)
				}
			}
			o.set(r, d)
		}
		cols[i] = o.finish(mem, len(c.vals)).arr
	}
	b := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(len(fixture[0].vals)))
	for _, c := range cols {
		c.Release()
	}
	return b
}

// render prints an array as comma-separated PostgreSQL text.
func render(a arrow.Array, t types.T) string {
	parts := make([]string, a.Len())
	for i := range parts {
		parts[i] = renderDatum(datumAt(a, t, i), t)
	}
	return strings.Join(parts, ",")
}

func renderDatum(d types.Datum, t types.T) string {
	if d.Null {
		return "NULL"
	}
	return types.TextOf(d, t)
}

func TestEval(t *testing.T) {
	I, F, B, S := types.TInt64, types.TFloat64, types.TBool, types.TText
	N2 := types.NumericOf(38, 2)
	tests := []struct {
		name string
		e    Expr
		want string // rendered result, or SQLSTATE when wantErr
		err  string
	}{
		// arithmetic
		{"add vv", fn("+", I, col("a"), col("b")), "11,2,NULL,NULL,7", ""},
		{"add vs", fn("+", I, col("a"), ci(1)), "2,3,NULL,-4,1", ""},
		{"add sv", fn("+", I, ci(1), col("a")), "2,3,NULL,-4,1", ""},
		{"sub sv", fn("-", I, ci(1), col("a")), "0,-1,NULL,6,1", ""},
		{"sub vv", fn("-", I, col("a"), col("b")), "-9,2,NULL,NULL,-7", ""},
		{"mul", fn("*", I, col("a"), ci(-3)), "-3,-6,NULL,15,0", ""},
		{"div truncates", fn("/", I, col("a"), ci(2)), "0,1,NULL,-2,0", ""},
		{"div sv", fn("/", I, ci(20), col("b")), "", sqlerr.DivisionByZero},
		{"mod", fn("%", I, col("a"), ci(3)), "1,2,NULL,-2,0", ""},
		// bitwise (bitwise.go)
		{"bitand vv", fn("&", I, col("a"), col("b")), "0,0,NULL,NULL,0", ""},
		{"bitor vs", fn("|", I, col("a"), ci(8)), "9,10,NULL,-5,8", ""},
		{"xor sv", fn("#", I, ci(3), col("a")), "2,1,NULL,-8,3", ""},
		{"shl smallint wraps", fn("<<", types.TInt16, col("a"), ci(15)), "-32768,0,NULL,-32768,0", ""},
		{"shl count mod 32", fn("<<", types.TInt32, col("a"), ci(33)), "2,4,NULL,-10,0", ""},
		{"shr bigint", fn(">>", I, col("big"), ci(62)), "1,-2,NULL,1,-1", ""},
		{"bitnot", fn("bitnot", I, col("a")), "-2,-3,NULL,4,-1", ""},
		{"bitand null", fn("&", I, col("a"), col("z")), "NULL,NULL,NULL,NULL,NULL", ""},
		{"div zero vv", fn("/", I, col("a"), col("b")), "", sqlerr.DivisionByZero},
		{"div zero const", fn("/", I, col("a"), ci(0)), "", sqlerr.DivisionByZero},
		{"div zero null rows only", fn("/", I, col("z"), ci(0)), "NULL,NULL,NULL,NULL,NULL", ""},
		{"mod zero", fn("%", I, col("a"), ci(0)), "", sqlerr.DivisionByZero},
		{"add overflow", fn("+", I, col("big"), ci(1)), "", sqlerr.NumericOutOfRange},
		{"sub overflow", fn("-", I, col("big"), ci(1)), "", sqlerr.NumericOutOfRange},
		{"mul overflow", fn("*", I, col("big"), ci(2)), "", sqlerr.NumericOutOfRange},
		{"div overflow", fn("/", I, col("big"), ci(-1)), "", sqlerr.NumericOutOfRange},
		{"mod minint", fn("%", I, col("big"), ci(-1)), "0,0,NULL,0,0", ""},
		{"neg int", fn("neg", I, col("a")), "-1,-2,NULL,5,0", ""},
		{"neg overflow", fn("neg", I, col("big")), "", sqlerr.NumericOutOfRange},
		{"float add", fn("+", F, col("f"), cf(1)), "2.5,-1.25,NULL,1,NaN", ""},
		{"float mul sv", fn("*", F, cf(2), col("f")), "3,-4.5,NULL,0,NaN", ""},
		{"float div zero", fn("/", F, cf(1), col("f")), "", sqlerr.DivisionByZero},
		{"float overflow", fn("*", F, col("f"), cf(math.MaxFloat64)), "", sqlerr.NumericOutOfRange},
		{"neg float", fn("neg", F, col("f")), "-1.5,2.25,NULL,-0,NaN", ""},
		{"numeric add", fn("+", N2, col("d"), cdec("1.5", 1)), "2.75,-2.00,NULL,1.50,102.49", ""},
		{"numeric mul", fn("*", types.NumericOf(38, 3), col("d"), cdec("0.1", 1)), "0.125,-0.350,NULL,0.000,10.099", ""},
		{"numeric div", fn("/", types.NumericOf(38, 4), col("d"), cdec("3", 0)), "0.4167,-1.1667,NULL,0.0000,33.6633", ""},
		{"numeric div zero", fn("/", N2, col("d"), cdec("0", 0)), "", sqlerr.DivisionByZero},
		{"numeric mod", fn("%", N2, col("d"), cdec("1", 0)), "0.25,-0.50,NULL,0.00,0.99", ""},
		{"numeric neg", fn("neg", types.NumericOf(10, 2), col("d")), "-1.25,3.50,NULL,0.00,-100.99", ""},
		{"numeric overflow", fn("*", types.NumericOf(38, 0), cdec("10000000000000000000000000000000000000", 0), cdec("100", 0)), "", sqlerr.NumericOutOfRange},
		{"ts + interval", fn("+", types.TTimestamp, col("ts"), civ("1 mon")), "2026-02-01 00:00:00,2026-02-28 12:30:00,NULL,1970-01-31 23:59:59.5,2026-04-15 08:00:07", ""},
		{"ts - interval", fn("-", types.TTimestamp, col("ts"), col("iv")), "2025-12-31 00:00:00,2025-12-31 12:30:00,NULL,1969-12-31 21:59:59.5,2026-03-18 08:00:07", ""},
		{"ts - ts", fn("-", types.TInterval, col("ts"), cast(cs("2026-01-01"), types.TTimestamp)), "00:00:00,30 days 12:30:00,NULL,-20454 days -00:00:00.5,73 days 08:00:07", ""},
		{"interval + interval", fn("+", types.TInterval, col("iv"), civ("1 hour")), "1 day 01:00:00,1 mon 01:00:00,NULL,03:00:00,-3 days +01:00:00", ""},
		{"interval * float", fn("*", types.TInterval, col("iv"), cf(1.5)), "1 day 12:00:00,1 mon 15 days,NULL,03:00:00,-4 days -12:00:00", ""},
		{"date + int", fn("+", types.TDate, cast(col("ts"), types.TDate), ci(1)), "2026-01-02,2026-02-01,NULL,1970-01-01,2026-03-16", ""},
		{"date - date", fn("-", types.TInt32, cast(col("ts"), types.TDate), cast(cs("2026-01-31"), types.TDate)), "-30,0,NULL,-20485,43", ""},
		{"date - infinite date", fn("-", types.TInt32, cast(col("ts"), types.TDate), cast(cs("infinity"), types.TDate)), "", sqlerr.DatetimeFieldOverflow},
		{"varchar assign fits", fn("varchar_assign", types.T{Kind: types.Text, Prec: 5}, col("s")), "hello,World,NULL,ab%c,", ""},
		{"varchar assign spaces cut", fn("varchar_assign", types.T{Kind: types.Text, Prec: 5}, fn("||", S, col("s"), cs("   "))), "hello,World,NULL,ab%c ,   ", ""},
		{"varchar assign too long", fn("varchar_assign", types.T{Kind: types.Text, Prec: 4}, col("s")), "", sqlerr.StringDataRightTrunc},

		// comparisons
		{"gt vs", fn(">", B, col("a"), ci(0)), "t,t,NULL,f,f", ""},
		{"lt sv", fn("<", B, ci(0), col("a")), "t,t,NULL,f,f", ""},
		{"le vv", fn("<=", B, col("a"), col("b")), "t,f,NULL,NULL,t", ""},
		{"eq", fn("=", B, col("a"), ci(2)), "f,t,NULL,f,f", ""},
		{"ne", fn("<>", B, col("a"), ci(2)), "t,f,NULL,t,t", ""},
		{"ge null const", fn(">=", B, col("a"), cnull(I)), "NULL,NULL,NULL,NULL,NULL", ""},
		{"float nan eq", fn("=", B, col("f"), cf(math.NaN())), "f,f,NULL,f,t", ""},
		{"float nan greatest", fn(">", B, col("f"), cf(1e300)), "f,f,NULL,f,t", ""},
		{"text lt", fn("<", B, col("s"), cs("hello")), "f,t,NULL,t,t", ""},
		{"text eq", fn("=", B, col("s"), cs("World")), "f,t,NULL,f,f", ""},
		{"text vv", fn(">=", B, col("s"), col("pat")), "t,f,NULL,f,f", ""},
		{"numeric cmp mixed scale", fn(">", B, col("d"), cdec("1.2", 1)), "t,f,NULL,f,t", ""},
		{"numeric eq", fn("=", B, col("d"), cdec("0", 0)), "f,f,NULL,t,f", ""},
		{"bool eq", fn("=", B, col("p"), col("q")), "t,NULL,NULL,f,NULL", ""},
		{"interval cmp", fn("<", B, col("iv"), civ("30 days")), "t,f,NULL,t,t", ""},
		{"interval eq month 30 days", fn("=", B, col("iv"), civ("30 days")), "f,t,NULL,f,f", ""},

		// logic
		{"and", fn("and", B, col("p"), col("q")), "t,f,NULL,f,f", ""},
		{"or", fn("or", B, col("p"), col("q")), "t,NULL,NULL,t,NULL", ""},
		{"and const false", fn("and", B, col("q"), cb(false)), "f,f,f,f,f", ""},
		{"or const true", fn("or", B, col("q"), cb(true)), "t,t,t,t,t", ""},
		{"and null", fn("and", B, col("p"), cnull(B)), "NULL,f,NULL,NULL,f", ""},
		{"and short-circuit", fn("and", B, fn("<>", B, col("b"), ci(0)), fn(">", B, fn("/", I, ci(10), col("b")), ci(1))), "f,f,t,NULL,f", ""},
		{"or short-circuit", fn("or", B, fn("=", B, col("b"), ci(0)), fn(">", B, fn("/", I, ci(10), col("b")), ci(1))), "f,t,t,NULL,f", ""},
		{"and short-circuit scalar", fn("and", B, cb(false), fn(">", B, fn("/", I, ci(10), col("b")), ci(1))), "f,f,f,f,f", ""},
		{"and unguarded", fn("and", B, fn(">=", B, col("b"), ci(0)), fn(">", B, fn("/", I, ci(10), col("b")), ci(1))), "", sqlerr.DivisionByZero},
		{"not", fn("not", B, col("q")), "f,NULL,NULL,t,NULL", ""},
		{"is_null", fn("is_null", B, col("a")), "f,f,t,f,f", ""},
		{"is_not_null", fn("is_not_null", B, col("s")), "t,t,f,t,t", ""},
		{"is_true", fn("is_true", B, col("q")), "t,f,f,f,f", ""},
		{"is_false", fn("is_false", B, col("q")), "f,f,f,t,f", ""},
		{"is_not_true", fn("is_not_true", B, col("q")), "f,t,t,t,t", ""},
		{"is_not_false", fn("is_not_false", B, col("q")), "t,t,t,f,t", ""},
		{"in", &InList{E: col("a"), List: []Expr{ci(1), ci(0)}}, "t,f,NULL,f,t", ""},
		{"in with null", &InList{E: col("a"), List: []Expr{ci(1), cnull(I)}}, "t,NULL,NULL,NULL,NULL", ""},
		{"not in", &InList{E: col("a"), List: []Expr{ci(1), ci(0)}, Not: true}, "f,t,NULL,t,f", ""},
		{"in column", &InList{E: col("s"), List: []Expr{cs("hello"), col("pat")}}, "t,f,NULL,f,f", ""},

		// strings
		{"like prefix", fn("like", B, col("s"), cs("h%")), "t,f,NULL,f,f", ""},
		{"like suffix", fn("like", B, col("s"), cs("%ld")), "f,t,NULL,f,f", ""},
		{"like contains", fn("like", B, col("s"), cs("%l%")), "t,t,NULL,f,f", ""},
		{"like exact", fn("like", B, col("s"), cs("hello")), "t,f,NULL,f,f", ""},
		{"like all", fn("like", B, col("s"), cs("%")), "t,t,NULL,t,t", ""},
		{"like underscore", fn("like", B, col("s"), cs("_o%d")), "f,t,NULL,f,f", ""},
		{"like general", fn("like", B, col("s"), cs("h%l_o")), "t,f,NULL,f,f", ""},
		{"like escape", fn("like", B, col("s"), cs(`ab\%c`)), "f,f,NULL,t,f", ""},
		{"like escaped percent literal", fn("like", B, cs("abxc"), cs(`ab\%c`)), "f,f,f,f,f", ""},
		{"like empty", fn("like", B, col("s"), cs("")), "f,f,NULL,f,t", ""},
		{"like column pattern", fn("like", B, col("s"), col("pat")), "t,t,NULL,t,t", ""},
		{"like bad escape", fn("like", B, col("s"), cs(`a\`)), "", "22025"},
		{"ilike", fn("ilike", B, col("s"), cs("WOR%")), "f,t,NULL,f,f", ""},
		{"like utf8 underscore", fn("like", B, cs("héllo"), cs("h_llo")), "t,t,t,t,t", ""},
		{"concat op", fn("||", S, col("s"), cs("!")), "hello!,World!,NULL,ab%c!,!", ""},
		{"lower", fn("lower", S, col("s")), "hello,world,NULL,ab%c,", ""},
		{"upper", fn("upper", S, col("s")), "HELLO,WORLD,NULL,AB%C,", ""},
		{"upper utf8", fn("upper", S, cs("héllo")), "HÉLLO,HÉLLO,HÉLLO,HÉLLO,HÉLLO", ""},
		{"length", fn("length", I, col("s")), "5,5,NULL,4,0", ""},
		{"length utf8", fn("length", I, cs("héllo")), "5,5,5,5,5", ""},
		{"substr 2", fn("substr", S, col("s"), ci(2)), "ello,orld,NULL,b%c,", ""},
		{"substr 3", fn("substr", S, col("s"), ci(2), ci(3)), "ell,orl,NULL,b%c,", ""},
		{"substr before start", fn("substr", S, col("s"), ci(-1), ci(3)), "h,W,NULL,a,", ""},
		{"substr negative count", fn("substr", S, col("s"), ci(1), ci(-1)), "", "22011"},
		{"concat", fn("concat", S, col("s"), col("a"), cnull(S), col("d")), "hello11.25,World2-3.50,,ab%c-50.00,0100.99", ""},

		// numeric functions
		{"abs int", fn("abs", I, col("a")), "1,2,NULL,5,0", ""},
		{"abs overflow", fn("abs", I, col("big")), "", sqlerr.NumericOutOfRange},
		{"abs float", fn("abs", F, col("f")), "1.5,2.25,NULL,0,NaN", ""},
		{"abs numeric", fn("abs", types.NumericOf(10, 2), col("d")), "1.25,3.50,NULL,0.00,100.99", ""},
		{"round float half even", fn("round", F, fn("*", F, col("f"), cf(1))), "2,-2,NULL,0,NaN", ""},
		{"round numeric", fn("round", types.NumericOf(10, 0), col("d")), "1,-4,NULL,0,101", ""},
		{"round numeric 1", fn("round", types.NumericOf(10, 1), col("d"), ci(1)), "1.3,-3.5,NULL,0.0,101.0", ""},
		{"round int", fn("round", I, col("a")), "1,2,NULL,-5,0", ""},
		{"floor float", fn("floor", F, col("f")), "1,-3,NULL,0,NaN", ""},
		{"ceil float", fn("ceil", F, col("f")), "2,-2,NULL,0,NaN", ""},
		{"floor numeric", fn("floor", types.NumericOf(10, 0), col("d")), "1,-4,NULL,0,100", ""},
		{"ceil numeric", fn("ceil", types.NumericOf(10, 0), col("d")), "2,-3,NULL,0,101", ""},

		// NULL functions
		{"coalesce", fn("coalesce", I, col("z"), col("a"), ci(42)), "1,2,42,-5,0", ""},
		{"coalesce no nulls", fn("coalesce", I, col("b"), ci(42)), "10,0,3,42,7", ""},
		{"coalesce text", fn("coalesce", S, col("s"), cs("none")), "hello,World,none,ab%c,", ""},
		{"nullif", fn("nullif", I, col("a"), ci(2)), "1,NULL,NULL,-5,0", ""},
		{"nullif text", fn("nullif", S, col("s"), cs("")), "hello,World,NULL,ab%c,NULL", ""},

		// date and time
		{"now", fn("now", types.TTimestamp), "2026-01-02 03:04:05,2026-01-02 03:04:05,2026-01-02 03:04:05,2026-01-02 03:04:05,2026-01-02 03:04:05", ""},
		{"date_trunc", fn("date_trunc", types.TTimestamp, cs("month"), col("ts")), "2026-01-01 00:00:00,2026-01-01 00:00:00,NULL,1969-12-01 00:00:00,2026-03-01 00:00:00", ""},
		{"date_trunc bad unit", fn("date_trunc", types.TTimestamp, cs("fortnight"), col("ts")), "", sqlerr.InvalidParameterValue},
		{"extract", fn("extract", types.NumericOf(38, 0), cs("year"), col("ts")), "2026,2026,NULL,1969,2026", ""},
		{"extract second", fn("extract", types.NumericOf(38, 6), cs("second"), col("ts")), "0.000000,0.000000,NULL,59.500000,7.000000", ""},
		{"tumble_start", fn("tumble_start", types.TTimestamp, col("ts"), civ("1 hour")), "2026-01-01 00:00:00,2026-01-31 12:00:00,NULL,1969-12-31 23:00:00,2026-03-15 08:00:00", ""},
		{"tumble_end", fn("tumble_end", types.TTimestamp, col("ts"), civ("10 seconds")), "2026-01-01 00:00:10,2026-01-31 12:30:10,NULL,1970-01-01 00:00:00,2026-03-15 08:00:10", ""},
		{"tumble bad size", fn("tumble_start", types.TTimestamp, col("ts"), civ("1 mon")), "", sqlerr.InvalidParameterValue},

		// casts
		{"int to float", cast(col("a"), F), "1,2,NULL,-5,0", ""},
		{"int to numeric", cast(col("a"), types.NumericOf(10, 2)), "1.00,2.00,NULL,-5.00,0.00", ""},
		{"int to numeric overflow", cast(col("big"), types.NumericOf(5, 2)), "", sqlerr.NumericOutOfRange},
		{"int to int32 range", cast(col("big"), types.TInt32), "", sqlerr.NumericOutOfRange},
		{"int to int16 ok", cast(col("a"), types.TInt16), "1,2,NULL,-5,0", ""},
		{"float to int half even", cast(fn("*", F, col("f"), cf(1)), I), "", sqlerr.NumericOutOfRange},
		{"float to int", cast(cf(2.5), I), "2,2,2,2,2", ""},
		{"float to int32 overflow", cast(cf(3e9), types.TInt32), "", sqlerr.NumericOutOfRange},
		{"float to numeric", cast(cf(0.1), types.NumericOf(10, 2)), "0.10,0.10,0.10,0.10,0.10", ""},
		{"float to real", cast(cf(0.1), types.TFloat32), "0.1,0.1,0.1,0.1,0.1", ""},
		{"numeric to float", cast(col("d"), F), "1.25,-3.5,NULL,0,100.99", ""},
		{"numeric to int", cast(col("d"), I), "1,-4,NULL,0,101", ""},
		{"numeric rescale", cast(col("d"), types.NumericOf(10, 1)), "1.3,-3.5,NULL,0.0,101.0", ""},
		{"numeric precision", cast(col("d"), types.NumericOf(3, 1)), "", sqlerr.NumericOutOfRange},
		{"text to int", cast(cs(" 42 "), I), "42,42,42,42,42", ""},
		{"text to int bad", cast(col("s"), I), "", sqlerr.InvalidTextRep},
		{"text to int32 range", cast(cs("3000000000"), types.TInt32), "", sqlerr.NumericOutOfRange},
		{"int to text", cast(col("a"), S), "1,2,NULL,-5,0", ""},
		{"numeric to text", cast(col("d"), S), "1.25,-3.50,NULL,0.00,100.99", ""},
		{"bool to text", cast(col("p"), S), "true,false,NULL,true,false", ""},
		{"text to varchar truncates", cast(col("s"), types.T{Kind: types.Text, Prec: 2}), "he,Wo,NULL,ab,", ""},
		{"numeric widen", cast(col("d"), types.NumericOf(20, 2)), "1.25,-3.50,NULL,0.00,100.99", ""},
		{"varchar to text", cast(cast(col("s"), types.T{Kind: types.Text, Prec: 3}), S), "hel,Wor,NULL,ab%,", ""},
		{"ts to date", cast(col("ts"), types.TDate), "2026-01-01,2026-01-31,NULL,1969-12-31,2026-03-15", ""},
		{"text to interval", cast(cs("1 day"), types.TInterval), "1 day,1 day,1 day,1 day,1 day", ""},
		{"bool to int", cast(col("p"), types.TInt32), "1,0,NULL,1,0", ""},

		// CASE
		{"case lazy div", &Case{T: I, Whens: []When{{fn("<>", B, col("b"), ci(0)), fn("/", I, ci(10), col("b"))}}},
			"1,NULL,3,NULL,1", ""},
		{"case lazy second when", &Case{T: I, Whens: []When{
			{fn("=", B, col("b"), ci(0)), ci(-1)},
			{fn(">", B, fn("/", I, ci(10), col("b")), ci(1)), ci(1)},
		}, Else: ci(0)}, "0,-1,1,0,0", ""},
		{"case else column", &Case{T: I, Whens: []When{{fn(">", B, col("a"), ci(0)), col("a")}}, Else: col("b")},
			"1,2,3,NULL,7", ""},
		{"case all first", &Case{T: I, Whens: []When{{cb(true), col("a")}}, Else: ci(0)}, "1,2,NULL,-5,0", ""},
		{"case null cond", &Case{T: S, Whens: []When{{col("q"), cs("yes")}, {fn("not", B, col("q")), cs("no")}}, Else: cs("unknown")},
			"yes,unknown,unknown,no,unknown", ""},
		{"case text values", &Case{T: S, Whens: []When{{col("p"), col("s")}}}, "hello,NULL,NULL,ab%c,NULL", ""},
		{"case error still raised", &Case{T: I, Whens: []When{{fn(">=", B, col("b"), ci(0)), fn("/", I, ci(10), col("b"))}}},
			"", sqlerr.DivisionByZero},
		{"case numeric", &Case{T: types.NumericOf(10, 2), Whens: []When{{fn(">", B, col("d"), cdec("0", 0)), col("d")}}, Else: cdec("0.00", 2)},
			"1.25,0.00,0.00,0.00,100.99", ""},
		{"case interval", &Case{T: types.TInterval, Whens: []When{{col("p"), col("iv")}}}, "1 day,NULL,NULL,02:00:00,NULL", ""},
		{"case nested", &Case{T: I, Whens: []When{{col("p"), &Case{T: I, Whens: []When{{fn("<>", B, col("b"), ci(0)), fn("/", I, ci(100), col("b"))}}}}}, Else: ci(0)},
			"10,0,0,NULL,0", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := buildBatch(t, mem)
			defer b.Release()
			ctx := &Ctx{Mem: mem, Now: mustTS("2026-01-02 03:04:05")}
			got, err := Eval(ctx, tc.e, b)
			if tc.err != "" {
				if err == nil {
					defer got.Release()
					t.Fatalf("%s: want error %s, got %s", tc.e, tc.err, render(got, tc.e.Type()))
				}
				if code := sqlerr.Code(err); code != tc.err {
					t.Fatalf("%s: want SQLSTATE %s, got %s (%v)", tc.e, tc.err, code, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.e, err)
			}
			defer got.Release()
			if got.Len() != 5 || !arrow.TypeEqual(got.DataType(), tc.e.Type().Arrow()) {
				t.Fatalf("%s: got %d rows of %s", tc.e, got.Len(), got.DataType())
			}
			if s := render(got, tc.e.Type()); s != tc.want {
				t.Errorf("%s:\n got %s\nwant %s", tc.e, s, tc.want)
			}
		})
	}
}

func mustTS(s string) int64 {
	d, err := types.ParseText(s, types.TTimestamp)
	if err != nil {
		panic(err)
	}
	return d.I
}

func TestEvalConst(t *testing.T) {
	I := types.TInt64
	tests := []struct {
		e    Expr
		want string
		err  string
	}{
		{fn("+", I, ci(1), fn("*", I, ci(2), ci(3))), "7", ""},
		{fn("/", I, ci(1), ci(0)), "", sqlerr.DivisionByZero},
		{fn("+", I, &Param{Idx: 0, T: I}, ci(1)), "42", ""},
		{&Param{Idx: 3, T: I}, "", "42P02"},
		{fn("now", types.TTimestamp), "2026-01-02 03:04:05", ""},
		{fn("upper", types.TText, cs("abc")), "ABC", ""},
		{fn("+", I, ci(1), cnull(I)), "NULL", ""},
		{&Case{T: I, Whens: []When{{cb(false), ci(1)}}, Else: ci(2)}, "2", ""},
		{&InList{E: ci(3), List: []Expr{ci(1), ci(3)}}, "t", ""},
		{cast(cs("12.5"), types.NumericOf(10, 1)), "12.5", ""},
		{fn("coalesce", I, cnull(I), ci(5)), "5", ""},
		{col("a"), "", sqlerr.Internal},
	}
	for _, tc := range tests {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ctx := &Ctx{Mem: mem, Params: []types.Datum{types.Int(41)}, Now: mustTS("2026-01-02 03:04:05")}
		d, err := EvalConst(ctx, tc.e)
		switch {
		case tc.err != "":
			if sqlerr.Code(err) != tc.err {
				t.Errorf("%s: want SQLSTATE %s, got %v", tc.e, tc.err, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.e, err)
		default:
			if got := renderDatum(d, tc.e.Type()); got != tc.want {
				t.Errorf("%s = %s, want %s", tc.e, got, tc.want)
			}
		}
		mem.AssertSize(t, 0)
	}
}

func TestIsConst(t *testing.T) {
	I := types.TInt64
	if !IsConst(fn("+", I, ci(1), &Param{T: I})) || !IsConst(fn("now", types.TTimestamp)) {
		t.Error("constant expression not recognised")
	}
	if IsConst(fn("+", I, ci(1), col("a"))) || IsConst(&Case{T: I, Whens: []When{{cb(true), col("a")}}}) ||
		IsConst(&InList{E: ci(1), List: []Expr{col("a")}}) {
		t.Error("expression with a column reported constant")
	}
}

func TestFilter(t *testing.T) {
	B := types.TBool
	tests := []struct {
		pred Expr
		want []string // rendered columns a, s, d, iv, p
		same bool     // the input batch itself is returned
	}{
		{fn(">", B, col("a"), ci(0)), []string{"1,2", "hello,World", "1.25,-3.50", "1 day,1 mon", "t,f"}, false},
		{col("q"), []string{"1", "hello", "1.25", "1 day", "t"}, false},
		{fn("is_not_null", B, col("ts")), nil, false},
		{cb(true), nil, true},
		{fn("or", B, cb(true), col("q")), nil, true},
		{cb(false), []string{"", "", "", "", ""}, false},
		{cnull(B), []string{"", "", "", "", ""}, false},
	}
	for _, tc := range tests {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		b := buildBatch(t, mem)
		got, err := Filter(&Ctx{Mem: mem}, tc.pred, b)
		if err != nil {
			t.Fatalf("%s: %v", tc.pred, err)
		}
		if tc.same && got != b {
			t.Errorf("%s: want the input batch back", tc.pred)
		}
		if tc.want != nil {
			var cols []string
			for _, name := range []string{"a", "s", "d", "iv", "p"} {
				c := col(name)
				cols = append(cols, render(got.Column(c.Idx), c.T))
			}
			if strings.Join(cols, "|") != strings.Join(tc.want, "|") {
				t.Errorf("%s:\n got %q\nwant %q", tc.pred, cols, tc.want)
			}
		}
		if tc.pred.String() == "is_not_null(ts)" && got.NumRows() != 4 {
			t.Errorf("is_not_null(ts): %d rows", got.NumRows())
		}
		got.Release()
		b.Release()
		mem.AssertSize(t, 0)
	}
}

// TestSlicedInput checks kernels on arrays that start at a non-zero,
// non-byte-aligned offset.
func TestSlicedInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	full := buildBatch(t, mem)
	defer full.Release()
	b := full.NewSlice(1, 5)
	defer b.Release()
	I, B := types.TInt64, types.TBool
	ctx := &Ctx{Mem: mem}
	for _, tc := range []struct {
		e    Expr
		want string
	}{
		{fn("+", I, col("a"), col("b")), "2,NULL,NULL,7"},
		{fn("and", B, col("p"), col("q")), "f,NULL,f,f"},
		{fn("is_null", B, col("a")), "f,t,f,f"},
		{fn("coalesce", I, col("a"), ci(9)), "2,9,-5,0"},
		{&Case{T: I, Whens: []When{{col("p"), col("a")}}, Else: col("b")}, "0,3,-5,7"},
	} {
		got, err := Eval(ctx, tc.e, b)
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		if s := render(got, tc.e.Type()); s != tc.want {
			t.Errorf("%s: got %s want %s", tc.e, s, tc.want)
		}
		got.Release()
	}
	f, err := Filter(ctx, fn(">", B, col("b"), ci(1)), b)
	if err != nil {
		t.Fatal(err)
	}
	if s := render(f.Column(col("s").Idx), types.TText); s != "NULL," {
		t.Errorf("filter on slice: got %q", s)
	}
	f.Release()
}

func TestLikeMatcher(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"a%b%c", "aXXbYYc", true},
		{"a%b%c", "aXXbYY", false},
		{"%a%a%", "banana", true},
		{"%%", "", true},
		{"_", "", false},
		{"_", "é", true},
		{"a_c", "abc", true},
		{"a_c", "abbc", false},
		{"%abc", "ababc", true},
		{"a%", "", false},
		{`\_`, "_", true},
		{`\_`, "a", false},
		{`\\`, `\`, true},
		{"%b_", "abcbd", true},
	}
	for _, tc := range tests {
		m, err := compileLike(tc.pat, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.match(tc.s); got != tc.want {
			t.Errorf("%q LIKE %q = %v, want %v", tc.s, tc.pat, got, tc.want)
		}
	}
}
