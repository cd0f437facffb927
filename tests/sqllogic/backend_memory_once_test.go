package sqllogic

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMemoryBackendStateHeldOnce: a GROUP BY view, a top-N view and a join
// view on the memory backend hold their state once, in the aggregate's
// groups, the top-N's partitions and the join's groups (issue 15): each one's
// state_bytes in streamdb_jobs (which, on the memory backend, counts the
// state map too, as state.memory_limit does) is about that of the same
// view on Pebble, after a restart that loaded it from the snapshot, and
// the view is exact before and after.
func TestMemoryBackendStateHeldOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a volume test (the -race step's budget); run in the plain test step")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	const keys = 20000
	query := "SELECT k, count(*) AS n, count(DISTINCT v) AS d, sum(v) AS s FROM t GROUP BY k"
	top := "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) x WHERE rn <= 1"
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW mv WITH (state.backend = 'memory') AS "+query,
		"CREATE MATERIALIZED VIEW pv WITH (state.backend = 'pebble') AS "+query,
		"CREATE MATERIALIZED VIEW mt WITH (state.backend = 'memory') AS "+top,
		"CREATE MATERIALIZED VIEW pt WITH (state.backend = 'pebble') AS "+top,
		"CREATE TABLE u (k BIGINT, w BIGINT)",
		"CREATE MATERIALIZED VIEW mj WITH (state.backend = 'memory') AS SELECT t.k AS k, t.v AS v, u.w AS w FROM t JOIN u ON t.k = u.k",
		"CREATE MATERIALIZED VIEW pj WITH (state.backend = 'pebble') AS SELECT t.k AS k, t.v AS v, u.w AS w FROM t JOIN u ON t.k = u.k")
	var us []string
	for i := 0; i < keys; i += 2 {
		us = append(us, fmt.Sprintf("(%d, %d)", i, i%10))
	}
	execAll(t, c, "INSERT INTO u VALUES "+strings.Join(us, ", "))
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
		want = queryPairs(t, c, "SELECT k, max(v) FROM t GROUP BY k")
		samePairs(t, what+": memory top-N", queryPairs(t, c, "SELECT k, v FROM mt"), want)
		samePairs(t, what+": pebble top-N", queryPairs(t, c, "SELECT k, v FROM pt"), want)
		want = queryPairs(t, c, "SELECT t.k, sum(t.v * 100 + u.w) FROM t JOIN u ON t.k = u.k GROUP BY t.k")
		samePairs(t, what+": memory join", queryPairs(t, c, "SELECT k, sum(v * 100 + w) FROM mj GROUP BY k"), want)
		samePairs(t, what+": pebble join", queryPairs(t, c, "SELECT k, sum(v * 100 + w) FROM pj GROUP BY k"), want)
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
	for _, v := range [][2]string{{"mv", "pv"}, {"mt", "pt"}, {"mj", "pj"}} {
		var mem, peb int64
		poll(t, 2*time.Minute, "both jobs to report their state", func() bool {
			mem, peb = stateBytes(v[0]), stateBytes(v[1])
			return mem >= keys*32 && peb >= keys*32
		})
		t.Logf("state_bytes of %s for %d keys: memory backend %d, pebble backend %d", v[0], keys, mem, peb)
		if mem > peb+peb/10 {
			t.Fatalf("the memory-backend view %s accounts %d bytes of state, the Pebble one %d: state is held more than once", v[0], mem, peb)
		}
	}
	execAll(t, c, "INSERT INTO t VALUES (1, 5), (2, 6), (30000, 1)", "INSERT INTO u VALUES (30000, 3), (2, 4)")
	check("after more rows")
	// Under a race build of the server (STREAMDB_BIN): the snapshot writer
	// reads the operators' snapshots while they go on.
	if strings.Contains(srv.Output(), "DATA RACE") {
		t.Error("the server reported a data race")
	}
}

// TestTemporalFilterMemoryBackend: a temporal filter's kept rows on the
// memory backend (held in the operator, snapshotted at checkpoints) come
// back after kill -9 with their deadlines: the row with a near deadline
// still leaves, the other stays.
func TestTemporalFilterMemoryBackend(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE ev (id BIGINT, ts TIMESTAMP)",
		"CREATE MATERIALIZED VIEW recent WITH (state.backend = 'memory') AS SELECT id, ts FROM ev WHERE ts > now() - INTERVAL '1' SECOND",
		"INSERT INTO ev VALUES (1, now() + INTERVAL '20' SECOND), (2, now() + INTERVAL '1' HOUR), (3, now() - INTERVAL '1' HOUR)",
		"CHECKPOINT")
	if got := rowSet(t, c, "SELECT id FROM recent ORDER BY id"); got != "1; 2" {
		t.Fatalf("recent = %q, want rows 1 and 2", got)
	}
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	took := waitRows(t, c, "SELECT id FROM recent WHERE id = 1", 0, 2*time.Minute)
	t.Logf("row 1 left %v after the restart", took)
	execAll(t, c, "CHECKPOINT")
	if got := rowSet(t, c, "SELECT id FROM recent ORDER BY id"); got != "2" {
		t.Fatalf("recent after the restart = %q, want row 2", got)
	}
	if strings.Contains(srv.Output(), "DATA RACE") {
		t.Error("the server reported a data race")
	}
}
