package sql

import (
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/storage"
)

// Read-only views of the engine for monitor/ (/metrics and the dashboard):
// copies taken under the engine's locks, never references into it.

// JobStatus is one job as SHOW JOBS sees it, plus its operator graph.
type JobStatus struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // "view" or "change stream"
	State string `json:"state"`
	SQL   string `json:"sql,omitempty"`
	// Restarts counts the job's restarts since the server started.
	Restarts   int    `json:"restarts"`
	RowsIn     int64  `json:"rows_in"`
	RowsOut    int64  `json:"rows_out"`
	Lag        int64  `json:"lag"`
	StateBytes int64  `json:"state_bytes"`
	Evicted    int64  `json:"evicted"`
	Epoch      uint64 `json:"epoch"` // the last epoch the job committed
	// Watermark is the job's event-time watermark (nil: none yet);
	// LateRows counts the rows its windows dropped as late.
	Watermark *time.Time `json:"watermark,omitempty"`
	LateRows  int64      `json:"late_rows"`
	// LostRows counts source records deleted by their system (Kafka
	// retention) before the job read them.
	LostRows int64 `json:"lost_rows"`
	// ErrorRows counts the rows whose expressions failed, recorded in
	// streamdb_job_errors under job.error_policy = 'skip'.
	ErrorRows int64 `json:"error_rows"`
	// LastCheckpoint is the last completed checkpoint covering the job (0: none).
	LastCheckpoint uint64              `json:"last_checkpoint"`
	NextRestart    *time.Time          `json:"next_restart,omitempty"`
	Strategy       string              `json:"strategy"`
	LastError      string              `json:"last_error,omitempty"`
	Graph          []exec.OperatorInfo `json:"graph"`
}

// RestartEvent is a job failure and what the supervisor did about it.
type RestartEvent struct {
	Job   string    `json:"job"`
	At    time.Time `json:"at"`
	Cause string    `json:"cause"`
	// Action is "restart in <delay>", "restarted", or "gave up: <reason>".
	Action string `json:"action"`
}

// SavepointInfo is one savepoint, as SHOW SAVEPOINTS lists it.
type SavepointInfo struct {
	Name         string    `json:"name"`
	Views        []string  `json:"views"`
	CheckpointID uint64    `json:"checkpoint_id"`
	CreatedAt    time.Time `json:"created_at"`
	Size         int64     `json:"size"`
}

// restartLog keeps the last maxRestartEvents job failures.
type restartLog struct {
	mu     sync.Mutex
	events []RestartEvent
}

const maxRestartEvents = 200

func (l *restartLog) add(ev RestartEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	if len(l.events) > maxRestartEvents {
		l.events = append(l.events[:0], l.events[len(l.events)-maxRestartEvents:]...)
	}
}

// RestartEvents returns the job failures since the server started, oldest first.
func (e engineStatus) RestartEvents() []RestartEvent {
	e.restartEvents.mu.Lock()
	defer e.restartEvents.mu.Unlock()
	return append([]RestartEvent(nil), e.restartEvents.events...)
}

// Jobs returns every job: the views' jobs by name, then change streams.
func (e engineStatus) Jobs() []JobStatus {
	lastCP := map[string]uint64{}
	for _, r := range e.coord.History() {
		if r.Status == checkpoint.Completed {
			for _, j := range r.Jobs {
				lastCP[j] = r.ID
			}
		}
	}
	fill := func(s *JobStatus, j *exec.Job) {
		s.RowsIn, s.RowsOut, s.Lag = j.RowsIn.Load(), j.RowsOut.Load(), j.Lag()
		s.StateBytes, s.Evicted, s.Epoch = j.StateBytes(), j.Evicted.Load(), j.CommittedEpoch()
		s.Graph = j.Graph()
		s.LateRows = j.LateRows()
		s.LostRows = j.LostRows.Load()
		if w := j.Watermark(); w != exec.NoWatermark {
			t := time.UnixMicro(w).UTC()
			s.Watermark = &t
		}
	}
	var out []JobStatus
	errRows, _ := e.db.Errors().JobErrorCounts() // nil on a read error: no counts
	e.mu.Lock()
	names := make([]string, 0, len(e.mu.jobs))
	for n := range e.mu.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		je := e.mu.jobs[n]
		s := JobStatus{Name: n, Kind: "view", State: string(je.state), Restarts: je.restarts,
			LastCheckpoint: lastCP[n], LastError: je.lastErr}
		if def := e.mu.tables[n]; def != nil {
			s.SQL, s.ErrorRows = def.SQL, errRows[def.ID]
		}
		if je.job != nil {
			fill(&s, je.job)
		}
		if je.state == exec.JobRestarting {
			next := je.next
			s.NextRestart = &next
		}
		if cfg, err := e.sup.restartConfigLocked(e.mu.tables[n]); err == nil {
			s.Strategy = cfg.String()
		}
		out = append(out, s)
	}
	e.mu.Unlock()
	streams := e.transientJobs()
	sort.Slice(streams, func(i, k int) bool { return streams[i].Name() < streams[k].Name() })
	for _, j := range streams {
		s := JobStatus{Name: j.Name(), Kind: "change stream", State: string(exec.JobRunning), Strategy: "none (change stream)"}
		fill(&s, j)
		out = append(out, s)
	}
	return out
}

// Checkpoints returns the checkpoint records, oldest first.
func (e engineStatus) Checkpoints() []checkpoint.Record { return e.coord.History() }

// Savepoints lists the savepoints, oldest first.
func (e engineStatus) Savepoints() []SavepointInfo {
	var out []SavepointInfo
	for _, m := range checkpoint.List(filepath.Join(e.snapStore.snapshotRoot(), "savepoints")) {
		sp := SavepointInfo{Name: m.Name, CheckpointID: m.CheckpointID, CreatedAt: m.CreatedAt, Size: m.Size()}
		for _, j := range m.Jobs {
			sp.Views = append(sp.Views, j.Name)
		}
		out = append(out, sp)
	}
	return out
}

// OnRound makes fn see every barrier round as it ends (checkpoint.Coordinator.OnRound).
func (e engineStatus) OnRound(fn func(checkpoint.Record)) { e.coord.OnRound(fn) }

// PebbleMetrics returns the storage engine's metrics.
func (e engineStatus) PebbleMetrics() *storage.EngineMetrics { return e.db.EngineMetrics() }

// TailCacheStats reports the cache of just-copied blocks (storage.TailStats).
func (e engineStatus) TailCacheStats() storage.TailStats { return e.db.Log().TailStats() }
