package sqllogic

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds the in-process Kafka (kfake) shared by end-to-end tests.

// KafkaBroker is an in-process Kafka broker (kfake) that keeps its data in
// a directory, so it can go down and come back on the same address.
type KafkaBroker struct {
	*kfake.Cluster
	dir  string
	port int
}

// StartKafka starts an in-process Kafka broker (kfake) with the given
// topics of parts partitions each and returns its address.
func StartKafka(t testing.TB, parts int32, topics ...string) (*KafkaBroker, string) {
	t.Helper()
	dir := t.TempDir()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(dir), kfake.SyncWrites()}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(parts, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	b := &KafkaBroker{Cluster: c, dir: dir}
	t.Cleanup(func() { b.Close() })
	addr := c.ListenAddrs()[0]
	_, port, _ := net.SplitHostPort(addr)
	b.port, _ = strconv.Atoi(port)
	return b, addr
}

// RestartKafka starts a closed broker again on its address with its data.
func RestartKafka(t testing.TB, b *KafkaBroker) *KafkaBroker {
	t.Helper()
	var c *kfake.Cluster
	var err error
	for i := 0; i < 100; i++ { // the port may linger a moment
		c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(b.dir), kfake.SyncWrites(), kfake.Ports(b.port))
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	nb := &KafkaBroker{Cluster: c, dir: b.dir, port: b.port}
	t.Cleanup(func() { nb.Close() })
	return nb
}

// KafkaClient returns a franz-go client of the broker at addr.
func KafkaClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes messages (key i % keys) to topic, partition chosen by key.
func Produce(t testing.TB, cl *kgo.Client, topic string, vals []string, key func(i int) string) {
	t.Helper()
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(v)}
		if key != nil {
			recs[i].Key = []byte(key(i))
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// KafkaDeleteRecords deletes a partition's records below offset (as
// retention does).
func KafkaDeleteRecords(t testing.TB, addr, topic string, part int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = part, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(context.Background(), KafkaClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("delete records of %s: %v", topic, err)
			}
		}
	}
}
