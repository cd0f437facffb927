package expr

import (
	"testing"

	"github.com/streamdb/streamdb/types"
)

// TestSizePretty compares pg_size_pretty with PostgreSQL 15's answers
// (taken from a PostgreSQL 15.x server: SELECT v, pg_size_pretty(v)).
func TestSizePretty(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want string
	}{
		{0, "0 bytes"}, {1, "1 bytes"}, {-1, "-1 bytes"},
		{10239, "10239 bytes"}, {10240, "10 kB"}, {-10240, "-10 kB"},
		{10752, "11 kB"}, {10753, "11 kB"}, {20479, "20 kB"}, {20480, "20 kB"},
		{1048063, "1023 kB"}, {1048064, "1024 kB"}, {1048575, "1024 kB"},
		{20971519, "20 MB"}, {20971520, "20 MB"}, {-20971520, "-20 MB"}, {10485760, "10 MB"},
		{1073741824, "1024 MB"}, {1099511627775, "1024 GB"}, {1099511627776, "1024 GB"},
		{22517998136852479, "20 PB"}, {22517998136852480, "20 PB"},
		{9223372036854775807, "8192 PB"}, {-9223372036854775807, "-8192 PB"},
	} {
		if got := SizePretty(c.v); got != c.want {
			t.Errorf("pg_size_pretty(%d) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestSizePrettyNumeric compares pg_size_pretty(numeric) with PostgreSQL
// 15's answers (SELECT v, pg_size_pretty(v) FROM unnest(ARRAY[...]::numeric[]) v),
// at the storage scale of an unconstrained numeric, of NUMERIC(38,0) for
// sizes of 38 digits, and of NUMERIC(10,2) (which keeps 1.50's zero).
func TestSizePrettyNumeric(t *testing.T) {
	for _, c := range []struct {
		v    string
		t    types.T
		want string
	}{
		{"12345.67", types.TNumeric, "12 kB"}, {"0", types.TNumeric, "0 bytes"},
		{"0.5", types.TNumeric, "0.5 bytes"}, {"-0.5", types.TNumeric, "-0.5 bytes"},
		{"123.45", types.TNumeric, "123.45 bytes"}, {"1.50", types.NumericOf(10, 2), "1.50 bytes"},
		{"10239.99", types.TNumeric, "10239.99 bytes"}, {"10240", types.TNumeric, "10 kB"},
		{"10240.5", types.TNumeric, "10 kB"}, {"-10240", types.TNumeric, "-10 kB"},
		{"10752", types.TNumeric, "11 kB"}, {"20479.9", types.TNumeric, "20 kB"},
		{"1048063.5", types.TNumeric, "1023 kB"}, {"1048064", types.TNumeric, "1024 kB"},
		{"20971519.9", types.TNumeric, "20 MB"}, {"1125899906842623.5", types.TNumeric, "1024 TB"},
		{"22517998136852479.9", types.TNumeric, "20 PB"}, {"9223372036854775808", types.TNumeric, "8192 PB"},
		{"1000000000000000000000", types.TNumeric, "888178 PB"}, {"-1000000000000000000000", types.TNumeric, "-888178 PB"},
		{"0.0000001", types.TNumeric, "0.0000001 bytes"},
		{"99999999999999999999999999999999999999", types.NumericOf(38, 0), "88817841970012523233891 PB"},
		{"-99999999999999999999999999999999999999", types.NumericOf(38, 0), "-88817841970012523233891 PB"},
	} {
		d, err := types.ParseText(c.v, c.t)
		if err != nil {
			t.Fatalf("%s: %v", c.v, err)
		}
		if got := SizePrettyNumeric(d.D, c.t); got != c.want {
			t.Errorf("pg_size_pretty(%s::%s) = %q, want %q", c.v, c.t, got, c.want)
		}
	}
}
