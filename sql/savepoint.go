package sql

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Savepoints and retained checkpoints are snapshot directories (see
// checkpoint.Export): <root>/savepoints/<name> and <root>/checkpoints/chk-<id>,
// where root is checkpoint.dir, or the data directory when it is unset.

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

// openSnaps caches opened (and verified) snapshots for AS OF reads.
type openSnaps struct {
	sync.Mutex
	m map[string]*openSnap
}

type openSnap struct {
	man *checkpoint.Manifest
	db  *storage.DB
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

// jobManifests describes the named views (all running views if none).
func (e *Engine) jobManifests(names []string) ([]checkpoint.JobManifest, error) {
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

func (e *Engine) createSavepoint(ctx context.Context, name string, views []string) (*checkpoint.Manifest, error) {
	dir := e.savepointDir(name)
	if _, err := os.Stat(dir); err == nil {
		return nil, sqlerr.New(sqlerr.DuplicateObject, "savepoint %q already exists", name)
	}
	jobs, err := e.jobManifests(views)
	if err != nil {
		return nil, err
	}
	if err := e.catchUp(ctx); err != nil {
		return nil, err
	}
	var man *checkpoint.Manifest
	_, err = e.coord.Trigger(ctx, "savepoint", func(rec *checkpoint.Record) error {
		offs, err := e.db.Offsets()
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
	return man, nil
}

// periodicExportGap is the least time between two exports of periodic
// checkpoints, and from the server's start to the first. An export copies
// Pebble's live WAL (the memtables' backlog, ingest included) and hashes
// it, which at a 1 s interval costs a noticeable share of a busy server,
// and most right after a start, when a backlog is replayed or loaded;
// manual checkpoints are always exported. See docs/DECISIONS.md.
const periodicExportGap = 10 * time.Second

// exportCheckpoint keeps a completed checkpoint as a retained snapshot and
// deletes the oldest beyond checkpoint.retained. Runs inside the round.
func (e *Engine) exportCheckpoint(rec *checkpoint.Record) error {
	if rec.Trigger == "periodic" && time.Since(e.lastExport) < periodicExportGap {
		return nil
	}
	e.lastExport = time.Now()
	jobs, err := e.jobManifests(rec.Jobs)
	if err != nil {
		return err
	}
	offs, err := e.db.Offsets()
	if err != nil {
		return err
	}
	dir := e.checkpointDir(rec.ID)
	tmp, err := checkpoint.Capture(e.db, dir, rec.Trigger != "periodic")
	if err != nil {
		return err
	}
	// Checksumming the captured files can take long while compactions write
	// new ones, so it runs after the round, one export at a time; readers of
	// this checkpoint (AS OF, RESTORE, SHOW CHECKPOINTS) wait for it.
	man := checkpoint.Manifest{Kind: "checkpoint", Name: fmt.Sprintf("chk-%d", rec.ID),
		CheckpointID: rec.ID, Epoch: rec.Epoch, CreatedAt: rec.StartedAt, Jobs: jobs, Offsets: offs}
	keep := e.checkpointConfig().Retained
	root := filepath.Join(e.snapshotRoot(), "checkpoints")
	done := make(chan struct{})
	e.exports.Lock()
	if e.exports.pending == nil {
		e.exports.pending = map[uint64]chan struct{}{}
		e.exports.offsets = map[uint64][]storage.Offset{}
	}
	e.exports.pending[rec.ID] = done
	e.exports.offsets[rec.ID] = offs
	e.exports.Unlock()
	e.exports.wg.Add(1)
	go func() {
		defer e.exports.wg.Done()
		e.exports.seal.Lock()
		defer e.exports.seal.Unlock()
		if _, err := checkpoint.Seal(tmp, dir, man); err != nil {
			e.coord.NoteExportFailure(man.CheckpointID, err)
			e.log.Error("retained checkpoint export failed", "checkpoint", man.CheckpointID, "err", err)
		}
		// It takes no engine lock, so code holding e.mu may wait for it.
		all := checkpoint.List(root)
		for i := 0; i < len(all)-keep; i++ {
			old := filepath.Join(root, fmt.Sprintf("chk-%d", all[i].CheckpointID))
			e.closeSnapshot(old)
			os.RemoveAll(old)
		}
		e.exports.Lock()
		delete(e.exports.pending, man.CheckpointID)
		delete(e.exports.offsets, man.CheckpointID)
		e.exports.Unlock()
		close(done)
	}()
	return nil
}

// exportState tracks retained-checkpoint exports still being sealed.
type exportState struct {
	sync.Mutex
	pending map[uint64]chan struct{}
	offsets map[uint64][]storage.Offset // of each pending export; they pin the logs as its manifest will
	seal    sync.Mutex                  // one export checksums at a time
	wg      sync.WaitGroup
}

// waitExport waits until checkpoint id (or, for id 0, every checkpoint)
// that is being exported is complete.
func (e *Engine) waitExport(id uint64) {
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
func (e *Engine) deleteCheckpointsOfLocked(views []string) {
	e.waitExport(0)
	gone := map[string]bool{}
	for _, v := range views {
		gone[v] = true
	}
	root := filepath.Join(e.snapshotRootLocked(), "checkpoints")
	for _, m := range checkpoint.List(root) {
		only := len(m.Jobs) > 0
		for _, j := range m.Jobs {
			only = only && gone[j.Name]
		}
		if only {
			dir := filepath.Join(root, fmt.Sprintf("chk-%d", m.CheckpointID))
			e.closeSnapshot(dir)
			os.RemoveAll(dir)
		}
	}
}

func (e *Engine) dropSavepoint(names []string, ifExists bool) (*Result, error) {
	var notices []string
	for _, n := range names {
		dir := e.savepointDir(n)
		if _, err := os.Stat(dir); err != nil {
			if ifExists {
				notices = append(notices, fmt.Sprintf("savepoint %q does not exist, skipping", n))
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not exist", n)
		}
		e.closeSnapshot(dir)
		if err := os.RemoveAll(dir); err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	return &Result{Tag: "DROP SAVEPOINT", Notices: notices}, nil
}

func (e *Engine) showSavepoints() *table {
	t := &table{cols: []Column{{"name", types.TText}, {"views", types.TText}, {"checkpoint_id", types.TInt64},
		{"created_at", types.TTimestamp}, {"size", types.TInt64}}}
	for _, m := range checkpoint.List(filepath.Join(e.snapshotRoot(), "savepoints")) {
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
func compatible(view string, jm *checkpoint.JobManifest, plan exec.Plan, allowNonRestored bool) (bool, error) {
	ops, err := exec.StateOperators(plan)
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

// restore rewinds views to a snapshot: their state, offsets and rows.
func (e *Engine) restore(ctx context.Context, n *parse.Restore) (*Result, error) {
	if n.Savepoint == "" {
		e.waitExport(n.Checkpoint)
	}
	dir, what := e.checkpointDir(n.Checkpoint), fmt.Sprintf("checkpoint %d", n.Checkpoint)
	if n.Savepoint != "" {
		dir, what = e.savepointDir(n.Savepoint), fmt.Sprintf("savepoint %q", n.Savepoint)
	}
	if n.View != "" {
		if _, err := e.viewDef(n.View); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "%s does not exist", what)
	}
	e.closeSnapshot(dir) // re-verify: the files may have changed on disk
	snap, err := e.openSnapshot(dir)
	if err != nil {
		return nil, err
	}
	var views []string
	if n.View != "" {
		views = []string{n.View}
	} else {
		for _, j := range snap.man.Jobs {
			views = append(views, j.Name)
		}
	}
	// Every job to restart: the restored ones (jm set) and, below, the
	// rebuilt readers.
	type restart struct {
		orig, def *storage.TableDef // def: the catalog entry after the restore
		jm        *checkpoint.JobManifest
		plan      exec.Plan
	}
	var jobs []restart
	for _, v := range views {
		def, err := e.viewDef(v)
		if err != nil {
			return nil, err
		}
		jm, ok := snap.man.Job(v)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "%s does not cover materialized view %q", what, v)
		}
		plan, err := e.planView(def)
		if err != nil {
			return nil, err
		}
		if _, err := compatible(v, jm, plan, false); err != nil {
			return nil, err
		}
		if jm.SQL != def.SQL {
			return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "materialized view %q was replaced after %s was taken; use CREATE OR REPLACE MATERIALIZED VIEW ... FROM SAVEPOINT", v, what)
		}
		jobs = append(jobs, restart{def, def, jm, plan})
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	// The views that read a restored view (directly or not) are rebuilt:
	// what they consumed of its changelog belongs to the abandoned
	// timeline, and the restored job writes its replay after it. Each
	// starts over from a snapshot of its source's rows, as a new reader
	// does, so it equals its query over the restored view. A view in both
	// sets is rebuilt, not restored.
	e.mu.Lock()
	rebuild := map[string]*storage.TableDef{}
	var visit func(name string)
	visit = func(name string) {
		for _, d := range e.dependentsLocked(name) {
			if rebuild[d] == nil {
				rebuild[d] = e.mu.tables[d]
				visit(d)
			}
		}
	}
	for _, r := range jobs {
		visit(r.def.Name)
	}
	e.mu.Unlock()
	jobs = slices.DeleteFunc(jobs, func(r restart) bool { return rebuild[r.def.Name] != nil })
	for _, def := range rebuild {
		plan, err := e.planView(def)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, restart{def, def, nil, plan})
	}
	// Upstream first (a view is created after what it reads, so by id): a
	// rebuilt view snapshots its source when it starts.
	slices.SortFunc(jobs, func(a, b restart) int { return cmp.Compare(a.def.ID, b.def.ID) })

	b := e.db.NewBatch()
	for i, r := range jobs {
		if r.jm == nil {
			storage.DeleteJobData(b, r.def.ID)
			continue
		}
		if err := e.db.CopyJobData(b, snap.db, r.jm.ID, r.def.ID, true); err != nil {
			return nil, err
		}
		// A restored job runs again, so a stopped view is no longer
		// stopped: its catalog entry changes in the same batch. (A stopped
		// reader is reset and rebuilt when it is started.)
		if r.def.Options["stopped"] == "true" {
			nd := *r.def
			nd.Options = maps.Clone(r.def.Options)
			delete(nd.Options, "stopped")
			storage.PutTable(b, &nd)
			jobs[i].def = &nd
		}
	}
	// Stop the jobs, commit the rewind, start them again; if the commit
	// fails the old jobs resume on their own, untouched, state.
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range jobs {
		if je := e.mu.jobs[r.def.Name]; je != nil && je.job != nil {
			je.job.Stop()
		}
	}
	commitErr := e.db.Commit(b, true)
	for _, r := range jobs {
		def := r.def
		if commitErr != nil {
			def = r.orig
		}
		e.mu.tables[def.Name] = def
		if def.Options["stopped"] == "true" {
			continue
		}
		if err := e.startViewJobLocked(def, r.plan, false); err != nil && commitErr == nil {
			commitErr = err
		}
	}
	if commitErr != nil {
		return nil, commitErr
	}
	return &Result{Tag: "RESTORE"}, nil
}

func (e *Engine) stopJob(ctx context.Context, n *parse.StopJob) (*Result, error) {
	def, err := e.viewDef(n.View)
	if err != nil {
		return nil, err
	}
	if n.Savepoint != "" {
		if _, err := e.createSavepoint(ctx, n.Savepoint, []string{n.View}); err != nil {
			return nil, err
		}
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	je := e.mu.jobs[n.View]
	if je == nil || je.state == exec.JobStopped {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "job %q is already stopped", n.View)
	}
	if je.job != nil {
		je.job.Stop()
	}
	je.state = exec.JobStopped
	if err := e.persistOptionLocked(def, "stopped", "true"); err != nil {
		return nil, err
	}
	if n.Savepoint == "" && e.settingLocked("checkpoint.cleanup") == "delete_on_cancellation" {
		e.deleteCheckpointsOfLocked([]string{n.View})
	}
	return &Result{Tag: "STOP JOB"}, nil
}

func (e *Engine) startJob(ctx context.Context, n *parse.StartJob) (*Result, error) {
	def, err := e.viewDef(n.View)
	if err != nil {
		return nil, err
	}
	if n.Savepoint != "" {
		if _, err := e.restore(ctx, &parse.Restore{View: n.View, Savepoint: n.Savepoint}); err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return &Result{Tag: "START JOB"}, e.persistOptionLocked(def, "stopped", "")
	}
	plan, err := e.planView(def)
	if err != nil {
		return nil, err
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if je := e.mu.jobs[n.View]; je != nil && je.state == exec.JobRunning {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "job %q is already running", n.View)
	} else if je != nil && je.job != nil {
		je.job.Stop()
	}
	if err := e.persistOptionLocked(def, "stopped", ""); err != nil {
		return nil, err
	}
	if err := e.startViewJobLocked(def, plan, false); err != nil {
		return nil, err
	}
	return &Result{Tag: "START JOB"}, nil
}

// persistOptionLocked stores a view option ("" deletes it) in the catalog.
func (e *Engine) persistOptionLocked(def *storage.TableDef, k, v string) error {
	nd := *def
	nd.Options = map[string]string{}
	for ok, ov := range def.Options {
		nd.Options[ok] = ov
	}
	if v == "" {
		delete(nd.Options, k)
	} else {
		nd.Options[k] = v
	}
	b := e.db.NewBatch()
	storage.PutTable(b, &nd)
	if err := e.db.Commit(b, true); err != nil {
		return err
	}
	e.mu.tables[def.Name] = &nd
	return nil
}

// replaceView is CREATE OR REPLACE MATERIALIZED VIEW v AS q FROM SAVEPOINT sp:
// the new query starts from the savepoint's state where the plans match.
func (e *Engine) replaceView(ctx context.Context, n *parse.CreateView, def *storage.TableDef, plan exec.Plan) (*Result, error) {
	allow := false
	for k, v := range n.With {
		if k != "allow_non_restored_state" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized materialized view option %q (allowed: allow_non_restored_state)", k)
		}
		allow = v == "true" || v == "on" || v == "1"
	}
	dir := e.savepointDir(n.FromSavepoint)
	if _, err := os.Stat(dir); err != nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not exist", n.FromSavepoint)
	}
	e.closeSnapshot(dir)
	snap, err := e.openSnapshot(dir)
	if err != nil {
		return nil, err
	}
	jm, ok := snap.man.Job(n.Name)
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not cover materialized view %q", n.FromSavepoint, n.Name)
	}
	matched, err := compatible(n.Name, jm, plan, allow)
	if err != nil {
		return nil, err
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.mu.tables[n.Name]
	if old == nil || old.Kind != storage.KindView {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "materialized view %q does not exist", n.Name)
	}
	// Views reading this one consumed its old changelog, and the new query
	// may not even have their columns: like PostgreSQL, refuse.
	if deps := e.dependentsLocked(n.Name); len(deps) > 0 {
		slices.Sort(deps)
		return nil, &sqlerr.Error{Code: sqlerr.DependentObjectsExist,
			Msg:    fmt.Sprintf("cannot replace materialized view %s because other objects depend on it", n.Name),
			Detail: fmt.Sprintf("materialized view %s depends on %s", deps[0], n.Name),
			Hint:   "Drop the dependent views first (or restore the view without replacing it)."}
	}
	b := e.db.NewBatch()
	def.ID = old.ID
	storage.DeleteJobData(b, def.ID)
	if matched {
		if err := e.db.CopyJobData(b, snap.db, jm.ID, def.ID, false); err != nil {
			return nil, err
		}
	} else {
		// State that does not match is dropped; the offsets still come from
		// the savepoint, as in Flink with allowNonRestoredState.
		if err := e.db.CopyOffsets(b, snap.db, jm.ID, def.ID); err != nil {
			return nil, err
		}
	}
	storage.PutTable(b, def)
	if je := e.mu.jobs[n.Name]; je != nil && je.job != nil {
		je.job.Stop()
	}
	if err := e.db.Commit(b, true); err != nil {
		// Nothing changed: bring the old job back.
		if oldPlan, perr := e.planView(old); perr == nil {
			_ = e.startViewJobLocked(old, oldPlan, false)
		}
		return nil, err
	}
	e.mu.tables[n.Name] = def
	if err := e.startViewJobLocked(def, plan, true); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE MATERIALIZED VIEW"}, nil
}

// alterView is ALTER MATERIALIZED VIEW v SET (restart.* = ...): per-job
// restart settings, validated like the database-wide ones.
func (e *Engine) alterView(n *parse.AlterView) (*Result, error) {
	if _, err := e.viewDef(n.Name); err != nil {
		return nil, err
	}
	vals := map[string]string{}
	for k, v := range n.Options {
		k = strings.ToLower(k)
		if !strings.HasPrefix(k, "restart.") {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized materialized view option %q (allowed: restart.*)", k)
		}
		nv, err := validateSetting(k, v)
		if err != nil {
			return nil, err
		}
		vals[k] = nv
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range vals {
		if err := e.persistOptionLocked(e.mu.tables[n.Name], k, v); err != nil {
			return nil, err
		}
	}
	if je := e.mu.jobs[n.Name]; je != nil {
		je.backoff = nil // the next failure uses the new strategy
	}
	return &Result{Tag: "ALTER MATERIALIZED VIEW"}, nil
}
