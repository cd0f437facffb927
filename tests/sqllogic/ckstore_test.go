package sqllogic

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/checkpoint"
)

func noPeriodicConf(t *testing.T) string {
	conf := filepath.Join(t.TempDir(), "streamdb.toml")
	if err := os.WriteFile(conf, []byte("[checkpoint]\ninterval = \"off\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// lastCheckpoint returns the newest checkpoint's id and status (reading
// streamdb_checkpoints waits for local exports; CHECKPOINT waits for its
// own upload, and a periodic checkpoint being uploaded is IN_PROGRESS).
func lastCheckpoint(t *testing.T, c *pgx.Conn) (int64, string, string) {
	t.Helper()
	var id int64
	var status string
	var errText *string
	if err := c.QueryRow(context.Background(), "SELECT id, status, error FROM streamdb_checkpoints ORDER BY id DESC LIMIT 1").Scan(&id, &status, &errText); err != nil {
		t.Fatal(err)
	}
	e := ""
	if errText != nil {
		e = *errText
	}
	return id, status, e
}

func sstKeys(m *checkpoint.Manifest) map[string]bool {
	out := map[string]bool{}
	for _, f := range m.Files {
		if strings.HasSuffix(f.Path, ".sst") {
			out[checkpoint.SharedKey(f)] = true
		}
	}
	return out
}

// TestCkstoreRestoreFromS3: checkpoints go to a fake S3, the second one
// uploads only the table files the first lacks; after kill -9 a new server
// on an empty data directory comes back from S3 alone with the same view
// and goes on exactly once; corrupted and missing objects are refused with
// XX001.
func TestCkstoreRestoreFromS3(t *testing.T) {
	s3 := newFakeS3(t, "ckpt")
	const url = "s3://ckpt/db1"
	conf := noPeriodicConf(t)
	srv := startWithEnv(t, s3.Env(), "", "--config", conf, "--allow-storage", url)
	c := srv.Conn(t)
	ctx := context.Background()
	want := map[int64]int64{}
	insert := func(c *pgx.Conn, from, to int64) {
		t.Helper()
		var sb strings.Builder
		sb.WriteString("INSERT INTO t VALUES ")
		for i := from; i < to; i++ {
			if i > from {
				sb.WriteString(", ")
			}
			sb.WriteString("(" + itoa(i%7) + ", " + itoa(i) + ")")
			want[i%7]++
		}
		execAll(t, c, sb.String())
	}
	execAll(t, c, "SET checkpoint.storage = '"+url+"'",
		"CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW s AS SELECT k, count(*) AS n FROM t GROUP BY k")
	insert(c, 0, 500)
	execAll(t, c, "CHECKPOINT")
	id1, st1, e1 := lastCheckpoint(t, c)
	if st1 != "COMPLETED" {
		t.Fatalf("checkpoint %d: %s %s", id1, st1, e1)
	}
	rem := s3.Remote(t, url)
	m1, err := rem.ReadManifest(ctx, checkpoint.CheckpointKey(uint64(id1)))
	if err != nil {
		t.Fatalf("checkpoint %d is not in S3: %v", id1, err)
	}
	// The next checkpoint uploads only the table files the previous one
	// lacks. A compaction between the two can rewrite every file (one L0
	// file merged with the next flush), leaving nothing to share: then the
	// next pair is compared, a few times at most.
	insert(c, 500, 900)
	for attempt := 1; ; attempt++ {
		_, mark := s3.SSTPuts(0)
		execAll(t, c, "CHECKPOINT")
		id2, st2, e2 := lastCheckpoint(t, c)
		if st2 != "COMPLETED" || id2 <= id1 {
			t.Fatalf("checkpoint %d after %d: %s %s", id2, id1, st2, e2)
		}
		m2, err := rem.ReadManifest(ctx, checkpoint.CheckpointKey(uint64(id2)))
		if err != nil {
			t.Fatal(err)
		}
		uploaded, _ := s3.SSTPuts(mark)
		old, cur := sstKeys(m1), sstKeys(m2)
		shared := 0
		for k := range cur {
			if old[k] {
				shared++
				if uploaded[k] {
					t.Errorf("table file %s of checkpoint %d was uploaded again", k, id2)
				}
			} else if !uploaded[k] {
				t.Errorf("new table file %s of checkpoint %d was not uploaded", k, id2)
			}
		}
		t.Logf("checkpoint %d: %d table files, %d shared with checkpoint %d, %d uploaded", id2, len(cur), shared, id1, len(uploaded))
		if shared > 0 {
			break
		}
		if attempt == 5 {
			t.Fatalf("checkpoint %d shares no table file with checkpoint %d (%d and %d files), %d times in a row", id2, id1, len(cur), len(old), attempt)
		}
		id1, m1 = id2, m2
	}

	before := queryPairs(t, c, "SELECT k, n FROM s")
	samePairs(t, "before the crash", before, want)
	srv.Kill9()

	// A new machine: an empty data directory and the S3 location alone.
	fresh := filepath.Join(t.TempDir(), "new")
	srv2 := startWithEnv(t, s3.Env(), fresh, "--config", conf, "--allow-storage", url, "--restore-from", url)
	c2 := srv2.Conn(t)
	samePairs(t, "restored from S3", queryPairs(t, c2, "SELECT k, n FROM s"), before)
	if got := show(t, srv2, "checkpoint.storage"); got != url {
		t.Errorf("checkpoint.storage after the restore: %q", got)
	}
	insert(c2, 900, 1300)
	execAll(t, c2, "CHECKPOINT")
	samePairs(t, "after more input", queryPairs(t, c2, "SELECT k, n FROM s"), want)
	samePairs(t, "the view equals its query", queryPairs(t, c2, "SELECT k, n FROM s"), queryPairs(t, c2, "SELECT k, count(*) FROM t GROUP BY k"))
	// A restart with the same flags goes on with the restored database.
	srv2.Kill9()
	srv2.Restart(t)
	c2 = srv2.Conn(t)
	samePairs(t, "after a restart of the restored server", queryPairs(t, c2, "SELECT k, n FROM s"), want)

	// Checkpoint id1 is not on this machine: RESTORE fetches it from S3,
	// checking every object against its manifest.
	var victim checkpoint.FileSum
	for _, f := range m1.Files {
		if strings.HasSuffix(f.Path, ".sst") {
			victim = f
		}
	}
	key := checkpoint.SharedKey(victim)
	garbage := bytes.Repeat([]byte{0x5a}, int(victim.Size))
	if err := rem.Store.Put(ctx, key, bytes.NewReader(garbage), victim.Size); err != nil {
		t.Fatal(err)
	}
	_, err = c2.Exec(ctx, "RESTORE s FROM CHECKPOINT "+itoa(id1))
	wantErr(t, "RESTORE from a corrupted object", err, "XX001", "checksum mismatch")
	if err := rem.Store.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	_, err = c2.Exec(ctx, "RESTORE s FROM CHECKPOINT "+itoa(id1))
	wantErr(t, "RESTORE with a missing object", err, "XX001", "is missing")
	samePairs(t, "after refused restores", queryPairs(t, c2, "SELECT k, n FROM s"), want)

	// --restore-from of that checkpoint is refused the same way, and the
	// server does not start.
	bin, _ := Binary()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--http", "", "--data-dir", filepath.Join(t.TempDir(), "bad"),
		"--restore-from", url+"/chk-"+itoa(id1))
	cmd.Env = append(os.Environ(), s3.Env()...)
	done := make(chan struct{})
	var out []byte
	go func() { out, _ = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("streamdb --restore-from of a damaged checkpoint did not exit")
	}
	if !strings.Contains(string(out), "XX001") || !strings.Contains(string(out), "is missing") {
		t.Errorf("--restore-from of a damaged checkpoint: %s", out)
	}
}

// TestCkstoreUploadFaultAndLocations: only allowed locations may be set,
// by a superuser (42501; 22023 for a bad URL); a failed upload fails that
// checkpoint, not the job, and later ones succeed; savepoints go to
// savepoint.storage and DROP SAVEPOINT deletes what no other snapshot needs.
func TestCkstoreUploadFaultAndLocations(t *testing.T) {
	s3 := newFakeS3(t, "ckpt")
	const url = "s3://ckpt/allowed"
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startWithEnv(t, s3.Env(), dataDir, "--config", noPeriodicConf(t), "--allow-storage", url)
	c := srv.Conn(t)
	ctx := context.Background()
	for stmt, code := range map[string]string{
		"SET checkpoint.storage = 's3://ckpt/other'":             "42501",
		"SET checkpoint.storage = 's3://ckpt/allowedx'":          "42501",
		"SET checkpoint.storage = 's3://elsewhere/allowed'":      "42501",
		"SET checkpoint.storage = 'file:///tmp/streamdb-evil'":   "42501",
		"SET savepoint.storage = 'file:///etc'":                  "42501",
		"SET checkpoint.storage = 'ftp://host/x'":                "22023",
		"SET checkpoint.storage = 'relative/dir'":                "22023",
		"SET checkpoint.storage = 's3://k:secret@ckpt/allowed'":  "22023",
		"SET checkpoint.storage = 'file://" + dataDir + "/../x'": "22023",
	} {
		if got := sqlState(t, c, stmt); got != code {
			t.Errorf("%s: SQLSTATE %q, want %s", stmt, got, code)
		}
	}
	execAll(t, c, "CREATE ROLE alice LOGIN PASSWORD 'pw'")
	alice := mustConnAs(t, srv, "alice", "pw")
	execErr(t, alice, "SET checkpoint.storage = '"+url+"'", "42501", "permission denied")

	// The data directory is allowed by default, as file://.
	execAll(t, c, "SET checkpoint.storage = 'file://"+dataDir+"/backup'",
		"CREATE TABLE t (k BIGINT, v BIGINT)", "INSERT INTO t VALUES (1, 1), (2, 2)",
		"CREATE MATERIALIZED VIEW s AS SELECT k, count(*) AS n FROM t GROUP BY k", "CHECKPOINT")
	id, st, e := lastCheckpoint(t, c)
	if st != "COMPLETED" {
		t.Fatalf("checkpoint %d to file storage: %s %s", id, st, e)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "backup", "checkpoints", "chk-"+itoa(id), "manifest.json")); err != nil {
		t.Errorf("checkpoint %d is not in the file storage: %v", id, err)
	}

	execAll(t, c, "SET checkpoint.storage = '"+url+"/ck'", "SET savepoint.storage = '"+url+"/sp'",
		"SET checkpoint.tolerable_failures = 3", "CHECKPOINT")
	if id, st, e := lastCheckpoint(t, c); st != "COMPLETED" {
		t.Fatalf("checkpoint %d: %s %s", id, st, e)
	}
	s3.FailPuts.Store(true)
	execAll(t, c, "INSERT INTO t VALUES (1, 3)")
	_, err := c.Exec(ctx, "CHECKPOINT")
	wantErr(t, "CHECKPOINT during an upload fault", err, "58030", "upload")
	failed, st, e := lastCheckpoint(t, c)
	if st != "FAILED" || !strings.Contains(e, "upload") {
		t.Errorf("checkpoint %d during an upload fault: %s %q, want FAILED by the upload", failed, st, e)
	}
	if _, err := s3.Remote(t, url+"/ck").ReadManifest(ctx, checkpoint.CheckpointKey(uint64(failed))); err == nil {
		t.Errorf("failed checkpoint %d has a manifest in S3", failed)
	}
	_, err = c.Exec(ctx, "CREATE SAVEPOINT during_fault")
	wantErr(t, "CREATE SAVEPOINT during an upload fault", err, "58030", "upload")
	// The job keeps its data and goes on.
	execAll(t, c, "INSERT INTO t VALUES (2, 4)")
	s3.FailPuts.Store(false)
	execAll(t, c, "CHECKPOINT")
	if id, st, e := lastCheckpoint(t, c); st != "COMPLETED" || id <= failed {
		t.Errorf("checkpoint after the fault: %d %s %s", id, st, e)
	}
	samePairs(t, "the view after an upload fault", queryPairs(t, c, "SELECT k, n FROM s"), map[int64]int64{1: 2, 2: 2})
	if j := job(t, c, "s"); j.state != "RUNNING" || j.restarts != 0 {
		t.Errorf("job after an upload fault: %+v", j)
	}

	// Savepoints in savepoint.storage; DROP deletes their own files only.
	sp := s3.Remote(t, url+"/sp")
	execAll(t, c, "CREATE SAVEPOINT keep")
	m, err := sp.ReadManifest(ctx, checkpoint.SavepointKey("keep"))
	if err != nil {
		t.Fatalf("savepoint keep is not in savepoint.storage: %v", err)
	}
	objs, _ := sp.Store.List(ctx, "shared/")
	if len(objs) == 0 {
		t.Fatalf("savepoint keep has no files in S3 (manifest lists %d)", len(m.Files))
	}
	execAll(t, c, "DROP SAVEPOINT keep")
	if _, err := sp.ReadManifest(ctx, checkpoint.SavepointKey("keep")); err == nil {
		t.Error("the dropped savepoint's manifest is still in S3")
	}
	if objs, _ := sp.Store.List(ctx, "shared/"); len(objs) != 0 {
		t.Errorf("%d files of the dropped savepoint are left in S3", len(objs))
	}
}

// TestCkstoreHistoryBounded: after many checkpoints SHOW CHECKPOINTS lists
// the retained ones and the last checkpoint.HistoryKept, before and after
// a restart (the records of the others are deleted).
func TestCkstoreHistoryBounded(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (k BIGINT)", "INSERT INTO t VALUES (1)",
		"CREATE MATERIALIZED VIEW s AS SELECT k, count(*) AS n FROM t GROUP BY k",
		"SET checkpoint.interval = '20ms'", "SET checkpoint.retained = '3'")
	limit := int64(checkpoint.HistoryKept + 3 + 1) // the last N, the retained ones, a round in flight
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var maxID int64
		if err := c.QueryRow(context.Background(), "SELECT coalesce(max(id), 0) FROM streamdb_checkpoints").Scan(&maxID); err != nil {
			t.Fatal(err)
		}
		if maxID > 2*limit {
			t.Logf("%d checkpoints taken", maxID)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d checkpoints in 3 minutes", maxID)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := count(t, c, "SELECT count(*) FROM streamdb_checkpoints"); n > limit {
		t.Errorf("SHOW CHECKPOINTS lists %d checkpoints, want at most %d", n, limit)
	}
	execAll(t, c, "SET checkpoint.interval = 'off'")
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	if n := count(t, c, "SELECT count(*) FROM streamdb_checkpoints"); n > limit || n < checkpoint.HistoryKept {
		t.Errorf("after a restart SHOW CHECKPOINTS lists %d checkpoints, want %d to %d", n, checkpoint.HistoryKept, limit)
	}
}
