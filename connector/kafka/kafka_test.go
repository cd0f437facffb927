package kafka

import (
	"github.com/streamdb/streamdb/connector"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaOptions: option errors name the option (22023) and metadata
// columns must have their types, without asking a broker (a stored
// source's split count is given).
func TestKafkaOptions(t *testing.T) {
	cols := []connector.Column{{Name: "v", Type: types.TInt64}}
	base := map[string]string{"connector": "kafka", "topic": "t", "properties.bootstrap.servers": "127.0.0.1:9092", "__splits": "3"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	c, err := connector.New(cols, base)
	if err != nil || c.Splits() != 3 || c.Bounded() {
		t.Fatalf("New: %v, %v", c, err)
	}
	for _, tc := range []struct {
		opts      map[string]string
		cols      []connector.Column
		code, msg string
	}{
		{with("topic", ""), cols, sqlerr.InvalidParameterValue, "topic"},
		{with("properties.bootstrap.servers", "x"), cols, sqlerr.InvalidParameterValue, "host:port"},
		{with("format", "avro"), cols, sqlerr.InvalidParameterValue, "format"},
		{with("scan.startup.mode", "timestamp"), cols, sqlerr.InvalidParameterValue, "scan.startup.timestamp"},
		{with("scan.startup.timestamp", "5"), cols, sqlerr.InvalidParameterValue, "scan.startup.mode"},
		{with("scan.startup.mode", "timestamp", "scan.startup.timestamp", "yesterday"), cols, sqlerr.InvalidParameterValue, "scan.startup.timestamp"},
		{with("group.id", "g"), cols, sqlerr.InvalidParameterValue, "group.id"},
		{with("properties.group.id", " "), cols, sqlerr.InvalidParameterValue, "group.id"},
		{with("scan.topic-partition-discovery.interval", "soon"), cols, sqlerr.InvalidParameterValue, "discovery"},
		{base, []connector.Column{{Name: "_kafka_offset", Type: types.TText}}, sqlerr.DatatypeMismatch, "_kafka_offset"},
		{base, []connector.Column{{Name: "_kafka_other", Type: types.TText}}, sqlerr.UndefinedColumn, "_kafka_other"},
	} {
		_, err := connector.New(tc.cols, tc.opts)
		se := sqlerr.As(err)
		if err == nil || se.Code != tc.code || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%v %v: got %v, want %s naming %q", tc.opts, tc.cols, err, tc.code, tc.msg)
		}
	}
	if _, err := connector.New(cols, with("scan.startup.mode", "timestamp", "scan.startup.timestamp", "2026-01-01 00:00:00")); err != nil {
		t.Fatal(err)
	}
}

// decodeOne decodes one message of a one-column source and returns the
// value as text ("NULL"), or "error".
func decodeOne(t *testing.T, format, raw string, typ types.T) string {
	t.Helper()
	r := decodeReader(t, format, []connector.Column{{Name: "v", Type: typ}})
	rec := r.decodeBatch(memory.DefaultAllocator, []*kgo.Record{{Value: []byte(raw)}})
	defer rec.Release()
	if bad := r.TakeBad(); len(bad) > 0 {
		return "error"
	}
	if rec.NumRows() != 1 {
		t.Fatalf("%s: %d rows", raw, rec.NumRows())
	}
	d := types.DatumAt(rec.Column(0), 0, typ)
	if d.Null {
		return "NULL"
	}
	return types.TextOf(d, typ)
}

func TestKafkaDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		raw  string // the member v's value; "" leaves it out
		t    types.T
		want string // text, or "NULL", or "error"
	}{
		{`12`, types.TInt64, "12"},
		{`-12`, types.TInt32, "-12"},
		{`"12"`, types.TInt64, "12"},
		{`12345678901234567890`, types.TInt64, "error"},
		{`9223372036854775807`, types.TInt64, "9223372036854775807"},
		{`70000`, types.TInt16, "error"},
		{`1.5`, types.TFloat64, "1.5"},
		{`1e3`, types.TFloat64, "1000"},
		{`"NaN"`, types.TFloat64, "NaN"},
		{`"hi"`, types.TText, "hi"},
		{`"a\"b\u00e9\n"`, types.TText, "a\"b\u00e9\n"},
		{`"\ud83d\ude00"`, types.TText, "\U0001F600"},
		{`{"a": [1, {"b": null}]}`, types.TText, `{"a": [1, {"b": null}]}`},
		{`12`, types.TText, "12"},
		{`true`, types.TBool, "t"},
		{`"yes"`, types.TBool, "t"},
		{`null`, types.TInt64, "NULL"},
		{``, types.TInt64, "NULL"},
		{`1767225600000`, types.TTimestamp, "2026-01-01 00:00:00"},
		{`"2026-01-01 00:00:01"`, types.TTimestamp, "2026-01-01 00:00:01"},
		{`"12.50"`, types.TNumeric, "12.50"}, // numeric input keeps the digits written
		{`"x"`, types.TInt64, "error"},
		{`[1]`, types.TInt64, "error"},
		{`true`, types.TInt64, "error"},
		{`tru`, types.TBool, "error"},
		{`01`, types.TInt64, "error"},
		{`[1,,2]`, types.TText, "error"},
		{`"abc`, types.TText, "error"},
		{`{"b": [1, 2.50], "a": "x\u00e9", "a": 1}`, types.TJSONB, `{"a": 1, "b": [1, 2.50]}`},
		{`{"b":  1}`, types.TJSON, `{"b":  1}`},
		{`"s\"t"`, types.TJSONB, `"s\"t"`},
		{`1e2`, types.TJSONB, `100`},
		{`true`, types.TJSONB, `true`},
		{`null`, types.TJSONB, "NULL"},
	} {
		msg := `{"other": {"x": [1, "}"]}, "v": ` + tc.raw + `}`
		if tc.raw == "" {
			msg = `{"other": 1}`
		}
		if got := decodeOne(t, "json", msg, tc.t); got != tc.want {
			t.Errorf("%s as %s: got %q, want %q", tc.raw, tc.t, got, tc.want)
		}
	}
	for _, msg := range []string{`not json`, `{"v": 1} x`, `{"v" 1}`, `{"v": 1,}`, `[1]`, ``, `{"v": 1`} {
		if got := decodeOne(t, "json", msg, types.TInt64); got != "error" {
			t.Errorf("%q: got %q, want an error", msg, got)
		}
	}
	// A duplicate member: the last wins (as encoding/json).
	if got := decodeOne(t, "json", `{"v": 1, "v": 2}`, types.TInt64); got != "2" {
		t.Errorf("duplicate member: got %q", got)
	}
	// An escaped member name.
	if got := decodeOne(t, "json", `{"\u0076": 7}`, types.TInt64); got != "7" {
		t.Errorf("escaped member name: got %q", got)
	}
}

func TestKafkaDecodeCSV(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`abc`, "abc"},
		{`"a,b"`, "a,b"},
		{`"say ""hi"""`, `say "hi"`},
		{"\"two\nlines\"", "two\nlines"},
		{"x\r\n", "x"},
		{`a"b`, "error"},
		{`"a"b`, "error"},
		{`"ab`, "error"},
		{`a,b`, "error"},
		{``, "error"},
	} {
		if got := decodeOne(t, "csv", tc.raw, types.TText); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.raw, got, tc.want)
		}
	}
	r := decodeReader(t, "csv", []connector.Column{{Name: "a", Type: types.TInt64}, {Name: "b", Type: types.TText}})
	rec := r.decodeBatch(memory.DefaultAllocator, []*kgo.Record{{Value: []byte("1,")}, {Value: []byte(",x")}, {Value: []byte("z,x")}})
	defer rec.Release()
	if rec.NumRows() != 2 || !rec.Column(1).IsNull(0) || !rec.Column(0).IsNull(1) || len(r.TakeBad()) != 1 {
		t.Errorf("empty fields are NULL, a bad row is left out: %v", rec)
	}
}

// TestKafkaDecodeAllocs: decoding a batch allocates per batch (the
// arrays), not per message.
func TestKafkaDecodeAllocs(t *testing.T) {
	for _, format := range []string{"json", "csv"} {
		r := decodeReader(t, format, benchCols)
		recs := benchRecords(format, 4096)
		allocs := testing.AllocsPerRun(5, func() {
			r.decodeBatch(memory.DefaultAllocator, recs).Release()
		})
		t.Logf("%s: %.0f allocations for %d messages", format, allocs, len(recs))
		if allocs > float64(len(recs)/16) {
			t.Errorf("%s: %.0f allocations for %d messages", format, allocs, len(recs))
		}
	}
}
