// Package sql is streamdb's SQL engine: it parses statements (sql/parse),
// binds them (sql/bind), plans them (planner/) and runs them (exec/), and
// owns the catalog, the running jobs and the database settings. wire/ talks
// to it through the Stmt/Result types of api.go; nothing here knows the
// wire protocol.
package sql

import (
	"context"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Config configures an Engine.
type Config struct {
	DataDir string
	// Settings are database settings from a config file; stored settings
	// (made with SET) override them.
	Settings    map[string]string
	Parallelism int // aggregate instances per job (0: the core count)
	// StateCacheBytes caps each job's in-memory aggregate state (0: unbounded).
	StateCacheBytes int64
	Logger          *slog.Logger
	// FS is the filesystem of the database (nil: the OS); tests pass
	// Pebble's crash-simulating or fault-injecting filesystems.
	FS vfs.FS
}

// Engine is one database. It is safe for concurrent use by many sessions.
type Engine struct {
	db         *storage.DB
	log        *slog.Logger
	coord      *checkpoint.Coordinator
	cancel     context.CancelFunc
	done       chan struct{}
	supervised chan struct{} // closed when supervise has returned
	par        int
	cache      int64         // StateCacheBytes per job
	rr         atomic.Uint32 // round-robin partition choice for inserts
	streams    atomic.Uint64 // change streams started

	snaps        openSnaps
	transient    changeStreams
	exports      exportState
	lastExport   time.Time // of a retained checkpoint; used by the coordinator's goroutine only
	lastTruncate time.Time // of the logs (retention.go); likewise

	// roundMu is held by the coordinator for a whole barrier round, and by
	// DDL that starts or stops jobs, so the set of jobs is fixed in a round.
	roundMu sync.Mutex

	mu struct {
		sync.Mutex
		tables map[string]*storage.TableDef
		// consumed lists views read by a change stream since startup; their
		// jobs write changelogs (views read by views are known from the catalog).
		consumed map[string]bool
		jobs     map[string]*jobEntry
		settings map[string]string // stored database settings
		fileConf map[string]string
	}
}

type jobEntry struct {
	job      *exec.Job
	state    exec.JobState
	restarts int
	lastErr  string
	backoff  *checkpoint.Backoff // made at the first failure
	next     time.Time           // when a RESTARTING job starts again
	started  time.Time
}

// Open opens the database in cfg.DataDir, restarts every view's job from its
// last committed epoch and starts the checkpoint coordinator.
func Open(cfg Config) (*Engine, error) {
	db, err := storage.Open(cfg.DataDir, storage.Options{FS: cfg.FS})
	if err != nil {
		return nil, err
	}
	e := &Engine{db: db, log: cfg.Logger, par: cfg.Parallelism, cache: cfg.StateCacheBytes, done: make(chan struct{}),
		lastExport: time.Now()} // the export gap counts from the start (periodicExportGap)
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.par <= 0 {
		e.par = runtime.NumCPU()
	}
	e.mu.tables = map[string]*storage.TableDef{}
	e.mu.jobs = map[string]*jobEntry{}
	e.mu.consumed = map[string]bool{}
	e.mu.fileConf = map[string]string{}
	for k, v := range cfg.Settings {
		k = strings.ToLower(k)
		if _, err := validateSetting(k, v); err != nil {
			db.Close()
			return nil, err
		}
		e.mu.fileConf[k] = v
	}
	if e.mu.settings, err = db.LoadSettings(); err != nil {
		db.Close()
		return nil, err
	}
	defs, err := db.LoadCatalog()
	if err != nil {
		db.Close()
		return nil, err
	}
	for _, t := range defs {
		e.mu.tables[t.Name] = t
	}
	for _, t := range defs {
		if t.Kind == storage.KindView && t.Options["stopped"] == "true" {
			e.mu.jobs[t.Name] = &jobEntry{state: exec.JobStopped}
			continue
		}
		if t.Kind == storage.KindView {
			// Started in the background (supervise), so the server serves
			// reads of the views' committed rows while state loads.
			e.mu.jobs[t.Name] = &jobEntry{state: exec.JobStarting}
		}
	}
	e.coord, err = checkpoint.New(db, (*registry)(e), e.checkpointConfig)
	if err != nil {
		db.Close()
		return nil, err
	}
	e.coord.OnCompleted(e.afterCheckpoint)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() {
		defer close(e.done)
		e.coord.Run(ctx)
	}()
	e.supervised = make(chan struct{})
	go func() {
		defer close(e.supervised)
		e.supervise(ctx)
	}()
	return e, nil
}

// Close stops the coordinator and every job (taking no new checkpoint) and
// closes the database cleanly.
func (e *Engine) Close() error {
	e.cancel()
	<-e.done
	<-e.supervised
	e.exports.wg.Wait()
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	for _, j := range e.mu.jobs {
		if j.job != nil && j.state != exec.JobStopped {
			j.job.Stop()
		}
	}
	e.mu.Unlock()
	e.closeAllSnapshots()
	return e.db.Close()
}

// registry adapts the engine to checkpoint.Registry.
type registry Engine

func (r *registry) Lock()   { r.roundMu.Lock() }
func (r *registry) Unlock() { r.roundMu.Unlock() }
func (r *registry) Tasks() []checkpoint.Task {
	e := (*Engine)(r)
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.mu.jobs))
	for n, j := range e.mu.jobs {
		if j.job != nil && j.state == exec.JobRunning {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]checkpoint.Task, len(names))
	for i, n := range names {
		out[i] = e.mu.jobs[n].job
	}
	return out
}

func (r *registry) FailAll(err error) {
	e := (*Engine)(r)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, j := range e.mu.jobs {
		if j.job != nil && j.state == exec.JobRunning {
			j.job.Fail(err)
		}
	}
}

// Table implements bind.Catalog.
func (e *Engine) Table(name string) (*storage.TableDef, bool) {
	e.mu.Lock()
	t, ok := e.mu.tables[name]
	e.mu.Unlock()
	if !ok && strings.HasPrefix(name, "streamdb_") {
		return e.systemTable(name)
	}
	return t, ok
}

// supervise applies each failed job's restart strategy: it schedules a
// restart from the last committed epoch (RESTARTING) or gives up (FAILED).
func (e *Engine) supervise(ctx context.Context) {
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
func (e *Engine) onFailureLocked(name string, j *jobEntry, now time.Time) {
	err := j.job.Err()
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
		j.lastErr += "; " + reason
		e.log.Error("job failed", "view", name, "err", j.lastErr)
		return
	}
	j.state, j.next = exec.JobRestarting, now.Add(delay)
	e.log.Warn("job failed; restarting from its last committed epoch", "view", name, "in", delay, "err", j.lastErr)
}

// restartConfigLocked is a view's restart strategy: its own restart.*
// options, else the database settings, else the default (fixed-delay with
// unbounded attempts when checkpoints are on, none when they are off).
func (e *Engine) restartConfigLocked(def *storage.TableDef) (checkpoint.RestartConfig, error) {
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
	if _, set := get("strategy"); !set && e.settingLocked("checkpoint.interval") == "off" {
		return checkpoint.DefaultRestartConfig(false), nil
	}
	return checkpoint.ParseRestartConfig(get)
}

// restartJob starts a RESTARTING job again from its last committed state.
func (e *Engine) restartJob(name string) {
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
		return
	}
	je.job, je.state, je.started = j, exec.JobRunning, time.Now()
}

// catchUp waits, outside any barrier round, until every running job has
// read its stream up to where the stream ended when catchUp was called.
// CHECKPOINT and CREATE SAVEPOINT call it first, so the round they trigger
// (whose barriers still catch up the last few rows) does not spend a long
// backlog inside checkpoint.timeout.
func (e *Engine) catchUp(ctx context.Context) error {
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
		select {
		case <-ctx.Done():
			return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// startPending starts the jobs of the views found at Open, one by one.
func (e *Engine) startPending(ctx context.Context) {
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

func (e *Engine) starting() bool {
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
func (e *Engine) ensureChangelog(ctx context.Context, view string) error {
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
