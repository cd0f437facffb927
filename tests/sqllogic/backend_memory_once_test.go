package sqllogic

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMemoryBackendStateHeldOnce: a GROUP BY view on the memory backend
// holds its state once, in the aggregate's groups (issue 15): its
// state_bytes in streamdb_jobs (which, on the memory backend, counts the
// state map too, as state.memory_limit does) is about that of the same
// view on Pebble, after a restart that loaded it from the snapshot, and
// the view is exact before and after.
func TestMemoryBackendStateHeldOnce(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	const keys = 20000
	query := "SELECT k, count(*) AS n, count(DISTINCT v) AS d, sum(v) AS s FROM t GROUP BY k"
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW mv WITH (state.backend = 'memory') AS "+query,
		"CREATE MATERIALIZED VIEW pv WITH (state.backend = 'pebble') AS "+query)
	for from := 0; from < 2*keys; from += 5000 {
		var vals []string
		for i := from; i < from+5000; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", i%keys, i%3))
		}
		execAll(t, c, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	check := func(what string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT")
		want := queryPairs(t, c, "SELECT k, sum(v) * 1000 + count(DISTINCT v) FROM t GROUP BY k")
		samePairs(t, what+": memory view", queryPairs(t, c, "SELECT k, s * 1000 + d FROM mv"), want)
		samePairs(t, what+": pebble view", queryPairs(t, c, "SELECT k, s * 1000 + d FROM pv"), want)
	}
	check("before restart")
	if n := snapshotFiles(t, srv.DataDir()); n == 0 {
		t.Fatal("no memory snapshot files after CHECKPOINT")
	}
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	check("after kill -9")
	// Each job reports its groups' bytes after its first barrier.
	stateBytes := func(name string) int64 {
		n, err := strconv.ParseInt(jobColumn(t, c, name, "state_bytes"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var mem, peb int64
	poll(t, 2*time.Minute, "both jobs to report their state", func() bool {
		mem, peb = stateBytes("mv"), stateBytes("pv")
		return mem >= keys*64 && peb >= keys*64
	})
	t.Logf("state_bytes for %d groups: memory backend %d, pebble backend %d", keys, mem, peb)
	if mem > peb+peb/10 {
		t.Fatalf("the memory-backend view accounts %d bytes of state, the Pebble one %d: state is held more than once", mem, peb)
	}
	execAll(t, c, "INSERT INTO t VALUES (1, 5), (2, 6), (30000, 1)")
	check("after more rows")
}
