package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sqlerr"
)

// Snapshots in checkpoint storage (checkpoint.storage, savepoint.storage):
//
//	shared/<sha256>-<size>-<file name>     every file of every snapshot, once
//	checkpoints/chk-<id>/manifest.json     a retained checkpoint
//	savepoints/<name>/manifest.json        a savepoint
//
// A snapshot's files are keyed by name, size and checksum, so a table file
// (immutable, numbered uniquely per database) that several snapshots hold
// is stored once: a checkpoint uploads only the files no stored snapshot
// has. The manifests are the reference counts: a shared object is deleted
// (GC) once no manifest lists it. A manifest is written after its files
// and deleted before them, so a crash at any point leaves every manifest
// complete; at worst unreferenced files stay until the next GC.

// Remote is a checkpoint storage location. Its methods are serialized, so
// a GC never deletes the files of an upload in progress.
type Remote struct {
	Store objstore.Store
	mu    sync.Mutex
	known map[string]bool // shared keys known to exist; nil until listed
}

// NewRemote returns the checkpoint storage in s.
func NewRemote(s objstore.Store) *Remote { return &Remote{Store: s} }

// UploadStats says what an upload wrote.
type UploadStats struct {
	Files, Uploaded int   // files in the snapshot, and how many were uploaded
	Bytes, Total    int64 // bytes uploaded, and the snapshot's size
}

// SharedKey is the object key of a snapshot file.
func SharedKey(f FileSum) string {
	return fmt.Sprintf("shared/%s-%d-%s", f.SHA256, f.Size, path.Base(filepath.ToSlash(f.Path)))
}

// CheckpointKey and SavepointKey are the key prefixes of snapshots.
func CheckpointKey(id uint64) string   { return fmt.Sprintf("checkpoints/chk-%d", id) }
func SavepointKey(name string) string  { return "savepoints/" + name }
func manifestKey(prefix string) string { return prefix + "/manifest.json" }

func (r *Remote) loadKnownLocked(ctx context.Context) error {
	if r.known != nil {
		return nil
	}
	objs, err := r.Store.List(ctx, "shared/")
	if err != nil {
		return err
	}
	r.known = map[string]bool{}
	for _, o := range objs {
		r.known[o.Key] = true
	}
	return nil
}

// Upload stores the sealed snapshot in dir (manifest m) under prefix
// (CheckpointKey, SavepointKey): the files the storage lacks, then the
// manifest. Errors are 58030.
func (r *Remote) Upload(ctx context.Context, dir, prefix string, m *Manifest) (UploadStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var st UploadStats
	fail := func(err error) (UploadStats, error) {
		return st, sqlerr.Wrap(sqlerr.IOError, fmt.Errorf("upload to %s: %w", r.Store.URL(), err))
	}
	if err := r.loadKnownLocked(ctx); err != nil {
		return fail(err)
	}
	for _, f := range m.Files {
		st.Files++
		st.Total += f.Size
		key := SharedKey(f)
		if r.known[key] || f.Size == 0 {
			continue // an empty file needs no object (Download makes it)
		}
		fh, err := os.Open(filepath.Join(dir, f.Path))
		if err != nil {
			return fail(err)
		}
		err = r.Store.Put(ctx, key, fh, f.Size)
		fh.Close()
		if err != nil {
			// Whether it got there is unknown: list again next time.
			r.known = nil
			return fail(err)
		}
		r.known[key] = true
		st.Uploaded++
		st.Bytes += f.Size
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := r.Store.Put(ctx, manifestKey(prefix), bytes.NewReader(data), int64(len(data))); err != nil {
		return fail(err)
	}
	return st, nil
}

// ReadManifest reads the manifest of the snapshot under prefix: 42704 if
// there is none, XX001 if it is unreadable.
func (r *Remote) ReadManifest(ctx context.Context, prefix string) (*Manifest, error) {
	rc, err := r.Store.Get(ctx, manifestKey(prefix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "snapshot %s does not exist in %s", prefix, r.Store.URL())
	}
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "snapshot %s in %s: corrupt manifest: %v", prefix, r.Store.URL(), err)
	}
	if m.FormatVersion < 1 || m.FormatVersion > FormatVersion {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "snapshot %s has format version %d; this build reads versions 1 to %d", prefix, m.FormatVersion, FormatVersion)
	}
	return &m, nil
}

// Download copies the snapshot under prefix into dir (which must not
// exist), checking every file against the manifest: a missing, truncated
// or altered object is refused with XX001 and nothing is left behind.
func (r *Remote) Download(ctx context.Context, prefix, dir string) (*Manifest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, err := r.ReadManifest(ctx, prefix)
	if err != nil {
		return nil, err
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := r.downloadFiles(ctx, prefix, tmp, m); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := publish(tmp, dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

// DownloadDB copies only the database of the snapshot under prefix into
// dir, which becomes a Pebble database (--restore-from), checked as
// Download checks.
func (r *Remote) DownloadDB(ctx context.Context, prefix, dir string) (*Manifest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, err := r.ReadManifest(ctx, prefix)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, ".restore.tmp")
	os.RemoveAll(tmp)
	if err := r.downloadFiles(ctx, prefix, tmp, m); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	src := filepath.Join(tmp, "db")
	ents, err := os.ReadDir(src)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, sqlerr.New(sqlerr.DataCorrupted, "snapshot %s in %s has no database", prefix, r.Store.URL())
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	os.RemoveAll(tmp)
	syncDir(dir)
	return m, nil
}

func (r *Remote) downloadFiles(ctx context.Context, prefix, dst string, m *Manifest) error {
	for _, f := range m.Files {
		key := SharedKey(f)
		var rc io.ReadCloser = io.NopCloser(bytes.NewReader(nil))
		var err error
		if f.Size > 0 {
			rc, err = r.Store.Get(ctx, key)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return sqlerr.New(sqlerr.DataCorrupted, "snapshot %s in %s: object %s (file %s) is missing", prefix, r.Store.URL(), key, f.Path)
		}
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		p := filepath.Join(dst, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			rc.Close()
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		out, err := os.Create(p)
		if err != nil {
			rc.Close()
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(h, out), rc) // hash first: see storage.writeSynced
		rc.Close()
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, fmt.Errorf("download %s: %w", key, err))
		}
		if n != f.Size {
			return sqlerr.New(sqlerr.DataCorrupted, "snapshot %s in %s: object %s has %d bytes, the manifest says %d", prefix, r.Store.URL(), key, n, f.Size)
		}
		if hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
			return sqlerr.New(sqlerr.DataCorrupted, "snapshot %s in %s: checksum mismatch in object %s (file %s)", prefix, r.Store.URL(), key, f.Path)
		}
	}
	return nil
}

// Manifests returns the manifests stored under kind ("checkpoints" or
// "savepoints"), oldest first; unreadable ones are skipped.
func (r *Remote) Manifests(ctx context.Context, kind string) ([]*Manifest, error) {
	objs, err := r.Store.List(ctx, kind+"/")
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	var out []*Manifest
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, "/manifest.json") {
			continue
		}
		if m, err := r.ReadManifest(ctx, strings.TrimSuffix(o.Key, "/manifest.json")); err == nil {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CheckpointID != out[j].CheckpointID {
			return out[i].CheckpointID < out[j].CheckpointID
		}
		return out[i].CreatedAt.Before(out[j].CreatedAt)
	})
	return out, nil
}

// Latest returns the key prefix of the newest stored checkpoint.
func (r *Remote) Latest(ctx context.Context) (string, error) {
	objs, err := r.Store.List(ctx, "checkpoints/")
	if err != nil {
		return "", sqlerr.Wrap(sqlerr.IOError, err)
	}
	var best uint64
	for _, o := range objs {
		rest, ok := strings.CutPrefix(o.Key, "checkpoints/chk-")
		if !ok || !strings.HasSuffix(rest, "/manifest.json") {
			continue
		}
		if id, err := strconv.ParseUint(strings.TrimSuffix(rest, "/manifest.json"), 10, 64); err == nil && id > best {
			best = id
		}
	}
	if best == 0 {
		return "", sqlerr.New(sqlerr.UndefinedObject, "no checkpoint in %s", r.Store.URL())
	}
	return CheckpointKey(best), nil
}

// Delete removes the snapshots under the given prefixes, then every
// shared object no remaining manifest references.
func (r *Remote) Delete(ctx context.Context, prefixes ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range prefixes {
		if err := r.Store.Delete(ctx, manifestKey(p)); err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	return r.gcLocked(ctx)
}

func (r *Remote) gcLocked(ctx context.Context) error {
	refs := map[string]bool{}
	for _, kind := range []string{"checkpoints", "savepoints"} {
		objs, err := r.Store.List(ctx, kind+"/")
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		for _, o := range objs {
			if !strings.HasSuffix(o.Key, "/manifest.json") {
				continue
			}
			m, err := r.ReadManifest(ctx, strings.TrimSuffix(o.Key, "/manifest.json"))
			if err != nil {
				// An unreadable manifest might still need its files: keep all.
				return err
			}
			for _, f := range m.Files {
				refs[SharedKey(f)] = true
			}
		}
	}
	objs, err := r.Store.List(ctx, "shared/")
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	for _, o := range objs {
		if refs[o.Key] {
			continue
		}
		if err := r.Store.Delete(ctx, o.Key); err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		if r.known != nil {
			delete(r.known, o.Key)
		}
	}
	return nil
}

// RestoreMarker is the file --restore-from leaves in the data directory it
// filled: it holds the URL, so a restart with the same flag goes on with
// the database instead of refusing a non-empty directory.
const RestoreMarker = "RESTORED_FROM"

// RestoreDB fills the empty data directory dataDir with the database of a
// snapshot in checkpoint storage: raw is a storage URL (the newest
// checkpoint there), or one ending in chk-<id>, checkpoints/chk-<id> or
// savepoints/<name>. Every file is checked against the manifest (XX001).
// It returns the manifest, or nil if dataDir was already restored from raw.
func RestoreDB(ctx context.Context, raw, dataDir string, s3 objstore.S3Config) (*Manifest, error) {
	loc, err := objstore.Parse(raw)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "--restore-from: %v", err)
	}
	if ents, err := os.ReadDir(dataDir); err == nil && len(ents) > 0 {
		if b, err := os.ReadFile(filepath.Join(dataDir, RestoreMarker)); err == nil && strings.TrimSpace(string(b)) == raw {
			return nil, nil
		}
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "--restore-from needs an empty data directory; %s is not empty", dataDir)
	}
	prefix := ""
	base, parent := path.Base(loc.Path), path.Dir(loc.Path)
	up := func(l objstore.Location, p string) objstore.Location {
		if p == "." || p == "/" {
			p = ""
		}
		if l.Scheme == "file" && p == "" {
			p = "/"
		}
		l.Path = p
		return l
	}
	if id, ok := strings.CutPrefix(base, "chk-"); ok {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "--restore-from %s: bad checkpoint id %q", raw, id)
		}
		prefix = CheckpointKey(n)
		if path.Base(parent) == "checkpoints" {
			parent = path.Dir(parent)
		}
		loc = up(loc, parent)
	} else if path.Base(parent) == "savepoints" {
		prefix = SavepointKey(base)
		loc = up(loc, path.Dir(parent))
	}
	st, err := objstore.Open(loc, s3)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	r := NewRemote(st)
	if prefix == "" {
		if prefix, err = r.Latest(ctx); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	m, err := r.DownloadDB(ctx, prefix, dataDir)
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(filepath.Join(dataDir, RestoreMarker), []byte(raw+"\n")); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return m, nil
}
