package sqllogic

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSavepointSelfContained: a savepoint survives the deletion of every
// retained checkpoint and a kill -9, and restoring it rewinds the view,
// which then replays to the query over all input.
func TestSavepointSelfContained(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT)", "INSERT INTO t VALUES (1, 1), (2, 2), (1, 3)",
		"CREATE MATERIALIZED VIEW s AS SELECT k, count(*) AS n FROM t GROUP BY k",
		"CHECKPOINT", "CREATE SAVEPOINT keep", "INSERT INTO t VALUES (3, 3), (1, 1)", "CHECKPOINT",
		"SELECT count(*) FROM streamdb_checkpoints") // returns once exports are complete
	if err := os.RemoveAll(filepath.Join(srv.DataDir(), "checkpoints")); err != nil {
		t.Fatal(err)
	}
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "RESTORE s FROM SAVEPOINT keep")
	// Right after RESTORE the view holds the savepoint's rows, unless the
	// restarted job's replay has already committed an epoch (a loaded
	// machine can delay this read past one). Either way the job replays
	// exactly the two rows written after the savepoint: it was rewound.
	after := queryPairs(t, c, "SELECT k, n FROM s")
	if len(after) != 2 || after[1] != 2 || after[2] != 1 {
		samePairs(t, "right after RESTORE (savepoint's rows or the replayed ones)", after,
			queryPairs(t, c, "SELECT k, count(*) FROM t GROUP BY k"))
	}
	waitQuery(t, c, "SELECT rows_in FROM streamdb_jobs WHERE name = 's'", "2")
	samePairs(t, "AS OF the savepoint", queryPairs(t, c, "SELECT k, n FROM s AS OF SAVEPOINT keep"), map[int64]int64{1: 2, 2: 1})
	execAll(t, c, "CHECKPOINT")
	samePairs(t, "after replay", queryPairs(t, c, "SELECT k, n FROM s"),
		queryPairs(t, c, "SELECT k, count(*) FROM t GROUP BY k"))
}
