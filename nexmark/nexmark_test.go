package nexmark

import (
	"strings"
	"testing"
)

// TestQueries: the suite is q0-q22 without q6, q10, q12 and q13, in number
// order, each one SELECT.
func TestQueries(t *testing.T) {
	var names []string
	for _, q := range Queries() {
		names = append(names, q.Name)
		if !strings.Contains(strings.ToUpper(q.SQL), "SELECT") || strings.HasSuffix(q.SQL, ";") {
			t.Errorf("%s is not one SELECT: %q", q.Name, q.SQL)
		}
	}
	want := "q0 q1 q2 q3 q4 q5 q7 q8 q9 q11 q14 q15 q16 q17 q18 q19 q20 q21 q22"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("queries %s, want %s", got, want)
	}
	if ddl := SourceDDL(100, 3, 2); len(ddl) != 3 || !strings.Contains(ddl[2], "nexmark.table = 'bid'") {
		t.Fatalf("SourceDDL: %v", ddl)
	}
}
