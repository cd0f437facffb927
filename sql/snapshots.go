package sql

import (
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

func (e *Engine) snapshotRoot() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshotRootLocked()
}

func (e *Engine) snapshotRootLocked() string {
	d := strings.TrimPrefix(e.settingLocked("checkpoint.dir"), "file://")
	if d == "" {
		return e.db.Dir()
	}
	return d
}

func (e *Engine) savepointDir(name string) string {
	return filepath.Join(e.snapshotRoot(), "savepoints", name)
}

func (e *Engine) checkpointDir(id uint64) string {
	return filepath.Join(e.snapshotRoot(), "checkpoints", fmt.Sprintf("chk-%d", id))
}

func (e *Engine) openSnapshot(dir string) (*openSnap, error) {
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

func (e *Engine) closeSnapshot(dir string) {
	e.snaps.Lock()
	defer e.snaps.Unlock()
	if s, ok := e.snaps.m[dir]; ok {
		s.db.Close()
		delete(e.snaps.m, dir)
	}
}

func (e *Engine) closeAllSnapshots() {
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
		e.waitExport(a.Checkpoint)
	}
	dir, what := e.checkpointDir(a.Checkpoint), fmt.Sprintf("checkpoint %d", a.Checkpoint)
	if a.Savepoint != "" {
		dir, what = e.savepointDir(a.Savepoint), fmt.Sprintf("savepoint %q", a.Savepoint)
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, 0, sqlerr.New(sqlerr.UndefinedObject, "%s does not exist", what)
	}
	s, err := e.openSnapshot(dir)
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
	return s.db.Pebble(), jm.ID, nil
}
