package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamLog is the log of streams in cluster mode (docs/design/cluster.md):
// each append-only stream has a topic, INSERT and COPY on any node produce
// their rows to it in one Kafka transaction, and the jobs of the views over
// the stream read it back with this package's source (format json,
// read_committed). A row is one message: a JSON object with a member per
// column, the value in its type's PostgreSQL text output as a JSON string
// (json and jsonb columns: the JSON itself), NULL as null, so the source's
// json format reads back exactly the values written.
//
// A node's producers have transactional ids PREFIX-0, PREFIX-1, ...: a
// restarted node fences the transactions its previous process left open.
type StreamLog struct {
	brokers []string
	prefix  string
	// free holds idle producers; made counts those created, up to
	// streamLogProducers (a statement waits for one beyond that).
	free chan *producer
	mu   sync.Mutex
	made int
	// ids are the transactional ids not in use by a live producer.
	ids []int
	// BeforeCommit, if set, runs in each transaction after its rows are
	// sent and before its commit (a failpoint: its error aborts).
	BeforeCommit func() error
}

// streamLogProducers bounds the transactions one node has open at once.
const streamLogProducers = 4

// NewStreamLog returns the stream log on brokers; txnPrefix names this
// node's producers and must be unique to the node in the cluster.
func NewStreamLog(brokers []string, txnPrefix string) *StreamLog {
	l := &StreamLog{brokers: brokers, prefix: txnPrefix, free: make(chan *producer, streamLogProducers)}
	for i := streamLogProducers - 1; i >= 0; i-- {
		l.ids = append(l.ids, i)
	}
	return l
}

// Fence makes every one of the node's producers now, registering its
// transactional id with Kafka (InitProducerID): a transaction the node's
// previous process left open (it was killed inside an INSERT) is aborted
// at once, rather than at its timeout. Until then read_committed readers
// do not read past it, so a restarted node's rows, and every row written
// after the open transaction, would wait for the timeout.
func (l *StreamLog) Fence(ctx context.Context) error {
	var got []*producer
	defer func() {
		for _, p := range got {
			l.free <- p
		}
	}()
	for i := 0; i < streamLogProducers; i++ {
		p, err := l.take(ctx)
		if err != nil {
			return err
		}
		if _, _, err := p.cl.ProducerID(ctx); err != nil {
			l.retire(p)
			return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: fencing %s-%d: %v", l.prefix, p.id, err)
		}
		got = append(got, p)
	}
	return nil
}

// FenceNode aborts the transactions a node whose transactional ids start
// with txnPrefix left open (its prefix as it passed it to NewStreamLog),
// by registering each of its ids with Kafka (InitProducerID) from a
// producer of this process, closed at once. For a node that is gone (its
// cluster lease expired): read_committed readers stop waiting on its open
// transaction then, not at the transaction timeout. A producer of a live
// node with that prefix is fenced too (its next transaction fails).
func FenceNode(ctx context.Context, brokers []string, txnPrefix string) error {
	for i := 0; i < streamLogProducers; i++ {
		cl, err := newTxnClient(brokers, txnPrefix, i)
		if err != nil {
			return sqlerr.New(sqlerr.InvalidParameterValue, "cluster stream log: kafka client: %v", err)
		}
		_, _, err = cl.ProducerID(ctx)
		cl.Close()
		if err != nil {
			return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: fencing %s-%d: %v", txnPrefix, i, err)
		}
	}
	return nil
}

// newTxnClient is the transactional producer PREFIX-id.
func newTxnClient(brokers []string, prefix string, id int) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(prefix+"-"+strconv.Itoa(id)),
		kgo.TransactionTimeout(time.Minute), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(10), kgo.ProducerLinger(0))
}

// Brokers are the log's brokers, as properties.bootstrap.servers.
func (l *StreamLog) Brokers() []string { return l.brokers }

// EnsureTopic creates topic with partitions partitions, keeping its
// messages forever (the topic is the stream's history), unless it exists.
func (l *StreamLog) EnsureTopic(ctx context.Context, topic string, partitions int) error {
	cl, err := Admin(l.brokers)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, int32(partitions), -1
	for k, v := range map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: create topic %q: %v", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: create topic %q: %v", topic, err)
		}
	}
	return nil
}

// DeleteTopic deletes topic; a topic that does not exist is no error.
func (l *StreamLog) DeleteTopic(ctx context.Context, topic string) error {
	cl, err := Admin(l.brokers)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: delete topic %q: %v", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: delete topic %q: %v", topic, err)
		}
	}
	return nil
}

// producer is one transactional producer and the number in its id.
type producer struct {
	cl *kgo.Client
	id int
}

// take takes an idle producer, making one if fewer than
// streamLogProducers exist, else waiting for one.
func (l *StreamLog) take(ctx context.Context) (*producer, error) {
	select {
	case cl := <-l.free:
		return cl, nil
	default:
	}
	l.mu.Lock()
	if len(l.ids) == 0 {
		l.mu.Unlock()
		select {
		case p := <-l.free:
			return p, nil
		case <-ctx.Done():
			return nil, sqlerr.New(sqlerr.QueryCanceled, "canceling statement: no stream log producer became free")
		}
	}
	id := l.ids[len(l.ids)-1]
	l.ids = l.ids[:len(l.ids)-1]
	l.made++
	l.mu.Unlock()
	cl, err := newTxnClient(l.brokers, l.prefix, id)
	if err != nil {
		l.retire(&producer{id: id})
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "cluster stream log: kafka client: %v", err)
	}
	return &producer{cl: cl, id: id}, nil
}

// retire closes a producer whose transaction state is unknown; its id
// becomes free for a new one (which fences it).
func (l *StreamLog) retire(p *producer) {
	if p.cl != nil {
		p.cl.Close()
	}
	l.mu.Lock()
	l.ids = append(l.ids, p.id)
	l.made--
	l.mu.Unlock()
}

// Close closes the idle producers.
func (l *StreamLog) Close() {
	for {
		select {
		case p := <-l.free:
			p.cl.Close()
		default:
			return
		}
	}
}

// Produce appends recs (rows of a stream with columns names of types ts)
// to partition part of topic in one transaction and returns once it is
// committed: then every reader of the topic (read_committed) sees all of
// the rows, and before it none.
func (l *StreamLog) Produce(ctx context.Context, topic string, part int32, names []string, ts []types.T, recs []arrow.RecordBatch) error {
	return l.ProduceAll(ctx, []LogWrite{{Topic: topic, Part: part, Names: names, Types: ts, Recs: recs}})
}

// LogWrite is the rows one transaction appends to one stream's topic.
type LogWrite struct {
	Topic string
	Part  int32
	Names []string  // the stream's column names
	Types []types.T // and types
	Recs  []arrow.RecordBatch
}

// ProduceAll appends every write in one transaction (a transaction block
// over several streams) and returns once it is committed: a reader sees
// all of the writes' rows or none.
func (l *StreamLog) ProduceAll(ctx context.Context, ws []LogWrite) error {
	p, err := l.take(ctx)
	if err != nil {
		return err
	}
	if err := produceTxn(ctx, p.cl, ws, l.BeforeCommit); err != nil {
		// Abort what was sent; the producer is retired if even that
		// fails (a new one with its id fences the transaction).
		actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		aerr := p.cl.EndTransaction(actx, kgo.TryAbort)
		cancel()
		if aerr != nil {
			l.retire(p)
		} else {
			l.free <- p
		}
		return err
	}
	l.free <- p
	return nil
}

func produceTxn(ctx context.Context, cl *kgo.Client, ws []LogWrite, beforeCommit func() error) error {
	if err := cl.BeginTransaction(); err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: begin transaction: %v", err)
	}
	var (
		mu   sync.Mutex
		perr error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if perr == nil {
				perr = err
			}
			mu.Unlock()
		}
	}
	var ends []int
	topics := make([]string, 0, len(ws))
	for _, w := range ws {
		topics = append(topics, w.Topic)
		enc := rowEncoder{names: w.Names, ts: w.Types}
		if err := produceRecs(ctx, cl, &enc, w.Topic, w.Part, w.Recs, &ends, done); err != nil {
			return err
		}
	}
	topic := strings.Join(topics, ", ")
	if err := cl.Flush(ctx); err != nil && perr == nil {
		perr = err
	}
	if perr != nil {
		return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: produce to %s: %v", topic, perr)
	}
	if beforeCommit != nil {
		if err := beforeCommit(); err != nil {
			return err
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "cluster stream log: commit to %s: %v (the rows may or may not be committed)", topic, err)
	}
	return nil
}

// produceRecs sends recs to partition part of topic in the open
// transaction; done collects the first failure.
func produceRecs(ctx context.Context, cl *kgo.Client, enc *rowEncoder, topic string, part int32, recs []arrow.RecordBatch, ends *[]int, done func(*kgo.Record, error)) error {
	for _, rec := range recs {
		// One buffer and one slice of records per batch, not per row.
		n := int(rec.NumRows())
		var buf []byte
		*ends = (*ends)[:0]
		for i := 0; i < n; i++ {
			buf = enc.row(buf, rec, i)
			*ends = append(*ends, len(buf))
		}
		if enc.err != nil {
			return enc.err
		}
		krs := make([]kgo.Record, n)
		from := 0
		for i := range krs {
			end := (*ends)[i]
			krs[i] = kgo.Record{Topic: topic, Partition: part, Value: buf[from:end:end]}
			from = end
			cl.Produce(ctx, &krs[i], done)
		}
	}
	return nil
}

// rowEncoder writes rows as the JSON objects the json format reads.
type rowEncoder struct {
	names []string
	ts    []types.T
	keys  [][]byte // per column: `"name":` (with a leading comma but the first)
	// err: a value the json format would not read back as written.
	err error
}

// row appends row i of rec to b.
func (e *rowEncoder) row(b []byte, rec arrow.RecordBatch, i int) []byte {
	if e.keys == nil {
		for c, n := range e.names {
			var k []byte
			if c > 0 {
				k = append(k, ',')
			}
			k = appendJSONString(k, n)
			e.keys = append(e.keys, append(k, ':'))
		}
	}
	b = append(b, '{')
	for c, t := range e.ts {
		b = append(b, e.keys[c]...)
		from := len(b)
		b = appendJSONValue(b, rec.Column(c), i, t)
		if (t.Kind == types.JSON || t.Kind == types.JSONB) && string(b[from:]) == "null" && !rec.Column(c).IsNull(i) && e.err == nil {
			// The json format reads a member that is JSON null as NULL.
			e.err = sqlerr.New(sqlerr.FeatureNotSupported, "column %q: the JSON value null (not SQL NULL) cannot be stored in a table in cluster mode yet", e.names[c])
		}
	}
	return append(b, '}')
}

// appendJSONValue appends value i of a: null, its JSON (json, jsonb), or
// its text output as a JSON string.
func appendJSONValue(b []byte, a arrow.Array, i int, t types.T) []byte {
	if a.IsNull(i) {
		return append(b, "null"...)
	}
	switch arr := a.(type) {
	case *array.Int64:
		if t.Kind == types.Int64 || t.Kind == types.Int32 || t.Kind == types.Int16 {
			b = append(b, '"')
			b = strconv.AppendInt(b, arr.Value(i), 10)
			return append(b, '"')
		}
	case *array.String:
		switch t.Kind {
		case types.JSON:
			return append(b, arr.Value(i)...)
		case types.JSONB:
			return types.AppendJSONBOut(b, arr.Value(i))
		case types.Text, types.UUID:
			return appendJSONString(b, arr.Value(i))
		}
	}
	d := types.DatumAt(a, i, t)
	if t.Kind == types.JSON {
		return append(b, d.S...)
	}
	if t.Kind == types.JSONB {
		return types.AppendJSONBOut(b, d.S)
	}
	var tmp [64]byte
	return appendJSONString(b, string(types.AppendText(tmp[:0], d, t)))
}

func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		i++
	}
	return append(b, '"')
}

// TopicName is the topic of a cluster's stream: its cluster, name and the
// catalog log entry that created it (so a stream dropped and created
// again starts on a new, empty topic), in Kafka's topic alphabet.
func TopicName(cluster, stream string, seq uint64) string {
	return fmt.Sprintf("streamdb.%s.%s.%d", topicSafe(cluster), topicSafe(stream), seq)
}

// topicSafe keeps [A-Za-z0-9_-] and writes any other byte as _XX.
func topicSafe(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b = append(b, c)
			continue
		}
		b = fmt.Appendf(b, "_%02x", c)
	}
	return string(b)
}
