package sqllogic

import (
	"context"
	"fmt"
	"math/big"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/tests/schemareg"
	"github.com/twmb/franz-go/pkg/kgo"
)

const userKey = `{"type": "record", "name": "UserKey", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}`

const userValue = `{"type": "record", "name": "User", "namespace": "shop", "fields": [
	{"name": "id", "type": "long"},
	{"name": "region", "type": "string"},
	{"name": "balance", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
	{"name": "score", "type": ["null", "int"], "default": null}]}`

// upsertUser is one upsert-avro row as the test keeps it.
type upsertUser struct {
	region  string
	balance int64 // cents
	score   *int32
}

func (u upsertUser) values(id int64) string {
	score := "NULL"
	if u.score != nil {
		score = fmt.Sprint(*u.score)
	}
	return fmt.Sprintf("(%d, '%s', %s, %s)", id, u.region, big.NewRat(u.balance, 100).FloatString(2), score)
}

// upsertFeed produces random upserts and deletes of users with hamba/avro
// and keeps the final state they make.
type upsertFeed struct {
	t        *testing.T
	cl       *kgo.Client
	kid, vid int
	rng      *rand.Rand
	state    map[int64]upsertUser
}

func (f *upsertFeed) produce(n int) {
	f.t.Helper()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		id := int64(f.rng.Intn(60))
		key, err := schemareg.Encode(f.kid, userKey, map[string]any{"id": id})
		if err != nil {
			f.t.Fatal(err)
		}
		rec := &kgo.Record{Topic: "users", Key: key}
		if f.rng.Intn(4) == 0 {
			delete(f.state, id) // a tombstone (of a key that may not be there)
		} else {
			u := upsertUser{region: []string{"eu", "us", "ap"}[f.rng.Intn(3)], balance: int64(f.rng.Intn(200000)) - 50000}
			var score any
			if f.rng.Intn(3) > 0 {
				s := int32(f.rng.Intn(100))
				u.score, score = &s, s
			}
			v, err := schemareg.Encode(f.vid, userValue, map[string]any{"id": id, "region": u.region,
				"balance": big.NewRat(u.balance, 100), "score": score})
			if err != nil {
				f.t.Fatal(err)
			}
			rec.Value = v
			f.state[id] = u
		}
		recs = append(recs, rec)
	}
	if err := f.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		f.t.Fatal(err)
	}
}

// oracle replaces the rows of a plain table with the feed's state.
func (f *upsertFeed) oracle(c *pgx.Conn) {
	f.t.Helper()
	execAll(f.t, c, "DROP TABLE IF EXISTS users_oracle",
		"CREATE TABLE users_oracle (id BIGINT, region TEXT, balance NUMERIC(12,2), score INT)")
	var rows []string
	for id, u := range f.state {
		rows = append(rows, u.values(id))
	}
	if len(rows) > 0 {
		execAll(f.t, c, "INSERT INTO users_oracle VALUES "+strings.Join(rows, ", "))
	}
}

const usersAgg = `SELECT region, count(*) AS n, sum(balance) AS b, sum(score) AS s, count(score) AS cs FROM %s GROUP BY region`

// sameUsers waits for the source and the view over it to equal the
// same queries over the oracle.
func (f *upsertFeed) same(c *pgx.Conn) {
	f.t.Helper()
	f.oracle(c)
	waitQuery(f.t, c, "SELECT * FROM users ORDER BY id", strings.Join(oracleRows(f.t, c, "SELECT * FROM users_oracle ORDER BY id"), "\n"))
	waitQuery(f.t, c, "SELECT * FROM users_by_region ORDER BY region", strings.Join(oracleRows(f.t, c, fmt.Sprintf(usersAgg, "users_oracle")+" ORDER BY region"), "\n"))
}

// TestKafkaUpsertAvro: a source in format upsert-avro over a topic that a
// real Avro client (hamba/avro) writes upserts and tombstones to is a
// changelog keyed by the message key: the source and a GROUP BY view over
// it equal the final state of the records, across a kill -9; bad
// messages are skipped and named; the errors at CREATE.
func TestKafkaUpsertAvro(t *testing.T) {
	_, addr := startKafka(t, 3, "users", "nokey")
	reg := schemareg.Start()
	defer reg.Close()
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	with := func(topic string) string {
		return fmt.Sprintf("WITH (connector = 'kafka', topic = '%s', properties.bootstrap.servers = '%s', format = 'upsert-avro', schema.registry = '%s')", topic, addr, reg.URL)
	}
	kid, err := reg.Register("users-key", userKey)
	if err != nil {
		t.Fatal(err)
	}
	vid, err := reg.Register("users-value", userValue)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register("nokey-value", userValue); err != nil {
		t.Fatal(err)
	}
	// Errors at CREATE: no key subject (42704), a column list without
	// the key (42P10), a PRIMARY KEY other than the message key (0A000),
	// another startup mode (0A000), a WATERMARK (0A000).
	_, err = c.Exec(ctx, "CREATE SOURCE bad "+with("nokey"))
	if e := wantCode(t, "no key subject", err, "42704"); !strings.Contains(e.Message, "nokey-key") {
		t.Errorf("message %q does not name the subject", e.Message)
	}
	_, err = c.Exec(ctx, "CREATE SOURCE bad (region TEXT) "+with("users"))
	wantCode(t, "no key column", err, "42P10")
	_, err = c.Exec(ctx, "CREATE SOURCE bad (id BIGINT, region TEXT, PRIMARY KEY (region)) "+with("users"))
	wantCode(t, "other key", err, "0A000")
	_, err = c.Exec(ctx, "CREATE SOURCE bad "+strings.Replace(with("users"), "format", "scan.startup.mode = 'latest', format", 1))
	wantCode(t, "latest", err, "0A000")

	f := &upsertFeed{t: t, cl: kafkaClient(t, addr), kid: kid, vid: vid, rng: rand.New(rand.NewSource(7)), state: map[int64]upsertUser{}}
	f.produce(300) // before the source: read from the topic's start
	execAll(t, c, "CREATE SOURCE users "+with("users"),
		"CREATE MATERIALIZED VIEW users_by_region AS "+fmt.Sprintf(usersAgg, "users"))
	// The columns: the key's, then the value's others; the key is the
	// table's primary key.
	rows, err := c.Query(ctx, "SELECT * FROM users LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fd := range rows.FieldDescriptions() {
		names = append(names, fmt.Sprintf("%s:%d", fd.Name, fd.DataTypeOID))
	}
	rows.Close()
	if got := strings.Join(names, " "); got != "id:20 region:25 balance:1700 score:23" {
		t.Fatalf("columns %s", got)
	}
	waitQuery(t, c, "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'users'::regclass", "id")
	f.same(c)

	// Clients cannot write it.
	_, err = c.Exec(ctx, "DELETE FROM users WHERE id = 1")
	wantCode(t, "delete", err, "42809")

	f.produce(500)
	// A message that is not Avro is skipped and named in SHOW JOBS.
	if err := f.cl.ProduceSync(ctx, &kgo.Record{Topic: "users", Key: []byte("x"), Value: []byte("{}")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f.same(c)
	if r := job(t, c, "users"); r.state != "RUNNING" || !strings.Contains(r.lastErr, "22P03: 1 bad messages skipped") {
		t.Fatalf("users ingester: %+v", r)
	}

	// kill -9 and restart: the stored offsets go on, nothing lost or doubled.
	execAll(t, c, "CHECKPOINT")
	f.produce(200)
	srv.Kill9()
	f.produce(200)
	srv.Restart(t)
	c = srv.Conn(t)
	f.produce(100)
	f.same(c)

	// DROP SOURCE drops it (with its view).
	execAll(t, c, "DROP SOURCE users CASCADE")
	_, err = c.Exec(ctx, "SELECT * FROM users")
	wantCode(t, "dropped", err, "42P01")
}

// orderValue is the row record of TestKafkaDebeziumAvro's envelope.
const orderValue = `{"type": "record", "name": "Value", "fields": [
	{"name": "id", "type": "long"},
	{"name": "customer", "type": "string"},
	{"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
	{"name": "placed", "type": {"type": "long", "logicalType": "timestamp-micros"}},
	{"name": "note", "type": ["null", "string"], "default": null}]}`

// orderEnvelope is Debezium's envelope of orderValue.
var orderEnvelope = `{"type": "record", "name": "Envelope", "namespace": "pg.public.orders", "fields": [
	{"name": "before", "type": ["null", ` + orderValue + `], "default": null},
	{"name": "after", "type": ["null", "Value"], "default": null},
	{"name": "source", "type": {"type": "record", "name": "Source", "fields": [{"name": "lsn", "type": "long"}, {"name": "table", "type": "string"}]}},
	{"name": "op", "type": "string"},
	{"name": "ts_ms", "type": ["null", "long"], "default": null}]}`

const orderKey = `{"type": "record", "name": "Key", "namespace": "pg.public.orders", "fields": [{"name": "id", "type": "long"}]}`

type order struct {
	customer string
	cents    int64
	placed   time.Time
	note     *string
}

func (o order) avro(id int64) map[string]any {
	var note any
	if o.note != nil {
		note = *o.note
	}
	// As a branch of the envelope's union, by its full name.
	return map[string]any{"pg.public.orders.Value": map[string]any{"id": id, "customer": o.customer, "amount": big.NewRat(o.cents, 100), "placed": o.placed, "note": note}}
}

// TestKafkaDebeziumAvro: a source in format debezium-avro over Debezium
// envelopes (c, r, u, d, and the tombstones Debezium writes after a
// delete) written with hamba/avro is a changelog keyed by the key
// subject's fields: a view over it equals the final state. A
// debezium-avro sink of that view, read back and decoded, folds to the
// view, every update and delete carrying the row before.
func TestKafkaDebeziumAvro(t *testing.T) {
	_, addr := startKafka(t, 2, "orders", "totals_dbz")
	reg := schemareg.Start()
	defer reg.Close()
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	vid, err := reg.Register("orders-value", orderEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	with := fmt.Sprintf("WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.servers = '%s', format = 'debezium-avro', schema.registry = '%s')", addr, reg.URL)
	// No key subject and no PRIMARY KEY: 42P16.
	_, err = c.Exec(ctx, "CREATE SOURCE orders "+with)
	wantCode(t, "no key", err, "42P16")
	kid, err := reg.Register("orders-key", orderKey)
	if err != nil {
		t.Fatal(err)
	}

	cl := kafkaClient(t, addr)
	rng := rand.New(rand.NewSource(11))
	state := map[int64]order{}
	base := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	lsn := int64(0)
	produce := func(n int, snapshot bool) {
		t.Helper()
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			id := int64(rng.Intn(80))
			key, err := schemareg.Encode(kid, orderKey, map[string]any{"id": id})
			if err != nil {
				t.Fatal(err)
			}
			old, had := state[id]
			lsn++
			ev := map[string]any{"before": nil, "after": nil, "source": map[string]any{"lsn": lsn, "table": "orders"}, "ts_ms": lsn}
			o := order{customer: fmt.Sprintf("c%d", rng.Intn(6)), cents: int64(rng.Intn(100000)), placed: base.Add(time.Duration(rng.Intn(1e6)) * time.Second)}
			if rng.Intn(2) == 0 {
				s := fmt.Sprintf("n%d", rng.Intn(9))
				o.note = &s
			}
			del := had && rng.Intn(4) == 0
			switch {
			case del:
				ev["op"], ev["before"] = "d", old.avro(id)
				delete(state, id)
			case had:
				ev["op"], ev["before"], ev["after"] = "u", old.avro(id), o.avro(id)
				state[id] = o
			default:
				ev["op"], ev["after"] = "c", o.avro(id)
				if snapshot {
					ev["op"] = "r"
				}
				state[id] = o
			}
			v, err := schemareg.Encode(vid, orderEnvelope, ev)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, &kgo.Record{Topic: "orders", Key: key, Value: v})
			if del {
				recs = append(recs, &kgo.Record{Topic: "orders", Key: key}) // Debezium's tombstone
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	same := func() {
		t.Helper()
		execAll(t, c, "DROP TABLE IF EXISTS orders_oracle",
			"CREATE TABLE orders_oracle (id BIGINT, customer TEXT, amount NUMERIC(10,2), placed TIMESTAMPTZ, note TEXT)")
		var rows []string
		for id, o := range state {
			note := "NULL"
			if o.note != nil {
				note = "'" + *o.note + "'"
			}
			rows = append(rows, fmt.Sprintf("(%d, '%s', %d.%02d, TIMESTAMPTZ '%s', %s)", id, o.customer, o.cents/100, o.cents%100, o.placed.Format("2006-01-02 15:04:05+00"), note))
		}
		if len(rows) > 0 {
			execAll(t, c, "INSERT INTO orders_oracle VALUES "+strings.Join(rows, ", "))
		}
		waitQuery(t, c, "SELECT * FROM orders ORDER BY id", strings.Join(oracleRows(t, c, "SELECT * FROM orders_oracle ORDER BY id"), "\n"))
		waitQuery(t, c, "SELECT * FROM order_totals ORDER BY customer", strings.Join(oracleRows(t, c,
			"SELECT customer, count(*), sum(amount), max(placed), count(note) FROM orders_oracle GROUP BY customer ORDER BY customer"), "\n"))
	}
	produce(100, true) // the snapshot (op r)
	execAll(t, c, "CREATE SOURCE orders "+with,
		"CREATE MATERIALIZED VIEW order_totals AS SELECT customer, count(*) AS n, sum(amount) AS total, max(placed) AS last, count(note) AS notes FROM orders GROUP BY customer",
		fmt.Sprintf("CREATE SINK totals_out FROM order_totals WITH (connector = 'kafka', topic = 'totals_dbz', properties.bootstrap.servers = '%s', format = 'debezium-avro', schema.registry = '%s')", addr, reg.URL))
	produce(600, false)
	same()

	produce(200, false)
	same()
	execAll(t, c, "CHECKPOINT")

	// The sink's topic: each record's key is the customer; c and u carry
	// the row after, u and d the row before, which must be the row the
	// topic had for the key.
	// unwrap is a record hamba decoded from a union: {full name: record}.
	unwrap := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		if inner, ok := m["streamdb.order_totals"].(map[string]any); ok && len(m) == 1 {
			return inner
		}
		return m
	}
	str := func(m map[string]any) string {
		if m == nil {
			return "nil"
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			v := m[k]
			if r, ok := v.(*big.Rat); ok {
				v = r.FloatString(2)
			}
			if tm, ok := v.(time.Time); ok {
				v = tm.UTC().Format("2006-01-02 15:04:05+00")
			}
			parts = append(parts, fmt.Sprint(v))
		}
		return strings.Join(parts, " ")
	}
	want := oracleRows(t, c, "SELECT customer, last, n, notes, total FROM order_totals ORDER BY customer")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		folded := map[string]map[string]any{}
		var bad []string
		for _, r := range readTopic(t, addr, "totals_dbz") {
			var k map[string]any
			if err := reg.Decode([]byte(r.key), &k); err != nil {
				t.Fatalf("key %q: %v", r.key, err)
			}
			var ev map[string]any
			if err := reg.Decode([]byte(r.value), &ev); err != nil {
				t.Fatalf("value %q: %v", r.value, err)
			}
			cust := fmt.Sprint(k["customer"])
			before, after := unwrap(ev["before"]), unwrap(ev["after"])
			op := ev["op"].(string)
			if (op == "u" || op == "d") && str(before) != str(folded[cust]) {
				bad = append(bad, fmt.Sprintf("%s %s: before %s, the topic had %s", op, cust, str(before), str(folded[cust])))
			}
			if op == "c" && folded[cust] != nil {
				bad = append(bad, fmt.Sprintf("c %s over %s", cust, str(folded[cust])))
			}
			switch op {
			case "c", "u":
				folded[cust] = after
			case "d":
				delete(folded, cust)
			default:
				t.Fatalf("op %q", op)
			}
		}
		if len(bad) > 0 {
			t.Fatalf("before images: %s", strings.Join(bad, "\n"))
		}
		var got []string
		for _, m := range folded {
			got = append(got, str(m))
		}
		sort.Strings(got)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink topic folded:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// kill -9: the source goes on from its stored offsets.
	produce(150, false)
	srv.Kill9()
	produce(150, false)
	srv.Restart(t)
	c = srv.Conn(t)
	same()
}
