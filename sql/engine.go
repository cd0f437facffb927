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
	"github.com/streamdb/streamdb/exec/plan"
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
	// TailCacheBytes bounds the blocks a COPY just wrote that are kept in
	// memory for the jobs reading them next (0: 32 MiB; negative: none).
	TailCacheBytes int64
	Logger         *slog.Logger
	// Superusers are created, besides BootstrapRole, as superusers that may
	// log in when the data directory has no roles yet (the OS user, as
	// initdb does).
	Superusers []string
	// Password, if set, becomes BootstrapRole's password (--password).
	Password string
	// FS is the filesystem of the database (nil: the OS); tests pass
	// Pebble's crash-simulating or fault-injecting filesystems.
	FS storage.FS
	// Memory is the split of --memory-limit (plan.SplitMemoryLimit; zero:
	// no process limit): it sizes Pebble's cache and memtables, the batch
	// queries' pool when QueryMemoryBytes is 0, job.memory_limit = 'auto',
	// and admits new work (views, COPY, batch queries) against the live heap.
	Memory plan.MemorySplit
	// QueryMemoryBytes caps the memory of all running batch queries together
	// (0: the config file's query.memory_mb, else a quarter of physical memory).
	QueryMemoryBytes int64
	// Storage is where checkpoint.storage and savepoint.storage may point
	// and how S3 is reached (locations.go).
	Storage StorageConfig
	// Cluster, if set, puts the engine in cluster mode (cluster.go).
	Cluster Cluster
	// StreamLog, with Cluster, keeps streams in Kafka (clusterstream.go).
	StreamLog *StreamLogConfig
}

// Engine is one database. It is safe for concurrent use by many sessions.
type Engine struct {
	// The read-side facets (engineparts.go), embedded so their methods
	// are the engine's.
	catalogSource
	sysTables
	streamJobs
	epochCut
	engineStatus

	// sup runs jobs, restarts, checkpoints, savepoints, restore and
	// retention (supervisor.go).
	sup *supervisor
	// conf holds the database settings and storage locations
	// (settingsstore.go).
	conf *settingsStore
	// roleStore runs the role statements (roles.go), sinkMgr the sinks
	// (sinks.go).
	roleStore *roleStore
	sinkMgr   *sinkManager
	// jobOpts applies per-view job options (statebackend.go,
	// statettl.go), snapStore opens AS OF snapshots (snapshots.go).
	jobOpts    *jobOptions
	snapStore  *snapshotStore
	db         *storage.DB
	log        *slog.Logger
	coord      *checkpoint.Coordinator
	cancel     context.CancelFunc
	done       chan struct{}
	supervised chan struct{} // closed when supervise has returned
	par        int
	cache      int64         // StateCacheBytes per job
	goHeap     int64         // the Go heap's share of --memory-limit (0: no limit)
	queryMem   *plan.MemPool // the memory of running batch queries (query.go)
	rr         atomic.Uint32 // round-robin partition choice for inserts
	streams    atomic.Uint64 // change streams started
	sinks      sinkSet       // CREATE SINK (sinks.go)
	cluster    Cluster       // nil on a single node (cluster.go)
	streamLog  *streamLog    // nil unless cluster mode with Kafka (clusterstream.go)
	ckShare    clusterCkpt   // shared checkpoints in cluster mode (clustercheckpoint.go)
	// clusterStat counts forwarded reads for /metrics (clustermetrics.go).
	clusterStat clusterCounters
	keyed       keyedLocks // writes to tables with a primary key (handle_dml.go)
	cdc         cdcIngest  // PostgreSQL CDC sources' ingesters (cdc.go)

	snaps         openSnaps
	restartEvents restartLog // job failures and restarts (monitor.go)
	transient     changeStreams
	exports       exportState
	remotes       remoteStores // checkpoint storage locations (locations.go)
	lastExport    time.Time    // of a retained checkpoint; used by the coordinator's goroutine only
	lastTruncate  time.Time    // of the logs (retention.go); likewise

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
		roles    map[string]*storage.RoleDef
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
	backfill *backfill // until the new view is current (backfill.go)
	// standby: cluster mode, another node runs this view's job (clusterjobs.go).
	standby bool
}

// Open opens the database in cfg.DataDir, restarts every view's job from its
// last committed epoch and starts the checkpoint coordinator.
func Open(cfg Config) (*Engine, error) {
	// Pebble's block cache and memtables: the --memory-limit split's shares,
	// else sized from the state cache.
	blockCache, memTable := cfg.Memory.BlockCache, cfg.Memory.MemTable
	if cfg.Memory.Limit == 0 {
		blockCache, memTable = plan.PebbleFromStateCache(cfg.StateCacheBytes)
	}
	db, err := storage.Open(cfg.DataDir, storage.Options{FS: cfg.FS, Logger: cfg.Logger, TailCacheBytes: cfg.TailCacheBytes,
		CacheBytes: blockCache, MemTableBytes: memTable})
	if err != nil {
		return nil, err
	}
	e := &Engine{db: db, log: cfg.Logger, par: cfg.Parallelism, cache: cfg.StateCacheBytes, done: make(chan struct{}),
		lastExport: time.Now(), cluster: cfg.Cluster}
	if cfg.Cluster != nil {
		e.streamLog = newStreamLog(cfg.StreamLog)
	} // the export gap counts from the start (periodicExportGap)
	e.sup = &supervisor{Engine: e, savepointStore: savepointStore{e}}
	e.conf = &settingsStore{e}
	e.roleStore = &roleStore{e}
	e.sinkMgr = &sinkManager{e}
	e.jobOpts = &jobOptions{e}
	e.snapStore = &snapshotStore{e}
	e.catalogSource = catalogSource{e}
	e.sysTables = sysTables{e}
	e.cdc.e = e
	e.streamJobs = streamJobs{e}
	e.epochCut = epochCut{e}
	e.engineStatus = engineStatus{e}
	e.remotes.cfg = cfg.Storage
	if e.log == nil {
		e.log = slog.Default()
	}
	fenceStreamLog(e) // cluster mode: abort what a killed predecessor left open
	if e.par <= 0 {
		e.par = runtime.NumCPU()
	}
	e.mu.tables = map[string]*storage.TableDef{}
	e.mu.jobs = map[string]*jobEntry{}
	e.mu.consumed = map[string]bool{}
	e.mu.fileConf = map[string]string{}
	qm := cfg.QueryMemoryBytes
	if _, inFile := cfg.Settings[queryMemoryKey]; qm == 0 && !inFile && cfg.Memory.Limit > 0 {
		qm = cfg.Memory.QueryMemory
	}
	memCap, err := queryMemoryCap(qm, cfg.Settings)
	if err != nil {
		db.Close()
		return nil, err
	}
	e.queryMem = plan.NewMemPool(memCap)
	if cfg.Memory.Limit > 0 {
		e.goHeap = cfg.Memory.GoHeap
		e.queryMem.SetProcess(plan.NewProcessMemory(cfg.Memory))
	}
	for k, v := range cfg.Settings {
		k = strings.ToLower(k)
		if k == queryMemoryKey {
			continue // a server option, not a database setting
		}
		if _, err := validateSetting(k, v); err != nil {
			db.Close()
			return nil, err
		}
		e.mu.fileConf[k] = v
	}
	if e.mu.settings, err = db.Catalog().LoadSettings(); err != nil {
		db.Close()
		return nil, err
	}
	// A checkpoint.dir stored by an older build (which let SQL choose any
	// path) is dropped unless the configuration allows it.
	if d, ok := e.mu.settings["checkpoint.dir"]; ok {
		if err := e.conf.checkLocationLocked(d); err != nil {
			e.log.Warn("ignoring the stored checkpoint.dir: not a configured storage location", "dir", d)
			if err := db.Catalog().PutSetting("checkpoint.dir", "", true); err != nil {
				db.Close()
				return nil, err
			}
			delete(e.mu.settings, "checkpoint.dir")
		}
	}
	for _, k := range []string{"checkpoint.storage", "savepoint.storage"} {
		if d, ok := e.mu.settings[k]; ok {
			if err := e.conf.checkStorageLocked(k, d); err != nil {
				e.log.Warn("ignoring the stored "+k+": not an allowed storage location", "url", d)
				if err := db.Catalog().PutSetting(k, "", true); err != nil {
					db.Close()
					return nil, err
				}
				delete(e.mu.settings, k)
			}
		}
	}
	defs, err := db.Catalog().Load()
	if err != nil {
		db.Close()
		return nil, err
	}
	for _, t := range defs {
		e.mu.tables[t.Name] = t
	}
	if err := loadComposites(db); err != nil {
		db.Close()
		return nil, err
	}
	if err := e.roleStore.loadRolesLocked(cfg.Superusers, cfg.Password); err != nil {
		db.Close()
		return nil, err
	}
	if err := e.sinkMgr.loadSinks(); err != nil {
		db.Close()
		return nil, err
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
	e.coord, err = checkpoint.New(db, (*registry)(e), e.conf.checkpointConfig)
	if err != nil {
		db.Close()
		return nil, err
	}
	e.coord.OnCompleted(e.sup.afterCheckpoint)
	e.coord.OnRetained(e.conf.retainedCheckpoints)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() {
		defer close(e.done)
		e.coord.Run(ctx)
	}()
	e.sinkMgr.startSinks()
	e.cdc.startAll(e.mu.tables)
	e.supervised = make(chan struct{})
	go func() {
		defer close(e.supervised)
		e.sup.supervise(ctx)
	}()
	return e, nil
}

// Close stops the coordinator and every job (taking no new checkpoint) and
// closes the database cleanly.
func (e *Engine) Close() error {
	e.cdc.stopAll()
	e.sinkMgr.stopSinks()
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
	e.snapStore.closeAllSnapshots()
	if e.streamLog != nil {
		e.streamLog.log.Close() // its idle transactional producers
	}
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

func (r *registry) Behind() []uint64 {
	e := (*Engine)(r)
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []uint64
	for n, j := range e.mu.jobs {
		if j.state == exec.JobRestarting || j.state == exec.JobFailed {
			if def := e.mu.tables[n]; def != nil {
				out = append(out, def.ID)
			}
		}
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
	if !ok && (strings.HasPrefix(name, "streamdb_") || isPgTableName(name)) {
		return e.systemTable(name)
	}
	return t, ok
}
