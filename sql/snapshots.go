package sql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Snapshots: where checkpoints and savepoints live on disk, and the open
// read-only copies AS OF reads go through.

func (e *snapshotStore) snapshotRoot() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshotRootLocked()
}

func (e *snapshotStore) snapshotRootLocked() string {
	d := strings.TrimPrefix(e.conf.settingLocked("checkpoint.dir"), "file://")
	if d == "" {
		return e.db.Dir()
	}
	return d
}

// savepointDir is the directory of the savepoint name. A savepoint name
// becomes a directory name, so it is 1 to 63 characters of a-z, 0-9 and _
// (what an unquoted identifier folds to); anything else, such as "../x",
// "a/b" or "/abs" in a quoted identifier, is refused with 42602 before any
// path is built.
func (e *snapshotStore) savepointDir(name string) (string, error) {
	if err := checkSavepointName(name); err != nil {
		return "", err
	}
	return filepath.Join(e.snapshotRoot(), "savepoints", name), nil
}

func checkSavepointName(name string) error {
	ok := len(name) > 0 && len(name) <= 63
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
	}
	if ok {
		return nil
	}
	shown := name
	if len(shown) > 80 {
		shown = shown[:80] + "..."
	}
	return &sqlerr.Error{Code: sqlerr.InvalidName,
		Msg:    fmt.Sprintf("invalid savepoint name %q", shown),
		Detail: "A savepoint name is 1 to 63 characters of a-z, 0-9 and _: it names a directory under the checkpoint storage location.",
		Hint:   "Use an unquoted name such as before_upgrade."}
}

func (e *snapshotStore) checkpointDir(id uint64) string {
	return filepath.Join(e.snapshotRoot(), "checkpoints", fmt.Sprintf("chk-%d", id))
}

func (e *snapshotStore) openSnapshot(dir string) (*openSnap, error) {
	e.snaps.Lock()
	defer e.snaps.Unlock()
	if s, ok := e.snaps.m[dir]; ok {
		return s, nil
	}
	man, db, err := checkpoint.Open(dir)
	if err != nil {
		return nil, err
	}
	if e.snaps.m == nil {
		e.snaps.m = map[string]*openSnap{}
	}
	s := &openSnap{man: man, db: db}
	e.snaps.m[dir] = s
	return s, nil
}

func (e *snapshotStore) closeSnapshot(dir string) {
	e.snaps.Lock()
	defer e.snaps.Unlock()
	if s, ok := e.snaps.m[dir]; ok {
		s.db.Close()
		delete(e.snaps.m, dir)
	}
}

func (e *snapshotStore) closeAllSnapshots() {
	e.snaps.Lock()
	defer e.snaps.Unlock()
	for dir, s := range e.snaps.m {
		s.db.Close()
		delete(e.snaps.m, dir)
	}
}

// Snapshot implements planner.Snapshots.
func (e *Engine) Snapshot(a planner.AsOf, view string) (storage.Reader, uint64, error) {
	if a.Savepoint == "" {
		e.sup.waitExport(a.Checkpoint)
	}
	dir, what := e.snapStore.checkpointDir(a.Checkpoint), fmt.Sprintf("checkpoint %d", a.Checkpoint)
	if a.Savepoint != "" {
		var err error
		if dir, err = e.snapStore.savepointDir(a.Savepoint); err != nil {
			return nil, 0, err
		}
		what = fmt.Sprintf("savepoint %q", a.Savepoint)
	}
	if err := e.conf.fetchSnapshot(context.Background(), dir); err != nil {
		return nil, 0, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, 0, sqlerr.New(sqlerr.UndefinedObject, "%s does not exist", what)
	}
	s, err := e.snapStore.openSnapshot(dir)
	if err != nil {
		return nil, 0, err
	}
	jm, ok := s.man.Job(view)
	if !ok {
		return nil, 0, sqlerr.New(sqlerr.UndefinedObject, "%s does not cover materialized view %q", what, view)
	}
	if def, ok := e.Table(view); ok && def.SQL != jm.SQL {
		return nil, 0, sqlerr.New(sqlerr.ObjectNotInPrereqState, "materialized view %q was replaced after %s was taken; its rows there have another shape", view, what)
	}
	return s.db.Reader(), jm.ID, nil
}

// checkpointStatement runs CHECKPOINT (after the catch-up, localCheckpoint): a checkpoint round, then, when it
// is uploaded to checkpoint storage, the wait for its upload. A checkpoint
// is complete once it is where it must outlive the machine, so a failed
// upload fails the statement with the upload's error (58030 io_error), the
// checkpoint is FAILED in SHOW CHECKPOINTS, and the jobs' data is untouched.
// Canceling the statement stops the wait, not the upload.
func (e savepointStore) checkpointStatement(ctx context.Context) (*Result, error) {
	rec, err := e.coord.Trigger(ctx, "manual", nil)
	if err != nil {
		return nil, err
	}
	// Only an upload is waited for: a local export (checksums) completes
	// on its own, and readers of the checkpoint wait for it.
	e.exports.Lock()
	var done chan struct{}
	if e.exports.uploading[rec.ID] {
		done = e.exports.pending[rec.ID]
	}
	e.exports.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return nil, sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request (checkpoint %d is still being uploaded)", rec.ID)
		}
	}
	e.exports.Lock()
	uerr := e.exports.failed[rec.ID]
	delete(e.exports.failed, rec.ID)
	e.exports.Unlock()
	if uerr != nil {
		return nil, sqlerr.New(sqlerr.IOError, "checkpoint %d was committed but its upload to checkpoint storage failed: %v", rec.ID, uerr)
	}
	if err := clusterPointerErr(e.Engine, rec.ID); err != nil {
		return nil, err
	}
	return &Result{Tag: "CHECKPOINT"}, nil
}

// noteUploadLocked records that export id uploads to checkpoint storage
// (e.exports held), and forgets upload errors no CHECKPOINT collected.
func (x *exportState) noteUploadLocked(id uint64) {
	if x.uploading == nil {
		x.uploading = map[uint64]bool{}
		x.failed = map[uint64]error{}
	}
	x.uploading[id] = true
	for fid := range x.failed {
		if fid+100 < id {
			delete(x.failed, fid)
		}
	}
}

// waitLocalExports waits for the pending exports that do not upload (they
// only checksum local files) and returns the ids of those that do: SHOW
// CHECKPOINTS lists them as IN_PROGRESS instead of waiting for a slow
// checkpoint storage.
func (e savepointStore) waitLocalExports() map[uint64]bool {
	e.exports.Lock()
	var chans []chan struct{}
	uploading := map[uint64]bool{}
	for id, c := range e.exports.pending {
		if e.exports.uploading[id] {
			uploading[id] = true
		} else {
			chans = append(chans, c)
		}
	}
	e.exports.Unlock()
	for _, c := range chans {
		<-c
	}
	return uploading
}
