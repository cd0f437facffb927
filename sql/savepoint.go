package sql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Savepoints and retained checkpoints are snapshot directories (see
// checkpoint.Export): <root>/savepoints/<name> and <root>/checkpoints/chk-<id>,
// where root is checkpoint.dir, or the data directory when it is unset.

// openSnaps caches opened (and verified) snapshots for AS OF reads.
type openSnaps struct {
	sync.Mutex
	m map[string]*openSnap
}

type openSnap struct {
	man *checkpoint.Manifest
	db  *storage.DB
}

// jobManifests describes the named views (all running views if none).
func (e savepointStore) jobManifests(names []string) ([]checkpoint.JobManifest, error) {
	if len(names) == 0 {
		for _, d := range e.sortedTables(storage.KindView) {
			names = append(names, d.Name)
		}
	}
	var out []checkpoint.JobManifest
	for _, n := range names {
		def, err := e.viewDef(n)
		if err != nil {
			return nil, err
		}
		plan, err := e.planView(def)
		if err != nil {
			return nil, err
		}
		ops, err := exec.StateOperators(plan)
		if err != nil {
			return nil, err
		}
		out = append(out, checkpoint.JobManifest{Name: def.Name, ID: def.ID, SQL: def.SQL, Operators: ops})
	}
	return out, nil
}

func (e savepointStore) createSavepoint(ctx context.Context, name string, views []string) (*checkpoint.Manifest, error) {
	dir, err := e.snapStore.savepointDir(name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err == nil {
		return nil, sqlerr.New(sqlerr.DuplicateObject, "savepoint %q already exists", name)
	}
	if rem, err := e.conf.remote("savepoint"); err != nil {
		return nil, err
	} else if rem != nil {
		if _, err := rem.ReadManifest(ctx, checkpoint.SavepointKey(name)); err == nil {
			return nil, sqlerr.New(sqlerr.DuplicateObject, "savepoint %q already exists in %s", name, rem.Store.URL())
		} else if sqlerr.Code(err) != sqlerr.UndefinedObject {
			return nil, err
		}
	}
	jobs, err := e.jobManifests(views)
	if err != nil {
		return nil, err
	}
	if err := e.sup.catchUp(ctx); err != nil {
		return nil, err
	}
	var man *checkpoint.Manifest
	_, err = e.coord.Trigger(ctx, "savepoint", func(rec *checkpoint.Record) error {
		offs, err := e.db.State().Offsets()
		if err != nil {
			return err
		}
		m, err := checkpoint.Export(e.db, dir, checkpoint.Manifest{Kind: "savepoint", Name: name,
			CheckpointID: rec.ID, Epoch: rec.Epoch, CreatedAt: rec.StartedAt, Jobs: jobs, Offsets: offs})
		man = m
		return err
	})
	if err != nil {
		return nil, err
	}
	// The savepoint is complete on local disk; with savepoint storage it
	// exists only once uploaded, so a failed upload fails the statement.
	if rem, err := e.conf.remote("savepoint"); err != nil || rem != nil {
		if err == nil {
			_, err = rem.Upload(ctx, dir, checkpoint.SavepointKey(name), man)
		}
		if err != nil {
			e.snapStore.closeSnapshot(dir)
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return man, nil
}

// periodicExportGap is the least time between two exports of periodic
// checkpoints, and from the server's start to the first. An export copies
// Pebble's live WAL (the memtables' backlog, ingest included) and hashes
// it, which at a 1 s interval costs a noticeable share of a busy server,
// and most right after a start, when a backlog is replayed or loaded;
// manual checkpoints are always exported. See docs/decisions/2026-11-30-periodic-checkpoint-export-every-10s.md.
const periodicExportGap = 10 * time.Second

// exportCheckpoint keeps a completed checkpoint as a retained snapshot and
// deletes the oldest beyond checkpoint.retained. Runs inside the round.
func (e savepointStore) exportCheckpoint(rec *checkpoint.Record) error {
	if rec.Trigger == "periodic" && time.Since(e.lastExport) < periodicExportGap {
		return nil
	}
	e.lastExport = time.Now()
	jobs, err := e.jobManifests(rec.Jobs)
	if err != nil {
		return err
	}
	offs, err := e.db.State().Offsets()
	if err != nil {
		return err
	}
	dir := e.snapStore.checkpointDir(rec.ID)
	tmp, err := checkpoint.Capture(e.db, dir, rec.Trigger != "periodic")
	if err != nil {
		return err
	}
	// Checksumming the captured files can take long while compactions write
	// new ones, so it runs after the round, one export at a time; readers of
	// this checkpoint (AS OF, RESTORE, SHOW CHECKPOINTS) wait for it. So
	// does the upload to checkpoint storage, if set.
	rem, remErr := e.conf.remote("checkpoint")
	man := checkpoint.Manifest{Kind: "checkpoint", Name: fmt.Sprintf("chk-%d", rec.ID),
		CheckpointID: rec.ID, Epoch: rec.Epoch, CreatedAt: rec.StartedAt, Jobs: jobs, Offsets: offs}
	keep := e.conf.checkpointConfig().Retained
	root := filepath.Join(e.snapStore.snapshotRoot(), "checkpoints")
	done := make(chan struct{})
	e.exports.Lock()
	if e.exports.pending == nil {
		e.exports.pending = map[uint64]chan struct{}{}
		e.exports.offsets = map[uint64][]storage.Offset{}
	}
	e.exports.pending[rec.ID] = done
	e.exports.offsets[rec.ID] = offs
	if rem != nil || remErr != nil {
		e.exports.noteUploadLocked(rec.ID)
	}
	e.exports.Unlock()
	e.exports.wg.Add(1)
	go func() {
		defer e.exports.wg.Done()
		e.exports.seal.Lock()
		defer e.exports.seal.Unlock()
		sealed, err := checkpoint.Seal(tmp, dir, man)
		if err != nil {
			e.coord.NoteExportFailure(man.CheckpointID, err)
			e.log.Error("retained checkpoint export failed", "checkpoint", man.CheckpointID, "err", err)
		} else if rem != nil || remErr != nil {
			if err := e.uploadCheckpoint(rem, remErr, dir, sealed); err != nil {
				e.exports.Lock()
				e.exports.failed[man.CheckpointID] = err
				e.exports.Unlock()
			}
		}
		// It takes no engine lock, so code holding e.mu may wait for it.
		all := checkpoint.List(root)
		for i := 0; i < len(all)-keep; i++ {
			old := filepath.Join(root, fmt.Sprintf("chk-%d", all[i].CheckpointID))
			e.snapStore.closeSnapshot(old)
			os.RemoveAll(old)
		}
		if rem != nil {
			e.pruneRemote(rem, keep)
		}
		e.exports.Lock()
		delete(e.exports.pending, man.CheckpointID)
		delete(e.exports.offsets, man.CheckpointID)
		delete(e.exports.uploading, man.CheckpointID)
		e.exports.Unlock()
		close(done)
	}()
	return nil
}

// uploadCheckpoint uploads a sealed retained checkpoint to checkpoint
// storage. A failed upload fails the checkpoint (FailUpload; the jobs'
// committed data is untouched) and drops its local copy, so what SHOW
// CHECKPOINTS calls retained is in checkpoint storage.
func (e savepointStore) uploadCheckpoint(rem *checkpoint.Remote, remErr error, dir string, m *checkpoint.Manifest) error {
	start := time.Now()
	err := remErr
	var st checkpoint.UploadStats
	if err == nil {
		st, err = rem.Upload(context.Background(), dir, checkpoint.CheckpointKey(m.CheckpointID), m)
	}
	if err != nil {
		e.coord.FailUpload(m.CheckpointID, err)
		e.snapStore.closeSnapshot(dir)
		os.RemoveAll(dir)
		e.log.Error("checkpoint upload failed", "checkpoint", m.CheckpointID, "err", err)
		return err
	}
	e.log.Info("checkpoint uploaded", "checkpoint", m.CheckpointID, "storage", rem.Store.URL(),
		"files", st.Files, "uploaded_files", st.Uploaded, "uploaded_bytes", st.Bytes, "size", st.Total,
		"duration", time.Since(start))
	publishClusterPointers(e.Engine, rem, m)
	return nil
}

// pruneRemote deletes the checkpoints in checkpoint storage beyond the
// newest keep, then the files no snapshot there references.
func (e savepointStore) pruneRemote(rem *checkpoint.Remote, keep int) {
	ctx := context.Background()
	all, err := rem.Manifests(ctx, "checkpoints")
	if err != nil || len(all) <= keep {
		return
	}
	var old []string
	for _, m := range all[:len(all)-keep] {
		old = append(old, checkpoint.CheckpointKey(m.CheckpointID))
	}
	if err := rem.Delete(ctx, old...); err != nil {
		e.log.Warn("deleting old checkpoints from checkpoint storage failed", "err", err)
	}
}

// exportState tracks retained-checkpoint exports still being sealed.
type exportState struct {
	sync.Mutex
	pending map[uint64]chan struct{}
	offsets map[uint64][]storage.Offset // of each pending export; they pin the logs as its manifest will
	seal    sync.Mutex                  // one export checksums at a time
	wg      sync.WaitGroup
	// uploading holds the pending exports that upload to checkpoint
	// storage, failed the upload errors (of the last few) for CHECKPOINT
	// to report (sql/snapshots.go).
	uploading map[uint64]bool
	failed    map[uint64]error
}

// waitExport waits until checkpoint id (or, for id 0, every checkpoint)
// that is being exported is complete.
func (e savepointStore) waitExport(id uint64) {
	e.exports.Lock()
	var chans []chan struct{}
	for pid, c := range e.exports.pending {
		if id == 0 || pid == id {
			chans = append(chans, c)
		}
	}
	e.exports.Unlock()
	for _, c := range chans {
		<-c
	}
}

// deleteCheckpointsOf removes the retained checkpoints that cover only the
// given (dropped or stopped) views: checkpoint.cleanup = 'delete_on_cancellation'.
// Checkpoints are database-wide, so one that also covers another view
// stays. Called with e.mu held.
func (e savepointStore) deleteCheckpointsOfLocked(views []string) {
	e.waitExport(0)
	gone := map[string]bool{}
	for _, v := range views {
		gone[v] = true
	}
	root := filepath.Join(e.snapStore.snapshotRootLocked(), "checkpoints")
	var remote []string
	for _, m := range checkpoint.List(root) {
		only := len(m.Jobs) > 0
		for _, j := range m.Jobs {
			only = only && gone[j.Name]
		}
		if only {
			dir := filepath.Join(root, fmt.Sprintf("chk-%d", m.CheckpointID))
			e.snapStore.closeSnapshot(dir)
			os.RemoveAll(dir)
			remote = append(remote, checkpoint.CheckpointKey(m.CheckpointID))
		}
	}
	if len(remote) > 0 {
		if rem, err := e.conf.remoteLocked("checkpoint"); err == nil && rem != nil {
			if err := rem.Delete(context.Background(), remote...); err != nil {
				e.log.Warn("deleting checkpoints from checkpoint storage failed", "err", err)
			}
		}
	}
}

func (e savepointStore) dropSavepoint(names []string, ifExists bool) (*Result, error) {
	ctx := context.Background()
	var notices []string
	for _, n := range names {
		dir, err := e.snapStore.savepointDir(n)
		if err != nil {
			return nil, err
		}
		rem, err := e.conf.remote("savepoint")
		if err != nil {
			return nil, err
		}
		inStore := false
		if rem != nil {
			if _, err := rem.ReadManifest(ctx, checkpoint.SavepointKey(n)); err == nil {
				inStore = true
			} else if sqlerr.Code(err) != sqlerr.UndefinedObject {
				return nil, err
			}
		}
		if inStore {
			// Its manifest goes first, then the files no other snapshot needs.
			if err := rem.Delete(ctx, checkpoint.SavepointKey(n)); err != nil {
				return nil, err
			}
		}
		if _, err := os.Stat(dir); err != nil {
			if inStore {
				continue
			}
			if ifExists {
				notices = append(notices, fmt.Sprintf("savepoint %q does not exist, skipping", n))
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not exist", n)
		}
		e.snapStore.closeSnapshot(dir)
		if err := os.RemoveAll(dir); err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	return &Result{Tag: "DROP SAVEPOINT", Notices: notices}, nil
}

func (e savepointStore) showSavepoints() *table {
	t := &table{cols: []Column{{Name: "name", T: types.TText}, {Name: "views", T: types.TText}, {Name: "checkpoint_id", T: types.TInt64},
		{Name: "created_at", T: types.TTimestamp}, {Name: "size", T: types.TInt64}}}
	all := checkpoint.List(filepath.Join(e.snapStore.snapshotRoot(), "savepoints"))
	if rem, err := e.conf.remote("savepoint"); err == nil && rem != nil {
		// Savepoints in savepoint storage that are not on this machine
		// (a server restored with --restore-from) are listed too.
		local := map[string]bool{}
		for _, m := range all {
			local[m.Name] = true
		}
		if ms, err := rem.Manifests(context.Background(), "savepoints"); err == nil {
			for _, m := range ms {
				if !local[m.Name] {
					all = append(all, m)
				}
			}
		}
	}
	for _, m := range all {
		var views []string
		for _, j := range m.Jobs {
			views = append(views, j.Name)
		}
		t.add(str(m.Name), str(strings.Join(views, ",")), types.Int(int64(m.CheckpointID)),
			types.Int(m.CreatedAt.UTC().UnixMicro()), types.Int(m.Size()))
	}
	return t
}

// compatible checks that the state of jm can be restored into plan.
func compatible(view string, jm *checkpoint.JobManifest, vp plan.Plan, allowNonRestored bool) (bool, error) {
	ops, err := exec.StateOperators(vp)
	if err != nil {
		return false, err
	}
	var problems []string
	for id, fp := range ops {
		old, ok := jm.Operators[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("operator %s has no state in the snapshot (added)", id))
		case old != fp:
			problems = append(problems, fmt.Sprintf("operator %s changed: snapshot has %s, the query needs %s", id, old, fp))
		}
	}
	for id := range jm.Operators {
		if _, ok := ops[id]; !ok {
			problems = append(problems, fmt.Sprintf("operator %s of the snapshot is not in the query (removed)", id))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 && !allowNonRestored {
		return false, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState,
			Msg:  fmt.Sprintf("the snapshot's state cannot be restored into materialized view %q: %s", view, strings.Join(problems, "; ")),
			Hint: "Use WITH (allow_non_restored_state = true) to drop the state that does not match."}
	}
	return len(problems) == 0, nil
}
