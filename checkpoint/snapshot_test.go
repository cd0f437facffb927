package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Snapshot corruption, on real files: a snapshot whose manifest or any file
// was damaged is refused by checkpoint.Open with the SQLSTATE the engine
// reports (XX001 data_corrupted; 42704 when there is no manifest), and
// refusing it changes nothing: not the snapshot, not the live database, not
// the other snapshots.

// liveDB makes a database with a log, committed epochs (state, view rows,
// offsets) and both flushed tables and memtable data.
func liveDB(t *testing.T, dir string) *storage.DB {
	t.Helper()
	db, err := storage.Open(dir, storage.Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for round := 0; round < 3; round++ {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := 0; i < 1000; i++ {
			b.Append(int64(round*1000 + i))
		}
		col := b.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		if _, err := db.Log().Append(1, 0, []arrow.RecordBatch{rec}); err != nil {
			t.Fatal(err)
		}
		col.Release()
		rec.Release()
		b.Release()
		eb := db.State().NewEpochBatch()
		state := eb.NewRun()
		for k := 0; k < 50; k++ {
			key := fmt.Appendf(nil, "key%03d", k)
			state.PutState(2, 0, key, fmt.Appendf(nil, "state%d", round))
			eb.PutViewRow(2, key, fmt.Appendf(nil, "row%d-%d", k, round))
		}
		eb.AddRun(state)
		eb.SetOffset(2, 1, 0, uint64(round+1)*1000)
		if err := db.State().CommitEpoch([]*storage.Batch{eb}, uint64(round+1), []byte(`{}`), true); err != nil {
			t.Fatal(err)
		}
		if round < 2 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db
}

// viewRows reads job 2's view rows as "key=row" strings.
func viewRows(t *testing.T, db *storage.DB) []string {
	t.Helper()
	var out []string
	if err := db.Views().Scan(nil, 2, func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// treeSums maps every file under root to its SHA-256, but for Pebble's
// LOCK file, which opening a snapshot read-only creates (empty).
func treeSums(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := sha256.Sum256(data)
		rel, _ := filepath.Rel(root, path)
		out[rel] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyTree copies a directory with fresh files: a snapshot's table files
// are hard links into the live database, and damage to the copy must not
// reach it.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fileOf returns the snapshot file (relative path) whose name matches glob.
func fileOf(t *testing.T, m *Manifest, glob string) FileSum {
	t.Helper()
	for _, f := range m.Files {
		if ok, _ := filepath.Match(glob, filepath.Base(f.Path)); ok && f.Size > 0 {
			return f
		}
	}
	t.Fatalf("snapshot has no non-empty file matching %s: %+v", glob, m.Files)
	return FileSum{}
}

func flipByte(path string, at int64) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	data[at%int64(len(data))] ^= 0x40
	return os.WriteFile(path, data, 0o644)
}

func TestSnapshotCorruption(t *testing.T) {
	root := t.TempDir()
	db := liveDB(t, filepath.Join(root, "live"))
	defer db.Close()
	wantRows := viewRows(t, db)
	if len(wantRows) != 50 || !strings.HasSuffix(wantRows[0], "row0-2") {
		t.Fatalf("live view rows: %v", wantRows)
	}
	good := filepath.Join(root, "snaps", "good")
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	man, err := Export(db, good, Manifest{Kind: "savepoint", Name: "good", CheckpointID: 3, Epoch: 3, CreatedAt: created,
		Jobs: []JobManifest{{Name: "v", ID: 2, SQL: "SELECT 1", Operators: map[string]string{"aggregate#0": "fp"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(good + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("Export left its temporary directory: %v", err)
	}
	// The snapshot holds the table files, the Pebble manifest, the options
	// and a copy of the WAL.
	sst := fileOf(t, man, "*.sst")
	pebbleManifest := fileOf(t, man, "MANIFEST-*")
	options := fileOf(t, man, "OPTIONS-*")
	wal := fileOf(t, man, "*.log")

	goodSums := treeSums(t, good)
	liveSums := treeSums(t, db.Dir())

	// openOK checks that a snapshot opens, verified, with the exported data.
	openOK := func(t *testing.T, dir string) {
		t.Helper()
		m, sdb, err := Open(dir)
		if err != nil {
			t.Fatalf("Open(%s): %v", dir, err)
		}
		defer sdb.Close()
		if m.Name != "good" || m.CheckpointID != 3 || !m.CreatedAt.Equal(created) || len(m.Jobs) != 1 || m.Jobs[0].Operators["aggregate#0"] != "fp" {
			t.Fatalf("manifest read back: %+v", m)
		}
		if got := viewRows(t, sdb); !slices.Equal(got, wantRows) {
			t.Fatalf("snapshot view rows differ from the live ones at export: %v", got)
		}
	}
	t.Run("intact", func(t *testing.T) { openOK(t, good) })

	editManifest := func(fn func(m *Manifest)) func(dir string) error {
		return func(dir string) error {
			m, err := ReadManifest(dir)
			if err != nil {
				return err
			}
			fn(m)
			data, _ := json.Marshal(m)
			return os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644)
		}
	}
	cases := []struct {
		name    string
		damage  func(dir string) error
		code    string
		message string // a substring of the error
	}{
		{"flip a byte of a table file", func(dir string) error {
			return flipByte(filepath.Join(dir, sst.Path), sst.Size/2)
		}, sqlerr.DataCorrupted, "checksum mismatch in " + sst.Path},
		{"flip the last byte of a table file", func(dir string) error {
			return flipByte(filepath.Join(dir, sst.Path), sst.Size-1)
		}, sqlerr.DataCorrupted, "checksum mismatch in " + sst.Path},
		{"flip a byte of the Pebble manifest", func(dir string) error {
			return flipByte(filepath.Join(dir, pebbleManifest.Path), 0)
		}, sqlerr.DataCorrupted, "checksum mismatch in " + pebbleManifest.Path},
		{"flip a byte of the options file", func(dir string) error {
			return flipByte(filepath.Join(dir, options.Path), options.Size/2)
		}, sqlerr.DataCorrupted, "checksum mismatch in " + options.Path},
		{"flip a byte of the WAL copy", func(dir string) error {
			return flipByte(filepath.Join(dir, wal.Path), wal.Size/3)
		}, sqlerr.DataCorrupted, "checksum mismatch in " + wal.Path},
		{"truncate a table file", func(dir string) error {
			return os.Truncate(filepath.Join(dir, sst.Path), sst.Size-1)
		}, sqlerr.DataCorrupted, fmt.Sprintf("file %s has %d bytes, the manifest says %d", sst.Path, sst.Size-1, sst.Size)},
		{"truncate a table file to nothing", func(dir string) error {
			return os.Truncate(filepath.Join(dir, sst.Path), 0)
		}, sqlerr.DataCorrupted, "has 0 bytes"},
		{"delete a table file", func(dir string) error {
			return os.Remove(filepath.Join(dir, sst.Path))
		}, sqlerr.DataCorrupted, "file " + sst.Path + " is missing"},
		{"delete the Pebble manifest", func(dir string) error {
			return os.Remove(filepath.Join(dir, pebbleManifest.Path))
		}, sqlerr.DataCorrupted, "is missing"},
		{"manifest.json is not JSON", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{\"FormatVersion\": 1, \"Files\": [\x00"), 0o644)
		}, sqlerr.DataCorrupted, "corrupt manifest"},
		{"manifest.json truncated", func(dir string) error {
			p := filepath.Join(dir, "manifest.json")
			info, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, info.Size()/2)
		}, sqlerr.DataCorrupted, "corrupt manifest"},
		{"manifest.json empty", func(dir string) error {
			return os.Truncate(filepath.Join(dir, "manifest.json"), 0)
		}, sqlerr.DataCorrupted, "corrupt manifest"},
		{"manifest.json has a wrong checksum", editManifest(func(m *Manifest) {
			for i := range m.Files {
				if m.Files[i].Path == sst.Path {
					m.Files[i].SHA256 = strings.Repeat("0", 64)
				}
			}
		}), sqlerr.DataCorrupted, "checksum mismatch in " + sst.Path},
		{"manifest.json has a wrong size", editManifest(func(m *Manifest) {
			for i := range m.Files {
				if m.Files[i].Path == options.Path {
					m.Files[i].Size++
				}
			}
		}), sqlerr.DataCorrupted, "the manifest says"},
		{"manifest.json names a file that is not there", editManifest(func(m *Manifest) {
			m.Files = append(m.Files, FileSum{Path: "db/000999.sst", Size: 1, SHA256: strings.Repeat("0", 64)})
		}), sqlerr.DataCorrupted, "db/000999.sst is missing"},
		{"manifest.json from a newer format", editManifest(func(m *Manifest) { m.FormatVersion = FormatVersion + 1 }),
			sqlerr.ObjectNotInPrereqState, "format version"},
		{"manifest.json deleted", func(dir string) error {
			return os.Remove(filepath.Join(dir, "manifest.json"))
		}, sqlerr.UndefinedObject, "does not exist"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, "snaps", fmt.Sprintf("case%02d", i))
			copyTree(t, good, dir)
			if err := c.damage(dir); err != nil {
				t.Fatal(err)
			}
			before := treeSums(t, dir)
			m, sdb, err := Open(dir)
			if err == nil {
				sdb.Close()
				t.Fatalf("Open accepted the damaged snapshot (manifest %+v)", m)
			}
			if m != nil || sdb != nil {
				t.Fatalf("Open returned a manifest or database with its error %v", err)
			}
			if e := sqlerr.As(err); e.Code != c.code || !strings.Contains(e.Msg, c.message) {
				t.Fatalf("Open: %s %q; want %s containing %q", e.Code, e.Msg, c.code, c.message)
			}
			// Refusing changes nothing: the damaged snapshot, the good one,
			// the live database's files and its data.
			if after := treeSums(t, dir); !maps.Equal(after, before) {
				t.Fatalf("Open changed the refused snapshot's files")
			}
			if s := treeSums(t, good); !maps.Equal(s, goodSums) {
				t.Fatalf("damaging a copy changed the good snapshot: %v, was %v", s, goodSums)
			}
			if s := treeSums(t, db.Dir()); !maps.Equal(s, liveSums) {
				t.Fatalf("damaging a snapshot changed the live database's files")
			}
			if got := viewRows(t, db); !slices.Equal(got, wantRows) {
				t.Fatalf("live view rows changed: %v", got)
			}
			openOK(t, good)
		})
	}
	// A missing snapshot directory reads as a missing manifest.
	if _, _, err := Open(filepath.Join(root, "snaps", "nope")); sqlerr.As(err).Code != sqlerr.UndefinedObject {
		t.Fatalf("Open of a missing snapshot: %v", err)
	}
	// List skips the snapshots whose manifest cannot be read.
	var names []string
	for _, m := range List(filepath.Join(root, "snaps")) {
		names = append(names, m.Name)
	}
	if len(names) == 0 || slices.ContainsFunc(names, func(n string) bool { return n != "good" }) {
		t.Fatalf("List: %v", names)
	}
}

// TestExportRefusesExisting: Export never overwrites a snapshot.
func TestExportRefusesExisting(t *testing.T) {
	root := t.TempDir()
	db := liveDB(t, filepath.Join(root, "live"))
	defer db.Close()
	dir := filepath.Join(root, "snap")
	if _, err := Export(db, dir, Manifest{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	before := treeSums(t, dir)
	if _, err := Export(db, dir, Manifest{Name: "b"}); sqlerr.As(err).Code != sqlerr.DuplicateObject {
		t.Fatalf("second Export into %s: %v", dir, err)
	}
	if !maps.Equal(treeSums(t, dir), before) {
		t.Fatal("the refused Export changed the snapshot")
	}
}
