package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOffsets asks the broker (as a group admin client would, OffsetFetch)
// for group's committed offsets of topic, by partition.
func groupOffsets(t testing.TB, cl *kgo.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	rt.Partitions = []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); errors.Is(err, kerr.GroupIDNotFound) {
		return nil // nothing committed yet
	} else if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out
}

// waitGroupAt polls until group's committed offsets are want.
func waitGroupAt(t testing.TB, cl *kgo.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	start := time.Now()
	var got map[int32]int64
	for time.Since(start) < 2*time.Minute {
		got = groupOffsets(t, cl, group, topic)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			t.Logf("group %s committed %v after %v", group, got, time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s: committed %v, want %v", group, got, want)
}

// TestKafkaGroupCommits: with properties.group.id the source commits each
// split's offsets to the consumer group after the checkpoint holding them
// completes, so a group admin client sees the group's offsets catch up
// with the topic. The group is informational only: RESTORE of an older
// checkpoint seeks to the checkpoint's positions (the view reads the rows
// after them again, each once), not to the group's.
func TestKafkaGroupCommits(t *testing.T) {
	_, addr := startKafka(t, 2, "events")
	admin := kafkaClient(t, addr)
	next := 0
	send := func(n int) {
		next = produceTo(t, addr, "events", []int32{0, 1}, next, n)
	}
	send(150)
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '200ms'",
		fmt.Sprintf(`CREATE SOURCE events (id BIGINT, v BIGINT) WITH (connector = 'kafka', topic = 'events',
		  properties.bootstrap.servers = '%s', properties.group.id = 'g')`, addr),
		"CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, count(DISTINCT id) AS ids FROM events")
	waitQuery(t, c, "SELECT n, ids FROM total", "300 300")
	waitGroupAt(t, admin, "g", "events", map[int32]int64{0: 150, 1: 150})
	execAll(t, c, "CHECKPOINT")
	var ck int64
	if err := c.QueryRow(context.Background(), "SELECT max(id) FROM streamdb_checkpoints WHERE status = 'COMPLETED'").Scan(&ck); err != nil {
		t.Fatal(err)
	}

	send(100)
	waitQuery(t, c, "SELECT n, ids FROM total", "500 500")
	waitGroupAt(t, admin, "g", "events", map[int32]int64{0: 250, 1: 250})

	// RESTORE the older checkpoint: the source seeks to its positions
	// (150, 150), not to the group's (250, 250), and reads the 200 rows
	// after them again, once.
	execAll(t, c, fmt.Sprintf("RESTORE total FROM CHECKPOINT %d", ck))
	waitQuery(t, c, "SELECT n, ids FROM total", "500 500")
	send(10)
	waitQuery(t, c, "SELECT n, ids FROM total", "520 520")
	waitGroupAt(t, admin, "g", "events", map[int32]int64{0: 260, 1: 260})

}
