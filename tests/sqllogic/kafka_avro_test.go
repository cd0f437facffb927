package sqllogic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/tests/schemareg"
	"github.com/twmb/franz-go/pkg/kgo"
)

const clickV1 = `{"type": "record", "name": "Click", "namespace": "shop", "fields": [
	{"name": "user_id", "type": "long"},
	{"name": "url", "type": ["null", "string"], "default": null},
	{"name": "n", "type": "int"},
	{"name": "amount", "type": "double"},
	{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}`

// clickV2 is a BACKWARD-compatible next version: url is gone, device is
// new (with a default), the enum has a new symbol and n is written first.
const clickV2 = `{"type": "record", "name": "Click", "namespace": "shop", "fields": [
	{"name": "n", "type": "int"},
	{"name": "user_id", "type": "long"},
	{"name": "device", "type": "string", "default": "web"},
	{"name": "amount", "type": "double"},
	{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY", "SHARE"]}},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}`

// clickV3 adds a field to clickV2.
var clickV3 = strings.Replace(clickV2, `{"name": "amount"`, `{"name": "app", "type": "string", "default": "web"},
	{"name": "amount"`, 1)

// avroFeed produces Avro clicks and keeps the same rows in a plain table
// (the oracle): the view over the Avro source must equal the batch query
// over the table.
type avroFeed struct {
	t     *testing.T
	reg   *schemareg.Registry
	cl    *kgo.Client
	base  time.Time
	next  int
	kinds []string
}

// produce writes clicks [f.next, f.next+n) with schema version v (1 or 2)
// and inserts the rows the source must read into the oracle table.
func (f *avroFeed) produce(c *pgx.Conn, v, n int) {
	f.t.Helper()
	schema := map[int]string{1: clickV1, 2: clickV2, 3: clickV3}[v]
	id, err := f.reg.Register("clicks-value", schema)
	if err != nil {
		f.t.Fatal(err)
	}
	var recs []*kgo.Record
	var rows []string
	for i := f.next; i < f.next+n; i++ {
		kinds := []string{"VIEW", "BUY"}
		if v >= 2 {
			kinds = append(kinds, "SHARE")
		}
		m := map[string]any{"user_id": int64(i % 10), "n": i % 5, "amount": float64(i%13) * 0.5,
			"kind": kinds[i%len(kinds)], "ts": f.base.Add(time.Duration(i) * time.Second)}
		url := "NULL" // v2 has no url: the reader's default
		if v == 1 {
			m["url"] = fmt.Sprintf("/p/%d", i%7)
			url = fmt.Sprintf("'/p/%d'", i%7)
		} else {
			m["device"] = "ios"
		}
		if v == 3 {
			m["app"] = "shop"
		}
		b, err := schemareg.Encode(id, schema, m)
		if err != nil {
			f.t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: "clicks", Key: []byte(fmt.Sprint(i % 10)), Value: b})
		rows = append(rows, fmt.Sprintf("(%d, %s, %d, %v, '%s', TIMESTAMPTZ '%s+00')", i%10, url, i%5, float64(i%13)*0.5,
			kinds[i%len(kinds)], f.base.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05")))
	}
	f.next += n
	if err := f.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		f.t.Fatal(err)
	}
	execAll(f.t, c, "INSERT INTO oracle VALUES "+strings.Join(rows, ", "))
}

const avroAgg = `SELECT user_id, count(*) AS c, sum(n) AS sn, sum(amount) AS sa, count(url) AS cu,
	count(DISTINCT kind) AS k, max(ts) AS mt FROM %s GROUP BY user_id`

// oracleRows runs a batch query, its rows as waitQuery prints them.
func oracleRows(t *testing.T, c *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := plainRows(c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

// sameAsOracle waits for the view to equal the batch query over the oracle table.
func sameAsOracle(t *testing.T, c *pgx.Conn) {
	t.Helper()
	want := oracleRows(t, c, fmt.Sprintf(avroAgg, "oracle")+" ORDER BY user_id")
	if len(want) != 10 {
		t.Fatalf("oracle: %q", want)
	}
	waitQuery(t, c, "SELECT * FROM clicks_by_user ORDER BY user_id", strings.Join(want, "\n"))
}

// TestKafkaAvroSource: a Kafka source in Avro with a schema registry,
// through the wire: columns from the subject's schema, a view over it
// equal to the batch query over the same records, a newer compatible
// writer schema mid-stream, kill -9 and restart (the stored reader
// schema keeps the columns), bad records under the error policy, and the
// errors at CREATE.
func TestKafkaAvroSource(t *testing.T) {
	_, addr := startKafka(t, 2, "clicks", "other")
	reg := schemareg.Start()
	defer reg.Close()
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	f := &avroFeed{t: t, reg: reg, cl: kafkaClient(t, addr), base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}

	with := func(topic, url string) string {
		return fmt.Sprintf("WITH (connector = 'kafka', topic = '%s', properties.bootstrap.servers = '%s', format = 'avro', schema.registry = '%s')", topic, addr, url)
	}
	// Errors at CREATE: no subject (42704), no registry (08000), a
	// registry without format avro and the reverse (22023).
	_, err := c.Exec(ctx, "CREATE SOURCE clicks "+with("clicks", reg.URL))
	if e := wantCode(t, "no subject", err, "42704"); !strings.Contains(e.Message, "clicks-value") {
		t.Errorf("message %q does not name the subject", e.Message)
	}
	if _, err := reg.Register("clicks-value", clickV1); err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(ctx, "CREATE SOURCE clicks "+with("clicks", "http://127.0.0.1:1"))
	wantCode(t, "registry down", err, "08000")
	_, err = c.Exec(ctx, fmt.Sprintf("CREATE SOURCE clicks (v BIGINT) WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.servers = '%s', format = 'avro')", addr))
	wantCode(t, "no registry", err, "22023")
	// A column list narrows the schema's fields; they must exist and fit.
	_, err = c.Exec(ctx, "CREATE SOURCE bad (nope BIGINT) "+with("clicks", reg.URL))
	wantCode(t, "no such field", err, "42703")
	_, err = c.Exec(ctx, "CREATE SOURCE bad (url BIGINT) "+with("clicks", reg.URL))
	wantCode(t, "wrong type", err, "42804")

	execAll(t, c,
		"CREATE TABLE oracle (user_id BIGINT, url TEXT, n INT, amount DOUBLE PRECISION, kind TEXT, ts TIMESTAMPTZ)",
		"CREATE SOURCE clicks "+with("clicks", reg.URL),
		"CREATE SOURCE narrow (kind TEXT, n BIGINT, _kafka_partition INT) "+with("clicks", reg.URL),
		"SET job.error_policy = 'skip'",
		"CREATE MATERIALIZED VIEW clicks_by_user AS "+fmt.Sprintf(avroAgg, "clicks"),
		"CREATE MATERIALIZED VIEW narrow_v AS SELECT kind, sum(n) AS sn, count(DISTINCT _kafka_partition) AS parts FROM narrow GROUP BY kind")
	// The derived columns, in the schema's order, with their types.
	cols := mustRows(t, c, "SELECT user_id, url, n, amount, kind, ts FROM clicks LIMIT 0")
	if len(cols) != 0 {
		t.Fatalf("LIMIT 0: %q", cols)
	}
	rows, err := c.Query(ctx, "SELECT * FROM clicks LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fd := range rows.FieldDescriptions() {
		names = append(names, fmt.Sprintf("%s:%d", fd.Name, fd.DataTypeOID))
	}
	rows.Close()
	if got := strings.Join(names, " "); got != "user_id:20 url:25 n:23 amount:701 kind:25 ts:1184" {
		t.Fatalf("columns %s", got)
	}

	f.produce(c, 1, 500)
	sameAsOracle(t, c)

	// A newer compatible schema mid-stream: the source keeps reading with
	// its reader schema (url from its default, device skipped).
	f.produce(c, 2, 300)
	f.produce(c, 1, 100)
	sameAsOracle(t, c)
	waitQuery(t, c, "SELECT kind, sn, parts FROM narrow_v ORDER BY kind", strings.Join(oracleRows(t, c,
		"SELECT kind, sum(n), 2 FROM oracle GROUP BY kind ORDER BY kind"), "\n"))

	// Bad records (not the wire format, an unknown schema id, a truncated
	// record) are recorded with 22P03 and left out.
	bad := [][]byte{[]byte(`{"user_id": 1}`), {0, 0, 0, 0, 99, 2}, {0, 0, 0, 0, 1, 0x80}}
	for _, b := range bad {
		if err := f.cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Value: b}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	f.produce(c, 1, 50)
	sameAsOracle(t, c)
	waitQuery(t, c, "SELECT count(*), min(error_code), max(error_code) FROM streamdb_job_errors WHERE job = 'clicks_by_user'", "3 22P03 22P03")

	// kill -9 and restart: the stored reader schema keeps the columns
	// (the subject's latest is v2 now, with device and without url), and
	// the view goes on exactly once.
	execAll(t, c, "CHECKPOINT")
	f.produce(c, 2, 70)
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	f.produce(c, 1, 30)
	sameAsOracle(t, c)
	_, err = c.Exec(ctx, "SELECT device FROM clicks LIMIT 1")
	wantCode(t, "device after restart", err, "42703")
	// A source created now derives v2's columns.
	execAll(t, c, "CREATE SOURCE clicks2 "+with("clicks", reg.URL),
		"CREATE MATERIALIZED VIEW devices AS SELECT device, count(*) AS n FROM clicks2 GROUP BY device")
	want := oracleRows(t, c, "SELECT CASE WHEN url IS NULL THEN 'ios' ELSE 'web' END AS d, count(*) FROM oracle GROUP BY d ORDER BY d")
	waitQuery(t, c, "SELECT device, n FROM devices ORDER BY device", strings.Join(want, "\n"))
	_, err = c.Exec(ctx, "SELECT url FROM clicks2 LIMIT 1")
	wantCode(t, "url in v2", err, "42703")

	// The registry goes away while a new writer schema must be fetched:
	// the job is RESTARTING with the cause (08000) and goes on, losing
	// nothing, when the registry is back.
	execAll(t, c, "SET restart.strategy = 'fixed-delay'", "SET restart.attempts = 10000", "SET restart.delay = '500ms'")
	if _, err := reg.Register("clicks-value", clickV3); err != nil {
		t.Fatal(err)
	}
	reg.SetDown(true)
	f.produce(c, 3, 40)
	r := waitState(t, c, "clicks_by_user", "RESTARTING", 2*time.Minute)
	if !strings.Contains(r.lastErr, "schema registry") {
		t.Fatalf("restarting without the registry's cause: %q", r.lastErr)
	}
	reg.SetDown(false)
	sameAsOracle(t, c)
}

// TestKafkaAvroSink: sinks in format 'upsert-avro' (a GROUP BY view) and
// 'avro' (an append-only view) register their schemas and write the wire
// format; the upsert topic, folded by key with hamba/avro decoding it,
// equals the view, and an Avro source over the append-only topic (its
// columns derived from the schema the sink registered) gives what the
// batch query over the table gives.
func TestKafkaAvroSink(t *testing.T) {
	_, addr := startKafka(t, 2, "totals", "big", "totals_json")
	reg := schemareg.Start()
	defer reg.Close()
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	sink := func(topic, format string) string {
		return fmt.Sprintf("WITH (connector = 'kafka', topic = '%s', properties.bootstrap.servers = '%s', format = '%s', schema.registry = '%s')", topic, addr, format, reg.URL)
	}
	insert := func(from, n, customers int) {
		var rows []string
		for i := from; i < from+n; i++ {
			rows = append(rows, fmt.Sprintf("(%d, 'c%d', %v, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL '%d' SECOND)", i, i%customers, float64(i%23)*1.25, i))
		}
		execAll(t, c, "INSERT INTO orders VALUES "+strings.Join(rows, ", "))
	}
	execAll(t, c, "CREATE TABLE orders (id BIGINT, customer TEXT, amount DOUBLE PRECISION, ts TIMESTAMP)",
		// A group leaves the view (a tombstone) when it passes 60 orders.
		"CREATE MATERIALIZED VIEW totals AS SELECT customer, count(*) AS n, sum(amount) AS total FROM orders GROUP BY customer HAVING count(*) <= 60",
		"CREATE MATERIALIZED VIEW big AS SELECT id, customer, amount, ts FROM orders WHERE amount > 10")
	insert(0, 300, 7)
	_, err := c.Exec(ctx, "CREATE SINK bad FROM totals "+sink("big", "avro"))
	wantCode(t, "avro over a GROUP BY view", err, "0A000")
	_, err = c.Exec(ctx, "CREATE SINK bad FROM big "+strings.Replace(sink("big", "avro"), reg.URL, "http://127.0.0.1:1", 1))
	wantCode(t, "registry down", err, "08000")
	execAll(t, c, "CREATE SINK totals_out FROM totals "+sink("totals", "upsert-avro"),
		"CREATE SINK totals_json FROM totals WITH (connector = 'kafka', topic = 'totals_json', properties.bootstrap.servers = '"+addr+"', format = 'upsert-json')",
		"CREATE SINK big_out FROM big "+sink("big", "avro"))
	insert(300, 200, 3) // c0, c1 and c2 pass 60 orders
	insert(500, 50, 7)
	execAll(t, c, "CHECKPOINT")

	want := map[string]string{}
	for _, r := range oracleRows(t, c, "SELECT customer, count(*), sum(amount) FROM orders GROUP BY customer HAVING count(*) <= 60") {
		f := strings.Fields(r)
		want[f[0]] = f[1] + " " + f[2]
	}
	if len(want) != 4 {
		t.Fatalf("oracle: %v", want)
	}
	avroDec := func(b []byte, v *avroTotal) error { return reg.Decode(b, v) }
	jsonDec := func(b []byte, v *avroTotal) error { return json.Unmarshal(b, v) }
	waitFolded(t, addr, "totals", avroDec, want)
	// The same view in upsert-json: the groups HAVING dropped are
	// tombstones there too.
	waitFolded(t, addr, "totals_json", jsonDec, want)

	// The append-only topic read back by an Avro source.
	execAll(t, c, "CREATE SOURCE big_src WITH (connector = 'kafka', topic = 'big', properties.bootstrap.servers = '"+addr+"', format = 'avro', schema.registry = '"+reg.URL+"')",
		"CREATE MATERIALIZED VIEW big_back AS SELECT customer, count(*) AS n, sum(amount) AS s, max(ts) AS mt, sum(id) AS ids FROM big_src GROUP BY customer")
	waitQuery(t, c, "SELECT * FROM big_back ORDER BY customer", strings.Join(oracleRows(t, c,
		"SELECT customer, count(*), sum(amount), max(ts), sum(id) FROM orders WHERE amount > 10 GROUP BY customer ORDER BY customer"), "\n"))
}

// avroTotal is a record of TestKafkaAvroSink's totals view, key or value.
type avroTotal struct {
	Customer *string  `avro:"customer" json:"customer"`
	N        *int64   `avro:"n" json:"n"`
	Total    *float64 `avro:"total" json:"total"`
}

// waitFolded polls until the upsert topic, folded by key, equals want
// (customer -> "n total").
func waitFolded(t *testing.T, addr, topic string, dec func([]byte, *avroTotal) error, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := map[string]string{}
		recs := readTopic(t, addr, topic)
		for _, r := range recs {
			var k avroTotal
			if err := dec([]byte(r.key), &k); err != nil || k.Customer == nil {
				t.Fatalf("%s: key %q: %v", topic, r.key, err)
			}
			if r.tombstone {
				delete(got, *k.Customer)
				continue
			}
			var v avroTotal
			if err := dec([]byte(r.value), &v); err != nil || v.N == nil || v.Total == nil {
				t.Fatalf("%s: value %q: %v", topic, r.value, err)
			}
			got[*k.Customer] = fmt.Sprintf("%d %v", *v.N, *v.Total)
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			for _, r := range recs {
				t.Logf("%q %q %v", r.key, r.value, r.tombstone)
			}
			t.Fatalf("topic %s folded: %v\nwant %v", topic, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
