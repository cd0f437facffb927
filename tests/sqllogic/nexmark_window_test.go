package sqllogic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/nexmark"
)

// TestNexmarkWindowQueries runs Nexmark q5 (HOP), q7 (TUMBLE and a max
// joined back) and q8 (two TUMBLEs joined on their windows), as
// nexmark/queries has them, as materialized views over streams with
// WATERMARK FOR (so their windows close), across a kill -9: each view
// must equal its query run as a batch query.
func TestNexmarkWindowQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Nexmark volumes; run in the plain test step")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	for _, ddl := range nexmarkDDL {
		ddl = strings.TrimSuffix(strings.TrimSpace(ddl), ")") + ", WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)"
		mustExec(t, c, "streamdb", ddl)
	}
	want := map[string]bool{"q5": true, "q7": true, "q8": true}
	var qs []nexmark.Query
	for _, q := range nexmark.Queries() {
		if want[q.Name] {
			qs = append(qs, q)
			mustExec(t, c, "streamdb", "CREATE MATERIALIZED VIEW nexmark_"+q.Name+" AS "+q.SQL)
		}
	}
	if len(qs) != len(want) {
		t.Fatalf("nexmark/queries has %d of q5, q7, q8", len(qs))
	}
	gen := newNexmarkGen(20261202)
	start := time.Now()
	for round := 0; round < 3; round++ {
		if err := gen.events(10000).copyTo(context.Background(), c); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if round == 1 {
			srv.Kill9()
			srv.Restart(t)
			c = srv.Conn(t)
		}
		mustExec(t, c, "streamdb", "CHECKPOINT")
		mustExec(t, c, "streamdb", "CHECKPOINT")
		for _, q := range qs {
			batch, err := queryRows(c, q.SQL)
			if err != nil {
				t.Fatalf("round %d: batch %s: %v", round, q.Name, err)
			}
			view, err := queryRows(c, "SELECT * FROM nexmark_"+q.Name)
			if err != nil {
				t.Fatalf("round %d: view %s: %v", round, q.Name, err)
			}
			if len(batch) == 0 {
				t.Errorf("round %d: %s is empty: the events do not exercise it", round, q.Name)
			}
			if diff := diffRows(view, batch); diff != "" {
				t.Errorf("round %d: view nexmark_%s differs from its batch query (\"PostgreSQL\" below is the batch query)\n%s", round, q.Name, diff)
			}
			t.Logf("round %d: %s: %d rows", round, q.Name, len(batch))
		}
	}
	t.Logf("3 rounds of 10000 events checked in %v", time.Since(start).Round(time.Millisecond))
}
