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
	"github.com/streamdb/streamdb/exec"
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
	return &streamLog{cfg: *cfg, log: kafka.NewStreamLog(cfg.Brokers, "streamdb."+cfg.Cluster+"."+cfg.Node)}
}

// topicOption is the catalog option holding a stream's topic.
const topicOption = "cluster.topic"

// logTopic is the topic of t if t is a stream whose rows live in the
// shared log, else "".
func logTopic(t *storage.TableDef) string {
	if t == nil || t.Kind != storage.KindStream || exec.Keyed(t) {
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
	if l == nil || exec.Keyed(t) {
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
	l := e.streamLog
	topic := logTopic(t)
	names := make([]string, len(t.Columns))
	ts := make([]types.T, len(t.Columns))
	for i, c := range t.Columns {
		names[i], ts[i] = c.Name, c.Type
	}
	part := int32(l.rr.Add(1) % uint32(max(1, t.Partitions)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := l.log.Produce(ctx, topic, part, names, ts, recs)
	if err != nil && strings.Contains(err.Error(), "UNKNOWN_TOPIC") {
		// Its CREATE could not make it: make it now.
		if cerr := l.log.EnsureTopic(ctx, topic, max(1, t.Partitions)); cerr == nil {
			err = l.log.Produce(ctx, topic, part, names, ts, recs)
		}
	}
	return err
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
		case exec.Keyed(t):
			why = "a table with a PRIMARY KEY has no shared log yet"
		case s.e.streamLog == nil:
			why = "the server was started without --cluster-kafka, so streams have no shared log"
		}
		return notDistributed(what+" into "+name, why)
	}
	if ins, ok := n.(*ast.InsertStmt); ok && ins.Select != nil {
		cat := &recordingCatalog{e: s.e}
		b := &bind.Binder{Cat: cat, Params: append([]types.T(nil), st.ParamTypes...), User: s.user, Session: sessionInfo{s.Session}}
		if _, err := b.BindQuery(ins.Select); err != nil {
			return nil // execution reports it
		}
		for _, r := range cat.seen {
			if r.Kind != storage.KindSystem {
				return notDistributed("INSERT ... SELECT from "+r.Name, "an INSERT in cluster mode takes rows from VALUES or expressions only")
			}
		}
	}
	return nil
}

// gateCopy is gateStreamWrite for COPY: COPY FROM into a stream in the
// shared log runs here; COPY TO stays refused.
func gateCopy(s sessionCluster, st *Stmt, n *parse.Copy) error {
	if !n.From {
		return notDistributed("COPY TO", "it would read this node alone")
	}
	return gateStreamWrite(s, st, "COPY", n.Table, nil)
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
