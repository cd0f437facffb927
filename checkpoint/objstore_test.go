package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// fill writes n random 100-byte values under fresh keys and flushes them
// into a new table file.
func fill(t testing.TB, db *storage.DB, round, n int) {
	t.Helper()
	b := db.NewBatch()
	v := make([]byte, 100)
	for i := 0; i < n; i++ {
		for j := range v {
			v[j] = byte(rand.IntN(256))
		}
		b.Set(fmt.Appendf(nil, "s/bench%02d-%08d", round, i), v, nil)
	}
	if err := db.Commit(b, false); err != nil {
		t.Fatal(err)
	}
}

func stores(t *testing.T) map[string]objstore.Store {
	be := s3mem.New()
	if err := be.CreateBucket("ckpt"); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(ts.Close)
	s3, err := objstore.Open(objstore.Location{Scheme: "s3", Bucket: "ckpt", Path: "db"},
		objstore.S3Config{Endpoint: ts.URL, Region: "us-east-1", AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	file, _ := objstore.Open(objstore.Location{Scheme: "file", Path: filepath.Join(t.TempDir(), "store")}, objstore.S3Config{})
	return map[string]objstore.Store{"fake S3": s3, "local file": file}
}

// TestUploadIncremental: the second checkpoint uploads only the table files
// the first lacks; a download is the same database; deleting the first
// checkpoint keeps every file the second needs; damaged objects are XX001.
// It logs the figures of docs/BENCHMARKS.md (STREAMDB_CKSTORE_KEYS sets
// the size; 200000 keys of 100 bytes by default, 20000 under -short).
func TestUploadIncremental(t *testing.T) {
	keys := 200000
	if testing.Short() {
		keys = 20000
	}
	if v := os.Getenv("STREAMDB_CKSTORE_KEYS"); v != "" {
		fmt.Sscan(v, &keys)
	}
	ctx := context.Background()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := storage.Open(filepath.Join(dir, "live"), storage.Options{CacheBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			r := NewRemote(st)
			var mans []*Manifest
			for round := 0; round < 2; round++ {
				n := keys
				if round > 0 {
					n = keys / 10 // the second checkpoint: 10% more
				}
				fill(t, db, round, n)
				snap := filepath.Join(dir, fmt.Sprintf("chk-%d", round+1))
				m, err := Export(db, snap, Manifest{Kind: "checkpoint", CheckpointID: uint64(round + 1), CreatedAt: time.Now()})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				stats, err := r.Upload(ctx, snap, CheckpointKey(m.CheckpointID), m)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s, checkpoint %d: %d files, %d uploaded; %.1f MB of %.1f MB uploaded in %v",
					name, round+1, stats.Files, stats.Uploaded, float64(stats.Bytes)/1e6, float64(stats.Total)/1e6, time.Since(start).Round(time.Millisecond))
				if round > 0 && (stats.Uploaded >= stats.Files || stats.Bytes*2 > stats.Total) {
					t.Errorf("the second checkpoint uploaded %d of %d files, %d of %d bytes: not incremental", stats.Uploaded, stats.Files, stats.Bytes, stats.Total)
				}
				mans = append(mans, m)
			}
			// The first goes; the second still restores whole.
			if err := r.Delete(ctx, CheckpointKey(1)); err != nil {
				t.Fatal(err)
			}
			got := filepath.Join(dir, "restored")
			if _, err := r.Download(ctx, CheckpointKey(2), got); err != nil {
				t.Fatal(err)
			}
			m, rdb, err := Open(got)
			if err != nil {
				t.Fatal(err)
			}
			rdb.Close()
			if len(m.Files) != len(mans[1].Files) {
				t.Errorf("restored %d files, the manifest has %d", len(m.Files), len(mans[1].Files))
			}
			objs, _ := st.List(ctx, "shared/")
			for _, o := range objs {
				found := false
				for _, f := range mans[1].Files {
					found = found || SharedKey(f) == o.Key
				}
				if !found {
					t.Errorf("object %s of the deleted checkpoint was kept", o.Key)
				}
			}
			// Damage one object: refused with XX001, nothing left behind.
			var victim FileSum
			for _, f := range mans[1].Files {
				if f.Size > victim.Size {
					victim = f
				}
			}
			bad := bytes.Repeat([]byte{1}, int(victim.Size))
			if err := st.Put(ctx, SharedKey(victim), bytes.NewReader(bad), victim.Size); err != nil {
				t.Fatal(err)
			}
			again := filepath.Join(dir, "again")
			if _, err := r.Download(ctx, CheckpointKey(2), again); sqlerr.Code(err) != sqlerr.DataCorrupted {
				t.Errorf("download of a corrupted object: %v, want XX001", err)
			}
			if _, err := os.Stat(again); err == nil {
				t.Error("a refused download left a snapshot behind")
			}
		})
	}
}
