package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestClusterDistributedReadsMonotone: reads of a distributed view never
// go backwards across a failover. Three nodes with the shared stream log
// and --cluster-storage; a GROUP BY view over an insert-only table of
// three partitions. Writers insert on n1 and n3 all along; a reader reads
// count(*) of the input (sum(n) over the view) over and over, alternating
// between n1 and n3, as a client whose connection moves between nodes
// does. n2 is killed with kill -9 in the middle: the new generation
// restores from the last committed checkpoint, which is older than the
// last committed epoch, and its first round must read each split at least
// to where the last committed epoch had read it (the positions the
// committed epoch records in etcd) before it commits. Every value the
// reader sees is at least the one before it (55000 is allowed while the
// new generation has committed nothing), and the last one equals every
// acknowledged row.
func TestClusterDistributedReadsMonotone(t *testing.T) {
	ctx := context.Background()
	_, kafkaAddr := startKafka(t, 1)
	// No checkpoint rounds (the coordinator's checkpoint.interval): the new
	// generation replays the topic from its start.
	c := startCluster(t, "distmono", 3, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr},
		settings: `checkpoint.interval = "off"`})
	execAll(t, c.conns[0],
		"CREATE TABLE stream (k BIGINT, x BIGINT) WITH (partitions = 3)",
		"CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n FROM stream GROUP BY k")

	var acked atomic.Int64 // rows whose INSERT returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	writer := func(i int) {
		defer wg.Done()
		conn := c.nodes[i].srv.Conn(t)
		defer conn.Close(ctx)
		for b := 0; ; b++ {
			select {
			case <-stop:
				return
			default:
			}
			vals := make([]string, 400)
			for r := range vals {
				vals[r] = fmt.Sprintf("(%d, %d)", (b*400+r)%997, i)
			}
			if _, err := conn.Exec(ctx, "INSERT INTO stream VALUES "+strings.Join(vals, ", ")); err != nil {
				t.Errorf("INSERT on %s: %v", c.nodes[i].id, err)
				return
			}
			acked.Add(int64(len(vals)))
		}
	}
	readers := [2]int{0, 2}
	var rcs [2]*pgx.Conn
	for k, i := range readers {
		rcs[k] = c.nodes[i].srv.Conn(t)
		defer rcs[k].Close(ctx)
	}
	// read is the input's count as the view on node readers[k] says
	// (-1: refused with 55000).
	read := func(k int) int64 {
		t.Helper()
		rows, err := queryRows(rcs[k], "SELECT coalesce(sum(n), 0) FROM v")
		if err != nil {
			if sqlstate(err) != "55000" {
				t.Fatalf("read on %s: %v, want rows or 55000", c.nodes[readers[k]].id, err)
			}
			return -1
		}
		n, err := strconv.ParseInt(strings.Trim(rows[0], "'"), 10, 64)
		if err != nil {
			t.Fatalf("read on %s: %q", c.nodes[readers[k]].id, rows)
		}
		return n
	}
	var seen []int64
	last, refused := int64(0), 0
	check := func(k int) {
		t.Helper()
		n := read(k)
		if n < 0 {
			refused++
			return
		}
		if n < last {
			t.Fatalf("a read on %s saw %d rows after a read saw %d: reads went backwards (reads so far: %v)",
				c.nodes[readers[k]].id, n, last, seen[max(0, len(seen)-20):])
		}
		last = n
		seen = append(seen, n)
	}
	wg.Add(2)
	go writer(0)
	go writer(2)
	readFor := func(d time.Duration) {
		t.Helper()
		for end, k := time.Now().Add(d), 0; time.Now().Before(end); k ^= 1 {
			check(k)
		}
	}
	readFor(4 * time.Second)
	before := last
	c.nodes[1].srv.Kill9()
	killed := time.Now()
	readFor(8 * time.Second)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	total := acked.Load()
	waitUntil(t, 45*time.Second, "the view counts every acknowledged row", func() bool {
		for k := range readers {
			check(k)
			if last != total {
				return false
			}
		}
		return true
	})
	if before == 0 || len(seen) < 10 {
		t.Fatalf("too few reads: %d before the kill saw %d rows", len(seen), before)
	}
	// checkpoint.interval = 'off' took no checkpoint of v.
	var ck struct{ Epoch uint64 }
	if etcdJSON(t, c, "/streamdb/"+c.name+"/dataflow/v/checkpoint", &ck) {
		t.Fatalf("checkpoint.interval = 'off', yet v has a committed checkpoint at epoch %d", ck.Epoch)
	}
	t.Logf("%d rows; %d reads (%d refused with 55000 after the kill at %d rows); exact %v after the kill (8 s of them reading under the writers)",
		total, len(seen), refused, before, time.Since(killed).Round(time.Millisecond))
}
