package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A Kafka sink (CREATE SINK ... WITH (connector = 'kafka')) writes a
// view's changes to a topic. It is a connector.TwoPhaseSink, which the
// runtime (exec.SinkRunner) drives: it sends only the changes a durable
// checkpoint covers, in Kafka transactions committed after that
// checkpoint is synced. Each transaction carries, in
// every record's headers, the changelog position it ends at (streamdb.pos)
// and the sink's name (streamdb.sink), so the commit of the records and of
// the sink's position are one atomic act in Kafka. After a crash the sink
// re-inits its transactional id (the broker aborts a transaction left
// open), reads the position of its last committed transaction back from
// the topic and commits again, in new transactions, the changes from there
// to the end of what the last durable checkpoint prepared. See
// docs/decisions/2026-12-06-sink-two-phase-commit.md.

// kafkaSinkOpts are a Kafka sink's WITH options, validated.
type kafkaSinkOpts struct {
	topic   string
	brokers []string
	format  string    // upsert-json, debezium-json, json, avro, upsert-avro
	reg     *registry // the avro formats' schema registry
}

func parseKafkaSinkOpts(opts map[string]string) (kafkaSinkOpts, error) {
	var o kafkaSinkOpts
	seen := map[string]bool{}
	get := func(k string) (string, bool) {
		for ok, v := range opts {
			if strings.ReplaceAll(strings.ToLower(ok), "-", "_") == k {
				seen[ok] = true
				return strings.TrimSpace(v), true
			}
		}
		return "", false
	}
	if c, _ := get("connector"); !strings.EqualFold(c, "kafka") {
		if c == "" {
			return o, sqlerr.New(sqlerr.InvalidParameterValue, "option \"connector\" is required (kafka)")
		}
		return o, sqlerr.New(sqlerr.InvalidParameterValue, "option \"connector\": unknown sink connector %q (kafka)", c)
	}
	var ok bool
	if o.topic, ok = get("topic"); !ok || o.topic == "" {
		return o, sqlerr.New(sqlerr.InvalidParameterValue, "option \"topic\" is required for a kafka sink")
	}
	servers, ok := get("properties.bootstrap.servers")
	if !ok || servers == "" {
		return o, sqlerr.New(sqlerr.InvalidParameterValue, "option \"properties.bootstrap.servers\" is required for a kafka sink")
	}
	var err error
	if o.brokers, err = ParseBrokers(servers); err != nil {
		return o, err
	}
	f, _ := get("format")
	switch o.format = strings.ToLower(f); o.format {
	case "":
		o.format = "upsert-json"
	case "upsert-json", "debezium-json", "json":
	case "avro", "upsert-avro", "debezium-avro":
		if _, err := avroSinkFormat(o.format); err != nil {
			return o, err
		}
		u, ok := get("schema.registry")
		if !ok {
			u, ok = get("schema.registry.url")
		}
		if !ok {
			return o, sqlerr.New(sqlerr.InvalidParameterValue, "option \"schema.registry\" is required with format %q", o.format)
		}
		if o.reg, err = schemaRegistry(u); err != nil {
			return o, err
		}
	default:
		return o, sqlerr.New(sqlerr.InvalidParameterValue, "option \"format\" must be upsert-json, debezium-json, json, avro, upsert-avro or debezium-avro, not %q", f)
	}
	for k := range opts {
		if !seen[k] && !strings.HasPrefix(k, "__") {
			return o, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized option %q for a kafka sink", k)
		}
	}
	return o, nil
}

// CheckSink validates a sink's WITH options against its view (22023 for
// a bad option, 0A000 for format 'json' over a view that is not
// append-only) and that the topic exists (42704) on reachable brokers
// (08000).
func CheckSink(opts map[string]string, view string, appendOnly bool) error {
	o, err := parseKafkaSinkOpts(opts)
	if err != nil {
		return err
	}
	if (o.format == "json" || o.format == "avro") && !appendOnly {
		return sqlerr.New(sqlerr.FeatureNotSupported, "format '%s' needs an append-only view, and %q updates or deletes rows: use format 'upsert-%s'", o.format, view, o.format)
	}
	if o.reg != nil {
		if err := checkSinkRegistry(o.reg); err != nil {
			return err
		}
	}
	_, err = TopicPartitions(o.brokers, o.topic)
	return err
}

// kafkaSink is the Kafka connector of a sink.
type kafkaSink struct {
	spec connector.SinkSpec
	o    kafkaSinkOpts
	gen  string
	cl   *kgo.Client
	open bool // a transaction (or, at least once, records) is written
	// avroVal, avroKey: the registered schema ids (avro formats).
	avroVal, avroKey int32
	// rowSkip skips a row record in a debezium-avro envelope (resync).
	rowSkip *avNode
}

// NewSink makes the Kafka connector of a sink, which the runtime drives.
func NewSink(spec connector.SinkSpec) (connector.TwoPhaseSink, error) {
	o, err := parseKafkaSinkOpts(spec.Options)
	if err != nil {
		return nil, err
	}
	return &kafkaSink{spec: spec, o: o, gen: spec.Options[connector.SinkGenOption]}, nil
}

// TransactionalID is the sink's transactional id: stable per sink and
// split (a changelog has one partition, so one split).
func (s *kafkaSink) TransactionalID() string {
	return fmt.Sprintf("streamdb-sink-%s-%d-0", s.spec.Name, s.spec.ID)
}

// Recover connects, inits the transactional id (the broker aborts a
// transaction the previous incarnation left open, fencing it) and reads
// the position of the sink's last committed transaction from the topic.
func (s *kafkaSink) Recover(ctx context.Context) (uint64, bool, error) {
	s.Close()
	if err := s.Check(ctx); err != nil {
		return 0, false, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(s.o.brokers...), kgo.DefaultProduceTopic(s.o.topic),
		kgo.RecordRetries(10), kgo.ProducerLinger(0)}
	if !s.spec.AtLeastOnce {
		opts = append(opts, kgo.TransactionalID(s.TransactionalID()), kgo.TransactionTimeout(time.Minute))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, false, sqlerr.New(sqlerr.InvalidParameterValue, "kafka client: %v", err)
	}
	s.cl = cl
	if !s.spec.AtLeastOnce {
		ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, _, err := cl.ProducerID(ictx)
		cancel()
		if err != nil {
			return 0, false, sqlerr.New(sqlerr.ConnectionException, "kafka sink %s: init transactional id %s: %v", s.spec.Name, s.TransactionalID(), err)
		}
	}
	pos, found, err := LastSinkPosition(ctx, s.o.brokers, s.o.topic, s.spec.Name, s.gen)
	if err != nil || found || s.gen == "" || (s.o.format != "json" && s.o.format != "avro") {
		return pos, found, err
	}
	pos, err = s.jsonResume(ctx)
	return pos, err == nil, err
}

// Check makes sure the broker and the topic are there.
func (s *kafkaSink) Check(context.Context) error {
	_, err := TopicPartitions(s.o.brokers, s.o.topic)
	return err
}

// Close closes the client.
func (s *kafkaSink) Close() {
	if s.cl != nil {
		s.cl.Close()
		s.cl, s.open = nil, false
	}
}

// Write encodes t and produces its records in a transaction, which every
// record's headers tie to the changelog position t ends at.
func (s *kafkaSink) Write(ctx context.Context, t *connector.SinkTxn) (int, error) {
	enc := newSinkEncoder(s.spec.Name, s.gen, s.o.format, s.spec.View, s.spec.Columns, s.spec.KeyCols)
	if s.o.reg != nil {
		if err := s.registerSinkSchemas(); err != nil {
			return 0, err
		}
		enc.avroVal, enc.avroKey = s.avroVal, s.avroKey
	}
	enc.reset(t.To)
	var err error
	switch {
	case t.Snapshot && t.Resync:
		err = s.resync(ctx, enc, t)
	case t.Snapshot:
		err = t.Rows(ctx, func(rec arrow.RecordBatch) error { return enc.addRows(rec, nil) })
	default:
		err = t.Rows(ctx, enc.add)
	}
	if err != nil {
		return 0, err
	}
	enc.flush()
	return len(enc.recs), s.produce(ctx, enc.recs)
}

// produce sends recs in a new transaction (or, at least once, plainly).
func (s *kafkaSink) produce(ctx context.Context, recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	name := s.spec.Name
	if !s.spec.AtLeastOnce {
		if err := s.cl.BeginTransaction(); err != nil {
			return sqlerr.New(sqlerr.ConnectionException, "kafka sink %s: begin transaction: %v", name, err)
		}
	}
	s.open = true
	var (
		mu   sync.Mutex
		perr error
	)
	for _, r := range recs {
		s.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if perr == nil {
					perr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := s.cl.Flush(ctx); err != nil && perr == nil {
		perr = err
	}
	if perr != nil {
		if !s.spec.AtLeastOnce {
			_ = s.cl.EndTransaction(context.Background(), kgo.TryAbort)
		}
		s.open = false
		return sqlerr.New(sqlerr.ConnectionException, "kafka sink %s: produce to %s: %v", name, s.o.topic, perr)
	}
	return nil
}

// Commit commits the transaction Write began.
func (s *kafkaSink) Commit(context.Context) error {
	if !s.open {
		return nil
	}
	s.open = false
	if s.spec.AtLeastOnce {
		return nil
	}
	if err := s.cl.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "kafka sink %s: commit: %v", s.spec.Name, err)
	}
	return nil
}

// After RESTORE of its view (or of a view it depends on) a sink starts
// over: the view's changes before the restore belong to an abandoned
// timeline, so, as a rebuilt dependent view does, the sink starts from a
// snapshot of the restored view (prepared by a checkpoint, as any of its
// transactions). For upsert-json and debezium-json it sends (resync), in
// one transaction ending at the snapshot's changelog position, the
// compensating changes that take what a reader of the topic has (every
// committed record of this sink, SinkState) to the view's rows: an upsert
// (debezium: c or u) for each row that is missing or different, a
// tombstone (debezium: d) for each key the view no longer has. A format
// 'json' topic cannot take rows back: the sink goes on from where its
// previous generation got to (jsonResume), so the changes that generation
// had not sent are sent and the rows the restored view reads again are
// sent again (as Flink's sinks do when a job is restored). The
// transaction's records carry the new generation, so a crash before its
// commit redoes this, and one after it finds the position.

// jsonResume is where a 'json' sink goes on after RESTORE: where the
// previous generation got to (its last transaction in the topic, else the
// stored position), so the changes it had not sent yet are not skipped;
// else where the restore began.
func (s *kafkaSink) jsonResume(ctx context.Context) (uint64, error) {
	prev := ""
	if g, err := strconv.Atoi(s.gen); err == nil && g > 1 {
		prev = strconv.Itoa(g - 1)
	}
	pos, found, err := LastSinkPosition(ctx, s.o.brokers, s.o.topic, s.spec.Name, prev)
	if err != nil || found {
		return pos, err
	}
	if pos, ok, err := s.spec.StoredPosition(); err != nil || ok {
		return pos, err
	}
	from, err := strconv.ParseUint(s.spec.Options[connector.SinkFromOption], 10, 64)
	if err != nil {
		return 0, sqlerr.New(sqlerr.DataCorrupted, "sink %s: no changelog position for generation %s", s.spec.Name, s.gen)
	}
	return from, nil
}

// resync encodes into enc the changes that take the topic's state to the
// rows of the view in t's snapshot.
func (s *kafkaSink) resync(ctx context.Context, enc *sinkEncoder, t *connector.SinkTxn) error {
	have, err := SinkState(ctx, s.o.brokers, s.o.topic, s.spec.Name)
	if err != nil {
		return err
	}
	debez := s.o.format == "debezium-json" || s.o.format == FormatDebeziumAvro
	// after is a debezium record's row (nil: a delete).
	after := func(v []byte) []byte {
		if s.o.format == FormatDebeziumAvro {
			return avroAfter(v, s.rowSkip)
		}
		var ev struct {
			After json.RawMessage `json:"after"`
		}
		if json.Unmarshal(v, &ev) != nil || string(ev.After) == "null" {
			return nil
		}
		return ev.After
	}
	err = t.Rows(ctx, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			key, row := enc.keyOf(rec, i), enc.rowOf(rec, i)
			if debez {
				row = enc.debeziumRow(rec, i)
			}
			old, had := have[string(key)]
			delete(have, string(key))
			if !debez {
				if !had || string(old) != string(row) {
					enc.emit(key, row)
				}
				continue
			}
			switch prev := after(old); {
			case !had || prev == nil:
				enc.emit(key, enc.debezium(nil, row, "c"))
			case string(prev) != string(row):
				enc.emit(key, enc.debezium(prev, row, "u"))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(have))
	for k := range have {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !debez {
			enc.emit([]byte(k), nil)
		} else if prev := after(have[k]); prev != nil {
			enc.emit([]byte(k), enc.debezium(prev, nil, "d"))
		}
	}
	return nil
}

// sinkEncoder turns changelog blocks into Kafka records.
type sinkEncoder struct {
	name, gen string
	format    string
	view      string
	keyCols   []int
	ts        []types.T
	headers   []kgo.RecordHeader
	recs      []*kgo.Record
	before    []byte // debezium: a pending update_before row
	buf       []byte
	names     [][]byte // each column's name as a JSON string
	// avroVal, avroKey: the avro formats' registered schema ids.
	avroVal, avroKey int32
	// beforeKey: an upsert format's pending update_before key.
	beforeKey []byte
}

// flush ends a transaction's records: a pending update_before is a delete.
func (e *sinkEncoder) flush() {
	if e.before != nil {
		e.emit(e.beforeKey, e.debezium(e.before, nil, "d"))
		e.before, e.beforeKey = nil, nil
	}
	if e.beforeKey != nil {
		e.emit(e.beforeKey, nil)
		e.beforeKey = nil
	}
}

// keyOf and rowOf encode row i's key and whole row in the sink's format.
func (e *sinkEncoder) keyOf(rec arrow.RecordBatch, i int) []byte {
	if e.avroVal != 0 {
		return e.avroRow(rec, i, e.keyCols, e.avroKey)
	}
	return e.object(rec, i, e.keyCols)
}

func (e *sinkEncoder) rowOf(rec arrow.RecordBatch, i int) []byte {
	if e.avroVal != 0 {
		return e.avroRow(rec, i, nil, e.avroVal)
	}
	return e.object(rec, i, nil)
}

func newSinkEncoder(name, gen, format, view string, cols []connector.Column, keyCols []int) *sinkEncoder {
	e := &sinkEncoder{name: name, gen: gen, format: format, view: view, keyCols: keyCols}
	for _, c := range cols {
		e.ts = append(e.ts, c.Type)
		name, _ := json.Marshal(c.Name)
		e.names = append(e.names, name)
	}
	if len(e.keyCols) == 0 {
		for i := range cols {
			e.keyCols = append(e.keyCols, i)
		}
	}
	return e
}

// reset starts a transaction's records, which end at changelog position to.
func (e *sinkEncoder) reset(to uint64) {
	e.recs = e.recs[:0]
	e.before, e.beforeKey = nil, nil
	e.headers = []kgo.RecordHeader{{Key: "streamdb.sink", Value: []byte(e.name)},
		{Key: "streamdb.pos", Value: []byte(strconv.FormatUint(to, 10))}}
	if e.gen != "" {
		e.headers = append(e.headers, kgo.RecordHeader{Key: "streamdb.gen", Value: []byte(e.gen)})
	}
}

// add encodes a changelog block: the view's columns, then the op.
func (e *sinkEncoder) add(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	opCol := rec.Column(int(rec.NumCols()) - 1)
	ops := make([]connector.Op, n)
	for i := 0; i < n; i++ {
		ops[i] = connector.Op(types.DatumAt(opCol, i, types.TInt64).I)
	}
	return e.addRows(rec, ops)
}

func (e *sinkEncoder) addRows(rec arrow.RecordBatch, ops []connector.Op) error {
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		op := connector.OpInsert
		if ops != nil {
			op = ops[i]
		}
		switch e.format {
		case "avro":
			if op.Sign() < 0 {
				return sqlerr.New(sqlerr.FeatureNotSupported, "sink %s: format 'avro' got a retraction from view %s", e.name, e.view)
			}
			e.emit(nil, e.rowOf(rec, i))
			continue
		case "upsert-avro", "upsert-json":
			// An update's before with no after for its key (a group a
			// HAVING or a filter over an aggregate no longer passes) is a
			// delete.
			key := e.keyOf(rec, i)
			if e.beforeKey != nil && (op != connector.OpUpdateAfter || string(e.beforeKey) != string(key)) {
				e.emit(e.beforeKey, nil)
			}
			e.beforeKey = nil
			switch op {
			case connector.OpUpdateBefore:
				e.beforeKey = key
			case connector.OpDelete:
				e.emit(key, nil)
			default:
				e.emit(key, e.rowOf(rec, i))
			}
			continue
		}
		switch e.format {
		case "json":
			if op.Sign() < 0 {
				return sqlerr.New(sqlerr.FeatureNotSupported, "sink %s: format 'json' got a retraction from view %s", e.name, e.view)
			}
			e.emit(nil, e.object(rec, i, nil))
		case "debezium-json", "debezium-avro":
			key, row := e.keyOf(rec, i), e.debeziumRow(rec, i)
			// An update's before with no after for its key is a delete.
			if e.before != nil && (op != connector.OpUpdateAfter || string(e.beforeKey) != string(key)) {
				e.emit(e.beforeKey, e.debezium(e.before, nil, "d"))
				e.before, e.beforeKey = nil, nil
			}
			switch op {
			case connector.OpUpdateBefore:
				e.before, e.beforeKey = row, key
			case connector.OpUpdateAfter:
				if e.before != nil {
					e.emit(key, e.debezium(e.before, row, "u"))
					e.before, e.beforeKey = nil, nil
				} else {
					e.emit(key, e.debezium(nil, row, "c"))
				}
			case connector.OpDelete:
				e.emit(key, e.debezium(row, nil, "d"))
			default:
				e.emit(key, e.debezium(nil, row, "c"))
			}
		}
	}
	return nil
}

// debeziumRow is row i as a debezium envelope's before or after.
func (e *sinkEncoder) debeziumRow(rec arrow.RecordBatch, i int) []byte {
	if e.avroVal != 0 {
		return e.avroBody(rec, i)
	}
	return e.object(rec, i, nil)
}

// debezium frames an envelope in the sink's format.
func (e *sinkEncoder) debezium(before, after []byte, op string) []byte {
	if e.avroVal != 0 {
		return e.debeziumAvro(before, after, op)
	}
	return debezium(before, after, op)
}

func debezium(before, after []byte, op string) []byte {
	b := []byte(`{"before":`)
	if before == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, before...)
	}
	b = append(b, `,"after":`...)
	if after == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, after...)
	}
	return append(b, `,"op":"`+op+`"}`...)
}

func (e *sinkEncoder) emit(key, val []byte) {
	e.recs = append(e.recs, &kgo.Record{Key: key, Value: val, Headers: e.headers})
}

// object encodes row i's columns cols (nil: all) as a JSON object.
func (e *sinkEncoder) object(rec arrow.RecordBatch, i int, cols []int) []byte {
	b := []byte{'{'}
	first := true
	put := func(c int) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(append(b, e.names[c]...), ':')
		b = appendJSONDatum(b, types.DatumAt(rec.Column(c), i, e.ts[c]), e.ts[c])
	}
	if cols == nil {
		for c := range e.ts {
			put(c)
		}
	} else {
		for _, c := range cols {
			put(c)
		}
	}
	return append(b, '}')
}

// appendJSONDatum writes a value as JSON: numbers and booleans as such,
// everything else as its PostgreSQL text in a string.
func appendJSONDatum(b []byte, d types.Datum, t types.T) []byte {
	if d.Null {
		return append(b, "null"...)
	}
	switch t.Kind {
	case types.Bool, types.Int16, types.Int32, types.Int64:
		return types.AppendText(b, d, t)
	case types.Float32, types.Float64, types.Numeric:
		txt := types.AppendText(nil, d, t)
		if _, err := strconv.ParseFloat(string(txt), 64); err == nil && !strings.ContainsAny(string(txt), "IN") {
			return append(b, txt...)
		}
		q, _ := json.Marshal(string(txt))
		return append(b, q...)
	}
	q, _ := json.Marshal(types.TextOf(d, t))
	return append(b, q...)
}
