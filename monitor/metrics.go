package monitor

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/sql"
)

// Metric names: docs/reference/monitoring.md lists them all.
var (
	clusterCoordinator    = prometheus.NewDesc("streamdb_cluster_coordinator", "1 while this node is the cluster's coordinator, else 0 (cluster mode only).", []string{"node"}, nil)
	clusterOwnedJobs      = prometheus.NewDesc("streamdb_cluster_owned_jobs", "Jobs the cluster's assignment gives this node (cluster mode only).", []string{"node"}, nil)
	clusterForwardedReads = prometheus.NewDesc("streamdb_cluster_forwarded_reads_total", "Reads this node forwarded to the node that runs the views' jobs (cluster mode only).", []string{"node"}, nil)
	clusterForwardedBytes = prometheus.NewDesc("streamdb_cluster_forwarded_bytes_total", "Bytes of the Arrow batches this node relayed back from forwarded reads (cluster mode only).", []string{"node"}, nil)
	exchangeBytes         = prometheus.NewDesc("streamdb_exchange_bytes_total", "Bytes of the Arrow Flight exchange messages (batches, barriers) this node sent or received between operator instances (cluster mode only).", []string{"node", "direction"}, nil)
	exchangeBackpressure  = prometheus.NewDesc("streamdb_exchange_backpressure_seconds_total", "Time this node's exchange senders waited for credit from a slower receiver (cluster mode only).", []string{"node"}, nil)
	jobRowsIn             = prometheus.NewDesc("streamdb_job_rows_in_total", "Rows the job has read from its sources since it (re)started.", []string{"job", "kind"}, nil)
	jobRowsOut            = prometheus.NewDesc("streamdb_job_rows_out_total", "Change rows the job has delivered to its sink since it (re)started.", []string{"job", "kind"}, nil)
	jobLagRows            = prometheus.NewDesc("streamdb_job_lag_rows", "Rows of the job's sources it has not read yet.", []string{"job", "kind"}, nil)
	jobStateBytes         = prometheus.NewDesc("streamdb_job_state_bytes", "Estimated bytes of the job's operator state in memory.", []string{"job", "kind"}, nil)
	jobWatermark          = prometheus.NewDesc("streamdb_job_watermark_seconds", "The job's event-time watermark, Unix seconds (no series until it has one).", []string{"job"}, nil)
	jobLagSeconds         = prometheus.NewDesc("streamdb_job_lag_seconds", "Event-time lag of the job: wall-clock time minus its watermark (no series until it has one).", []string{"job"}, nil)
	jobLateRows           = prometheus.NewDesc("streamdb_job_late_rows_total", "Rows the job's windows dropped as late (behind the watermark on arrival).", []string{"job", "kind"}, nil)
	jobLostRows           = prometheus.NewDesc("streamdb_job_lost_rows_total", "Source records their system deleted (Kafka retention) before the job read them: rows the view never saw.", []string{"job", "kind"}, nil)
	jobErrorRows          = prometheus.NewDesc("streamdb_job_error_rows", "Rows left out of the view because an expression failed on them, as recorded in streamdb_job_errors (job.error_policy = 'skip'); a group's record goes when its value computes again.", []string{"job", "kind"}, nil)
	jobEvicted            = prometheus.NewDesc("streamdb_job_evicted_groups", "Groups evicted from memory to the state table (as of the last barrier).", []string{"job", "kind"}, nil)
	jobEpoch              = prometheus.NewDesc("streamdb_job_committed_epoch", "The last epoch the job committed.", []string{"job", "kind"}, nil)
	jobRestarts           = prometheus.NewDesc("streamdb_job_restarts_total", "Restarts of the job since the server started.", []string{"job", "kind"}, nil)
	jobUp                 = prometheus.NewDesc("streamdb_job_state", "1 for the job's current state (STARTING, RUNNING, RESTARTING, FAILED).", []string{"job", "kind", "state"}, nil)
	jobParallelism        = prometheus.NewDesc("streamdb_job_operator_parallelism", "Instances of each operator of the job's graph.", []string{"job", "operator", "kind"}, nil)
	jobLastCPSize         = prometheus.NewDesc("streamdb_job_last_checkpoint_size_bytes", "Bytes written by the last completed checkpoint that covered the job (all its jobs together).", []string{"job"}, nil)
	connections           = prometheus.NewDesc("streamdb_connections", "Client connections open now.", nil, nil)

	pebbleCompactions     = prometheus.NewDesc("streamdb_pebble_compactions_total", "Compactions Pebble has run since the server started.", nil, nil)
	pebbleCompactionDebt  = prometheus.NewDesc("streamdb_pebble_compaction_debt_bytes", "Pebble's estimate of the bytes compactions must still rewrite.", nil, nil)
	pebbleCompacting      = prometheus.NewDesc("streamdb_pebble_compactions_in_progress", "Compactions running now.", nil, nil)
	pebbleFlushes         = prometheus.NewDesc("streamdb_pebble_flushes_total", "Memtable flushes since the server started.", nil, nil)
	pebbleL0Files         = prometheus.NewDesc("streamdb_pebble_l0_files", "Tables in level 0.", nil, nil)
	pebbleL0Sublevels     = prometheus.NewDesc("streamdb_pebble_l0_sublevels", "Sublevels of level 0 (writes stall at 64).", nil, nil)
	pebbleLevelBytes      = prometheus.NewDesc("streamdb_pebble_level_bytes", "Bytes of the tables in each level.", []string{"level"}, nil)
	pebbleMemtables       = prometheus.NewDesc("streamdb_pebble_memtables", "Memtables (the mutable one and those waiting to flush).", nil, nil)
	pebbleMemtableBytes   = prometheus.NewDesc("streamdb_pebble_memtable_bytes", "Bytes allocated by the memtables.", nil, nil)
	pebbleDiskBytes       = prometheus.NewDesc("streamdb_pebble_disk_usage_bytes", "Bytes of disk used by Pebble (tables, WAL, blob files, manifests).", nil, nil)
	pebbleReadAmp         = prometheus.NewDesc("streamdb_pebble_read_amplification", "Pebble's read amplification (L0 sublevels plus non-empty levels).", nil, nil)
	pebbleWALBytes        = prometheus.NewDesc("streamdb_pebble_wal_bytes", "Bytes of live WAL files.", nil, nil)
	pebbleBlockCacheBytes = prometheus.NewDesc("streamdb_pebble_block_cache_bytes", "Bytes in Pebble's block cache.", nil, nil)

	tailCacheHits   = prometheus.NewDesc("streamdb_tail_cache_hits_total", "Blocks of a COPY that jobs and queries read from the tail cache (--tail-cache-mb).", nil, nil)
	tailCacheMisses = prometheus.NewDesc("streamdb_tail_cache_misses_total", "Blocks of a COPY that jobs and queries loaded from Pebble.", nil, nil)
	tailCacheBytes  = prometheus.NewDesc("streamdb_tail_cache_bytes", "Bytes of COPY blocks the tail cache holds now.", nil, nil)
)

// metrics is the Prometheus side of a Monitor: a registry of the Go
// runtime and process collectors, the counters fed by wire's statement hook
// and the coordinator's rounds, and a collector that reads jobs, Pebble and
// the connection count at each scrape.
type metrics struct {
	reg *prometheus.Registry
	eng *sql.Engine
	// conns reports the open connections (wire.Server.Connections); nil: unknown.
	conns func() int

	queries  *prometheus.CounterVec
	copyRows *prometheus.CounterVec
	epochDur *prometheus.HistogramVec
	cpDur    *prometheus.HistogramVec
	cpSize   prometheus.Histogram
	cps      *prometheus.CounterVec

	mu     sync.Mutex
	lastCP map[string]int64       // job: size of the last completed checkpoint that covered it
	counts map[string]*queryCount // statement type: the dashboard's copy of queries
}

func (m *metrics) count(verb string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts[verb]
	if c == nil {
		c = &queryCount{}
		m.counts[verb] = c
	}
	if ok {
		c.OK++
	} else {
		c.Failed++
	}
}

func (m *metrics) queryCounts() map[string]queryCount {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]queryCount, len(m.counts))
	for k, v := range m.counts {
		out[k] = *v
	}
	return out
}

func newMetrics(eng *sql.Engine) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), eng: eng, lastCP: map[string]int64{}, counts: map[string]*queryCount{}}
	m.queries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamdb_queries_total",
		Help: "Statements run over the wire, by type (the command tag's verb) and outcome (ok, or the SQLSTATE class of the error)."},
		[]string{"type", "outcome"})
	m.copyRows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamdb_copy_rows_total",
		Help: "Rows moved by COPY, by direction (in: FROM STDIN, out: TO STDOUT)."}, []string{"direction"})
	m.epochDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "streamdb_job_epoch_duration_seconds",
		Help:    "Duration of the barrier rounds (epochs, checkpoints included) the job took part in: barrier injection to commit.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"job"})
	m.cpDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "streamdb_job_checkpoint_duration_seconds",
		Help:    "Duration of the checkpoints the job took part in, by status.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12)}, []string{"job", "status"})
	m.cpSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "streamdb_checkpoint_size_bytes",
		Help:    "Bytes each completed checkpoint wrote (the delta since the last epoch).",
		Buckets: prometheus.ExponentialBuckets(1024, 4, 12)})
	m.cps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamdb_checkpoints_total",
		Help: "Checkpoints ended since the server started, by trigger and status."}, []string{"trigger", "status"})
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.queries, m.copyRows, m.epochDur, m.cpDur, m.cpSize, m.cps, (*scrape)(m))
	return m
}

// StatementCompleted implements wire.Metrics.
func (m *metrics) StatementCompleted(tag string, copyIn bool) {
	verb, n := tagVerb(tag)
	m.queries.WithLabelValues(verb, "ok").Inc()
	m.count(verb, true)
	if verb == "COPY" {
		dir := "out"
		if copyIn {
			dir = "in"
		}
		m.copyRows.WithLabelValues(dir).Add(float64(n))
	}
}

// StatementFailed implements wire.Metrics.
func (m *metrics) StatementFailed(sqlText, code string) {
	class := "XX"
	if len(code) >= 2 {
		class = code[:2]
	}
	verb := sqlVerb(sqlText)
	m.queries.WithLabelValues(verb, class).Inc()
	m.count(verb, false)
}

// round records a barrier round as it ends (checkpoint.Coordinator.OnRound).
func (m *metrics) round(r checkpoint.Record) {
	d := r.Duration.Seconds()
	for _, j := range r.Jobs {
		m.epochDur.WithLabelValues(j).Observe(d)
	}
	if r.Trigger == "" {
		return
	}
	m.cps.WithLabelValues(r.Trigger, string(r.Status)).Inc()
	for _, j := range r.Jobs {
		m.cpDur.WithLabelValues(j, string(r.Status)).Observe(d)
	}
	if r.Status == checkpoint.Completed {
		m.cpSize.Observe(float64(r.Size))
		m.mu.Lock()
		for _, j := range r.Jobs {
			m.lastCP[j] = r.Size
		}
		m.mu.Unlock()
	}
}

// verbs are the statement types counted by name; others count as OTHER,
// so a label never takes arbitrary text.
var verbs = map[string]bool{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "COPY": true, "CREATE": true,
	"DROP": true, "ALTER": true, "SET": true, "RESET": true, "SHOW": true, "BEGIN": true, "START": true, "COMMIT": true,
	"ROLLBACK": true, "CHECKPOINT": true, "DECLARE": true, "FETCH": true, "CLOSE": true, "DISCARD": true, "EXPLAIN": true,
	"PREPARE": true, "EXECUTE": true, "DEALLOCATE": true, "GRANT": true, "REVOKE": true, "RESTORE": true, "FLUSH": true,
	"VALUES": true, "WITH": true, "TABLE": true, "SAVEPOINT": true, "RELEASE": true}

// tagVerb is a command tag's statement type and row count ("INSERT 0 3":
// INSERT, 3; "CREATE MATERIALIZED VIEW": CREATE, 0).
func tagVerb(tag string) (string, int64) {
	f := strings.Fields(tag)
	if len(f) == 0 {
		return "OTHER", 0
	}
	var n int64
	for _, c := range f[len(f)-1] {
		if c < '0' || c > '9' {
			n = 0
			break
		}
		n = n*10 + int64(c-'0')
	}
	v := strings.ToUpper(f[0])
	if !verbs[v] {
		v = "OTHER"
	}
	return v, n
}

// sqlVerb is the statement type of SQL text: its first keyword.
func sqlVerb(s string) string {
	s = strings.TrimLeft(s, " \t\r\n(")
	end := strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if end >= 0 {
		s = s[:end]
	}
	v := strings.ToUpper(s)
	switch {
	case v == "":
		return "OTHER"
	case v == "WITH" || v == "VALUES" || v == "TABLE":
		return "SELECT"
	case verbs[v]:
		return v
	}
	return "OTHER"
}

// scrape is the collector of what is read at each scrape.
type scrape metrics

func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{jobRowsIn, jobRowsOut, jobLagRows, jobLateRows, jobLostRows, jobErrorRows, jobWatermark, jobLagSeconds, jobStateBytes, jobEvicted, jobEpoch, jobRestarts, jobUp,
		jobParallelism, jobLastCPSize, connections, pebbleCompactions, pebbleCompactionDebt, pebbleCompacting, pebbleFlushes,
		pebbleL0Files, pebbleL0Sublevels, pebbleLevelBytes, pebbleMemtables, pebbleMemtableBytes, pebbleDiskBytes,
		pebbleReadAmp, pebbleWALBytes, pebbleBlockCacheBytes, tailCacheHits, tailCacheMisses, tailCacheBytes,
		clusterCoordinator, clusterOwnedJobs, clusterForwardedReads, clusterForwardedBytes, exchangeBytes, exchangeBackpressure} {
		ch <- d
	}
}

// collectCluster adds this node's cluster figures (none on a single node).
func collectCluster(eng *sql.Engine, ch chan<- prometheus.Metric) {
	st, ok := sql.ClusterStats(eng)
	if !ok {
		return
	}
	coord := 0.0
	if st.Coordinator {
		coord = 1
	}
	ch <- prometheus.MustNewConstMetric(clusterCoordinator, prometheus.GaugeValue, coord, st.Node)
	ch <- prometheus.MustNewConstMetric(clusterOwnedJobs, prometheus.GaugeValue, float64(st.OwnedJobs), st.Node)
	ch <- prometheus.MustNewConstMetric(clusterForwardedReads, prometheus.CounterValue, float64(st.ForwardedReads), st.Node)
	ch <- prometheus.MustNewConstMetric(clusterForwardedBytes, prometheus.CounterValue, float64(st.ForwardedBytes), st.Node)
	x := exchange.ReadStats()
	ch <- prometheus.MustNewConstMetric(exchangeBytes, prometheus.CounterValue, float64(x.BytesSent), st.Node, "sent")
	ch <- prometheus.MustNewConstMetric(exchangeBytes, prometheus.CounterValue, float64(x.BytesReceived), st.Node, "received")
	ch <- prometheus.MustNewConstMetric(exchangeBackpressure, prometheus.CounterValue, x.Backpressure.Seconds(), st.Node)
}

func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	m := (*metrics)(s)
	collectCluster(m.eng, ch)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	m.mu.Lock()
	lastCP := make(map[string]int64, len(m.lastCP))
	for k, v := range m.lastCP {
		lastCP[k] = v
	}
	m.mu.Unlock()
	for _, j := range m.eng.Jobs() {
		counter(jobRowsIn, float64(j.RowsIn), j.Name, j.Kind)
		counter(jobRowsOut, float64(j.RowsOut), j.Name, j.Kind)
		gauge(jobLagRows, float64(j.Lag), j.Name, j.Kind)
		gauge(jobStateBytes, float64(j.StateBytes), j.Name, j.Kind)
		gauge(jobEvicted, float64(j.Evicted), j.Name, j.Kind)
		counter(jobLateRows, float64(j.LateRows), j.Name, j.Kind)
		counter(jobLostRows, float64(j.LostRows), j.Name, j.Kind)
		gauge(jobErrorRows, float64(j.ErrorRows), j.Name, j.Kind)
		if j.Watermark != nil {
			gauge(jobWatermark, float64(j.Watermark.UnixMicro())/1e6, j.Name)
			gauge(jobLagSeconds, time.Since(*j.Watermark).Seconds(), j.Name)
		}
		gauge(jobEpoch, float64(j.Epoch), j.Name, j.Kind)
		counter(jobRestarts, float64(j.Restarts), j.Name, j.Kind)
		gauge(jobUp, 1, j.Name, j.Kind, j.State)
		for _, op := range j.Graph {
			gauge(jobParallelism, float64(op.Parallelism), j.Name, opName(op.ID, op.Kind), op.Kind)
		}
		if n, ok := lastCP[j.Name]; ok {
			gauge(jobLastCPSize, float64(n), j.Name)
		}
	}
	if m.conns != nil {
		gauge(connections, float64(m.conns()))
	}
	tc := m.eng.TailCacheStats()
	counter(tailCacheHits, float64(tc.Hits))
	counter(tailCacheMisses, float64(tc.Misses))
	gauge(tailCacheBytes, float64(tc.Bytes))
	pm := m.eng.PebbleMetrics()
	counter(pebbleCompactions, float64(pm.Compact.Count))
	gauge(pebbleCompactionDebt, float64(pm.Compact.EstimatedDebt))
	gauge(pebbleCompacting, float64(pm.Compact.NumInProgress))
	counter(pebbleFlushes, float64(pm.Flush.Count))
	gauge(pebbleL0Files, float64(pm.Levels[0].TablesCount))
	gauge(pebbleL0Sublevels, float64(pm.Levels[0].Sublevels))
	for i := range pm.Levels {
		gauge(pebbleLevelBytes, float64(pm.Levels[i].TablesSize), "L"+string(rune('0'+i)))
	}
	gauge(pebbleMemtables, float64(pm.MemTable.Count))
	gauge(pebbleMemtableBytes, float64(pm.MemTable.Size))
	gauge(pebbleDiskBytes, float64(pm.DiskSpaceUsage()))
	gauge(pebbleReadAmp, float64(pm.ReadAmp()))
	gauge(pebbleWALBytes, float64(pm.WAL.Size))
	gauge(pebbleBlockCacheBytes, float64(pm.BlockCache.Size))
}

// opName names an operator of a job's graph in labels: "2:aggregate".
func opName(id int, kind string) string { return strconv.Itoa(id) + ":" + kind }
