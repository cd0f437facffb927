package sql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sqlerr"
)

// Storage locations. Where the server writes files is fixed by its
// configuration, never by a client: the data directory, the config file's
// checkpoint.dir and the extra locations its checkpoint.dirs lists. SET
// checkpoint.dir chooses among those (42501 otherwise), so no SQL statement
// can make the server write to a path of the client's choosing.

// Checkpoint storage (checkpoint.storage, savepoint.storage) is a URL,
// file:///path or s3://bucket/prefix, where retained checkpoints and
// savepoints are uploaded as well as kept under checkpoint.dir: the copy
// that outlives the machine (checkpoint.Remote). Only a superuser may SET
// it, and only to a location the server allows: the data directory, the
// config file's checkpoint.dir and checkpoint.dirs, its storage.allowed
// list and the --allow-storage flags (42501 otherwise, 22023 for a bad
// URL). How S3 is reached (endpoint, region, credentials) comes from the
// config file or the AWS environment variables, never from SQL.

// StorageConfig is the server's side of checkpoint storage.
type StorageConfig struct {
	// Allowed are the locations (URLs) checkpoint.storage may point into,
	// besides the data directory and checkpoint.dir(s): the config file's
	// storage.allowed and the --allow-storage flags.
	Allowed []string
	S3      objstore.S3Config
}

// remoteStores caches the opened checkpoint storage locations by URL.
type remoteStores struct {
	cfg StorageConfig
	sync.Mutex
	m map[string]*checkpoint.Remote
}

// storageURL validates a checkpoint storage URL ("" turns it off).
func storageURL(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", nil
	}
	l, err := objstore.Parse(v)
	if err != nil {
		return "", err
	}
	return l.String(), nil
}

// allowedStorageLocked returns the locations checkpoint storage may use.
func (e *settingsStore) allowedStorageLocked() []objstore.Location {
	var out []objstore.Location
	add := func(u string) {
		if l, err := objstore.Parse(u); err == nil {
			out = append(out, l)
		}
	}
	for _, d := range e.allowedLocationsLocked() {
		if d == "" {
			d = cleanLocation(e.db.Dir())
		}
		add(d)
	}
	for _, u := range e.remotes.cfg.Allowed {
		add(u)
	}
	return out
}

// checkStorageLocked refuses a checkpoint storage URL that is invalid
// (22023) or outside every allowed location (42501).
func (e *settingsStore) checkStorageLocked(name, value string) error {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	want, err := objstore.Parse(value)
	if err != nil {
		return &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
			Msg: fmt.Sprintf("invalid value for parameter %q: %q", name, value), Detail: err.Error()}
	}
	allowed := e.allowedStorageLocked()
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		if want.Within(a) {
			return nil
		}
		shown[i] = a.String()
	}
	return &sqlerr.Error{Code: sqlerr.InsufficientPrivilege,
		Msg:    fmt.Sprintf("%s %q is not under a storage location this server allows", name, value),
		Detail: "Allowed: " + strings.Join(shown, ", ") + ".",
		Hint:   "Storage locations are fixed by the server: its data directory, the config file's storage.allowed (and checkpoint.dirs), and --allow-storage."}
}

// remote returns the checkpoint storage for "checkpoint" or "savepoint"
// snapshots (savepoint.storage, else checkpoint.storage), nil if none.
func (e *settingsStore) remote(kind string) (*checkpoint.Remote, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.remoteLocked(kind)
}

func (e *settingsStore) remoteLocked(kind string) (*checkpoint.Remote, error) {
	u := e.settingLocked(kind + ".storage")
	if u == "" {
		u = e.settingLocked("checkpoint.storage")
	}
	if u == "" {
		u = clusterStorageURL(e.Engine) // cluster mode's shared storage (clustercheckpoint.go)
	}
	if u == "" {
		return nil, nil
	}
	e.remotes.Lock()
	defer e.remotes.Unlock()
	if r, ok := e.remotes.m[u]; ok {
		return r, nil
	}
	l, err := objstore.Parse(u)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "%v", err)
	}
	st, err := objstore.Open(l, e.remotes.cfg.S3)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	if e.remotes.m == nil {
		e.remotes.m = map[string]*checkpoint.Remote{}
	}
	r := checkpoint.NewRemote(st)
	e.remotes.m[u] = r
	return r, nil
}

// fetchSnapshot makes sure the snapshot dir (a retained checkpoint or a
// savepoint) is on local disk: if it is not, it is downloaded from
// checkpoint storage, checked against its manifest (XX001). Without a copy
// anywhere it does nothing and the caller reports 42704.
func (e *settingsStore) fetchSnapshot(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	kind, prefix := "checkpoint", ""
	base := filepath.Base(dir)
	switch filepath.Base(filepath.Dir(dir)) {
	case "savepoints":
		kind, prefix = "savepoint", checkpoint.SavepointKey(base)
	case "checkpoints":
		id, err := strconv.ParseUint(strings.TrimPrefix(base, "chk-"), 10, 64)
		if err != nil {
			return nil
		}
		prefix = checkpoint.CheckpointKey(id)
	default:
		return nil
	}
	r, err := e.remote(kind)
	if err != nil || r == nil {
		return err
	}
	if _, err := r.ReadManifest(ctx, prefix); err != nil {
		if sqlerr.Code(err) == sqlerr.UndefinedObject {
			return nil
		}
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	_, err = r.Download(ctx, prefix, dir)
	return err
}

// retainedCheckpoints are the ids of the retained checkpoints and of the
// savepoints' checkpoints, whose records SHOW CHECKPOINTS keeps.
func (e *settingsStore) retainedCheckpoints() map[uint64]bool {
	root := e.snapStore.snapshotRoot()
	out := map[uint64]bool{}
	ents, _ := os.ReadDir(filepath.Join(root, "checkpoints"))
	for _, d := range ents {
		if id, err := strconv.ParseUint(strings.TrimPrefix(d.Name(), "chk-"), 10, 64); err == nil {
			out[id] = true
		}
	}
	for _, m := range checkpoint.List(filepath.Join(root, "savepoints")) {
		out[m.CheckpointID] = true
	}
	return out
}

// fileOnly settings come from the config file and cannot be SET.
var fileOnly = map[string]bool{"checkpoint.dirs": true}

// allowedLocationsLocked returns the configured storage locations, cleaned
// and absolute: "" stands for the data directory.
func (e *settingsStore) allowedLocationsLocked() []string {
	out := []string{""}
	if d := e.mu.fileConf["checkpoint.dir"]; d != "" {
		out = append(out, cleanLocation(d))
	}
	for _, d := range strings.Split(e.mu.fileConf["checkpoint.dirs"], ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, cleanLocation(d))
		}
	}
	return out
}

// cleanLocation normalizes a location for comparison: file:// is the local
// filesystem, and relative paths are taken from the server's directory.
func cleanLocation(d string) string {
	d = strings.TrimPrefix(strings.TrimSpace(d), "file://")
	if d == "" {
		return ""
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return filepath.Clean(d)
}

// checkLocationLocked refuses a checkpoint.dir the configuration does not
// allow.
func (e *settingsStore) checkLocationLocked(value string) error {
	want := cleanLocation(value)
	allowed := e.allowedLocationsLocked()
	for _, a := range allowed {
		if want == a || (a == "" && want == cleanLocation(e.db.Dir())) {
			return nil
		}
	}
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		if a == "" {
			a = "'' (the data directory)"
		}
		shown[i] = a
	}
	return &sqlerr.Error{Code: sqlerr.InsufficientPrivilege,
		Msg:    fmt.Sprintf("checkpoint.dir %q is not a storage location of this server", value),
		Detail: "Allowed: " + strings.Join(shown, ", ") + ".",
		Hint:   "Storage locations are fixed by the server's config file (checkpoint.dir, checkpoint.dirs); SQL can only choose among them."}
}
