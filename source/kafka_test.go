package source

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// TestKafkaOptions: option errors name the option (22023) and metadata
// columns must have their types, without asking a broker (a stored
// source's split count is given).
func TestKafkaOptions(t *testing.T) {
	cols := []Column{{Name: "v", Type: types.TInt64}}
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
	c, err := New(cols, base)
	if err != nil || c.Splits() != 3 || c.Bounded() {
		t.Fatalf("New: %v, %v", c, err)
	}
	for _, tc := range []struct {
		opts      map[string]string
		cols      []Column
		code, msg string
	}{
		{with("topic", ""), cols, sqlerr.InvalidParameterValue, "topic"},
		{with("properties.bootstrap.servers", "x"), cols, sqlerr.InvalidParameterValue, "host:port"},
		{with("format", "avro"), cols, sqlerr.InvalidParameterValue, "format"},
		{with("scan.startup.mode", "timestamp"), cols, sqlerr.InvalidParameterValue, "scan.startup.timestamp"},
		{with("scan.startup.timestamp", "5"), cols, sqlerr.InvalidParameterValue, "scan.startup.mode"},
		{with("scan.startup.mode", "timestamp", "scan.startup.timestamp", "yesterday"), cols, sqlerr.InvalidParameterValue, "scan.startup.timestamp"},
		{with("group.id", "g"), cols, sqlerr.InvalidParameterValue, "group.id"},
		{base, []Column{{Name: "_kafka_offset", Type: types.TText}}, sqlerr.DatatypeMismatch, "_kafka_offset"},
		{base, []Column{{Name: "_kafka_other", Type: types.TText}}, sqlerr.UndefinedColumn, "_kafka_other"},
	} {
		_, err := New(tc.cols, tc.opts)
		se := sqlerr.As(err)
		if err == nil || se.Code != tc.code || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%v %v: got %v, want %s naming %q", tc.opts, tc.cols, err, tc.code, tc.msg)
		}
	}
	if _, err := New(cols, with("scan.startup.mode", "timestamp", "scan.startup.timestamp", "2026-01-01 00:00:00")); err != nil {
		t.Fatal(err)
	}
}

func TestKafkaJSONDatum(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		t    types.T
		want string // text, or "NULL", or "error"
	}{
		{`12`, types.TInt64, "12"},
		{`"12"`, types.TInt64, "12"},
		{`1.5`, types.TFloat64, "1.5"},
		{`"hi"`, types.TText, "hi"},
		{`{"a":1}`, types.TText, `{"a":1}`},
		{`true`, types.TBool, "t"},
		{`null`, types.TInt64, "NULL"},
		{``, types.TInt64, "NULL"},
		{`1767225600000`, types.TTimestamp, "2026-01-01 00:00:00"},
		{`"2026-01-01 00:00:01"`, types.TTimestamp, "2026-01-01 00:00:01"},
		{`"x"`, types.TInt64, "error"},
		{`[1]`, types.TInt64, "error"},
		{`true`, types.TInt64, "error"},
	} {
		d, err := jsonDatum(json.RawMessage(tc.raw), tc.t)
		got := "error"
		if err == nil {
			got = "NULL"
			if !d.Null {
				got = types.TextOf(d, tc.t)
			}
		}
		if got != tc.want {
			t.Errorf("%s as %s: got %q (%v), want %q", tc.raw, tc.t, got, err, tc.want)
		}
	}
}
