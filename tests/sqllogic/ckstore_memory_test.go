package sqllogic

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/checkpoint"
)

// Checkpoints of memory-backend jobs carry their state's snapshot files
// (issue 15): RESTORE ... FROM CHECKPOINT and --restore-from bring such
// views back exactly, and a damaged snapshot file is refused with XX001.

// backendSnapshot reads every view of backendViews as pairs.
func backendSnapshot(t *testing.T, c *pgx.Conn) map[string]map[int64]int64 {
	t.Helper()
	return map[string]map[int64]int64{
		"agg":  queryPairs(t, c, "SELECT k, s FROM agg"),
		"jn":   queryPairs(t, c, "SELECT k, sum(v * 1000 + w) FROM jn GROUP BY k"),
		"top2": queryPairs(t, c, "SELECT k, sum(v) FROM top2 GROUP BY k"),
	}
}

func sameBackendSnapshot(t *testing.T, what string, got, want map[string]map[int64]int64) {
	t.Helper()
	for v, w := range want {
		samePairs(t, what+": "+v, got[v], w)
	}
}

// TestCkstoreMemoryRestoreCheckpoint: RESTORE FROM CHECKPOINT n of views
// on the memory backend at n rewinds their rows and state: right after
// it they equal the checkpoint, and after a replay their queries over all
// input (which needs the restored state: the replay reads only the rows
// after n). Also when the job is on the Pebble backend by then.
func TestCkstoreMemoryRestoreCheckpoint(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	createBackendViews(t, c, "WITH (state.backend = 'memory')")
	insertRows(t, c, 0, 400, 37)
	checkBackendViews(t, c, "before the checkpoint")
	at := backendSnapshot(t, c)
	id, st, e := lastCheckpoint(t, c)
	if st != "COMPLETED" {
		t.Fatalf("checkpoint %d: %s %s", id, st, e)
	}
	man, err := checkpoint.ReadManifest(filepath.Join(srv.DataDir(), "checkpoints", "chk-"+itoa(id)))
	if err != nil {
		t.Fatal(err)
	}
	arrows := 0
	for _, f := range man.Files {
		if strings.HasSuffix(f.Path, ".arrow") {
			arrows++
		}
	}
	if arrows == 0 {
		t.Fatalf("checkpoint %d holds no memory state snapshot file", id)
	}
	t.Logf("checkpoint %d holds %d snapshot files", id, arrows)

	insertRows(t, c, 400, 300, 41)
	checkBackendViews(t, c, "after more rows")
	execAll(t, c, "RESTORE agg FROM CHECKPOINT "+itoa(id))
	samePairs(t, "agg right after RESTORE", queryPairs(t, c, "SELECT k, s FROM agg"), at["agg"])
	execAll(t, c, "RESTORE FROM CHECKPOINT "+itoa(id))
	sameBackendSnapshot(t, "right after RESTORE of every view", backendSnapshot(t, c), at)
	checkBackendViews(t, c, "restored, after the replay")

	// The same checkpoint into jobs now on the Pebble backend.
	for _, v := range []string{"agg", "jn", "top2"} {
		execAll(t, c, "ALTER MATERIALIZED VIEW "+v+" SET (state.backend = 'pebble')")
	}
	insertRows(t, c, 700, 100, 43)
	execAll(t, c, "RESTORE FROM CHECKPOINT "+itoa(id))
	sameBackendSnapshot(t, "on pebble, right after RESTORE", backendSnapshot(t, c), at)
	checkBackendViews(t, c, "on pebble, restored, after the replay")

	// A damaged snapshot file is refused and changes nothing.
	var victim string
	for _, f := range man.Files {
		if strings.HasSuffix(f.Path, ".arrow") {
			victim = filepath.Join(srv.DataDir(), "checkpoints", "chk-"+itoa(id), f.Path)
		}
	}
	if err := writeFileNoLink(victim, bytes.Repeat([]byte{0x5a}, 64)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(ctx, "RESTORE FROM CHECKPOINT "+itoa(id))
	wantErr(t, "RESTORE of a checkpoint with a damaged snapshot file", err, "XX001", "")
	checkBackendViews(t, c, "after the refused RESTORE")
}

// TestCkstoreMemoryRestoreFromS3: memory-backend views checkpointed to a
// fake S3 come back on a new server with an empty data directory
// (--restore-from), equal to what they were, and go on exactly once; a
// snapshot file altered in S3 is refused with XX001.
func TestCkstoreMemoryRestoreFromS3(t *testing.T) {
	s3 := newFakeS3(t, "ckpt")
	const url = "s3://ckpt/mem"
	conf := noPeriodicConf(t)
	srv := startWithEnv(t, s3.Env(), "", "--config", conf, "--allow-storage", url)
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c, "SET checkpoint.storage = '"+url+"'", "SET state.backend = 'memory'")
	createBackendViews(t, c, "")
	insertRows(t, c, 0, 500, 31)
	checkBackendViews(t, c, "before the crash")
	id1, st, e := lastCheckpoint(t, c)
	if st != "COMPLETED" {
		t.Fatalf("checkpoint %d: %s %s", id1, st, e)
	}
	rem := s3.Remote(t, url)
	m1, err := rem.ReadManifest(ctx, checkpoint.CheckpointKey(uint64(id1)))
	if err != nil {
		t.Fatalf("checkpoint %d is not in S3: %v", id1, err)
	}
	var arrow checkpoint.FileSum
	for _, f := range m1.Files {
		if strings.HasSuffix(f.Path, ".arrow") {
			arrow = f
		}
	}
	if arrow.Path == "" {
		t.Fatalf("checkpoint %d in S3 holds no memory state snapshot file", id1)
	}
	before := backendSnapshot(t, c)
	srv.Kill9()

	fresh := filepath.Join(t.TempDir(), "new")
	srv2 := startWithEnv(t, s3.Env(), fresh, "--config", conf, "--allow-storage", url, "--restore-from", url)
	c2 := srv2.Conn(t)
	sameBackendSnapshot(t, "restored from S3", backendSnapshot(t, c2), before)
	if b := jobColumn(t, c2, "agg", "state_backend"); b != "memory" {
		t.Errorf("restored agg: state_backend %q, want memory", b)
	}
	insertRows(t, c2, 500, 300, 37)
	checkBackendViews(t, c2, "restored from S3, then more rows")
	srv2.Kill9()
	srv2.Restart(t)
	c2 = srv2.Conn(t)
	checkBackendViews(t, c2, "after kill -9 of the restored server")

	// Checkpoint id1 is only in S3 now: RESTORE fetches and checks it.
	key := checkpoint.SharedKey(arrow)
	if err := rem.Store.Put(ctx, key, bytes.NewReader(bytes.Repeat([]byte{0x5a}, int(arrow.Size))), arrow.Size); err != nil {
		t.Fatal(err)
	}
	_, err = c2.Exec(ctx, "RESTORE FROM CHECKPOINT "+itoa(id1))
	wantErr(t, "RESTORE from an altered snapshot file in S3", err, "XX001", "checksum mismatch")
	checkBackendViews(t, c2, "after the refused RESTORE")
}

// writeFileNoLink replaces path with data without writing through a hard
// link (a checkpoint's snapshot files are links to the live ones).
func writeFileNoLink(path string, data []byte) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
