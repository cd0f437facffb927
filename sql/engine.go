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
	Logger      *slog.Logger
}

// Engine is one database. It is safe for concurrent use by many sessions.
type Engine struct {
	db     *storage.DB
	log    *slog.Logger
	coord  *checkpoint.Coordinator
	cancel context.CancelFunc
	done   chan struct{}
	par    int
	rr     atomic.Uint32 // round-robin partition choice for inserts

	snaps openSnaps

	// roundMu is held by the coordinator for a whole barrier round, and by
	// DDL that starts or stops jobs, so the set of jobs is fixed in a round.
	roundMu sync.Mutex

	mu struct {
		sync.Mutex
		tables   map[string]*storage.TableDef
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
}

// Open opens the database in cfg.DataDir, restarts every view's job from its
// last committed epoch and starts the checkpoint coordinator.
func Open(cfg Config) (*Engine, error) {
	db, err := storage.Open(cfg.DataDir, storage.Options{})
	if err != nil {
		return nil, err
	}
	e := &Engine{db: db, log: cfg.Logger, par: cfg.Parallelism, done: make(chan struct{})}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.par <= 0 {
		e.par = runtime.NumCPU()
	}
	e.mu.tables = map[string]*storage.TableDef{}
	e.mu.jobs = map[string]*jobEntry{}
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
			if err := e.startViewJob(t); err != nil {
				e.log.Error("view job did not start", "view", t.Name, "err", err)
				e.mu.jobs[t.Name] = &jobEntry{state: exec.JobFailed, lastErr: err.Error()}
			}
		}
	}
	e.coord, err = checkpoint.New(db, (*registry)(e), e.checkpointConfig)
	if err != nil {
		db.Close()
		return nil, err
	}
	e.coord.OnCompleted(e.exportCheckpoint)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() {
		defer close(e.done)
		e.coord.Run(ctx)
	}()
	go e.supervise(ctx)
	return e, nil
}

// Close stops the coordinator and every job (taking no new checkpoint) and
// closes the database cleanly.
func (e *Engine) Close() error {
	e.cancel()
	<-e.done
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	for _, j := range e.mu.jobs {
		if j.job != nil {
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

// supervise restarts failed jobs from their last committed epoch
// (fixed-delay with unbounded attempts, the default with checkpoints on).
func (e *Engine) supervise(ctx context.Context) {
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
		e.roundMu.Lock()
		e.mu.Lock()
		var failed []string
		for n, j := range e.mu.jobs {
			if j.job == nil || j.state != exec.JobRunning {
				continue
			}
			select {
			case <-j.job.Failed():
				j.lastErr = sqlerr.As(j.job.Err()).Code + ": " + j.job.Err().Error()
				failed = append(failed, n)
			default:
			}
		}
		e.mu.Unlock()
		for _, n := range failed {
			e.restartJob(n)
		}
		e.roundMu.Unlock()
	}
}

// restartJob replaces a failed job with a new one started from the last
// committed state. Called with roundMu held.
func (e *Engine) restartJob(name string) {
	e.mu.Lock()
	je := e.mu.jobs[name]
	def := e.mu.tables[name]
	e.mu.Unlock()
	if je == nil || def == nil {
		return
	}
	je.job.Stop()
	e.log.Warn("job failed; restarting from its last committed epoch", "view", name, "err", je.lastErr)
	plan, err := e.planView(def)
	var j *exec.Job
	if err == nil {
		j, err = exec.StartJob(e.db, e.jobSpec(def, plan, e.setting("checkpoint.mode") == "at_least_once"))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	je.restarts++
	if err != nil {
		je.state, je.lastErr = exec.JobFailed, err.Error()
		return
	}
	je.job, je.state = j, exec.JobRunning
}
