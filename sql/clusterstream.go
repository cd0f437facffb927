package sql

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Cluster mode, the shared stream log (docs/design/cluster.md): with
// --cluster-kafka every append-only stream has a Kafka topic (named in its
// catalog entry, option cluster.topic, when the CREATE TABLE entry of the
// catalog log is applied). INSERT and COPY on any node produce their rows
// to the topic in one transaction and return once it is committed
// (kafka.StreamLog); the job of a view over the stream, on the node that
// owns it, reads the topic (read_committed) as a Kafka source whose
// offsets its checkpoints keep; a read of the stream reads the topic up
// to its committed end. Keyed tables (PRIMARY KEY) have no topic and stay
// refused.

// StreamLogConfig turns the shared stream log on (Config.StreamLog).
type StreamLogConfig struct {
	Brokers []string // Kafka's bootstrap servers
	// Cluster and Node name the topics (Cluster) and this node's
	// transactional producers (both).
	Cluster, Node string
}

// streamLog is the engine's side of the shared stream log.
type streamLog struct {
	cfg StreamLogConfig
	log *kafka.StreamLog
	// applying is the sequence number of the catalog log entry being
	// applied (entries are applied one at a time): it names the topic of
	// a stream created by it.
	applying atomic.Uint64
	rr       atomic.Uint32
}

func newStreamLog(cfg *StreamLogConfig) *streamLog {
	if cfg == nil || len(cfg.Brokers) == 0 {
		return nil
	}
	l := kafka.NewStreamLog(cfg.Brokers, txnPrefix(cfg.Cluster, cfg.Node))
	// STREAMDB_FAILPOINTS=stream_log:precommit:N:kill kills the node with
	// its N-th transaction's rows sent and not committed (tests/cluster).
	l.BeforeCommit = func() error { return plan.Failpoint("stream_log", "precommit") }
	return &streamLog{cfg: *cfg, log: l}
}

// txnPrefix names the transactional producers of node in cluster.
func txnPrefix(cluster, node string) string { return "streamdb." + cluster + "." + node }

// FenceLostNode aborts the Kafka transactions that node, whose cluster
// lease has expired, left open (kafka.FenceNode), so read_committed
// readers of the stream log (reads of tables, views' jobs) go past them
// now rather than at the transaction timeout. Without the stream log it
// does nothing.
func FenceLostNode(ctx context.Context, e *Engine, node string) error {
	if e.streamLog == nil {
		return nil
	}
	return kafka.FenceNode(ctx, e.streamLog.cfg.Brokers, txnPrefix(e.streamLog.cfg.Cluster, node))
}

// fenceStreamLog registers this node's transactional producers with Kafka
// as the engine opens (kafka.StreamLog.Fence), aborting what a killed
// predecessor left open; a failure is logged (the first statement that
// produces fences its producer then).
func fenceStreamLog(e *Engine) {
	if e.streamLog == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.streamLog.log.Fence(ctx); err != nil {
			e.log.Warn("cluster: fencing this node's earlier Kafka transactions", "err", err)
		}
	}()
}

// topicOption is the catalog option holding a stream's topic.
const topicOption = "cluster.topic"

// logTopic is the topic of t if t is a stream whose rows live in the
// shared log, else "".
func logTopic(t *storage.TableDef) string {
	if t == nil || t.Kind != storage.KindStream || plan.Keyed(t) {
		return ""
	}
	return t.Options[topicOption]
}

type logSeqKey struct{}

// WithLogSeq marks ctx as the application of catalog log entry seq
// (ApplyDDL): a stream it creates gets a topic named after it.
func WithLogSeq(ctx context.Context, seq uint64) context.Context {
	return context.WithValue(ctx, logSeqKey{}, seq)
}

// noteApplying records the entry ApplyDDL is about to apply.
func noteApplying(ctx context.Context, e *Engine) {
	if e.streamLog == nil {
		return
	}
	seq, _ := ctx.Value(logSeqKey{}).(uint64)
	e.streamLog.applying.Store(seq)
}

// streamLogCreate gives a new append-only stream its topic (createTable,
// before the entry is stored): the name goes in the catalog entry, and
// the topic is created in Kafka unless it exists (every node applying the
// entry tries; the first creates it). A failure to create it is logged,
// not returned, so every node's catalog stays the same: producing to the
// stream creates the topic again before it writes.
func streamLogCreate(e *Engine, t *storage.TableDef) error {
	l := e.streamLog
	if l == nil || plan.Keyed(t) {
		return nil
	}
	if _, ok := e.Table(t.Name); ok {
		return nil // CREATE ... IF NOT EXISTS of an existing table
	}
	for _, c := range t.Columns {
		if c.Type.Kind == types.TextArray || strings.HasPrefix(strings.ToLower(c.Name), "_kafka_") {
			return &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
				Msg:    "column " + c.Name + " of type " + c.Type.String() + " is not supported in a table in cluster mode yet",
				Detail: "A table's rows go through its Kafka topic as JSON messages, which carry no arrays and reserve the _kafka_ column names."}
		}
	}
	topic := kafka.TopicName(l.cfg.Cluster, t.Name, l.applying.Load())
	if t.Options == nil {
		t.Options = map[string]string{}
	}
	t.Options[topicOption] = topic
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := l.log.EnsureTopic(ctx, topic, max(1, t.Partitions)); err != nil {
		e.log.Error("cluster: the stream's topic was not created; the first INSERT creates it", "table", t.Name, "topic", topic, "err", err)
	}
	return nil
}

// streamLogDropped deletes the topics of dropped streams.
func streamLogDropped(e *Engine, dropped []*storage.TableDef) {
	if e.streamLog == nil {
		return
	}
	for _, t := range dropped {
		if topic := logTopic(t); topic != "" {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := e.streamLog.log.DeleteTopic(ctx, topic); err != nil {
					e.log.Warn("cluster: the dropped stream's topic was not deleted", "table", t.Name, "topic", topic, "err", err)
				}
			}()
		}
	}
}

// produceRows appends recs to t's topic in one transaction (appendRows
// in cluster mode) and returns once it is committed.
func produceRows(e *Engine, t *storage.TableDef, recs []arrow.RecordBatch) error {
	return produceWrites(e.streamLog, []kafka.LogWrite{logWrite(e.streamLog, t, recs)}, []*storage.TableDef{t})
}

// logWrite is recs as a write to one partition of t's topic (round robin
// over the table's partitions).
func logWrite(l *streamLog, t *storage.TableDef, recs []arrow.RecordBatch) kafka.LogWrite {
	w := kafka.LogWrite{Topic: logTopic(t), Recs: recs, Names: make([]string, len(t.Columns)), Types: make([]types.T, len(t.Columns)),
		Part: int32(l.rr.Add(1) % uint32(max(1, t.Partitions)))}
	for i, c := range t.Columns {
		w.Names[i], w.Types[i] = c.Name, c.Type
	}
	return w
}

// produceWrites produces ws (to the topics of ts) in one transaction.
func produceWrites(l *streamLog, ws []kafka.LogWrite, ts []*storage.TableDef) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := l.log.ProduceAll(ctx, ws)
	if err != nil && strings.Contains(err.Error(), "UNKNOWN_TOPIC") {
		// A CREATE could not make its topic: make them now.
		for _, t := range ts {
			if cerr := l.log.EnsureTopic(ctx, logTopic(t), max(1, t.Partitions)); cerr != nil {
				return err
			}
		}
		err = l.log.ProduceAll(ctx, ws)
	}
	return err
}

// clusterCommitWrites is commitWrites in cluster mode with the shared
// log: the transaction's writes to every stream are produced in one Kafka
// transaction, so COMMIT acknowledges all of them or none (a transaction
// block's, an extended-protocol Sync's, a multi-statement Query's).
// They were kept in memory (txn.addRecs does not stage them).
func clusterCommitWrites(s *Session) error {
	t := s.txn
	defer t.discard()
	ws := make([]kafka.LogWrite, 0, len(t.writes))
	ts := make([]*storage.TableDef, 0, len(t.writes))
	for _, w := range t.writes {
		if _, err := s.e.appendPartition(w.t); err != nil {
			return err
		}
		if logTopic(w.t) == "" || len(w.stages) > 0 {
			return notDistributed("a transaction writing "+w.t.Name, "its rows have no shared log")
		}
		if len(w.recs) > 0 {
			ws = append(ws, logWrite(s.e.streamLog, w.t, w.recs))
			ts = append(ts, w.t)
		}
	}
	if len(ws) == 0 {
		return nil
	}
	return produceWrites(s.e.streamLog, ws, ts)
}

// logSource is t's topic as a Kafka source (format json, from the
// earliest offset): what a view's job, or (bounded: up to the committed
// end) a read, scans instead of the node's own log of the stream.
func logSource(l *streamLog, t *storage.TableDef, bounded bool) *storage.TableDef {
	d := *t
	d.Kind = storage.KindSource
	d.Partitions = max(1, t.Partitions)
	d.Options = map[string]string{"connector": "kafka", "topic": logTopic(t), "format": "json",
		"properties.bootstrap.servers": strings.Join(l.cfg.Brokers, ","), "scan.startup.mode": "earliest",
		kafka.KafkaCreatedKey: strconv.Itoa(d.Partitions)}
	if bounded {
		d.Options["scan.bounded.mode"] = "latest-offset"
	}
	return &d
}

// logCatalog is the catalog as the binder of a view's query (bounded
// false) or of a read (true) sees it in cluster mode: streams in the
// shared log are Kafka sources over their topics.
type logCatalog struct {
	*Engine
	bounded bool
}

func (c logCatalog) Table(name string) (*storage.TableDef, bool) {
	t, ok := c.Engine.Table(name)
	if ok && logTopic(t) != "" {
		return logSource(c.streamLog, t, c.bounded), true
	}
	return t, ok
}

// viewCatalog is the catalog a view's query binds against.
func viewCatalog(e *Engine) bind.Catalog {
	if e.streamLog == nil {
		return e
	}
	return logCatalog{Engine: e}
}

// readCatalog is the catalog a read binds against.
func readCatalog(e *Engine) bind.Catalog {
	if e.streamLog == nil {
		return e
	}
	return logCatalog{Engine: e, bounded: true}
}

// gateStreamWrite decides, in cluster mode, about an INSERT or COPY FROM
// into table name: nil if its rows go to the shared log, else why not
// (0A000). An INSERT's rows must come from no relation: INSERT ... SELECT
// from relations is refused for now (it would bind them to this node's
// own, empty, logs).
func gateStreamWrite(s sessionCluster, st *Stmt, what, name string, n ast.Node) error {
	t, ok := s.e.Table(name)
	if !ok || t.Kind != storage.KindStream {
		return nil // execution reports it, as on one node
	}
	if logTopic(t) == "" {
		why := "its rows would stay on this node"
		switch {
		case plan.Keyed(t):
			why = "a table with a PRIMARY KEY has no shared log yet"
		case s.e.streamLog == nil:
			why = "the server was started without --cluster-kafka, so streams have no shared log"
		}
		return notDistributed(what+" into "+name, why)
	}
	return nil
}

// insertSelect decides, in cluster mode, where an INSERT ... SELECT into
// a stream in the shared log runs. Its query binds as a read does
// (insertCatalog): streams are their topics up to the committed end, and
// materialized views are read on the node that runs them. So it runs here
// unless it reads views run by another node; then the whole statement is
// sent to that node (ServeExec), which reads the views there and produces
// the rows to the topic, as any node may. Refused (0A000): what a read
// refuses, and sending it inside a transaction (it would commit apart from
// the transaction) or with parameters or RETURNING.
func (s sessionCluster) insertSelect(ctx context.Context, st *Stmt, n *ast.InsertStmt, q *parse.Query, params []types.Datum) (*Result, error, bool) {
	views, err := s.localRead(st, n.Select)
	if err == nil {
		err = refuseDistributed(views, "INSERT ... SELECT")
	}
	if err != nil || len(views) == 0 {
		return nil, err, err != nil
	}
	owner, self, err := s.viewsOwner(views)
	if err != nil || self {
		return nil, err, err != nil
	}
	switch {
	case s.clusterForwarded:
		return nil, movedErr(views[0].Name, owner), true
	case s.txn != nil && (s.txn.explicit || s.txn.group != nil):
		return nil, notDistributed("INSERT ... SELECT from a materialized view run by another node inside a transaction",
			"it runs on that node and would commit apart from the transaction"), true
	case len(params) > 0 || q.Returning != nil:
		return nil, notDistributed("INSERT ... SELECT from a materialized view run by another node with parameters or RETURNING",
			"it is sent to that node as text and answers with its tag only"), true
	}
	peers, ok := s.e.cluster.(ClusterPeers)
	if !ok {
		return nil, notDistributed("INSERT ... SELECT from a materialized view run by another node", "this node cannot reach its peers"), true
	}
	res, err := peers.Exec(ctx, owner, s.user, st.SQL)
	return res, err, true
}

// insertLogCatalog is the catalog an INSERT binds against in cluster mode
// with the shared log: its target as stored (the first lookup of its
// name, BindInsert's), everything its query reads as a read sees it
// (readCatalog), so INSERT INTO t SELECT ... FROM t reads t's topic.
type insertLogCatalog struct {
	logCatalog
	target string
	served bool
}

func (c *insertLogCatalog) Table(name string) (*storage.TableDef, bool) {
	if !c.served && strings.EqualFold(name, c.target) {
		c.served = true
		return c.Engine.Table(name)
	}
	return c.logCatalog.Table(name)
}

// insertCatalog is the catalog BindInsert of n binds against.
func insertCatalog(e *Engine, n *ast.InsertStmt) bind.Catalog {
	if e.streamLog == nil {
		return e
	}
	target, _ := insertTargetName(n)
	return &insertLogCatalog{logCatalog: logCatalog{Engine: e, bounded: true}, target: target}
}

// gateCopy is gateStreamWrite for COPY FROM (into a stream in the shared
// log it runs here) and readViews for COPY TO: its query runs here unless
// it reads materialized views run by another node; then it is forwarded
// there as a read (its text: SELECT * FROM the relation, or the COPY's
// query) and the rows come back to be written in COPY's format here.
func gateCopy(ctx context.Context, s sessionCluster, st *Stmt, n *parse.Copy) (*Result, error, bool) {
	if n.From {
		err := gateStreamWrite(s, st, "COPY", n.Table, nil)
		return nil, err, err != nil
	}
	opts, err := copyOptions(n.Options)
	if err != nil {
		return nil, nil, false // execution reports it
	}
	q, err := copyOutQuery(st, n, opts)
	if err != nil {
		return nil, err, true
	}
	rs, ok := q.Node.(ast.ResultSetNode)
	if !ok {
		return nil, nil, false
	}
	views, err := s.localRead(st, rs)
	if err != nil || len(views) == 0 {
		return nil, err, err != nil
	}
	if handled, err := readsDistributed(views); handled {
		return nil, err, err != nil // runs here over the gathered rows
	}
	owner, self, err := s.viewsOwner(views)
	if err != nil || self {
		return nil, err, err != nil
	}
	text := q.SQL
	if n.Query == nil {
		text = "SELECT * FROM " + quoteIdent(n.Table)
	}
	switch {
	case s.clusterForwarded:
		return nil, movedErr(views[0].Name, owner), true
	case text == "":
		return nil, notDistributed("this COPY TO of a view run by another node", "its query's text is not known"), true
	}
	b := &bind.Binder{Cat: readCatalog(s.e), User: s.user, Session: sessionInfo{s.Session}}
	plan, err := b.BindQuery(rs)
	if err != nil {
		return nil, err, true
	}
	st.Columns = columnsOf(plan)
	rows, err := s.e.cluster.Forward(ctx, owner, s.user, text)
	if err != nil {
		return nil, err, true
	}
	s.e.clusterStat.forwardedReads.Add(1)
	return &Result{Tag: "SELECT", Rows: &countedRows{Rows: rows, c: &s.e.clusterStat}}, nil, true
}

// insertTargetName is the table an INSERT names, if it names one.
func insertTargetName(n *ast.InsertStmt) (string, bool) {
	if n.Table == nil || n.Table.TableRefs == nil || n.Table.TableRefs.Right != nil {
		return "", false
	}
	ts, ok := n.Table.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return "", false
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return "", false
	}
	return tn.Name.O, true
}
