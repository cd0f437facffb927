// Package kafka is streamdb's Kafka connector: the source that reads a
// topic (kafka.go; its message formats, json and csv, in kafka_decode.go),
// the exactly-once sink that writes a view's changes to a topic in
// transactions, and the admin code both use (kafka_sinkpos.go reads a
// sink's committed position and records back from its topic).
package kafka

import (
	"context"
	"errors"
	"github.com/streamdb/streamdb/connector"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka reads a Kafka topic: its partitions are the splits (split i reads
// partition i). Options (Flink's names):
//
//	topic                          required
//	properties.bootstrap.servers   required: host:port[,host:port...]
//	format                         json (default), csv or avro
//	schema.registry                with avro: the Confluent schema
//	                               registry's URL; the value schema of
//	                               subject <topic>-value gives the columns
//	scan.startup.mode              earliest (default), latest or timestamp
//	scan.startup.timestamp         with timestamp: epoch milliseconds or a
//	                               timestamp literal
//	kafka.splits                   splits to reserve, at least the topic's
//	                               partitions when the source is created
//	                               (default: exactly those): partitions the
//	                               topic gains later, up to this count, are
//	                               read as they appear, without a restart
//	scan.topic-partition-discovery.interval
//	                               how often a running job looks for
//	                               partitions beyond the source's splits
//	                               (default 2s; 0 turns it off): finding
//	                               some, its reader fails with SplitsGrown
//	                               and the runtime raises the source's
//	                               split count and restarts the job
//	scan.bounded.mode              unbounded (default) or latest-offset:
//	                               a batch read stops at each partition's
//	                               last stable offset when it opens it
//	                               (cluster mode reads streams this way)
//	properties.group.id            a consumer group the source commits
//	                               each split's offsets to once the
//	                               checkpoint holding them completes
//	                               (informational: positions always come
//	                               from the checkpoint)
//
// Declared columns named _kafka_key (text), _kafka_partition (integer),
// _kafka_offset (bigint) and _kafka_timestamp (timestamp) hold the
// message's metadata; every other column is a field of the message (json:
// the member of that name; csv: the next field, in declared order).
//
// A position is the partition's next offset plus one: 0 is "not started",
// where the startup mode decides, except for a split the topic did not
// have when the source was created: a new partition is read from its
// earliest offset whatever the mode (Flink's partition discovery does the
// same), so nothing written to it before it was found is missed. Readers read committed data only
// (read_committed) and see control records, so a position reaches the
// partition's last stable offset and a checkpoint's catch-up ends.
type kafka struct {
	topic   string
	brokers []string
	csv     bool
	mode    string // earliest, latest, timestamp
	tsMS    int64
	splits  int
	// created is the topic's partition count when the source was
	// created: splits from it on are new partitions, read from earliest.
	created  int
	bounded  bool // scan.bounded.mode = latest-offset
	discover time.Duration
	group    string
	cols     []kafkaCol
	ts       []types.T
	// avro: the registry, the reader schema (as stored) and, per
	// column, the reader field it reads (payload columns only).
	avro       bool
	reg        *registry
	readerJSON string
	readerID   int32
	reader     *avro.RecordSchema
	fields     []string
	derived    []connector.Column
	payload    int // columns read from the message
	schema     *arrow.Schema
}

type kafkaCol struct {
	meta string // "", "key", "partition", "offset", "timestamp"
	name string
	t    types.T
}

// KafkaCreatedKey is the catalog option that keeps the topic's partition
// count when the source was created (StoredOptions).
const KafkaCreatedKey = "__created_splits"

// StoredOptions are options CREATE SOURCE keeps in the catalog beside the
// user's: the topic's partition count at creation.
func (c *kafka) StoredOptions() map[string]string {
	m := map[string]string{KafkaCreatedKey: strconv.Itoa(c.created)}
	if c.avro {
		m[avroSchemaKey] = c.readerJSON
		m[avroSchemaIDKey] = strconv.Itoa(int(c.readerID))
	}
	return m
}

// DerivedColumns are the reader schema's fields (format avro), for CREATE
// SOURCE without a column list.
func (c *kafka) DerivedColumns() []connector.Column { return c.derived }

func init() { connector.Register("kafka", newKafka) }

func newKafka(cols []connector.Column, o *connector.Options) (connector.Connector, error) {
	c := &kafka{}
	var ok bool
	if c.topic, ok = o.Take("topic"); !ok || strings.TrimSpace(c.topic) == "" {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"topic\" is required for connector \"kafka\"")
	}
	servers, ok := o.Take("properties.bootstrap.servers")
	if !ok || strings.TrimSpace(servers) == "" {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"properties.bootstrap.servers\" is required for connector \"kafka\"")
	}
	var err error
	if c.brokers, err = ParseBrokers(servers); err != nil {
		return nil, err
	}
	format, _ := o.Take("format")
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", "json":
	case "csv":
		c.csv = true
	case "avro":
		c.avro = true
	case FormatUpsertAvro, FormatDebeziumAvro:
		// Changelog sources are keyed tables their ingester writes (sql).
		return nil, sqlerr.New(sqlerr.Internal, "a kafka source in format %q is a changelog source, not read by jobs directly", format)
	default:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"format\" must be json, csv or avro for a kafka source, not %q", format)
	}
	regURL, hasReg := o.Take("schema.registry")
	if !hasReg {
		regURL, hasReg = o.Take("schema.registry.url")
	}
	if hasReg != c.avro {
		if c.avro {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"schema.registry\" is required with format 'avro'")
		}
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"schema.registry\" needs format 'avro'")
	}
	storedSchema, hasStored := o.Take(avroSchemaKey)
	storedID, _ := o.Take(avroSchemaIDKey)
	mode, _ := o.Take("scan.startup.mode")
	c.mode = strings.ToLower(strings.TrimSpace(mode))
	tsOpt, hasTS := o.Take("scan.startup.timestamp")
	switch c.mode {
	case "", "earliest", "earliest-offset":
		c.mode = "earliest"
	case "latest", "latest-offset":
		c.mode = "latest"
	case "timestamp":
		if !hasTS {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"scan.startup.timestamp\" is required with scan.startup.mode = 'timestamp'")
		}
		if c.tsMS, err = parseStartupTimestamp(tsOpt); err != nil {
			return nil, err
		}
	default:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"scan.startup.mode\" must be earliest, latest or timestamp, not %q", mode)
	}
	if hasTS && c.mode != "timestamp" {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"scan.startup.timestamp\" needs scan.startup.mode = 'timestamp'")
	}
	if c.avro && len(cols) == 0 {
		// No column list: the reader schema's fields (setupAvro).
		if !hasStored {
			var err error
			if cols, err = c.fetchReader(regURL); err != nil {
				return nil, err
			}
			c.derived = cols
		}
	}
	for _, col := range cols {
		kc := kafkaCol{name: col.Name, t: col.Type}
		var want types.Kind
		switch strings.ToLower(col.Name) {
		case "_kafka_key":
			kc.meta, want = "key", types.Text
		case "_kafka_partition":
			kc.meta = "partition"
		case "_kafka_offset":
			kc.meta = "offset"
		case "_kafka_timestamp":
			kc.meta, want = "timestamp", types.Timestamp
		default:
			if strings.HasPrefix(strings.ToLower(col.Name), "_kafka_") {
				return nil, sqlerr.New(sqlerr.UndefinedColumn, "unknown kafka metadata column %q (_kafka_key, _kafka_partition, _kafka_offset or _kafka_timestamp)", col.Name)
			}
			c.payload++
		}
		switch kc.meta {
		case "partition", "offset":
			if k := col.Type.Kind; k != types.Int32 && k != types.Int64 {
				return nil, sqlerr.New(sqlerr.DatatypeMismatch, "kafka metadata column %q must be INTEGER or BIGINT, not %s", col.Name, col.Type)
			}
		case "key", "timestamp":
			if col.Type.Kind != want {
				return nil, sqlerr.New(sqlerr.DatatypeMismatch, "kafka metadata column %q must be %s, not %s", col.Name, types.T{Kind: want}, col.Type)
			}
		}
		if kc.meta == "" && !c.avro && (col.Type.Kind == types.TextArray || col.Type.Kind == types.Record) {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a kafka source cannot read column %q of type %s", col.Name, col.Type)
		}
		c.cols = append(c.cols, kc)
		c.ts = append(c.ts, col.Type)
	}
	if c.avro {
		if cols, err = c.setupAvro(cols, regURL, storedSchema, storedID, hasStored); err != nil {
			return nil, err
		}
	}
	c.schema = connector.SchemaOf(c.ts)
	splits, err := o.Int("kafka.splits", 0, 1, 4096)
	if err != nil {
		return nil, err
	}
	c.discover = 2 * time.Second
	if v, ok := o.Take("scan.topic_partition_discovery.interval"); ok {
		if c.discover, err = parseInterval(v); err != nil {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"scan.topic-partition-discovery.interval\" must be a duration like '5s' or milliseconds, not %q", v)
		}
	}
	if v, ok := o.Take("scan.bounded.mode"); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "unbounded":
		case "latest-offset":
			c.bounded = true
		default:
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"scan.bounded.mode\" must be unbounded or latest-offset, not %q", v)
		}
	}
	if g, ok := o.Take("properties.group.id"); ok {
		if c.group = strings.TrimSpace(g); c.group == "" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"properties.group.id\" must not be empty")
		}
	}
	created, hasCreated := o.Take(KafkaCreatedKey)
	if v, ok := o.Take(connector.SplitsKey); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, sqlerr.New(sqlerr.Internal, "stored kafka source has %q splits", v)
		}
		c.splits, c.created = n, n
		if hasCreated {
			if m, err := strconv.Atoi(created); err == nil && m >= 0 {
				c.created = min(m, n)
			}
		}
		return c, nil
	}
	// CREATE SOURCE: the topic must exist now; it fixes the split count.
	parts, err := topicPartitions(c.brokers, c.topic)
	if err != nil {
		return nil, err
	}
	c.splits, c.created = max(parts, int(splits)), parts
	return c, nil
}

// parseInterval reads a duration ('5s', '500ms') or plain milliseconds.
func parseInterval(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}

// ParseBrokers splits properties.bootstrap.servers and checks each is host:port.
func ParseBrokers(s string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(s, ",") {
		b = strings.TrimSpace(b)
		i := strings.LastIndexByte(b, ':')
		if i <= 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"properties.bootstrap.servers\": %q is not host:port", b)
		}
		if p, err := strconv.Atoi(b[i+1:]); err != nil || p <= 0 || p > 65535 {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"properties.bootstrap.servers\": %q has no valid port", b)
		}
		out = append(out, b)
	}
	return out, nil
}

func parseStartupTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	d, err := types.ParseText(s, types.TTimestamp)
	if err != nil {
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "option \"scan.startup.timestamp\" must be epoch milliseconds or a timestamp, not %q", s)
	}
	return d.I / 1000, nil
}

// Admin clients, one per broker list, shared by every connector of the
// process (metadata and list-offsets requests only; never closed).
var admins struct {
	sync.Mutex
	m map[string]*kgo.Client
}

// Admin returns the process's shared client for requests to brokers.
func Admin(brokers []string) (*kgo.Client, error) {
	key := strings.Join(brokers, ",")
	admins.Lock()
	defer admins.Unlock()
	if cl := admins.m[key]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequestRetries(2), kgo.RetryTimeout(5*time.Second),
		kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"properties.bootstrap.servers\": %v", err)
	}
	if admins.m == nil {
		admins.m = map[string]*kgo.Client{}
	}
	admins.m[key] = cl
	return cl, nil
}

// adminTimeout bounds one metadata or list-offsets request.
const adminTimeout = 10 * time.Second

// TopicPartitions asks the brokers how many partitions topic has.
func TopicPartitions(brokers []string, topic string) (int, error) {
	return topicPartitions(brokers, topic)
}

// topicPartitions asks the brokers how many partitions topic has: 08000
// if they cannot be reached, 42704 if the topic does not exist.
func topicPartitions(brokers []string, topic string) (int, error) {
	cl, err := Admin(brokers)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, sqlerr.New(sqlerr.ConnectionException, "kafka brokers %s unreachable: %v", strings.Join(brokers, ","), err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return 0, sqlerr.New(sqlerr.UndefinedObject, "kafka topic %q does not exist", topic)
			}
			return 0, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q: %v", topic, err)
		}
		return len(rt.Partitions), nil
	}
	return 0, sqlerr.New(sqlerr.UndefinedObject, "kafka topic %q does not exist", topic)
}

// listOffset asks for a partition's offset: ts -2 earliest, -1 the end (for
// read_committed: the last stable offset), else the first at or after ts
// (ms; the end if none).
func listOffset(cl *kgo.Client, topic string, part int32, ts int64) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = part, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: %v", topic, part, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition != part {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				if errors.Is(err, kerr.UnknownTopicOrPartition) {
					return 0, sqlerr.New(sqlerr.UndefinedObject, "kafka topic %q partition %d does not exist", topic, part)
				}
				return 0, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: %v", topic, part, err)
			}
			if p.Offset < 0 && ts >= 0 {
				return listOffset(cl, topic, part, -1)
			}
			return p.Offset, nil
		}
	}
	return 0, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: no offset in the broker's answer", topic, part)
}

func (c *kafka) Splits() int   { return c.splits }
func (c *kafka) Bounded() bool { return c.bounded }

// End is the partition's last stable offset (as a position), if the broker
// answers; a partition that does not exist yet has none.
func (c *kafka) End(split int) (connector.Position, bool) {
	cl, err := Admin(c.brokers)
	if err != nil {
		return 0, false
	}
	off, err := listOffset(cl, c.topic, int32(split), -1)
	if err != nil {
		return 0, false
	}
	return connector.Position(off + 1), true
}

// Open starts a reader of partition split at pos (0: by the startup mode).
// It fails (08000, 42704) if the broker is unreachable or the topic gone,
// so the job restarts under its strategy. A split beyond the topic's
// current partitions waits for the partition to appear.
func (c *kafka) Open(split int, pos connector.Position, paced bool) (connector.Reader, error) {
	r := &kafkaReader{c: c, part: int32(split), pos: pos, discovered: time.Now()}
	if paced && split == 0 {
		// One reader per job looks for new partitions; a batch query's
		// readers never do.
		r.discover = c.discover
	}
	if c.bounded {
		// The end is where the partition's committed data ends now.
		admin, err := Admin(c.brokers)
		if err != nil {
			return nil, err
		}
		if n, err := topicPartitions(c.brokers, c.topic); err != nil {
			return nil, err
		} else if split < n {
			off, err := listOffset(admin, c.topic, int32(split), -1)
			if err != nil {
				return nil, err
			}
			r.end = connector.Position(off + 1)
		}
	}
	if err := r.start(); err != nil {
		return nil, err
	}
	return r, nil
}

type kafkaReader struct {
	c    *kafka
	part int32
	pos  connector.Position
	cl   *kgo.Client
	// checked is when a split beyond the topic's partitions last looked
	// for its partition.
	checked time.Time
	// discover is how often this reader looks for partitions beyond the
	// source's splits (0: never); discovered is when it last did.
	discover   time.Duration
	discovered time.Time
	bad        []connector.BadMessage
	// lost counts records deleted by the broker before this reader read
	// them, not yet taken by TakeLost.
	lost int64
	// commit holds the position the group commit goroutine sends next.
	commit struct {
		sync.Mutex
		next connector.Position
		busy bool
	}
	// end is, with scan.bounded.mode = latest-offset, the position
	// where the split ends (0: a partition that did not exist).
	end  connector.Position
	bls  []array.Builder
	buf  []*kgo.Record
	scan *msgScanner
	// progs decode avro records, by writer schema id.
	progs map[int32]*avroProg
}

// start resolves a new split's position and starts consuming, unless its
// partition does not exist yet.
func (r *kafkaReader) start() error {
	admin, err := Admin(r.c.brokers)
	if err != nil {
		return err
	}
	n, err := topicPartitions(r.c.brokers, r.c.topic)
	if err != nil {
		return err
	}
	if int(r.part) >= n {
		r.checked = time.Now()
		return nil // not yet: Read looks again
	}
	if r.pos == 0 {
		ts := int64(-2)
		switch {
		case int(r.part) >= r.c.created:
			// A partition the topic gained after the source was
			// created: all of it is new.
		case r.c.mode == "latest":
			ts = -1
		case r.c.mode == "timestamp":
			ts = r.c.tsMS
		}
		off, err := listOffset(admin, r.c.topic, r.part, ts)
		if err != nil {
			return err
		}
		r.pos = connector.Position(off + 1)
	} else if err := r.skipLost(admin); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.c.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.c.topic: {r.part: kgo.NewOffset().At(int64(r.pos) - 1)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return sqlerr.New(sqlerr.InvalidParameterValue, "kafka client: %v", err)
	}
	r.cl = cl
	r.checked = time.Now()
	return nil
}

// skipLost moves the reader past records the broker no longer has
// (deleted by retention or DeleteRecords below the position it resumes
// at): they cannot be read, so the split goes on from the log start, as
// the client does, and its position says so, so a CHECKPOINT's catch-up
// can see the split reach its end. The server log names the lost range.
func (r *kafkaReader) skipLost(admin *kgo.Client) error {
	start, err := listOffset(admin, r.c.topic, r.part, -2)
	if err != nil {
		return err
	}
	if p := connector.Position(start + 1); p > r.pos {
		slog.Warn("kafka source: records past the checkpointed offset were deleted before being read; going on from the log start",
			"topic", r.c.topic, "partition", r.part, "from_offset", int64(r.pos)-1, "log_start_offset", start, "lost", int64(p-r.pos))
		r.lost += int64(p - r.pos)
		r.pos = p
	}
	return nil
}

func (r *kafkaReader) Position() connector.Position { return r.pos }

// TakeLost returns the records skipped because the broker deleted them
// before they were read, since the last call.
func (r *kafkaReader) TakeLost() int64 {
	n := r.lost
	r.lost = 0
	return n
}

func (r *kafkaReader) Close() error {
	if r.cl != nil {
		r.cl.Close()
	}
	for _, b := range r.bls {
		b.Release()
	}
	r.bls = nil
	return nil
}

// CommitPosition commits pos to the source's consumer group
// (properties.group.id), in the background; a commit still under way
// makes this one wait and only the newest waiting position is sent.
// Failures are ignored: the group is informational only.
func (r *kafkaReader) CommitPosition(pos connector.Position) {
	if r.c.group == "" || pos == 0 {
		return
	}
	r.commit.Lock()
	r.commit.next = pos
	busy := r.commit.busy
	r.commit.busy = true
	r.commit.Unlock()
	if !busy {
		go r.commitLoop()
	}
}

func (r *kafkaReader) commitLoop() {
	var last connector.Position
	for {
		r.commit.Lock()
		pos := r.commit.next
		if pos == last {
			r.commit.busy = false
			r.commit.Unlock()
			return
		}
		r.commit.Unlock()
		if err := commitGroupOffset(r.c.brokers, r.c.group, r.c.topic, r.part, int64(pos)-1); err == nil {
			last = pos
		} else {
			r.commit.Lock()
			r.commit.busy = false
			r.commit.Unlock()
			return // the next checkpoint tries again
		}
	}
}

// commitGroupOffset commits offset (the next one to read) of a partition
// to group as a simple (generation -1) commit: streamdb is no member.
func commitGroupOffset(brokers []string, group, topic string, part int32, offset int64) error {
	cl, err := Admin(brokers)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	// v10 names the topic by its id.
	if rt.TopicID, err = topicID(ctx, cl, topic); err != nil {
		return err
	}
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = part, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// topicID asks the brokers for topic's id.
func topicID(ctx context.Context, cl *kgo.Client, topic string) ([16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return [16]byte{}, err
	}
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == topic {
			return rt.TopicID, kerr.ErrorForCode(rt.ErrorCode)
		}
	}
	return [16]byte{}, kerr.UnknownTopicOrPartition
}

// healthEvery is how long a reader that reads nothing waits before it
// asks the broker whether the topic is still there.
const healthEvery = 3 * time.Second

// pollWait is how long one Read waits for messages: short, so the job's
// loop sees barriers promptly.
const pollWait = 20 * time.Millisecond

// Read decodes up to max messages. A message that does not decode is left
// out and reported by TakeBad; the position moves past it either way.
func (r *kafkaReader) Read(mem memory.Allocator, max int) (arrow.RecordBatch, error) {
	if r.c.bounded && (r.end == 0 || r.pos >= r.end) {
		return nil, connector.EOF
	}
	if r.discover > 0 && time.Since(r.discovered) >= r.discover {
		// Before polling, so nothing read is dropped by the failure.
		n, err := topicPartitions(r.c.brokers, r.c.topic)
		if err != nil {
			return nil, err
		}
		r.discovered, r.checked = time.Now(), time.Now()
		if n > r.c.splits {
			return nil, &connector.SplitsGrown{Topic: r.c.topic, Splits: n}
		}
	}
	if r.cl == nil {
		if time.Since(r.checked) < time.Second {
			return nil, nil
		}
		if err := r.start(); err != nil {
			return nil, err
		}
		if r.cl == nil {
			return nil, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pollWait)
	fs := r.cl.PollRecords(ctx, max)
	cancel()
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) {
		if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ferr = err
		}
	})
	if ferr != nil {
		if errors.Is(ferr, kerr.UnknownTopicOrPartition) || errors.Is(ferr, kerr.UnknownTopicID) {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "kafka topic %q partition %d: %v", r.c.topic, r.part, ferr)
		}
		return nil, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: %v", r.c.topic, r.part, ferr)
	}
	r.buf = r.buf[:0]
	past := false // a record at or past a bounded split's end
	fs.EachRecord(func(rec *kgo.Record) {
		if r.c.bounded && connector.Position(rec.Offset+1) >= r.end {
			past = true
			return
		}
		r.buf = append(r.buf, rec)
	})
	if past {
		// Everything before the end has been read by the time this batch is.
		defer func() { r.pos = r.end }()
	}
	if len(r.buf) == 0 {
		// The client retries an unreachable broker quietly: idle for a
		// while, make sure the broker and the topic are there, so a
		// broker that is down fails the job (RESTARTING, with the cause).
		if time.Since(r.checked) >= healthEvery {
			if _, err := topicPartitions(r.c.brokers, r.c.topic); err != nil {
				return nil, err
			}
			if admin, err := Admin(r.c.brokers); err != nil {
				return nil, err
			} else if err := r.skipLost(admin); err != nil {
				return nil, err
			}
			r.checked = time.Now()
		}
		return nil, nil
	}
	r.checked = time.Now()
	if r.c.avro {
		if err := r.writerSchemas(r.buf); err != nil {
			return nil, err
		}
	}
	return r.decodeBatch(mem, r.buf), nil
}

// writerSchemas compiles the writer schemas of recs the reader has not
// met. A registry that cannot be reached fails the read (08000: the job
// restarts and reads the batch again); a schema it does not have, or one
// that does not resolve against the reader schema, makes its records bad.
func (r *kafkaReader) writerSchemas(recs []*kgo.Record) error {
	if r.progs == nil {
		r.progs = map[int32]*avroProg{}
	}
	for _, rec := range recs {
		if rec.Attrs.IsControl() {
			continue
		}
		id, _, err := avroHeader(rec.Value)
		if err != nil || r.progs[id] != nil {
			continue
		}
		var p *avroProg
		if id == r.c.readerID {
			p = compileProg(r.c.readerJSON, id, r.c.cols, r.c.fields, r.c.reader)
		} else {
			w, err := r.c.reg.byID(id)
			if err != nil {
				if sqlerr.As(err).Code == sqlerr.ConnectionException {
					return err
				}
				p = &avroProg{err: sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d: %s", id, sqlerr.As(err).Msg)}
			} else {
				p = compileProg(w, id, r.c.cols, r.c.fields, r.c.reader)
			}
		}
		r.progs[id] = p
	}
	return nil
}

// decodeBatch decodes recs into one batch; messages that do not decode
// are left out and kept for TakeBad. The position moves past every one.
func (r *kafkaReader) decodeBatch(mem memory.Allocator, recs []*kgo.Record) arrow.RecordBatch {
	if r.bls == nil {
		r.bls = make([]array.Builder, len(r.c.ts))
		for i, t := range r.c.ts {
			r.bls[i] = types.NewBuilder(mem, t)
		}
	}
	n := 0
	for _, rec := range recs {
		r.pos = connector.Position(rec.Offset + 2)
		if rec.Attrs.IsControl() {
			continue
		}
		if err := r.decode(rec); err != nil {
			se := sqlerr.As(err)
			r.bad = append(r.bad, connector.BadMessage{Split: int(r.part), Offset: uint64(rec.Offset), Code: se.Code, Err: se.Msg, Raw: string(rec.Value)})
			// The builders may hold part of the bad row: rebuild them
			// from the good rows decoded so far.
			r.dropPartial(n)
			continue
		}
		n++
	}
	cols := make([]arrow.Array, len(r.bls))
	for i, b := range r.bls {
		cols[i] = b.NewArray()
	}
	rec := array.NewRecordBatch(r.c.schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// dropPartial truncates every builder to n values, dropping a half-appended row.
func (r *kafkaReader) dropPartial(n int) { truncateBuilders(r.bls, r.c.ts, n) }

// TakeBad returns the messages left out since the last call.
func (r *kafkaReader) TakeBad() []connector.BadMessage {
	b := r.bad
	r.bad = nil
	return b
}

// decode appends one message's row.
func (r *kafkaReader) decode(rec *kgo.Record) error {
	if r.scan == nil {
		r.scan = newMsgScanner(r.c)
	}
	if r.c.avro {
		// The payload columns first, straight from the record's bytes.
		id, body, err := avroHeader(rec.Value)
		if err == nil {
			err = r.progs[id].decode(body, r.bls)
		}
		if err != nil {
			return err
		}
	} else if r.c.payload > 0 {
		var err error
		if r.c.csv {
			err = r.scan.scanCSV(rec.Value, r.c.payload)
		} else {
			err = r.scan.scanJSON(rec.Value)
		}
		if err != nil {
			return err
		}
	}
	next := 0
	for i, c := range r.c.cols {
		b := r.bls[i]
		switch c.meta {
		case "key":
			if rec.Key == nil {
				b.AppendNull()
			} else {
				b.(*array.StringBuilder).BinaryBuilder.Append(rec.Key)
			}
		case "partition":
			b.(*array.Int64Builder).Append(int64(rec.Partition))
		case "offset":
			b.(*array.Int64Builder).Append(rec.Offset)
		case "timestamp":
			b.(*array.Int64Builder).Append(rec.Timestamp.UnixMicro())
		default:
			if r.c.avro {
				continue
			}
			if err := r.scan.appendSpan(b, r.c.ts[i], rec.Value, r.scan.spans[next], r.c.csv); err != nil {
				return sqlerr.New(sqlerr.As(err).Code, "column %q: %s", c.name, sqlerr.As(err).Msg)
			}
			next++
		}
	}
	return nil
}
