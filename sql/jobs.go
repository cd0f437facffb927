package sql

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Job supervision: starting view jobs, restarting failed ones by their
// strategy, catching up before a checkpoint or savepoint, changelogs, and
// STOP JOB / START JOB.

// jobSpecLocked describes the job of a view under the current settings.
func (e *supervisor) jobSpecLocked(def *storage.TableDef, vp plan.Plan) exec.JobSpec {
	spec := exec.JobSpec{ID: def.ID, Name: def.Name, Plan: vp, View: def, Parallelism: e.par,
		AtLeastOnce:     e.conf.settingLocked("checkpoint.mode") == "at_least_once",
		SkipErrors:      e.conf.settingLocked("job.error_policy") == "skip",
		RecordLate:      e.conf.settingLocked("job.late_rows") == "record",
		MemoryLimit:     jobMemoryBytes(e.conf.settingLocked("job.memory_limit"), e.cache, e.goHeap),
		Changelog:       len(e.dependentsLocked(def.Name)) > 0 || e.mu.consumed[def.Name],
		StateCacheBytes: e.cache,
		MaxEpochGroups:  exec.EpochGroups(e.cache),
		EpochFull:       e.pokeCoordinator,
		StateTTL:        exec.NewStateTTL(e.jobOpts.viewTTLLocked(def)),
		IdleTimeout:     durationOf(e.conf.settingLocked("stream.idle_timeout")),
		OnWindowClose:   emitsOnWindowClose(def.SQL),
		Now:             time.Now().UnixMicro()}
	e.jobOpts.applyJobOptionsLocked(def, &spec)
	return spec
}

// durationOf is a duration setting's value; "off": 0.
func durationOf(v string) time.Duration {
	d, err := checkpoint.ParseDuration(v)
	if err != nil {
		return 0
	}
	return d
}

// pokeCoordinator asks for the next epoch now (a job's epoch is full).
func (e *supervisor) pokeCoordinator() {
	if c := e.coord; c != nil {
		c.Poke()
	}
}

// startViewJob starts (or resumes) the job maintaining a view. Called
// before the engine serves.
func (e *supervisor) startViewJob(def *storage.TableDef) error {
	plan, err := e.planView(def)
	if err != nil {
		return err
	}
	return e.startViewJobLocked(def, plan, false)
}

// startViewJobLocked starts a view's job from its plan; e.mu may be held.
// In cluster mode a job another node runs is left on standby.
func (e *supervisor) startViewJobLocked(def *storage.TableDef, vp plan.Plan, reemit bool) error {
	if !(clusterJobs{e.Engine}).runsHere(def.Name) || e.mu.jobs[def.Name] == nil && startsByAssignment(e.Engine) {
		e.mu.jobs[def.Name] = &jobEntry{state: exec.JobStopped, standby: true}
		return nil
	}
	return runViewJobLocked(e, def, vp, reemit)
}

// runViewJobLocked starts a view's job from its plan, here.
func runViewJobLocked(e *supervisor, def *storage.TableDef, vp plan.Plan, reemit bool) error {
	spec := e.jobSpecLocked(def, vp)
	spec.Reemit = reemit
	j, err := exec.StartJob(e.db, spec)
	if err != nil {
		return err
	}
	e.mu.jobs[def.Name] = &jobEntry{job: j, state: exec.JobRunning, started: time.Now()}
	return nil
}

// ensureChangelogs makes every view among names write its changelog.
func (e *supervisor) ensureChangelogs(ctx context.Context, names []string) error {
	for _, name := range names {
		if src, ok := e.Table(name); ok && src.Kind == storage.KindView {
			if err := e.ensureChangelog(ctx, src.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// supervise applies each failed job's restart strategy: it schedules a
// restart from the last committed epoch (RESTARTING) or gives up (FAILED).
func (e *supervisor) supervise(ctx context.Context) {
	e.startPending(ctx)
	t := time.NewTicker(checkpoint.EpochInterval)
	defer t.Stop()
	var epoch uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		epoch++
		e.tickTransient(epoch)
		now := time.Now()
		e.mu.Lock()
		var due []string
		for n, j := range e.mu.jobs {
			switch j.state {
			case exec.JobRunning:
				select {
				case <-j.job.Failed():
					e.onFailureLocked(n, j, now)
				default:
					if j.backoff != nil {
						j.backoff.Running(j.started)
					}
				}
			case exec.JobRestarting:
				if !now.Before(j.next) {
					due = append(due, n)
				}
			}
		}
		e.mu.Unlock()
		for _, n := range due {
			e.restartJob(n)
		}
	}
}

// onFailureLocked records a job's failure and decides what happens next.
func (e *supervisor) onFailureLocked(name string, j *jobEntry, now time.Time) {
	err := j.job.Err()
	if src, splits, ok := exec.SourceGrown(err); ok {
		// Not a failure: a source gained splits. Raise its split count
		// and restart now, outside the restart strategy.
		gerr := e.growSourceLocked(src, splits)
		if gerr == nil {
			go j.job.Stop()
			j.state, j.next = exec.JobRestarting, now
			e.restartEvents.add(RestartEvent{Job: name, At: now, Cause: err.Error(), Action: "restart with the new splits"})
			return
		}
		err = gerr // the catalog write failed: a failure like any other
	}
	se := sqlerr.As(err)
	j.lastErr = se.Code + ": " + se.Msg
	if se.Detail != "" {
		j.lastErr += " (" + se.Detail + ")"
	}
	go j.job.Stop()
	if j.backoff == nil {
		cfg, cerr := e.restartConfigLocked(e.mu.tables[name])
		if cerr != nil {
			cfg = checkpoint.DefaultRestartConfig(false)
		}
		j.backoff = checkpoint.NewBackoff(cfg, nil)
	}
	delay, ok, reason := j.backoff.Failed(now)
	if !ok {
		j.state = exec.JobFailed
		e.restartEvents.add(RestartEvent{Job: name, At: now, Cause: j.lastErr, Action: "gave up: " + reason})
		j.lastErr += "; " + reason
		e.log.Error("job failed", "view", name, "err", j.lastErr)
		return
	}
	j.state, j.next = exec.JobRestarting, now.Add(delay)
	e.restartEvents.add(RestartEvent{Job: name, At: now, Cause: j.lastErr, Action: "restart in " + delay.String()})
	e.log.Warn("job failed; restarting from its last committed epoch", "view", name, "in", delay, "err", j.lastErr)
}

// restartConfigLocked is a view's restart strategy: its own restart.*
// options, else the database settings, else the default (fixed-delay with
// unbounded attempts when checkpoints are on, none when they are off).
func (e *supervisor) restartConfigLocked(def *storage.TableDef) (checkpoint.RestartConfig, error) {
	get := func(key string) (string, bool) {
		k := "restart." + key
		if def != nil {
			if v, ok := def.Options[k]; ok {
				return v, true
			}
		}
		if v, ok := e.mu.settings[k]; ok {
			return v, true
		}
		v, ok := e.mu.fileConf[k]
		return v, ok
	}
	if _, set := get("strategy"); !set && e.conf.settingLocked("checkpoint.interval") == "off" {
		return checkpoint.DefaultRestartConfig(false), nil
	}
	return checkpoint.ParseRestartConfig(get)
}

// restartJob starts a RESTARTING job again from its last committed state.
func (e *supervisor) restartJob(name string) {
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	je := e.mu.jobs[name]
	def := e.mu.tables[name]
	e.mu.Unlock()
	if je == nil || def == nil || je.state != exec.JobRestarting {
		return
	}
	je.job.Stop()
	if !(clusterJobs{e.Engine}).runsHere(name) {
		e.mu.Lock()
		e.mu.jobs[name] = &jobEntry{state: exec.JobStopped, standby: true}
		e.mu.Unlock()
		return
	}
	plan, err := e.planView(def)
	e.mu.Lock()
	defer e.mu.Unlock()
	var j *exec.Job
	if err == nil {
		j, err = exec.StartJob(e.db, e.jobSpecLocked(def, plan))
	}
	je.restarts++
	if err != nil {
		je.state, je.lastErr = exec.JobFailed, err.Error()
		e.restartEvents.add(RestartEvent{Job: name, At: time.Now(), Cause: je.lastErr, Action: "gave up: the restart failed"})
		return
	}
	e.restartEvents.add(RestartEvent{Job: name, At: time.Now(), Cause: je.lastErr, Action: "restarted"})
	je.job, je.state, je.started = j, exec.JobRunning, time.Now()
}

// catchUp waits, outside any barrier round, until every running job has
// read its stream up to where the stream ended when catchUp was called.
// CHECKPOINT and CREATE SAVEPOINT call it first, so the round they trigger
// (whose barriers still catch up the last few rows) does not spend a long
// backlog inside checkpoint.timeout.
func (e *supervisor) catchUp(ctx context.Context) error {
	// Jobs still loading their state after a restart come first.
	for e.starting() {
		select {
		case <-ctx.Done():
			return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
		case <-time.After(5 * time.Millisecond):
		}
	}
	e.mu.Lock()
	var jobs []*exec.Job
	for _, j := range e.mu.jobs {
		if j.job != nil && j.state == exec.JobRunning {
			jobs = append(jobs, j.job)
		}
	}
	e.mu.Unlock()
	targets := make([][][]uint64, len(jobs))
	for i, j := range jobs {
		targets[i] = j.LogEnds()
	}
	read, moved := readTotal(jobs), time.Now()
	for {
		behind := false
		for i, j := range jobs {
			select {
			case <-j.Failed():
				continue // it restarts on its own; the round will not wait for it
			default:
			}
			if !j.Reached(targets[i]) {
				behind = true
			}
		}
		if !behind {
			return nil
		}
		if n := readTotal(jobs); n != read {
			read, moved = n, time.Now()
		} else if time.Since(moved) >= catchUpStall {
			// A source that cannot reach the end it reported (records
			// gone, a broker's end that moved back): the round goes on
			// without the catch-up rather than wait forever.
			slog.Warn("checkpoint catch-up: no job read anything for a while; checkpointing without reaching the sources' ends", "stalled", catchUpStall)
			return nil
		}
		select {
		case <-ctx.Done():
			return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// catchUpStall is how long catchUp waits while no job reads anything.
const catchUpStall = 30 * time.Second

// readTotal sums the offsets jobs have read up to: it grows while any of
// them reads.
func readTotal(jobs []*exec.Job) uint64 {
	var n uint64
	for _, j := range jobs {
		for _, s := range j.Positions() {
			for _, o := range s.Offs {
				n += o
			}
		}
	}
	return n
}

// startPending starts the jobs of the views found at Open, one by one.
func (e *supervisor) startPending(ctx context.Context) {
	e.mu.Lock()
	var names []string
	for n, j := range e.mu.jobs {
		if j.state == exec.JobStarting {
			names = append(names, n)
		}
	}
	e.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		if ctx.Err() != nil {
			return
		}
		e.mu.Lock()
		def, je := e.mu.tables[n], e.mu.jobs[n]
		e.mu.Unlock()
		if def == nil || je == nil || je.state != exec.JobStarting {
			continue
		}
		if !(clusterJobs{e.Engine}).runsHere(n) || startsByAssignment(e.Engine) {
			e.mu.Lock()
			if e.mu.jobs[n] == je {
				e.mu.jobs[n] = &jobEntry{state: exec.JobStopped, standby: true}
			}
			e.mu.Unlock()
			continue
		}
		// Load the state with no lock held: sessions keep working meanwhile.
		plan, err := e.planView(def)
		var j *exec.Job
		if err == nil {
			e.mu.Lock()
			spec := e.jobSpecLocked(def, plan)
			e.mu.Unlock()
			j, err = exec.StartJob(e.db, spec)
		}
		e.roundMu.Lock()
		e.mu.Lock()
		switch {
		case e.mu.jobs[n] != je: // dropped, restored or started meanwhile
			if j != nil {
				j.Stop()
			}
		case err != nil:
			e.log.Error("view job did not start", "view", n, "err", err)
			e.mu.jobs[n] = &jobEntry{state: exec.JobFailed, lastErr: err.Error()}
		default:
			e.mu.jobs[n] = &jobEntry{job: j, state: exec.JobRunning, started: time.Now()}
		}
		e.mu.Unlock()
		e.roundMu.Unlock()
	}
}

func (e *supervisor) starting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, j := range e.mu.jobs {
		if j.state == exec.JobStarting {
			return true
		}
	}
	return false
}

// ensureChangelog makes the job of view write its changelog before a new
// consumer (a view or a change stream over it) snapshots it: it waits until
// every later change is sure to be in the changelog.
func (e *supervisor) ensureChangelog(ctx context.Context, view string) error {
	e.mu.Lock()
	e.mu.consumed[view] = true
	je := e.mu.jobs[view]
	e.mu.Unlock()
	if je == nil || je.job == nil || je.state != exec.JobRunning {
		return nil // it changes nothing now, and starts with its changelog on
	}
	from := je.job.EnableChangelog()
	for je.job.CommittedEpoch() < from {
		select {
		case <-ctx.Done():
			return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
		case <-je.job.Failed():
			return nil // it restarts with its changelog on
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// emitsOnWindowClose says a view's stored query ends in EMIT ON WINDOW CLOSE.
func emitsOnWindowClose(sql string) bool {
	stmts, err := parse.ParseAll(sql)
	if err != nil || len(stmts) != 1 {
		return false
	}
	q, ok := stmts[0].(*parse.Query)
	return ok && q.EmitOnWindowClose
}

func (e *supervisor) stopJob(ctx context.Context, n *parse.StopJob) (*Result, error) {
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
	if n.Savepoint == "" && e.conf.settingLocked("checkpoint.cleanup") == "delete_on_cancellation" {
		e.deleteCheckpointsOfLocked([]string{n.View})
	}
	return &Result{Tag: "STOP JOB"}, nil
}

func (e *supervisor) startJob(ctx context.Context, n *parse.StartJob) (*Result, error) {
	def, err := e.viewDef(n.View)
	if err != nil {
		return nil, err
	}
	if def, err = e.jobOpts.startJobOptions(n, def); err != nil {
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
func (e *supervisor) persistOptionLocked(def *storage.TableDef, k, v string) error {
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
