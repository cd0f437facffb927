package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaAddPartitions grows topic to n partitions.
func kafkaAddPartitions(t testing.TB, addr, topic string, n int32) {
	t.Helper()
	cl := kafkaClient(t, addr)
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, n
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Topics {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("create partitions of %s: %v", topic, err)
		}
	}
}

// waitQuery polls q until it returns want (rows joined by newlines), for up
// to two minutes.
func waitQuery(t testing.TB, c *pgx.Conn, q, want string) {
	t.Helper()
	start := time.Now()
	var got []string
	var err error
	for time.Since(start) < 2*time.Minute {
		got, err = plainRows(c, q)
		if err == nil && strings.Join(got, "\n") == want {
			t.Logf("%s: as wanted after %v", q, time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: got %q (err %v), want %q", q, strings.Join(got, "\n"), err, want)
}

// TestKafkaSource: a source over a two-partition topic feeds a GROUP BY
// view; metadata columns; json and csv; the startup modes; new partitions
// up to kafka.splits are read as they appear.
func TestKafkaSource(t *testing.T) {
	kc, addr := startKafka(t, 2, "clicks", "csvtopic")
	cl := kafkaClient(t, addr)
	var vals []string
	for i := 0; i < 1000; i++ {
		vals = append(vals, fmt.Sprintf(`{"user_id": %d, "url": "/p/%d", "ts": "2026-01-01 00:00:%02d"}`, i%10, i%7, i%60))
	}
	produce(t, cl, "clicks", vals, func(i int) string { return fmt.Sprint(i % 10) })
	produce(t, cl, "csvtopic", []string{"1,a", "2,b", `3,"c,d"`}, nil)

	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT, url VARCHAR, ts TIMESTAMP,
		    _kafka_key TEXT, _kafka_partition INT, _kafka_offset BIGINT, _kafka_timestamp TIMESTAMP,
		    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
		  WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.servers = '%s',
		        format = 'json', scan.startup.mode = 'earliest')`, addr),
		"CREATE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) AS n, count(DISTINCT url) AS urls FROM clicks GROUP BY user_id",
		"CREATE MATERIALIZED VIEW meta AS SELECT _kafka_partition AS p, count(*) AS n, max(_kafka_offset) + 1 AS next, count(DISTINCT _kafka_key) AS nkeys, min(_kafka_timestamp) > TIMESTAMP '2026-01-01' AS ts_ok FROM clicks GROUP BY _kafka_partition",
		fmt.Sprintf(`CREATE SOURCE c2 (id INT, label TEXT) WITH (connector = 'kafka', topic = 'csvtopic',
		  properties.bootstrap.servers = '%s', format = 'csv')`, addr),
		"CREATE MATERIALIZED VIEW c2v AS SELECT id, label FROM c2")
	waitQuery(t, c, "SELECT count(*), sum(n) FROM per_user", "10 1000")
	waitQuery(t, c, "SELECT count(*) FROM per_user WHERE n = 100 AND urls = 7", "10")
	// Per partition: every offset read once, keys split between partitions.
	waitQuery(t, c, "SELECT sum(n), sum(next), sum(nkeys), sum(CASE WHEN ts_ok THEN 1 ELSE 0 END) FROM meta", "1000 1000 10 2")
	waitQuery(t, c, "SELECT id, label FROM c2v ORDER BY id", "1 a\n2 b\n3 c,d")

	// latest: only what arrives after the source starts reading.
	execAll(t, c, fmt.Sprintf(`CREATE SOURCE late (user_id BIGINT) WITH (connector = 'kafka', topic = 'clicks',
		  properties.bootstrap.servers = '%s', scan.startup.mode = 'latest')`, addr),
		"CREATE MATERIALIZED VIEW latev AS SELECT count(*) AS n FROM late",
		"CHECKPOINT")
	// timestamp: from a time after every message so far.
	time.Sleep(20 * time.Millisecond)
	execAll(t, c, fmt.Sprintf(`CREATE SOURCE fromts (user_id BIGINT) WITH (connector = 'kafka', topic = 'clicks',
		  properties.bootstrap.servers = '%s', scan.startup.mode = 'timestamp', scan.startup.timestamp = '%d')`, addr, time.Now().UnixMilli()),
		"CREATE MATERIALIZED VIEW fromtsv AS SELECT count(*) AS n FROM fromts",
		"CHECKPOINT")
	produce(t, cl, "clicks", []string{`{"user_id": 1}`, `{"user_id": 2}`, `{"user_id": 3}`}, nil)
	waitQuery(t, c, "SELECT n FROM latev", "3")
	waitQuery(t, c, "SELECT n FROM fromtsv", "3")
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "1003")

	// A topic that grows from 1 to 3 partitions: kafka.splits = 4 keeps
	// room, and the new partitions are read as they appear.
	if err := kc.CreateTopic("grow", 1, nil); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, fmt.Sprintf(`CREATE SOURCE grow (v BIGINT, _kafka_partition INT) WITH (connector = 'kafka', topic = 'grow',
		  properties.bootstrap.servers = '%s', kafka.splits = 4)`, addr),
		"CREATE MATERIALIZED VIEW growv AS SELECT _kafka_partition AS p, sum(v) AS s FROM grow GROUP BY _kafka_partition")
	produce(t, cl, "grow", []string{`{"v": 1}`}, nil)
	waitQuery(t, c, "SELECT p, s FROM growv ORDER BY p", "0 1")
	kafkaAddPartitions(t, addr, "grow", 3)
	recs := []*kgo.Record{{Topic: "grow", Partition: 1, Value: []byte(`{"v": 10}`)}, {Topic: "grow", Partition: 2, Value: []byte(`{"v": 100}`)}}
	mp := kafkaClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := mp.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, c, "SELECT p, s FROM growv ORDER BY p", "0 1\n1 10\n2 100")
}

// TestKafkaSourceErrors: bad WITH options (22023), a missing topic
// (42704); a malformed message fails the job naming its partition and
// offset, or under job.error_policy = 'skip' is recorded in
// streamdb_job_errors; a broker that goes down makes the job RESTARTING
// with the cause (08000), and when it comes back the job goes on, losing
// nothing.
func TestKafkaSourceErrors(t *testing.T) {
	kc, addr := startKafka(t, 1, "events")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	for _, tc := range []struct{ with, code, msg string }{
		{"topic = 'events'", "22023", "bootstrap.servers"},
		{"properties.bootstrap.servers = '" + addr + "'", "22023", "topic"},
		{"topic = 'events', properties.bootstrap.servers = 'nohost'", "22023", "host:port"},
		{"topic = 'events', properties.bootstrap.servers = '" + addr + "', format = 'xml'", "22023", "format"},
		{"topic = 'events', properties.bootstrap.servers = '" + addr + "', scan.startup.mode = 'middle'", "22023", "scan.startup.mode"},
		{"topic = 'events', properties.bootstrap.servers = '" + addr + "', scan.startup.mode = 'timestamp'", "22023", "scan.startup.timestamp"},
		{"topic = 'events', properties.bootstrap.servers = '" + addr + "', group.id = 'x'", "22023", "group.id"},
		{"topic = 'nope', properties.bootstrap.servers = '" + addr + "'", "42704", "nope"},
	} {
		_, err := c.Exec(ctx, "CREATE SOURCE bad (v BIGINT) WITH (connector = 'kafka', "+tc.with+")")
		e := wantCode(t, tc.with, err, tc.code)
		if !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: message %q does not name %q", tc.with, e.Message, tc.msg)
		}
	}
	_, err := c.Exec(ctx, "CREATE SOURCE bad (_kafka_offset TEXT) WITH (connector = 'kafka', topic = 'events', properties.bootstrap.servers = '"+addr+"')")
	wantCode(t, "_kafka_offset TEXT", err, "42804")

	cl := kafkaClient(t, addr)
	produce(t, cl, "events", []string{`{"v": 1}`, `{"v": 2}`, `not json`, `{"v": "x"}`, `{"v": 4}`}, nil)
	execAll(t, c, "SET job.error_policy = 'skip'",
		"CREATE SOURCE events (v BIGINT) WITH (connector = 'kafka', topic = 'events', properties.bootstrap.servers = '"+addr+"')",
		"CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(v) AS s FROM events")
	waitQuery(t, c, "SELECT n, s FROM total", "3 7")
	waitQuery(t, c, "SELECT job, stream, partition_id, row_offset, error_code FROM streamdb_job_errors ORDER BY row_offset",
		"total events 0 2 22P02\ntotal events 0 3 22P02")

	// Under 'fail' the job fails naming the partition and offset.
	execAll(t, c, "SET job.error_policy = 'fail'", "SET restart.strategy = 'none'",
		"CREATE MATERIALIZED VIEW strict AS SELECT count(*) AS n FROM events")
	r := waitState(t, c, "strict", "FAILED", 2*time.Minute)
	if !strings.Contains(r.lastErr, "partition 0, offset 2") {
		t.Fatalf("the failure does not name the message: %q", r.lastErr)
	}
	t.Logf("strict failed: %s", r.lastErr)

	// The broker goes down: RESTARTING with the cause; it comes back with
	// its data, and the job goes on from its committed offsets.
	execAll(t, c, "SET restart.strategy = 'fixed-delay'", "SET restart.attempts = 10000", "SET restart.delay = '500ms'", "CHECKPOINT")
	kc.Close()
	deadline := time.Now().Add(2 * time.Minute)
	var row jobRow
	for {
		row = job(t, c, "total")
		if row.state == "RESTARTING" && row.lastErr != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("total did not restart with its broker down: %+v", row)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("broker down: %+v", row)
	if !strings.Contains(row.lastErr, "08000") {
		t.Errorf("the cause does not say the broker is unreachable: %q", row.lastErr)
	}
	kc = restartKafka(t, kc)
	cl = kafkaClient(t, addr)
	produce(t, cl, "events", []string{`{"v": 100}`}, nil)
	waitState(t, c, "total", "RUNNING", 2*time.Minute)
	waitQuery(t, c, "SELECT n, s FROM total", "4 107")
}

// TestKafkaSourceText: text from a message is held to the rules of text
// from a client (valid UTF-8, no NUL; 22021), so a message carrying bytes
// PostgreSQL refuses is a bad row under job.error_policy, recorded, not a
// stored value.
func TestKafkaSourceText(t *testing.T) {
	_, addr := startKafka(t, 1, "texts")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	produce(t, kafkaClient(t, addr), "texts", []string{`{"s": "ok"}`, `{"s": "a\u0000b"}`, "{\"s\": \"ab\xffcd\"}", `{"s": "é"}`, "{\"s\": \"\xed\xa0\x80\"}"}, nil)
	execAll(t, c, "SET job.error_policy = 'skip'",
		"CREATE SOURCE texts (s TEXT) WITH (connector = 'kafka', topic = 'texts', properties.bootstrap.servers = '"+addr+"')",
		"CREATE MATERIALIZED VIEW tv AS SELECT s, length(s) AS n FROM texts")
	waitQuery(t, c, "SELECT s, n FROM tv ORDER BY s", "ok 2\né 1")
	waitQuery(t, c, "SELECT row_offset, error_code FROM streamdb_job_errors WHERE job = 'tv' ORDER BY row_offset",
		"1 22021\n2 22021\n4 22021")
}

// TestKafkaSourceBounded: scan.bounded.mode = 'latest-offset' makes a
// Kafka source bounded: a batch query reads each partition up to its
// last stable offset when it opens it (cluster mode reads tables so),
// where an unbounded source is refused without a LIMIT (0A000); rows of
// an open transaction are not read, and appear once it commits.
func TestKafkaSourceBounded(t *testing.T) {
	_, addr := startKafka(t, 2, "events")
	cl := kafkaClient(t, addr)
	produce(t, cl, "events", []string{`{"k": 1, "v": "a"}`, `{"k": 2, "v": "b"}`, `{"k": 3, "v": "c"}`}, func(i int) string { return fmt.Sprint(i) })
	srv := StartServer(t, "", "--http", "")
	c := srv.Conn(t)
	execAll(t, c, fmt.Sprintf(`CREATE SOURCE b (k BIGINT, v TEXT) WITH (connector = 'kafka', topic = 'events',
		properties.bootstrap.servers = '%s', scan.bounded.mode = 'latest-offset')`, addr))
	execAll(t, c, fmt.Sprintf(`CREATE SOURCE u (k BIGINT, v TEXT) WITH (connector = 'kafka', topic = 'events',
		properties.bootstrap.servers = '%s')`, addr))
	if got := mustRows(t, c, "SELECT count(*), sum(k), max(v) FROM b"); strings.Join(got, "\n") != "'3' | '6' | 'c'" {
		t.Fatalf("bounded read: %v, want 3 6 c", got)
	}
	if _, err := plainRows(c, "SELECT count(*) FROM u"); sqlstate(err) != "0A000" {
		t.Fatalf("unbounded read without LIMIT: %v, want 0A000", err)
	}
	if _, err := c.Exec(context.Background(), fmt.Sprintf(`CREATE SOURCE bad (k BIGINT) WITH (connector = 'kafka', topic = 'events',
		properties.bootstrap.servers = '%s', scan.bounded.mode = 'group-offsets')`, addr)); sqlstate(err) != "22023" {
		t.Fatalf("scan.bounded.mode = 'group-offsets': %v, want 22023", err)
	}
	// An open transaction's rows are past the last stable offset.
	tx := kafkaClient(t, addr, kgo.TransactionalID("bounded-test"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(context.Background(), &kgo.Record{Topic: "events", Partition: 0, Value: []byte(`{"k": 10, "v": "z"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := mustRows(t, c, "SELECT count(*), sum(k) FROM b"); strings.Join(got, "\n") != "'3' | '6'" {
		t.Fatalf("bounded read with a transaction open: %v, want 3 6", got)
	}
	if err := tx.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := mustRows(t, c, "SELECT count(*), sum(k) FROM b"); strings.Join(got, "\n") != "'4' | '16'" {
		t.Fatalf("bounded read after the commit: %v, want 4 16", got)
	}
}
