package monitor

import (
	"testing"
	"time"

	"github.com/streamdb/streamdb/sql"
)

func TestTagVerb(t *testing.T) {
	for _, c := range []struct {
		tag  string
		verb string
		n    int64
	}{
		{"INSERT 0 3", "INSERT", 3},
		{"COPY 1000", "COPY", 1000},
		{"SELECT 0", "SELECT", 0},
		{"CREATE MATERIALIZED VIEW", "CREATE", 0},
		{"FROBNICATE 2", "OTHER", 2},
		{"", "OTHER", 0},
	} {
		if v, n := tagVerb(c.tag); v != c.verb || n != c.n {
			t.Errorf("tagVerb(%q) = %q, %d; want %q, %d", c.tag, v, n, c.verb, c.n)
		}
	}
}

func TestSQLVerb(t *testing.T) {
	for sqlText, want := range map[string]string{
		"select 1":                      "SELECT",
		"  (SELECT 1)":                  "SELECT",
		"WITH x AS (SELECT 1) SELECT *": "SELECT",
		"insert into t values (1)":      "INSERT",
		"create table t (a int)":        "CREATE",
		"selec 1":                       "OTHER",
		"'; DROP TABLE x":               "OTHER",
		"":                              "OTHER",
	} {
		if got := sqlVerb(sqlText); got != want {
			t.Errorf("sqlVerb(%q) = %q, want %q", sqlText, got, want)
		}
	}
}

// The ring keeps the last n samples per job, averages rates over
// rateWindow samples, never reports a negative rate after a restart, and
// forgets dropped jobs.
func TestRing(t *testing.T) {
	var r ring
	r.init(8)
	t0 := time.Unix(1000, 0)
	for i := 0; i < 20; i++ {
		rows := int64(i * 100)
		if i >= 15 {
			rows = int64(i-15) * 10 // the job restarted: its counters start again
		}
		r.add(t0.Add(time.Duration(i)*time.Second), []sql.JobStatus{{Name: "v", RowsIn: rows, RowsOut: rows / 2}, {Name: "gone"}})
	}
	r.add(t0.Add(20*time.Second), []sql.JobStatus{{Name: "v", RowsIn: 60}})
	got := r.copy()
	if _, ok := got["gone"]; ok {
		t.Error("a dropped job's samples are kept")
	}
	s := got["v"]
	if len(s) != 8 {
		t.Fatalf("%d samples kept, want 8", len(s))
	}
	if s[len(s)-1].T != t0.Add(20*time.Second).UnixMilli() {
		t.Errorf("the newest sample is at %d", s[len(s)-1].T)
	}
	for _, x := range s {
		if x.InRate < 0 || x.OutRate < 0 {
			t.Errorf("negative rate %+v", x)
		}
	}
	// Sample 14 (the first of the kept ones is 13): 100 rows/s over 5 s.
	if s[1].InRate != 100 || s[1].OutRate != 50 {
		t.Errorf("rate at sample 14 = %v in, %v out; want 100, 50", s[1].InRate, s[1].OutRate)
	}
}
