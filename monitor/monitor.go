// Package monitor serves streamdb's HTTP endpoints beside the PostgreSQL
// listener: Prometheus metrics (/metrics), an optional /debug/pprof, and a
// live dashboard of the jobs (/, with its data at /api/state), embedded in
// the binary and working offline.
//
// It reads the engine through sql's read-only accessors (sql/monitor.go)
// and counts statements through wire.Metrics; nothing below sql is
// reached directly except Pebble's metrics type. A sampler keeps one sample
// of every job per second for the last ten minutes, which the dashboard
// plots; see docs/reference/monitoring.md for what is served.
package monitor

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/wire"
)

//go:embed static
var static embed.FS

// Options configures a Monitor.
type Options struct {
	// Pprof serves /debug/pprof (off by default: it exposes stacks and
	// lets a client run the CPU profiler).
	Pprof bool
	// SampleEvery is the sampling period of the dashboard's plots (0: 1 s);
	// Samples is how many are kept (0: 600, ten minutes at 1 s).
	SampleEvery time.Duration
	Samples     int
	Logger      *slog.Logger
}

// Monitor collects metrics and serves them.
type Monitor struct {
	eng  *sql.Engine
	opts Options
	m    *metrics
	ring ring

	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{}
}

var _ wire.Metrics = (*metrics)(nil)

// New makes a Monitor of eng and starts its sampler; Close stops it.
func New(eng *sql.Engine, o Options) *Monitor {
	if o.SampleEvery <= 0 {
		o.SampleEvery = time.Second
	}
	if o.Samples <= 0 {
		o.Samples = 600
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mon := &Monitor{eng: eng, opts: o, m: newMetrics(eng), done: make(chan struct{})}
	mon.ring.init(o.Samples)
	mon.srv = &http.Server{Handler: mon.Handler(), ReadHeaderTimeout: 10 * time.Second}
	eng.OnRound(mon.m.round)
	ctx, cancel := context.WithCancel(context.Background())
	mon.cancel = cancel
	go mon.sample(ctx)
	return mon
}

// WireMetrics is the hook to set in wire.Config.Metrics.
func (mon *Monitor) WireMetrics() wire.Metrics { return mon.m }

// SetConnections sets how the open connections are counted (wire.Server.Connections).
func (mon *Monitor) SetConnections(fn func() int) { mon.m.conns = fn }

// Handler serves /metrics, /api/state, the dashboard and, if enabled, /debug/pprof/.
func (mon *Monitor) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(mon.m.reg, promhttp.HandlerOpts{ErrorLog: slogAdapter{mon.opts.Logger}}))
	mux.HandleFunc("GET /api/state", mon.serveState)
	sub, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(sub))
	if mon.opts.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Serve serves Handler on l until Close; call it once.
func (mon *Monitor) Serve(l net.Listener) error {
	err := mon.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the sampler and the HTTP server.
func (mon *Monitor) Close() error {
	mon.cancel()
	<-mon.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return mon.srv.Shutdown(ctx)
}

// slogAdapter makes promhttp's error log a slog logger.
type slogAdapter struct{ log *slog.Logger }

func (a slogAdapter) Println(v ...any) { a.log.Warn("metrics", "err", v) }

// sample takes one sample per period until ctx ends.
func (mon *Monitor) sample(ctx context.Context) {
	defer close(mon.done)
	t := time.NewTicker(mon.opts.SampleEvery)
	defer t.Stop()
	mon.ring.add(time.Now(), mon.eng.Jobs())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			mon.ring.add(now, mon.eng.Jobs())
		}
	}
}

// Sample is one job's figures at one time. Rates are per second over the
// last rateWindow samples.
type Sample struct {
	T          int64   `json:"t"` // Unix milliseconds
	RowsIn     int64   `json:"rows_in"`
	RowsOut    int64   `json:"rows_out"`
	InRate     float64 `json:"in_rate"`
	OutRate    float64 `json:"out_rate"`
	Lag        int64   `json:"lag"`
	StateBytes int64   `json:"state_bytes"`
	// Watermark is the job's event-time watermark (Unix milliseconds) and
	// WatermarkLag the sample's time minus it, in seconds: how far event
	// time trails the wall clock. Both absent while the job has none.
	Watermark    int64    `json:"watermark,omitempty"`
	WatermarkLag *float64 `json:"wm_lag_s,omitempty"`
	LateRows     int64    `json:"late_rows"`
}

// rateWindow is how many sample periods a rate is averaged over.
const rateWindow = 5

// ring keeps each job's last n samples.
type ring struct {
	mu   sync.Mutex
	n    int
	jobs map[string][]Sample
	last time.Time
}

func (r *ring) init(n int) {
	r.n = n
	r.jobs = map[string][]Sample{}
}

func (r *ring) add(now time.Time, jobs []sql.JobStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		seen[j.Name] = true
		s := Sample{T: now.UnixMilli(), RowsIn: j.RowsIn, RowsOut: j.RowsOut, Lag: j.Lag, StateBytes: j.StateBytes, LateRows: j.LateRows}
		if j.Watermark != nil {
			s.Watermark = j.Watermark.UnixMilli()
			lag := now.Sub(*j.Watermark).Seconds()
			s.WatermarkLag = &lag
		}
		old := r.jobs[j.Name]
		if k := len(old); k > 0 {
			// Rates over up to rateWindow samples: inserts come in bursts, and a
			// per-second rate would saw between zero and the burst.
			prev := old[max(0, k-rateWindow)]
			if dt := float64(s.T-prev.T) / 1000; dt > 0 {
				// A restarted job counts from zero again: no negative rate.
				s.InRate = max(0, float64(s.RowsIn-prev.RowsIn)/dt)
				s.OutRate = max(0, float64(s.RowsOut-prev.RowsOut)/dt)
			}
		}
		if len(old) >= r.n {
			old = append(old[:0], old[len(old)-r.n+1:]...)
		}
		r.jobs[j.Name] = append(old, s)
	}
	for name := range r.jobs {
		if !seen[name] { // dropped
			delete(r.jobs, name)
		}
	}
	r.last = now
}

func (r *ring) copy() map[string][]Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]Sample, len(r.jobs))
	for k, v := range r.jobs {
		out[k] = append([]Sample(nil), v...)
	}
	return out
}

// state is what /api/state returns: everything the dashboard shows.
type state struct {
	Now         int64                 `json:"now"` // Unix milliseconds
	Connections int                   `json:"connections"`
	Jobs        []sql.JobStatus       `json:"jobs"`
	Samples     map[string][]Sample   `json:"samples"`
	Checkpoints []checkpointPoint     `json:"checkpoints"`
	Savepoints  []sql.SavepointInfo   `json:"savepoints"`
	Restarts    []sql.RestartEvent    `json:"restarts"`
	Storage     map[string]float64    `json:"storage"`
	SampleEvery float64               `json:"sample_every_s"`
	Queries     map[string]queryCount `json:"queries"`
}

type checkpointPoint struct {
	ID         uint64   `json:"id"`
	Status     string   `json:"status"`
	Trigger    string   `json:"trigger"`
	StartedAt  int64    `json:"started_at"` // Unix milliseconds
	DurationMS float64  `json:"duration_ms"`
	Size       int64    `json:"size"`
	StateSize  int64    `json:"state_size"`
	Jobs       []string `json:"jobs"`
	Error      string   `json:"error,omitempty"`
}

type queryCount struct {
	OK     float64 `json:"ok"`
	Failed float64 `json:"failed"`
}

// maxCheckpoints bounds the checkpoints /api/state returns (the newest).
const maxCheckpoints = 200

func (mon *Monitor) serveState(w http.ResponseWriter, _ *http.Request) {
	st := state{Now: time.Now().UnixMilli(), Jobs: mon.eng.Jobs(), Samples: mon.ring.copy(),
		Savepoints: mon.eng.Savepoints(), Restarts: mon.eng.RestartEvents(),
		SampleEvery: mon.opts.SampleEvery.Seconds(), Queries: mon.m.queryCounts()}
	if mon.m.conns != nil {
		st.Connections = mon.m.conns()
	}
	hist := mon.eng.Checkpoints()
	if len(hist) > maxCheckpoints {
		hist = hist[len(hist)-maxCheckpoints:]
	}
	for _, r := range hist {
		st.Checkpoints = append(st.Checkpoints, checkpointPoint{ID: r.ID, Status: string(r.Status), Trigger: r.Trigger,
			StartedAt: r.StartedAt.UnixMilli(), DurationMS: float64(r.Duration.Microseconds()) / 1000, Size: r.Size,
			StateSize: r.StateSize, Jobs: r.Jobs, Error: r.Error})
	}
	pm := mon.eng.PebbleMetrics()
	st.Storage = map[string]float64{"disk_bytes": float64(pm.DiskSpaceUsage()), "l0_files": float64(pm.Levels[0].TablesCount),
		"l0_sublevels": float64(pm.Levels[0].Sublevels), "memtables": float64(pm.MemTable.Count),
		"compactions": float64(pm.Compact.Count), "compaction_debt_bytes": float64(pm.Compact.EstimatedDebt)}
	if st.Jobs == nil {
		st.Jobs = []sql.JobStatus{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(st)
}
