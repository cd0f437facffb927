package types

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
)

func checkErr(t *testing.T, what string, err error, code, msg string) bool {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Errorf("%s: unexpected error %v", what, err)
			return false
		}
		return true
	}
	if err == nil {
		t.Errorf("%s: no error, want %s %q", what, code, msg)
		return false
	}
	e := sqlerr.As(err)
	if e.Code != code || e.Msg != msg {
		t.Errorf("%s: error %s %q, want %s %q", what, e.Code, e.Msg, code, msg)
	}
	return false
}

func mustParse(t *testing.T, s string, typ T) Datum {
	t.Helper()
	d, err := ParseText(s, typ)
	if err != nil {
		t.Fatalf("ParseText(%q, %s): %v", s, typ, err)
	}
	return d
}

func sameDatum(a, b Datum, typ T) bool {
	if typ.Physical() == PhysFloat64 {
		return math.Float64bits(a.F) == math.Float64bits(b.F) || (math.IsNaN(a.F) && math.IsNaN(b.F))
	}
	if typ.Kind == Numeric { // the same value printing the same digits
		return a.D == b.D && string(AppendText(nil, a, typ)) == string(AppendText(nil, b, typ))
	}
	return a == b
}

// TestText checks input and output against PostgreSQL, then that the
// output reads back to the same value.
func TestText(t *testing.T) {
	for _, c := range textCases {
		what := c.t.String() + " " + quote(c.in)
		d, err := ParseText(c.in, c.t)
		if !checkErr(t, what, err, c.code, c.want) {
			continue
		}
		got := string(AppendText(nil, d, c.t))
		if got != c.want {
			t.Errorf("%s: got %q, want %q", what, got, c.want)
			continue
		}
		back, err := ParseText(got, c.t)
		if err != nil || !sameDatum(back, d, c.t) {
			t.Errorf("%s: round trip of %q gave %+v, %v; want %+v", what, got, back, err, d)
		}
	}
}

func TestTextSpecial(t *testing.T) {
	// Unknown keeps the text; numeric NaN cannot be stored.
	if d, err := ParseText(" x ", TUnknown); err != nil || d.S != " x " {
		t.Errorf("unknown: %+v %v", d, err)
	}
	_, err := ParseText("NaN", TNumeric)
	checkErr(t, "numeric NaN", err, sqlerr.FeatureNotSupported, "numeric NaN is not supported")
	// Detail of the numeric overflow, as PostgreSQL words it.
	_, err = ParseText("1000", NumericOf(5, 2))
	if e := sqlerr.As(err); e.Detail != "A field with precision 5, scale 2 must round to an absolute value less than 10^3." {
		t.Errorf("detail %q", e.Detail)
	}
	_, err = ParseText("1", NumericOf(2, 2))
	if e := sqlerr.As(err); e.Detail != "A field with precision 2, scale 2 must round to an absolute value less than 1." {
		t.Errorf("detail %q", e.Detail)
	}
	// Unconstrained numeric has 22 integer digits at scale 16.
	_, err = ParseText("1e22", TNumeric)
	checkErr(t, "1e22", err, sqlerr.NumericOutOfRange, "value overflows numeric format")
	if got := TextOf(mustParse(t, "1e21", TNumeric), TNumeric); got != "1000000000000000000000" {
		t.Errorf("1e21: %s", got)
	}
}

func TestFloatInput(t *testing.T) {
	// strtod syntax PostgreSQL accepts beyond the table: hex floats.
	if d, err := ParseText("0x1p3", TFloat64); err != nil || d.F != 8 {
		t.Errorf("hex: %v %v", d.F, err)
	}
	_, err := ParseText("0x_1p3", TFloat64)
	checkErr(t, "underscore", err, sqlerr.InvalidTextRep, `invalid input syntax for type double precision: "0x_1p3"`)
}

func TestFloatOutput(t *testing.T) {
	for _, c := range []struct {
		f    float64
		bits int
		want string
	}{
		{1e6, 64, "1000000"}, {1e15, 64, "1e+15"}, {123456789012345, 64, "123456789012345"},
		{0.0001, 64, "0.0001"}, {0.00012345, 64, "0.00012345"}, {1.5e-5, 64, "1.5e-05"},
		{math.MaxFloat64, 64, "1.7976931348623157e+308"}, {5e-324, 64, "5e-324"},
		{float64(float32(0.1)), 32, "0.1"}, {123456, 32, "123456"}, {float64(float32(1.1e-5)), 32, "1.1e-05"},
		// The shortest form would be a halfway point; PostgreSQL's Ryu skips those.
		{-133816704, 32, "-1.33816704e+08"}, {69823504, 32, "6.9823504e+07"},
		{-20610627208914488, 64, "-2.0610627208914488e+16"}, {1 << 60, 64, "1.152921504606847e+18"},
	} {
		if got := string(appendFloat(nil, c.f, c.bits)); got != c.want {
			t.Errorf("%v/%d: got %s want %s", c.f, c.bits, got, c.want)
		}
	}
}

func TestBinary(t *testing.T) {
	for _, c := range binaryCases {
		what := c.t.String() + " " + quote(c.in)
		d := mustParse(t, c.in, c.t)
		got := hex.EncodeToString(AppendBinary(nil, d, c.t))
		if got != c.hex {
			t.Errorf("%s: send %s, want %s", what, got, c.hex)
		}
		raw, _ := hex.DecodeString(c.hex)
		back, err := ParseBinary(raw, c.t)
		if err != nil || !sameDatum(back, d, c.t) {
			t.Errorf("%s: recv gave %+v, %v; want %+v", what, back, err, d)
		}
	}
}

func TestBinaryNumericRecvRounds(t *testing.T) {
	// 1.23456789 (dscale 8) received into numeric(5,2) and numeric(10,0).
	raw, _ := hex.DecodeString("0003000000000008000109291a85") // 1 . 2345 6789 (weight 0)
	for _, c := range []struct {
		t    T
		want string
	}{{NumericOf(5, 2), "1.23"}, {NumericOf(10, 0), "1"}, {NumericOf(20, 10), "1.2345678900"}, {TNumeric, "1.23456789"}} {
		d, err := ParseBinary(raw, c.t)
		if err != nil || TextOf(d, c.t) != c.want {
			t.Errorf("%s: %v %v, want %s", c.t, TextOf(d, c.t), err, c.want)
		}
	}
	// 0.5 (digits 5000, weight -1) rounds up to 1 at scale 0; -0.5 to -1.
	for _, h := range []string{"0001ffff000000011388", "0001ffff400000011388"} {
		raw, _ := hex.DecodeString(h)
		d, err := ParseBinary(raw, NumericOf(3, 0))
		if err != nil || (d.D.Abs() != decimal128.FromI64(1)) {
			t.Errorf("%s: %+v %v", h, d, err)
		}
	}
}

func TestBinaryErrors(t *testing.T) {
	for _, c := range []struct {
		t    T
		hex  string
		code string
	}{
		{TInt32, "0001", "22P03"},
		{TInt64, "000000000000000001", "22P03"},
		{TBool, "", "22P03"},
		{TInterval, "00", "22P03"},
		{TNumeric, "0001", "22P03"},
		{TNumeric, "00010000000000002710", "22P03"}, // digit 10000
		{TNumeric, "00010000123400000001", "22P03"}, // bad sign
		{TNumeric, "0000000000000000c000", "22P03"}, // length mismatch
		{TNumeric, "00000000c0000000", sqlerr.FeatureNotSupported},
		{NumericOf(3, 0), "00010001000000000001", sqlerr.NumericOutOfRange}, // 10000
		{TText, "ff", "22021"},
		{T{Kind: Text, Prec: 2}, "616263", sqlerr.StringDataRightTrunc},
	} {
		raw, _ := hex.DecodeString(c.hex)
		_, err := ParseBinary(raw, c.t)
		if err == nil || sqlerr.Code(err) != c.code {
			t.Errorf("%s %s: error %v, want %s", c.t, c.hex, err, c.code)
		}
	}
}

func TestNumericHelpers(t *testing.T) {
	for _, c := range []struct {
		in        string
		scale     int32
		want      string
		wantScale int32 // DisplayScale
	}{
		{"0", 2, "0.00", 0},
		{"-1.005", 2, "-1.01", 2},
		{"1.004999", 2, "1.00", 0},
		{"12345678901234567890123456789012345.678", 3, "12345678901234567890123456789012345.678", 3},
		{"5e-10", 2, "0.00", 0},
		{"0.5e1", 0, "5", 0},
		{"-0.5", 0, "-1", 0},
		{"123", -1, "120", 0},
		{"1.10", 4, "1.1000", 1},
	} {
		n, err := NumericFromString(c.in, c.scale)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := NumericString(n, c.scale); got != c.want {
			t.Errorf("%s at %d: got %s want %s", c.in, c.scale, got, c.want)
		}
		if got := DisplayScale(n, c.scale); got != c.wantScale && c.scale >= 0 {
			t.Errorf("%s: display scale %d want %d", c.in, got, c.wantScale)
		}
	}
	if _, err := NumericFromString("123456789012345678901234567890123456789", 0); sqlerr.Code(err) != sqlerr.NumericOutOfRange {
		t.Errorf("39 digits: %v", err)
	}
	for _, c := range []struct {
		in       string
		from, to int32
		want     string
		code     string
	}{
		{"1.2345", 4, 2, "1.23", ""},
		{"1.2350", 4, 2, "1.24", ""},
		{"-1.2350", 4, 2, "-1.24", ""},
		{"1.5", 1, 0, "2", ""},
		{"7", 0, 5, "7.00000", ""},
		{"1", 0, 38, "", sqlerr.NumericOutOfRange},
		{"0.99999999999999999999999999999999999999", 38, 0, "1", ""},
		{"0.49999999999999999999999999999999999999", 38, 0, "0", ""},
		{"5", 0, -1, "1", ""}, // 5 at scale -1 is "10"
		{"12345678901234567890123.5", 1, -15, "12345679", ""},
	} {
		n, err := NumericFromString(c.in, c.from)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		r, err := Rescale(n, c.from, c.to)
		if !checkErr(t, "rescale "+c.in, err, c.code, "value overflows numeric format") {
			continue
		}
		if c.to < 0 {
			if got := r.BigInt().String(); got != c.want {
				t.Errorf("rescale %s %d→%d: unscaled %s want %s", c.in, c.from, c.to, got, c.want)
			}
			continue
		}
		if got := NumericString(r, c.to); got != c.want {
			t.Errorf("rescale %s %d→%d: %s want %s", c.in, c.from, c.to, got, c.want)
		}
	}
}

// TestDivScale checks select_div_scale and NumericDiv against PostgreSQL's quotients.
func TestDivScale(t *testing.T) {
	for _, c := range divCases {
		sa, sb := literalScale(c.a), literalScale(c.b)
		a, _ := NumericFromString(c.a, sa)
		b, _ := NumericFromString(c.b, sb)
		rs := DivScale(a, sa, b, sb)
		if rs != c.scale {
			t.Errorf("%s/%s: scale %d, want %d", c.a, c.b, rs, c.scale)
			continue
		}
		q, err := NumericDiv(a, sa, b, sb, rs)
		if err != nil || NumericString(q, rs) != c.want {
			t.Errorf("%s/%s: %s %v, want %s", c.a, c.b, NumericString(q, rs), err, c.want)
		}
	}
	_, err := NumericDiv(decimal128.FromI64(1), 0, decimal128.Num{}, 0, 16)
	checkErr(t, "1/0", err, sqlerr.DivisionByZero, "division by zero")
}

func literalScale(s string) int32 {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return int32(len(s) - i - 1)
	}
	return 0
}

func TestCast(t *testing.T) {
	for _, c := range castCases {
		what := c.from.String() + "→" + c.to.String() + " " + quote(c.in)
		if c.from.IsFloat() && c.in == "NaN" && c.to.Kind == Numeric {
			// Deviation: decimal128 has no NaN.
			c.want, c.code = "numeric NaN is not supported", sqlerr.FeatureNotSupported
		}
		d := mustParse(t, c.in, c.from)
		if want := c.code != "42846"; CanCast(c.from, c.to) != want {
			t.Errorf("%s: CanCast = %v", what, !want)
		}
		r, err := CastDatum(d, c.from, c.to)
		if !checkErr(t, what, err, c.code, c.want) {
			continue
		}
		if got := TextOf(r, c.to); got != c.want {
			t.Errorf("%s: got %q want %q", what, got, c.want)
		}
	}
	// Assignment to VARCHAR(n) rejects instead of truncating.
	_, err := AssignDatum(Str("abcd"), TText, T{Kind: Text, Prec: 2})
	checkErr(t, "assign", err, sqlerr.StringDataRightTrunc, "value too long for type character varying(2)")
	if r, err := AssignDatum(Str("ab  "), TText, T{Kind: Text, Prec: 2}); err != nil || r.S != "ab" {
		t.Errorf("assign trailing spaces: %q %v", r.S, err)
	}
	if r, _ := CastDatum(Null, TInt32, TText); !r.Null {
		t.Errorf("NULL cast")
	}
}

func TestCommonType(t *testing.T) {
	vc5 := T{Kind: Text, Prec: 5}
	for _, c := range []struct {
		a, b, want T
		ok         bool
	}{
		{TInt16, TInt32, TInt32, true},
		{TInt64, TInt32, TInt64, true},
		{TInt64, NumericOf(10, 2), TNumeric, true},
		{NumericOf(10, 2), NumericOf(10, 2), NumericOf(10, 2), true},
		{NumericOf(10, 2), TFloat32, TFloat32, true},
		{TFloat32, TFloat64, TFloat64, true},
		{TInt32, TFloat64, TFloat64, true},
		{TUnknown, TDate, TDate, true},
		{TInterval, TUnknown, TInterval, true},
		{TUnknown, TUnknown, TText, true},
		{TText, vc5, TText, true},
		{vc5, vc5, vc5, true},
		{TDate, TTimestamp, TTimestamp, true},
		{TBool, TBool, TBool, true},
		{TBool, TInt32, T{}, false},
		{TText, TInt32, T{}, false},
		{TInterval, TTimestamp, T{}, false},
	} {
		got, ok := CommonType(c.a, c.b)
		if got != c.want || ok != c.ok {
			t.Errorf("CommonType(%s, %s) = %s, %v", c.a, c.b, got, ok)
		}
	}
}

func TestDateTrunc(t *testing.T) {
	for _, c := range truncCases {
		ts := mustParse(t, c.in, TTimestamp)
		r, err := DateTrunc(c.unit, ts.I)
		if !checkErr(t, c.unit+" "+c.in, err, c.code, c.want) {
			continue
		}
		if got := TextOf(Int(r), TTimestamp); got != c.want {
			t.Errorf("date_trunc(%s, %s) = %s, want %s", c.unit, c.in, got, c.want)
		}
	}
}

func TestExtract(t *testing.T) {
	for _, c := range extractCases {
		what := "extract(" + c.field + " from " + c.in + "::" + c.t.String() + ")"
		if c.want == "Infinity" || (c.field == "julian" && c.t.Kind == Timestamp) {
			continue // deviations: no numeric infinity; julian of a timestamp is unsupported
		}
		v := mustParse(t, c.in, c.t)
		r, err := Extract(c.field, v, c.t)
		if !checkErr(t, what, err, c.code, c.want) {
			if CheckExtract(c.field, c.t) == nil {
				t.Errorf("%s: CheckExtract passed", what)
			}
			continue
		}
		if c.want == "" {
			if !r.Null {
				t.Errorf("%s: want NULL", what)
			}
			continue
		}
		if got := TextOf(r, ExtractType(c.field, c.t)); got != c.want {
			t.Errorf("%s = %s, want %s", what, got, c.want)
		}
	}
	if _, err := Extract("julian", Int(0), TTimestamp); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		t.Errorf("julian from timestamp: %v", err)
	}
}

func TestIntervalArithmetic(t *testing.T) {
	for _, c := range addIntervalCases {
		ts := mustParse(t, c.ts, TTimestamp)
		iv := mustParse(t, c.iv, TInterval)
		if got := TextOf(Int(AddInterval(ts.I, iv.IV)), TTimestamp); got != c.want {
			t.Errorf("%s + %s = %s, want %s", c.ts, c.iv, got, c.want)
		}
	}
	for _, c := range subTimestampCases {
		a, b := mustParse(t, c.a, TTimestamp), mustParse(t, c.b, TTimestamp)
		if got := TextOf(Datum{IV: SubTimestamps(a.I, b.I)}, TInterval); got != c.want {
			t.Errorf("%s - %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	// PostgreSQL: '1 mon'::interval = '30 days' and '1 day' = '24 hours'.
	m := IntervalMicros(mustParse(t, "1 mon", TInterval).IV)
	if m != IntervalMicros(mustParse(t, "30 days", TInterval).IV) || m != IntervalMicros(mustParse(t, "720 hours", TInterval).IV) {
		t.Errorf("interval comparison value")
	}
}

func TestCalendar(t *testing.T) {
	for days := int64(-800000); days < 800000; days += 37 {
		y, m, d := civilFromDays(days)
		if back := daysFromCivil(y, m, d); back != days {
			t.Fatalf("day %d -> %d-%d-%d -> %d", days, y, m, d, back)
		}
	}
}

func TestArrow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)

	cols := []struct {
		t    T
		vals []string
	}{
		{TBool, []string{"t", "f"}},
		{TInt16, []string{"-5", "7"}},
		{TTimestamp, []string{"2026-01-01 10:00:00.5", "1969-12-31 23:59:59"}},
		{TDate, []string{"2026-01-01", "1900-03-01"}},
		{TFloat32, []string{"0.1", "-Infinity"}},
		{TFloat64, []string{"0.1", "NaN"}},
		{NumericOf(10, 3), []string{"1.500", "-2.250"}},
		{TNumeric, []string{"1.5", "-0.0000000000000001"}},
		{T{Kind: Text, Prec: 4}, []string{"abcd", ""}},
		{TInterval, []string{"1 year 2 mons 3 days 04:05:06.5", "-00:00:01"}},
	}
	names := make([]string, len(cols))
	ts := make([]T, len(cols))
	for i, c := range cols {
		names[i], ts[i] = "c"+c.t.String(), c.t
	}
	schema := Schema(names, ts)
	if got := TypesOf(schema); len(got) != len(ts) {
		t.Fatalf("TypesOf: %v", got)
	} else {
		for i := range ts {
			if got[i] != ts[i] {
				t.Errorf("TypesOf[%d] = %+v, want %+v", i, got[i], ts[i])
			}
		}
	}
	for _, c := range cols {
		b := NewBuilder(mem, c.t)
		for _, v := range c.vals {
			AppendDatum(b, mustParse(t, v, c.t), c.t)
		}
		AppendDatum(b, Null, c.t)
		arr := b.NewArray()
		b.Release()
		if !arrow.TypeEqual(arr.DataType(), c.t.Arrow()) {
			t.Errorf("%s: array type %s", c.t, arr.DataType())
		}
		for i, v := range c.vals {
			if got := TextOf(DatumAt(arr, i, c.t), c.t); got != v {
				t.Errorf("%s[%d] = %s, want %s", c.t, i, got, v)
			}
		}
		if !DatumAt(arr, len(c.vals), c.t).Null {
			t.Errorf("%s: NULL lost", c.t)
		}
		arr.Release()
	}
	nulls := array.NewNull(3)
	defer nulls.Release()
	if !DatumAt(nulls, 1, TInt32).Null {
		t.Errorf("null array")
	}
	// Field types without metadata are guessed from the Arrow type.
	plain := arrow.NewSchema([]arrow.Field{{Name: "d", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}}}, nil)
	if got := TypesOf(plain)[0]; got != (T{Kind: Numeric, Scale: 4}) {
		t.Errorf("guessed %+v", got)
	}
	for _, typ := range []T{{Kind: Numeric, Scale: 4}, NumericOf(38, 6), TNumeric, {Kind: Text, Prec: 12}, TUnknown} {
		if back, ok := DecodeType(EncodeType(typ)); !ok || back != typ {
			t.Errorf("encode %+v -> %q -> %+v", typ, EncodeType(typ), back)
		}
	}
}

func BenchmarkAppendText(b *testing.B) {
	for _, c := range []struct {
		t  T
		in string
	}{
		{NumericOf(12, 4), "-12345.678"}, {TNumeric, "-12345.678"}, {TFloat64, "0.1"},
		{TTimestamp, "2026-01-01 10:00:00.5"}, {TInterval, "1 day 02:03:04"},
	} {
		d, _ := ParseText(c.in, c.t)
		buf := make([]byte, 0, 64)
		b.Run(c.t.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendText(buf[:0], d, c.t)
			}
		})
	}
}
