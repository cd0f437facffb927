package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// A snapshot (a retained checkpoint or a savepoint) is a directory:
//
//	manifest.json   format version, what it covers, and a SHA-256 per file
//	db/             a Pebble checkpoint of the whole database at the cut
//	db/memstate/    the snapshot files of memory-backend jobs at the cut
//
// Pebble's checkpoints hard-link the immutable table files, so a snapshot
// costs only what changed since the last one, and it stays valid when every
// other snapshot (or the live database) is deleted: it is self-contained.

// FormatVersion is the snapshot format written by this build. Version 2
// added Offsets; a version 1 snapshot pins every log at its start.
const FormatVersion = 2

// Manifest describes a snapshot.
type Manifest struct {
	FormatVersion int
	Kind          string // "checkpoint" or "savepoint"
	Name          string
	CheckpointID  uint64
	Epoch         uint64
	CreatedAt     time.Time
	Jobs          []JobManifest
	// Offsets are every job's committed log offsets at the snapshot: a
	// restore replays the live logs from them, so logs are not truncated
	// below them while the snapshot is kept.
	Offsets []storage.Offset
	Files   []FileSum
}

// JobManifest describes one job a snapshot covers.
type JobManifest struct {
	Name string
	ID   uint64
	SQL  string
	// Operators are the stateful operators with their stable ids and
	// fingerprints (e.g. "aggregate#0": keys and aggregates with types).
	Operators map[string]string
}

// FileSum is one file of a snapshot and its checksum.
type FileSum struct {
	Path   string
	Size   int64
	SHA256 string
}

// Size is the total size of the snapshot's files.
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Job returns the manifest of the named job.
func (m *Manifest) Job(name string) (*JobManifest, bool) {
	for i := range m.Jobs {
		if m.Jobs[i].Name == name {
			return &m.Jobs[i], true
		}
	}
	return nil, false
}

// sums caches checksums of immutable files by path, size and mtime, so
// periodic checkpoints only hash the table files that are new.
var sums struct {
	sync.Mutex
	m map[string]string
}

func fileSum(path string, info fs.FileInfo) (string, error) {
	key := fmt.Sprintf("%s|%d|%d", info.Name(), info.Size(), info.ModTime().UnixNano())
	sums.Lock()
	s, ok := sums.m[key]
	sums.Unlock()
	if ok && filepath.Ext(path) == ".sst" {
		return s, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	s = hex.EncodeToString(h.Sum(nil))
	sums.Lock()
	if sums.m == nil {
		sums.m = map[string]string{}
	}
	sums.m[key] = s
	sums.Unlock()
	return s, nil
}

// Export writes a snapshot of db's current state into dir (which must not
// exist) with manifest m, and returns the completed manifest. It flushes
// the memtables first (Capture).
func Export(db *storage.DB, dir string, m Manifest) (*Manifest, error) {
	tmp, err := Capture(db, dir, true)
	if err != nil {
		return nil, err
	}
	return Seal(tmp, dir, m)
}

// Capture is Export's first half: it takes the Pebble checkpoint of db's
// current state into a temporary directory next to dir and returns it. It
// must run at the cut. Table files are hard links; what the memtables hold
// is either flushed first (flush) or copied with the WAL behind them.
//
// A flush makes the snapshot all table files, so opening it replays
// nothing, and leaves the live database nothing to replay after a crash:
// explicit CHECKPOINTs and savepoints flush. Under load, though, a flush of
// the memtable backlog took 0.2-0.5 s inside the round and the copy of its
// WAL 0.05-0.2 s (WALs are not recycled, storage/db.go, so the copy is only
// live data): periodic checkpoints copy.
func Capture(db *storage.DB, dir string, flush bool) (string, error) {
	if _, err := os.Stat(dir); err == nil {
		return "", sqlerr.New(sqlerr.DuplicateObject, "snapshot directory %s already exists", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", sqlerr.Wrap(sqlerr.IOError, err)
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if flush {
		if err := db.Flush(); err != nil {
			return "", sqlerr.Wrap(sqlerr.IOError, fmt.Errorf("snapshot: flush: %w", err))
		}
	}
	if err := db.CheckpointTo(filepath.Join(tmp, "db")); err != nil {
		os.RemoveAll(tmp)
		return "", sqlerr.Wrap(sqlerr.IOError, fmt.Errorf("snapshot: %w", err))
	}
	// The state of memory-backend jobs is in their snapshot files, which
	// the checkpoint's pointers name: they go with it (and so are
	// checksummed, uploaded, downloaded and restored with it).
	if err := db.Memory().LinkSnapshots(filepath.Join(tmp, "db")); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// Seal is Export's second half, which may run later: it checksums every
// file of the captured snapshot, writes the manifest and renames the
// snapshot into place, so it is visible only once complete.
func Seal(tmp, dir string, m Manifest) (*Manifest, error) {
	m.FormatVersion = FormatVersion
	files, err := sumFiles(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	m.Files = files
	if err := publish(tmp, dir, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// publish writes m into the snapshot built in tmp and renames it to dir,
// so dir appears whole or not at all; on failure tmp is removed.
func publish(tmp, dir string, m *Manifest) error {
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := writeFileSync(filepath.Join(tmp, "manifest.json"), data); err != nil {
		os.RemoveAll(tmp)
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	syncDir(filepath.Dir(dir))
	return nil
}

func sumFiles(root string) ([]FileSum, error) {
	var out []FileSum
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "manifest.json" {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		s, err := fileSum(path, info)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, FileSum{Path: rel, Size: info.Size(), SHA256: s})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// ReadManifest reads a snapshot's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "snapshot %s does not exist", filepath.Base(dir))
	}
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "snapshot %s: corrupt manifest: %v", filepath.Base(dir), err)
	}
	if m.FormatVersion < 1 || m.FormatVersion > FormatVersion {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "snapshot %s has format version %d; this build reads versions 1 to %d", filepath.Base(dir), m.FormatVersion, FormatVersion)
	}
	return &m, nil
}

// Verify checks every file of a snapshot against its manifest.
func Verify(dir string, m *Manifest) error {
	for _, f := range m.Files {
		path := filepath.Join(dir, f.Path)
		info, err := os.Stat(path)
		if err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "snapshot %s: file %s is missing", filepath.Base(dir), f.Path)
		}
		if info.Size() != f.Size {
			return sqlerr.New(sqlerr.DataCorrupted, "snapshot %s: file %s has %d bytes, the manifest says %d", filepath.Base(dir), f.Path, info.Size(), f.Size)
		}
		fh, err := os.Open(path)
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		if hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
			return sqlerr.New(sqlerr.DataCorrupted, "snapshot %s: checksum mismatch in %s", filepath.Base(dir), f.Path)
		}
	}
	return nil
}

// Open verifies a snapshot and opens its database read-only. Close it when done.
func Open(dir string) (*Manifest, *storage.DB, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := Verify(dir, m); err != nil {
		return nil, nil, err
	}
	db, err := storage.OpenReadOnly(filepath.Join(dir, "db"))
	if err != nil {
		return nil, nil, sqlerr.New(sqlerr.DataCorrupted, "snapshot %s: %v", filepath.Base(dir), err)
	}
	return m, db, nil
}

// List returns the manifests of the snapshots under root, oldest first;
// unreadable ones are skipped.
func List(root string) []*Manifest {
	ents, _ := os.ReadDir(root)
	var out []*Manifest
	for _, e := range ents {
		if !e.IsDir() || filepath.Ext(e.Name()) == ".tmp" {
			continue
		}
		if m, err := ReadManifest(filepath.Join(root, e.Name())); err == nil {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}
