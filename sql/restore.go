package sql

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Rewinding and pausing jobs: RESTORE, STOP JOB, START JOB, and view
// upgrades (CREATE OR REPLACE ... FROM SAVEPOINT, ALTER).

// restore rewinds views to a snapshot: their state, offsets and rows.
func (e *supervisor) restore(ctx context.Context, n *parse.Restore) (*Result, error) {
	if n.Savepoint == "" {
		e.waitExport(n.Checkpoint)
	}
	dir, what := e.snapStore.checkpointDir(n.Checkpoint), fmt.Sprintf("checkpoint %d", n.Checkpoint)
	if n.Savepoint != "" {
		var err error
		if dir, err = e.snapStore.savepointDir(n.Savepoint); err != nil {
			return nil, err
		}
		what = fmt.Sprintf("savepoint %q", n.Savepoint)
	}
	if n.View != "" {
		if _, err := e.viewDef(n.View); err != nil {
			return nil, err
		}
	}
	if err := e.conf.fetchSnapshot(ctx, dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "%s does not exist", what)
	}
	return restoreFrom(ctx, e, n, dir, what)
}

// restoreFrom rewinds the views of n (the one named, else every one the
// snapshot covers) to the snapshot in dir, which is on local disk.
func restoreFrom(ctx context.Context, e *supervisor, n *parse.Restore, dir, what string) (*Result, error) {
	e.snapStore.closeSnapshot(dir) // re-verify: the files may have changed on disk
	snap, err := e.snapStore.openSnapshot(dir)
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
		plan      plan.Plan
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
		if err := e.db.State().CopyJob(b, snap.db, r.jm.ID, r.def.ID, true); err != nil {
			return nil, err
		}
		// The view's indexes are rebuilt from the restored rows: the
		// snapshot may predate one of them.
		for k := range r.def.Indexes {
			ix := &r.def.Indexes[k]
			storage.DeleteIndex(b, r.def.ID, ix.ID)
			if err := plan.BuildIndex(snap.db, r.jm.ID, b, r.def, ix); err != nil {
				return nil, err
			}
		}
		if n.Savepoint == "" {
			if err := restoreMemoryState(e.db, b, snap.db, r.jm.ID, r.def.ID); err != nil {
				return nil, err
			}
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
	// Sinks of the restored and rebuilt views start over in a new
	// generation (nextSinkGenerationsLocked); they start again after the jobs.
	affected := map[string]bool{}
	for _, r := range jobs {
		affected[r.def.Name] = true
	}
	sinks := e.sinkMgr.stopSinksOf(affected)
	var newSinks []*storage.SinkDef
	defer func() { e.sinkMgr.restartSinks(sinks, newSinks) }()
	// Stop the jobs, commit the rewind, start them again; if the commit
	// fails the old jobs resume on their own, untouched, state.
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range jobs {
		if je := e.mu.jobs[r.def.Name]; je != nil && je.job != nil {
			je.job.Stop()
		}
	}
	nextSinks, commitErr := e.sinkMgr.nextSinkGenerationsLocked(b, sinks)
	if commitErr == nil {
		commitErr = e.db.Commit(b, true)
	}
	if commitErr == nil {
		newSinks = nextSinks
		e.db.Epochs().DropReadPoints() // they show the views as they were
	}
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

// replaceView is CREATE OR REPLACE MATERIALIZED VIEW v AS q FROM SAVEPOINT sp:
// the new query starts from the savepoint's state where the plans match.
func (e *Engine) replaceView(ctx context.Context, n *parse.CreateView, def *storage.TableDef, vp plan.Plan) (*Result, error) {
	allow := false
	for k, v := range n.With {
		if k != "allow_non_restored_state" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized materialized view option %q (allowed: allow_non_restored_state)", k)
		}
		b, err := types.ParseText(v, types.TBool)
		if err != nil {
			// PostgreSQL's boolean parameters: on/off, true/false, yes/no,
			// 1/0 and unique prefixes; anything else is refused.
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", k, v)
		}
		allow = b.I != 0
	}
	dir, err := e.snapStore.savepointDir(n.FromSavepoint)
	if err != nil {
		return nil, err
	}
	if err := e.conf.fetchSnapshot(ctx, dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not exist", n.FromSavepoint)
	}
	e.snapStore.closeSnapshot(dir)
	snap, err := e.snapStore.openSnapshot(dir)
	if err != nil {
		return nil, err
	}
	jm, ok := snap.man.Job(n.Name)
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not cover materialized view %q", n.FromSavepoint, n.Name)
	}
	matched, err := compatible(n.Name, jm, vp, allow)
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
	def.Owner, def.Grants = old.Owner, old.Grants
	storage.DeleteJobData(b, def.ID)
	if matched {
		if err := e.db.State().CopyJob(b, snap.db, jm.ID, def.ID, false); err != nil {
			return nil, err
		}
	} else {
		// State that does not match is dropped; the offsets still come from
		// the savepoint, as in Flink with allowNonRestoredState.
		if err := e.db.State().CopyOffsets(b, snap.db, jm.ID, def.ID); err != nil {
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
			_ = e.sup.startViewJobLocked(old, oldPlan, false)
		}
		return nil, err
	}
	e.db.Epochs().DropReadPoints() // they show the view as it was
	e.mu.tables[n.Name] = def
	if err := e.sup.startViewJobLocked(def, vp, true); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE MATERIALIZED VIEW"}, nil
}

// alterView is ALTER MATERIALIZED VIEW v SET (restart.* = ...): per-job
// restart settings, validated like the database-wide ones.
func (e *Engine) alterView(ctx context.Context, n *parse.AlterView) (*Result, error) {
	if _, err := e.viewDef(n.Name); err != nil {
		return nil, err
	}
	vals, jobVals := map[string]string{}, map[string]string{}
	for k, v := range n.Options {
		k = strings.ToLower(k)
		if jobOptionKeys[k] {
			nv, err := validateJobOption(k, v)
			if err != nil {
				return nil, err
			}
			jobVals[k] = nv
			continue
		}
		if !strings.HasPrefix(k, "restart.") && k != "state.ttl" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized materialized view option %q (allowed: restart.*, state.ttl, state.backend, state.memory_limit, parallelism)", k)
		}
		nv, err := validateSetting(k, v)
		if err != nil {
			return nil, err
		}
		vals[k] = nv
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// The combination must hold too (restart.initial_delay <= max_delay):
	// a job must not find out at its next failure.
	trial := *e.mu.tables[n.Name]
	trial.Options = maps.Clone(trial.Options)
	if trial.Options == nil {
		trial.Options = map[string]string{}
	}
	maps.Copy(trial.Options, vals)
	if _, err := e.sup.restartConfigLocked(&trial); err != nil {
		return nil, err
	}
	for k, v := range vals {
		if err := e.sup.persistOptionLocked(e.mu.tables[n.Name], k, v); err != nil {
			return nil, err
		}
	}
	if je := e.mu.jobs[n.Name]; je != nil {
		je.backoff = nil // the next failure uses the new strategy
	}
	if _, ok := vals["state.ttl"]; ok {
		e.jobOpts.applyStateTTLLocked()
	}
	e.mu.Unlock()
	defer e.mu.Lock()
	if err := e.jobOpts.alterJobOptions(ctx, n.Name, jobVals); err != nil {
		return nil, err
	}
	return &Result{Tag: "ALTER MATERIALIZED VIEW"}, nil
}
