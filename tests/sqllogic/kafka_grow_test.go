package sqllogic

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTo writes n messages {"id": next..., "v": 1} to each partition in
// parts and returns the next id. Its client is new, so it knows every
// partition the topic has now.
func produceTo(t testing.TB, addr, topic string, parts []int32, next, n int) int {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var recs []*kgo.Record
	for _, p := range parts {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf(`{"id": %d, "v": 1}`, next))})
			next++
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return next
}

// perPartition is the expected content of the per-partition view: "p n"
// lines for partitions 0..len(counts)-1.
func perPartition(counts []int) string {
	var lines []string
	for p, n := range counts {
		if n > 0 {
			lines = append(lines, fmt.Sprintf("%d %d", p, n))
		}
	}
	return strings.Join(lines, "\n")
}

// TestKafkaGrowPartitions: a topic gains partitions beyond the source's
// splits while views over it run. The running job finds them (partition
// discovery), the source's split count is raised durably and the job
// restarts with the new splits, reading them from their earliest offset
// even under scan.startup.mode = 'latest' (nothing written to a new
// partition before it was found is missed). Every row of every partition
// arrives exactly once, also when streamdb is killed -9 while a growth is
// under way, and views keyed by partition stay consistent.
func TestKafkaGrowPartitions(t *testing.T) {
	_, addr := startKafka(t, 2, "grow")
	counts := make([]int, 8)
	next := 0
	send := func(parts []int32, n int) {
		next = produceTo(t, addr, "grow", parts, next, n)
		for _, p := range parts {
			counts[p] += n
		}
	}
	send([]int32{0, 1}, 100)

	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '200ms'",
		fmt.Sprintf(`CREATE SOURCE grow (id BIGINT, v BIGINT, _kafka_partition INT) WITH (connector = 'kafka', topic = 'grow',
		  properties.bootstrap.servers = '%s', scan.topic_partition_discovery.interval = '300ms')`, addr),
		// latest: the rows already there are not read, but new
		// partitions are read from their start.
		fmt.Sprintf(`CREATE SOURCE growlate (id BIGINT) WITH (connector = 'kafka', topic = 'grow',
		  properties.bootstrap.servers = '%s', scan.startup.mode = 'latest', scan.topic_partition_discovery.interval = '300ms')`, addr),
		"CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(v) AS s FROM grow",
		"CREATE MATERIALIZED VIEW per_part AS SELECT _kafka_partition AS p, count(*) AS n FROM grow GROUP BY _kafka_partition",
		"CREATE MATERIALIZED VIEW late AS SELECT count(*) AS n, count(DISTINCT id) AS ids FROM growlate",
		"CHECKPOINT")
	waitQuery(t, c, "SELECT n, ids, s FROM total", "200 200 200")
	waitSplits(t, c, "grow 2\ngrowlate 2")

	// Grow to 5 partitions; rows go to the new ones before and after the
	// job finds them.
	kafkaAddPartitions(t, addr, "grow", 5)
	send([]int32{0, 1, 2, 3, 4}, 100)
	waitQuery(t, c, "SELECT n, ids, s FROM total", "700 700 700")
	waitQuery(t, c, "SELECT p, n FROM per_part ORDER BY p", perPartition(counts))
	// growlate: the 300 rows of the new partitions, none of 0 and 1 written
	// before it started (it started when its view was created).
	waitQuery(t, c, "SELECT n, ids FROM late", "500 500")
	waitSplits(t, c, "grow 5\ngrowlate 5")
	lateRows := 500

	// kill -9 in the middle of a growth: the topic grows to 8 and gets
	// rows while streamdb dies at different moments of finding it.
	for round, n := range []int32{6, 7, 8} {
		kafkaAddPartitions(t, addr, "grow", n)
		parts := make([]int32, n)
		for i := range parts {
			parts[i] = int32(i)
		}
		before := next
		send(parts, 50)
		lateRows += next - before
		time.Sleep(time.Duration(200+400*round) * time.Millisecond)
		srv.Kill9()
		before = next
		send(parts, 20)
		lateRows += next - before
		srv.Restart(t)
		c = srv.Conn(t)
	}
	want := fmt.Sprint(next)
	waitQuery(t, c, "SELECT n, ids, s FROM total", want+" "+want+" "+want)
	waitQuery(t, c, "SELECT p, n FROM per_part ORDER BY p", perPartition(counts))
	waitQuery(t, c, "SELECT n, ids FROM late", fmt.Sprintf("%d %d", lateRows, lateRows))
	waitSplits(t, c, "grow 8\ngrowlate 8")
}

// waitSplits polls SHOW SOURCES until its "name splits" lines are want.
func waitSplits(t testing.TB, c *pgx.Conn, want string) {
	t.Helper()
	var got string
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(50 * time.Millisecond) {
		rows, err := plainRows(c, "SHOW SOURCES")
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, r := range rows {
			f := strings.Fields(r)
			lines = append(lines, f[0]+" "+f[2])
		}
		sort.Strings(lines)
		if got = strings.Join(lines, "\n"); got == want {
			return
		}
	}
	t.Fatalf("SHOW SOURCES: splits %q, want %q", got, want)
}
