package sqllogic

import (
	"fmt"
	"testing"
)

// TestRescale: views (aggregate, join, top-N) on either backend stay exact
// across parallelism 1 -> 4 (START JOB ... FROM SAVEPOINT ... WITH
// (parallelism = 4)) -> 2 (ALTER MATERIALIZED VIEW ... SET (parallelism =
// 2)): their key groups are redistributed over the new instances.
func TestRescale(t *testing.T) {
	for _, backend := range []string{"pebble", "memory"} {
		t.Run(backend, func(t *testing.T) {
			srv := StartServer(t, "")
			c := srv.Conn(t)
			createBackendViews(t, c, "WITH (parallelism = 1, state.backend = '"+backend+"')")
			views := []string{"agg", "jn", "top2"}
			for _, v := range views {
				if p := jobColumn(t, c, v, "parallelism"); p != "1" {
					t.Fatalf("%s: parallelism %s, want 1", v, p)
				}
			}
			insertRows(t, c, 0, 400, 53)
			checkBackendViews(t, c, "parallelism 1")
			for _, v := range views {
				execAll(t, c, "STOP JOB "+v+" WITH SAVEPOINT rs_"+v)
			}
			insertRows(t, c, 400, 150, 53)
			for _, v := range views {
				execAll(t, c, "START JOB "+v+" FROM SAVEPOINT rs_"+v+" WITH (parallelism = 4)")
				if p := jobColumn(t, c, v, "parallelism"); p != "4" {
					t.Fatalf("%s: parallelism %s, want 4", v, p)
				}
			}
			insertRows(t, c, 550, 150, 59)
			checkBackendViews(t, c, "parallelism 4")
			for _, v := range views {
				execAll(t, c, "ALTER MATERIALIZED VIEW "+v+" SET (parallelism = 2)")
				if p := jobColumn(t, c, v, "parallelism"); p != "2" {
					t.Fatalf("%s: parallelism %s, want 2", v, p)
				}
			}
			insertRows(t, c, 700, 150, 61)
			checkBackendViews(t, c, "parallelism 2")
			for _, bad := range []string{"0", "129", "'two'", "1.5"} {
				wantFailCode(t, c, fmt.Sprintf("ALTER MATERIALIZED VIEW agg SET (parallelism = %s)", bad), "22023")
				wantFailCode(t, c, fmt.Sprintf("START JOB agg WITH (parallelism = %s)", bad), "22023")
			}
			wantFailCode(t, c, "START JOB agg WITH (colour = 'red')", "22023")
		})
	}
}
