package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka topics read as changelogs: format 'upsert-avro' (the message key,
// an Avro record, is the row's key and the value the row; a null value
// deletes the key) and 'debezium-avro' (Debezium's envelope: before,
// after and op c/u/d/r). Such a source is stored as a keyed table whose
// log only its ingester (sql) writes, as a PostgreSQL CDC source is: the
// ingester reads every partition (Changelog.Open), nets each poll's rows
// into the table's rows by key (plan.KeyedRows.ApplyUpstream: an upsert
// of a held key becomes an update pair, a delete carries the whole held
// row) and appends them with every partition's next offset in one synced
// batch. So views over it retract, and kill -9 loses and doubles nothing.

// The changelog formats.
const (
	FormatUpsertAvro   = "upsert-avro"
	FormatDebeziumAvro = "debezium-avro"
)

// Catalog options that keep the key reader schema (upsert-avro).
const (
	avroKeySchemaKey   = "__avro_key_schema"
	avroKeySchemaIDKey = "__avro_key_schema_id"
)

// IsChangelog reports whether a source's options make it a kafka
// changelog source (format upsert-avro or debezium-avro).
func IsChangelog(opts map[string]string) bool {
	var conn, format string
	for k, v := range opts {
		switch connector.NormKey(k) {
		case "connector":
			conn = v
		case "format":
			format = v
		}
	}
	f := strings.ToLower(strings.TrimSpace(format))
	return strings.EqualFold(strings.TrimSpace(conn), "kafka") && (f == FormatUpsertAvro || f == FormatDebeziumAvro)
}

// Changelog is a kafka changelog source: its columns, key, and the reader
// schemas it resolves every writer schema against.
type Changelog struct {
	Format  string
	Cols    []connector.Column
	Key     []int // indexes into Cols
	topic   string
	brokers []string
	reg     *registry
	// keyJSON/keyID/keyRec: the key record (upsert-avro);
	// valJSON/valID/valRec: the value (debezium-avro: the envelope);
	// rowRec: the row record (upsert-avro: the value, debezium-avro: the
	// envelope's after).
	keyJSON, valJSON string
	keyID, valID     int32
	keyRec, valRec   *avro.RecordSchema
	rowRec           *avro.RecordSchema
	// kcols, vcols: the columns as the key's and the row's programs see
	// them (meta "-": from the other record); fields: each column's field.
	kcols, vcols []kafkaCol
	fields       []string
}

// changelogOptions reads a changelog source's options; stored are the
// catalog's __ options.
func changelogOptions(opts map[string]string) (c *Changelog, regURL string, stored map[string]string, err error) {
	c = &Changelog{}
	stored = map[string]string{}
	for k, v := range opts {
		switch nk := connector.NormKey(k); nk {
		case "connector":
		case "topic":
			c.topic = strings.TrimSpace(v)
		case "properties.bootstrap.servers":
			if c.brokers, err = ParseBrokers(v); err != nil {
				return nil, "", nil, err
			}
		case "format":
			c.Format = strings.ToLower(strings.TrimSpace(v))
		case "schema.registry", "schema.registry.url":
			regURL = v
		case "scan.startup.mode":
			if m := strings.ToLower(strings.TrimSpace(v)); m != "earliest" && m != "earliest_offset" && m != "earliest-offset" {
				return nil, "", nil, sqlerr.New(sqlerr.FeatureNotSupported, "a kafka source in format %s reads its topic from the earliest offset (its rows are the whole topic netted by key), not %q", c.Format, v)
			}
		default:
			if strings.HasPrefix(nk, "__") {
				stored[nk] = v
				continue
			}
			return nil, "", nil, sqlerr.New(sqlerr.InvalidParameterValue, "option %q is not known for a kafka source in format %s", k, opts["format"])
		}
	}
	switch {
	case c.topic == "":
		return nil, "", nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"topic\" is required for connector \"kafka\"")
	case len(c.brokers) == 0:
		return nil, "", nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"properties.bootstrap.servers\" is required for connector \"kafka\"")
	case strings.TrimSpace(regURL) == "":
		return nil, "", nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"schema.registry\" is required with format '%s'", c.Format)
	}
	if c.reg, err = schemaRegistry(regURL); err != nil {
		return nil, "", nil, err
	}
	return c, regURL, stored, nil
}

// envelopeRow is the row record of a Debezium envelope: the record of its
// after field (a union of null and the record).
func envelopeRow(env *avro.RecordSchema) (*avro.RecordSchema, error) {
	var row *avro.RecordSchema
	hasOp := false
	for _, f := range env.Fields() {
		switch f.Name() {
		case "after":
			row = unionRecord(f.Type())
		case "op":
			hasOp = deref(f.Type()).Type() == avro.String
		}
	}
	if row == nil || !hasOp {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "avro schema %s is no Debezium envelope (fields before and after, records or null, and op, a string)", env.FullName())
	}
	return row, nil
}

// unionRecord is the record of a field of type record or [null, record].
func unionRecord(s avro.Schema) *avro.RecordSchema {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		for _, b := range u.Types() {
			if r, ok := deref(b).(*avro.RecordSchema); ok {
				return r
			}
		}
		return nil
	}
	r, _ := s.(*avro.RecordSchema)
	return r
}

// DescribeChangelog checks a changelog source at CREATE SOURCE: the topic
// exists, the registry has its subjects (upsert-avro: <topic>-key and
// <topic>-value; debezium-avro: <topic>-value, and <topic>-key unless a
// PRIMARY KEY names the key), and the declared columns (none: every
// field) are fields of them. It returns the source and the options to
// store beside the user's.
func DescribeChangelog(opts map[string]string, declared []connector.Column, pk []string) (*Changelog, map[string]string, error) {
	c, _, _, err := changelogOptions(opts)
	if err != nil {
		return nil, nil, err
	}
	if _, err := topicPartitions(c.brokers, c.topic); err != nil {
		return nil, nil, err
	}
	fetch := func(subject string) (*avro.RecordSchema, subjectSchema, error) {
		ss, err := c.reg.latest(subject)
		if err != nil {
			return nil, ss, err
		}
		rec, err := readerRecord(ss.Schema)
		if err != nil {
			return nil, ss, sqlerr.New(sqlerr.As(err).Code, "subject %s: %s", subject, sqlerr.As(err).Msg)
		}
		return rec, ss, nil
	}
	vrec, vss, err := fetch(c.topic + "-value")
	if err != nil {
		return nil, nil, err
	}
	c.valRec, c.valJSON, c.valID = vrec, vss.Schema, vss.ID
	var keyNames []string
	if c.Format == FormatUpsertAvro {
		krec, kss, err := fetch(c.topic + "-key")
		if err != nil {
			return nil, nil, err
		}
		c.keyRec, c.keyJSON, c.keyID = krec, kss.Schema, kss.ID
		c.rowRec = vrec
		for _, f := range krec.Fields() {
			keyNames = append(keyNames, f.Name())
		}
		if len(pk) > 0 && !sameNames(pk, keyNames) {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "the key of a kafka source in format upsert-avro is its message key's fields (%s): leave PRIMARY KEY out or name those", strings.Join(keyNames, ", "))
		}
	} else {
		if c.rowRec, err = envelopeRow(vrec); err != nil {
			return nil, nil, err
		}
		if keyNames = pk; len(keyNames) == 0 {
			krec, _, err := fetch(c.topic + "-key")
			if err != nil {
				if sqlerr.As(err).Code == sqlerr.UndefinedObject {
					return nil, nil, sqlerr.New(sqlerr.InvalidTableDefinition, "a kafka source in format debezium-avro needs a key: declare a PRIMARY KEY, or register the key schema under subject %s-key", c.topic)
				}
				return nil, nil, err
			}
			for _, f := range krec.Fields() {
				keyNames = append(keyNames, f.Name())
			}
		}
	}
	if len(declared) == 0 {
		if c.keyRec != nil {
			for _, f := range c.keyRec.Fields() {
				if err := c.deriveField(f); err != nil {
					return nil, nil, err
				}
			}
		}
		for _, f := range c.rowRec.Fields() {
			if c.keyRec != nil && readerField(c.keyRec, f.Name()) != nil {
				continue // the key's copy of a key field
			}
			if err := c.deriveField(f); err != nil {
				return nil, nil, err
			}
		}
	} else {
		for _, col := range declared {
			rec := c.rowRec
			if c.keyRec != nil && readerField(c.keyRec, col.Name) != nil {
				rec = c.keyRec
			}
			if _, err := checkAvroColumn(rec, col); err != nil {
				return nil, nil, err
			}
			c.Cols = append(c.Cols, col)
		}
	}
	for _, k := range keyNames {
		i := c.colIndex(k)
		if i < 0 {
			return nil, nil, sqlerr.New(sqlerr.InvalidColumnReference, "key field %q is no column of the source: the column list must include the key", k)
		}
		if k := c.Cols[i].Type.Kind; k == types.Record || k == types.TextArray {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "key field %q is of type %s: the key of a kafka changelog source must be of scalar types", c.Cols[i].Name, c.Cols[i].Type)
		}
		c.Key = append(c.Key, i)
	}
	c.setup()
	stored := map[string]string{avroSchemaKey: c.valJSON, avroSchemaIDKey: strconv.Itoa(int(c.valID))}
	if c.keyRec != nil {
		stored[avroKeySchemaKey], stored[avroKeySchemaIDKey] = c.keyJSON, strconv.Itoa(int(c.keyID))
	}
	return c, stored, nil
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || strings.EqualFold(x, y)
		}
		if !found {
			return false
		}
	}
	return true
}

func (c *Changelog) deriveField(f *avro.Field) error {
	t, err := avroColType(f.Name(), f.Type(), nil)
	if err != nil {
		return err
	}
	c.Cols = append(c.Cols, connector.Column{Name: f.Name(), Type: t})
	return nil
}

func (c *Changelog) colIndex(name string) int {
	fold := -1
	for i, col := range c.Cols {
		if col.Name == name {
			return i
		}
		if fold < 0 && strings.EqualFold(col.Name, name) {
			fold = i
		}
	}
	return fold
}

// setup maps each column to its reader field, in the key or the row.
func (c *Changelog) setup() {
	c.fields = make([]string, len(c.Cols))
	c.kcols = make([]kafkaCol, len(c.Cols))
	c.vcols = make([]kafkaCol, len(c.Cols))
	for i, col := range c.Cols {
		kc := kafkaCol{name: col.Name, t: col.Type}
		skip := kafkaCol{meta: "-", name: col.Name, t: col.Type}
		if c.keyRec != nil {
			if f := readerField(c.keyRec, col.Name); f != nil {
				c.fields[i], c.kcols[i], c.vcols[i] = f.Name(), kc, skip
				continue
			}
		}
		c.kcols[i], c.vcols[i] = skip, kc
		if f := readerField(c.rowRec, col.Name); f != nil {
			c.fields[i] = f.Name()
		}
	}
}

// OpenChangelog is a stored changelog source: its options (with the
// stored reader schemas), columns and key.
func OpenChangelog(opts map[string]string, cols []connector.Column, key []int) (*Changelog, error) {
	c, _, stored, err := changelogOptions(opts)
	if err != nil {
		return nil, err
	}
	c.Cols, c.Key = cols, key
	parse := func(k, idk string) (*avro.RecordSchema, string, int32, error) {
		s, ok := stored[k]
		if !ok {
			return nil, "", 0, sqlerr.New(sqlerr.Internal, "kafka source has no stored %s", k)
		}
		rec, err := readerRecord(s)
		if err != nil {
			return nil, "", 0, err
		}
		id, _ := strconv.Atoi(stored[idk])
		return rec, s, int32(id), nil
	}
	if c.valRec, c.valJSON, c.valID, err = parse(avroSchemaKey, avroSchemaIDKey); err != nil {
		return nil, err
	}
	if c.Format == FormatUpsertAvro {
		if c.keyRec, c.keyJSON, c.keyID, err = parse(avroKeySchemaKey, avroKeySchemaIDKey); err != nil {
			return nil, err
		}
		c.rowRec = c.valRec
	} else if c.rowRec, err = envelopeRow(c.valRec); err != nil {
		return nil, err
	}
	c.setup()
	return c, nil
}

// Failed is a permanent failure of a changelog source (a Debezium
// truncate, which cannot be netted by key): the ingester stops.
type Failed struct{ Msg string }

func (e *Failed) Error() string { return e.Msg }

// ChangelogStream reads every partition of a changelog source's topic.
type ChangelogStream struct {
	c     *Changelog
	cl    *kgo.Client
	next  []int64 // per partition, the next offset to read (0: the start)
	parts int
	// checked: when the topic's partitions were last counted.
	checked time.Time
	kprogs  map[int32]*avroProg
	vprogs  map[int32]*avroProg
	envs    map[int32]*envProg
	ts      []types.T
	bls     []array.Builder
	ops     *array.Int64Builder
	bad     []connector.BadMessage
}

// EncodePositions and decodePositions are a stream's positions as stored
// with the log: each partition's next offset.
func encodePositions(next []int64) []byte {
	b := binary.AppendUvarint(nil, uint64(len(next)))
	for _, o := range next {
		b = binary.AppendUvarint(b, uint64(o))
	}
	return b
}

func decodePositions(b []byte) ([]int64, error) {
	if len(b) == 0 {
		return nil, nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<16 {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "stored kafka positions do not decode")
	}
	b = b[k:]
	out := make([]int64, n)
	for i := range out {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, sqlerr.New(sqlerr.DataCorrupted, "stored kafka positions do not decode")
		}
		out[i], b = int64(v), b[k:]
	}
	return out, nil
}

// Open starts reading every partition from the stored positions (nil:
// every partition from its start); a partition without one starts at its
// earliest offset.
func (c *Changelog) Open(pos []byte) (*ChangelogStream, error) {
	next, err := decodePositions(pos)
	if err != nil {
		return nil, err
	}
	parts, err := topicPartitions(c.brokers, c.topic)
	if err != nil {
		return nil, err
	}
	for len(next) < parts {
		next = append(next, 0)
	}
	offs := map[int32]kgo.Offset{}
	for p := 0; p < parts; p++ {
		offs[int32(p)] = kgo.NewOffset().At(next[p])
		if next[p] == 0 {
			offs[int32(p)] = kgo.NewOffset().AtStart()
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "kafka client: %v", err)
	}
	s := &ChangelogStream{c: c, cl: cl, next: next, parts: parts, checked: time.Now(),
		kprogs: map[int32]*avroProg{}, vprogs: map[int32]*avroProg{}, envs: map[int32]*envProg{}}
	for _, col := range c.Cols {
		s.ts = append(s.ts, col.Type)
		s.bls = append(s.bls, types.NewBuilder(memory.DefaultAllocator, col.Type))
	}
	s.ops = array.NewInt64Builder(memory.DefaultAllocator)
	return s, nil
}

// Close stops the stream.
func (s *ChangelogStream) Close() {
	s.cl.Close()
	for _, b := range s.bls {
		b.Release()
	}
	s.ops.Release()
}

// TakeBad returns the messages left out since the last call.
func (s *ChangelogStream) TakeBad() []connector.BadMessage {
	b := s.bad
	s.bad = nil
	return b
}

// changelogPoll bounds one poll.
const changelogPoll = 200 * time.Millisecond

// Next polls the topic: it returns the changelog batch of what it read
// (the source's columns then an op; nil if nothing decoded) and the
// positions after it, moved false if it read nothing. A topic that gained
// partitions makes it fail, so the ingester opens the stream again and
// reads them from their start.
func (s *ChangelogStream) Next(ctx context.Context) (arrow.RecordBatch, []byte, bool, error) {
	if time.Since(s.checked) >= healthEvery {
		n, err := topicPartitions(s.c.brokers, s.c.topic)
		if err != nil {
			return nil, nil, false, err
		}
		if n > s.parts {
			return nil, nil, false, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q has grown to %d partitions: reading them from their start", s.c.topic, n)
		}
		s.checked = time.Now()
	}
	pctx, cancel := context.WithTimeout(ctx, changelogPoll)
	fs := s.cl.PollRecords(pctx, 10000)
	cancel()
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) {
		if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ferr = err
		}
	})
	if ferr != nil {
		if errors.Is(ferr, kerr.UnknownTopicOrPartition) || errors.Is(ferr, kerr.UnknownTopicID) {
			return nil, nil, false, sqlerr.New(sqlerr.UndefinedObject, "kafka topic %q: %v", s.c.topic, ferr)
		}
		return nil, nil, false, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q: %v", s.c.topic, ferr)
	}
	var recs []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	if len(recs) == 0 {
		return nil, nil, false, ctx.Err()
	}
	if err := s.writerSchemas(recs); err != nil {
		return nil, nil, false, err
	}
	n := 0
	for _, r := range recs {
		if int(r.Partition) < len(s.next) {
			s.next[r.Partition] = r.Offset + 1
		}
		ok, err := s.decode(r)
		if err != nil {
			var f *Failed
			if errors.As(err, &f) {
				return nil, nil, false, err
			}
			se := sqlerr.As(err)
			s.bad = append(s.bad, connector.BadMessage{Split: int(r.Partition), Offset: uint64(r.Offset), Code: se.Code, Err: se.Msg, Raw: string(r.Value)})
			truncateBuilders(s.bls, s.ts, n)
			continue
		}
		if ok {
			n++
		}
	}
	pos := encodePositions(s.next)
	if n == 0 {
		return nil, pos, true, nil
	}
	ts := append(append([]types.T(nil), s.ts...), types.TInt64)
	cols := make([]arrow.Array, 0, len(ts))
	for _, b := range s.bls {
		cols = append(cols, b.NewArray())
	}
	cols = append(cols, s.ops.NewArray())
	return connector.NewBatch(connector.SchemaOf(ts), cols, n), pos, true, nil
}

// writerSchemas compiles the programs of the writer schema ids in recs
// not met yet; a registry that cannot be reached fails the poll (the
// ingester restarts and reads the records again).
func (s *ChangelogStream) writerSchemas(recs []*kgo.Record) error {
	fetch := func(id int32, reader *avro.RecordSchema, readerJSON string, readerID int32) (*avro.RecordSchema, error) {
		js := readerJSON
		if id != readerID {
			var err error
			if js, err = s.c.reg.byID(id); err != nil {
				if sqlerr.As(err).Code == sqlerr.ConnectionException {
					return nil, err
				}
				return nil, sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d: %s", id, sqlerr.As(err).Msg)
			}
		}
		ws, err := parseAvro(js)
		if err != nil {
			return nil, sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d does not parse: %v", id, err)
		}
		wrec, ok := deref(ws).(*avro.RecordSchema)
		if !ok {
			return nil, sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d is a %s, not a record", id, ws.Type())
		}
		return wrec, nil
	}
	bad := func(err error) error {
		if sqlerr.As(err).Code == sqlerr.ConnectionException {
			return err
		}
		return nil
	}
	for _, r := range recs {
		if s.c.Format == FormatUpsertAvro && r.Key != nil {
			if id, _, err := avroHeader(r.Key); err == nil && s.kprogs[id] == nil {
				w, err := fetch(id, s.c.keyRec, s.c.keyJSON, s.c.keyID)
				if err != nil {
					if e := bad(err); e != nil {
						return e
					}
					s.kprogs[id] = &avroProg{err: err}
				} else {
					s.kprogs[id] = compileRec(w, id, s.c.kcols, s.c.fields, s.c.keyRec)
				}
			}
		}
		if r.Value == nil {
			continue
		}
		id, _, err := avroHeader(r.Value)
		if err != nil || s.vprogs[id] != nil || s.envs[id] != nil {
			continue
		}
		w, err := fetch(id, s.c.valRec, s.c.valJSON, s.c.valID)
		if s.c.Format == FormatUpsertAvro {
			if err != nil {
				if e := bad(err); e != nil {
					return e
				}
				s.vprogs[id] = &avroProg{err: err}
			} else {
				s.vprogs[id] = compileRec(w, id, s.c.vcols, s.c.fields, s.c.rowRec)
			}
			continue
		}
		if err != nil {
			if e := bad(err); e != nil {
				return e
			}
			s.envs[id] = &envProg{err: err}
		} else {
			s.envs[id] = compileEnv(w, id, s.c)
		}
	}
	return nil
}

// decode appends one message's row, if it has one (a Debezium tombstone
// has none).
func (s *ChangelogStream) decode(r *kgo.Record) (bool, error) {
	if s.c.Format == FormatDebeziumAvro {
		if r.Value == nil {
			return false, nil // the tombstone after a delete, for compaction
		}
		id, body, err := avroHeader(r.Value)
		if err != nil {
			return false, err
		}
		op, err := s.envs[id].decode(body, s.bls)
		if err != nil {
			return false, err
		}
		s.ops.Append(int64(op))
		return true, nil
	}
	if r.Key == nil {
		return false, sqlerr.New(sqlerr.InvalidBinaryRep, "message has no key (format upsert-avro)")
	}
	id, body, err := avroHeader(r.Key)
	if err != nil {
		return false, sqlerr.New(sqlerr.InvalidBinaryRep, "key: %s", sqlerr.As(err).Msg)
	}
	if err := s.kprogs[id].decode(body, s.bls); err != nil {
		return false, sqlerr.New(sqlerr.As(err).Code, "key: %s", sqlerr.As(err).Msg)
	}
	if r.Value == nil {
		for i, kc := range s.c.vcols {
			if kc.meta == "" {
				s.bls[i].AppendNull()
			}
		}
		s.ops.Append(int64(connector.OpDelete))
		return true, nil
	}
	if id, body, err = avroHeader(r.Value); err == nil {
		err = s.vprogs[id].decode(body, s.bls)
	}
	if err != nil {
		return false, err
	}
	s.ops.Append(int64(connector.OpInsert))
	return true, nil
}

// truncateBuilders truncates every builder to n values, dropping a
// half-appended row.
func truncateBuilders(bls []array.Builder, ts []types.T, n int) {
	for i, b := range bls {
		if b.Len() == n {
			continue
		}
		a := b.NewArray()
		t := ts[i]
		for k := 0; k < n; k++ {
			types.AppendDatum(b, types.DatumAt(a, k, t), t)
		}
		a.Release()
	}
}

// envProg decodes Debezium envelopes of one writer schema: the before and
// after images are spans of the message, the op picks one, and the row
// program reads it into the builders.
type envProg struct {
	steps []envStep
	row   *avroProg
	err   error
}

type envStep struct {
	what byte // 'b' before, 'a' after, 'o' op, 0 skipped
	n    *avNode
}

func compileEnv(w *avro.RecordSchema, id int32, c *Changelog) *envProg {
	p := &envProg{}
	memo := map[avro.Schema]*avNode{}
	var row *avro.RecordSchema
	for _, f := range w.Fields() {
		st := envStep{n: compileSkip(f.Type(), memo)}
		switch f.Name() {
		case "before", "after":
			r := unionRecord(f.Type())
			if r == nil {
				p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d: field %q is no record", id, f.Name())
				return p
			}
			if row == nil || f.Name() == "after" {
				row = r
			}
			st.what = f.Name()[0]
		case "op":
			if st.n.kind != avro.String {
				p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d: field op is no string", id)
				return p
			}
			st.what = 'o'
		}
		p.steps = append(p.steps, st)
	}
	if row == nil {
		p.err = sqlerr.New(sqlerr.InvalidBinaryRep, "writer schema id %d is no Debezium envelope", id)
		return p
	}
	p.row = compileRec(row, id, c.vcols, c.fields, c.rowRec)
	return p
}

// decode reads an envelope: its image's row into the builders, and the op.
func (p *envProg) decode(body []byte, bls []array.Builder) (connector.Op, error) {
	if p == nil {
		return 0, sqlerr.New(sqlerr.Internal, "avro writer schema not resolved")
	}
	if p.err != nil {
		return 0, p.err
	}
	d := avDec{b: body}
	var spans [2][2]int // before, after: start and end (start < 0: null)
	spans[0][0], spans[1][0] = -1, -1
	var op []byte
	for _, st := range p.steps {
		switch st.what {
		case 'b', 'a':
			sp := &spans[0]
			if st.what == 'a' {
				sp = &spans[1]
			}
			n := st.n
			if n.kind == avro.Union {
				k, err := d.long()
				if err != nil {
					return 0, err
				}
				if k < 0 || k >= int64(len(n.kids)) {
					return 0, errAvro("union branch %d of %d", k, len(n.kids))
				}
				if n = n.kids[k]; n.kind == avro.Null {
					continue
				}
			}
			sp[0] = d.i
			if err := d.skip(n); err != nil {
				return 0, err
			}
			sp[1] = d.i
		case 'o':
			b, err := d.bytes()
			if err != nil {
				return 0, err
			}
			op = b
		default:
			if err := d.skip(st.n); err != nil {
				return 0, err
			}
		}
	}
	if d.i != len(d.b) {
		return 0, errAvro("%d bytes after the record", len(d.b)-d.i)
	}
	img, cop := 1, connector.OpInsert
	switch string(op) {
	case "c", "r", "u":
	case "d":
		img, cop = 0, connector.OpDelete
	case "t":
		return 0, &Failed{Msg: "the topic has a Debezium truncate event: a changelog source cannot net it by key; drop the source and create it again"}
	default:
		return 0, sqlerr.New(sqlerr.InvalidBinaryRep, "debezium op %q is none of c, u, d, r", op)
	}
	sp := spans[img]
	if sp[0] < 0 {
		which := "after"
		if img == 0 {
			which = "before"
		}
		return 0, sqlerr.New(sqlerr.InvalidBinaryRep, "debezium op %q has no %s image", op, which)
	}
	return cop, p.row.decode(body[sp[0]:sp[1]], bls)
}
