package expr

import "testing"

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
