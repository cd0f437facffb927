package sqllogic

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka figures (docs/BENCHMARKS.md), against one in-process kfake broker
// (in memory) per benchmark:
//
//	nice -n 5 go test ./tests/sqllogic -run XXX -bench 'Kafka' -benchtime 1x -timeout 30m
//
// STREAMDB_KAFKA_BENCH_EVENTS sets the events per run (default 500000).
// Each reports events/s; the franz-go ones are the ceiling of the setup.

func benchEvents() int {
	if n, err := strconv.Atoi(os.Getenv("STREAMDB_KAFKA_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 500000
}

// benchBroker starts an in-memory kfake broker with topics of 4 partitions.
func benchBroker(b *testing.B, topics ...string) string {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topics...))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// benchProduce writes n JSON clicks (1000 users) to topic with franz-go
// as fast as it goes and returns how long it took.
func benchProduce(b *testing.B, addr, topic string, n int) time.Duration {
	cl := kafkaClient(b, addr, kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<16))
	start := time.Now()
	var failed error
	done := make(chan struct{}, 1)
	left := n
	for i := 0; i < n; i++ {
		v := []byte(fmt.Sprintf(`{"user_id": %d, "url": "/p/%d", "ts": %d}`, i%1000, i%97, 1767225600000+int64(i)))
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil && failed == nil {
				failed = err
			}
			left--
			if left == 0 {
				done <- struct{}{}
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	<-done
	if failed != nil {
		b.Fatal(failed)
	}
	return time.Since(start)
}

// benchConsume reads n records of topic (read_committed, from the start)
// and returns how long it took.
func benchConsume(b *testing.B, addr, topic string, n int, timeout time.Duration) time.Duration {
	cl := kafkaClient(b, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("read %d of %d records of %s", got, n, topic)
		}
		got += fs.NumRecords()
	}
	return time.Since(start)
}

func report(b *testing.B, what string, n int, d time.Duration) {
	rate := float64(n) / d.Seconds()
	b.ReportMetric(rate, "events/s")
	b.Logf("%s: %d events in %v = %.0f events/s", what, n, d.Round(time.Millisecond), rate)
}

// BenchmarkKafkaFranzGo: the ceiling, franz-go alone producing n events
// and consuming them (read_committed) against the broker.
func BenchmarkKafkaFranzGo(b *testing.B) {
	n := benchEvents()
	for i := 0; i < b.N; i++ {
		topic := fmt.Sprintf("ceiling%d", i)
		addr := benchBroker(b, topic)
		report(b, "franz-go produce", n, benchProduce(b, addr, topic, n))
		report(b, "franz-go consume", n, benchConsume(b, addr, topic, n, 10*time.Minute))
	}
}

// BenchmarkKafkaSourceGroupBy: n events already in a topic, then a
// source and a GROUP BY view over it; the time until the view has
// counted all n.
func BenchmarkKafkaSourceGroupBy(b *testing.B) {
	n := benchEvents()
	for i := 0; i < b.N; i++ {
		addr := benchBroker(b, "clicks")
		benchProduce(b, addr, "clicks", n)
		srv := StartServer(b, "")
		c := srv.Conn(b)
		if _, err := c.Exec(context.Background(), fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT, url TEXT, ts TIMESTAMP)
			WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.servers = '%s')`, addr)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Exec(context.Background(), "CREATE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) AS n, max(ts) AS last FROM clicks GROUP BY user_id"); err != nil {
			b.Fatal(err)
		}
		benchWait(b, c, "SELECT coalesce(sum(n), 0) FROM per_user", strconv.Itoa(n), 10*time.Minute)
		report(b, "topic -> GROUP BY view", n, time.Since(start))
		srv.Stop()
	}
}

// BenchmarkKafkaSink: a source, an append-only view and an exactly-once
// json sink are running; n events are produced, and the time is until a
// read_committed consumer of the sink topic has seen all n.
func BenchmarkKafkaSink(b *testing.B) {
	n := benchEvents()
	for i := 0; i < b.N; i++ {
		addr := benchBroker(b, "clicks", "out")
		srv := StartServer(b, "")
		c := srv.Conn(b)
		for _, q := range []string{
			fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT, url TEXT, ts TIMESTAMP)
			WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.servers = '%s')`, addr),
			"CREATE MATERIALIZED VIEW rows AS SELECT user_id, url FROM clicks WHERE user_id >= 0",
			fmt.Sprintf("CREATE SINK out FROM rows WITH (connector = 'kafka', topic = 'out', properties.bootstrap.servers = '%s', format = 'json')", addr),
		} {
			if _, err := c.Exec(context.Background(), q); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		benchProduce(b, addr, "clicks", n)
		benchConsume(b, addr, "out", n, 10*time.Minute)
		report(b, "topic -> view -> sink topic (read_committed)", n, time.Since(start))
		srv.Stop()
	}
}

// benchWait polls q until it returns want.
func benchWait(b *testing.B, c *pgx.Conn, q, want string, timeout time.Duration) {
	b.Helper()
	var got []string
	for start := time.Now(); time.Since(start) < timeout; time.Sleep(20 * time.Millisecond) {
		var err error
		if got, err = plainRows(c, q); err == nil && len(got) == 1 && got[0] == want {
			return
		}
	}
	b.Fatalf("%s: %v, want %s", q, got, want)
}
