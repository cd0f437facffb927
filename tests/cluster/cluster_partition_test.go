package cluster

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestClusterEtcdPartition: three nodes with the shared stream log and
// shared checkpoints, each reaching etcd through a TCP proxy of the test,
// while a writer INSERTs on every node. The proxy of the node that runs
// per_channel is cut (bytes dropped both ways, connections held open: a
// partition, not a refusal). That node stops serving: its lease cannot be
// renewed, it sees it lost and shuts down (its PostgreSQL port closes)
// without committing anything to etcd after the cut (no checkpoint
// pointer of it appears; the writes it acknowledged went to Kafka, which
// it still reached, and are in the table once); the survivors see its
// lease expire and take its jobs, and every view equals the batch query
// over the table's rows. The proxy heals and the node, never restarted by
// the test, rejoins by itself (a new lease: it starts again once etcd
// answers), and every acknowledged row is in every view exactly once.
func TestClusterEtcdPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three-node partition scenario")
	}
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "part", 3, clusterConf{proxied: true, extra: []string{"--cluster-kafka", kafkaAddr}})
	ctx := context.Background()
	execAll(t, c.conns[0], bidsTable)
	for _, v := range scaleViewNames {
		execAll(t, c.conns[0], "CREATE MATERIALIZED VIEW "+v+" WITH (distributed = false) AS "+scaleViews[v])
	}
	owners := c.owners(t, c.conns[0], scaleViewNames...)
	w := startScaleWriter(t, c, 0, 1, 2)
	running := map[int]bool{0: true, 1: true, 2: true}
	time.Sleep(time.Second)
	w.check(t, running, "3 nodes", true)

	cut := c.index(owners["per_channel"])
	cutID := c.nodes[cut].id
	survivor := (cut + 1) % 3
	// Every checkpoint pointer committed from the cut on.
	head, err := c.cli.Get(ctx, "/streamdb/part/health")
	if err != nil {
		t.Fatal(err)
	}
	c.proxies[cut].Cut()
	cutAt := time.Now()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	var pmu sync.Mutex
	var pointers []ckptPointer
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for resp := range c.cli.Watch(wctx, "/streamdb/part/ckpt/", clientv3.WithPrefix(), clientv3.WithRev(head.Header.Revision+1)) {
			for _, ev := range resp.Events {
				var p ckptPointer
				if ev.Type == clientv3.EventTypePut && json.Unmarshal(ev.Kv.Value, &p) == nil {
					pmu.Lock()
					pointers = append(pointers, p)
					pmu.Unlock()
				}
			}
		}
	}()

	// The cut node stops serving on its own, and does not exit.
	waitUntil(t, 60*time.Second, cutID+" saw its lease lost and closed its port", func() bool {
		if !strings.Contains(c.nodes[cut].srv.OutputSinceStart(), "waiting for etcd to answer again") {
			return false
		}
		conn, err := net.DialTimeout("tcp", c.nodes[cut].srv.Addr(), time.Second)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	select {
	case <-c.nodes[cut].srv.Exited():
		t.Fatalf("%s exited (%v); want it waiting to rejoin", cutID, c.nodes[cut].srv.ExitErr())
	default:
	}
	t.Logf("%s stopped serving %v after the cut", cutID, time.Since(cutAt).Round(time.Millisecond))
	w.leave(cut)
	delete(running, cut)
	waitUntil(t, 30*time.Second, "per_channel on a survivor", func() bool {
		o := jobOwners(t, c.conns[survivor])
		return len(o["per_channel"]) == 1 && o["per_channel"][0] != cutID
	})
	w.check(t, running, "partitioned", false)

	// Healed, it rejoins by itself.
	c.proxies[cut].Heal()
	restartAt := time.Now()
	waitUntil(t, 60*time.Second, cutID+" back in SHOW CLUSTER", func() bool { return len(showCluster(t, c.conns[survivor])) == 3 })
	waitUntil(t, 30*time.Second, cutID+" serving again", func() bool {
		conn, err := net.DialTimeout("tcp", c.nodes[cut].srv.Addr(), time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	c.conns[cut] = c.nodes[cut].srv.Conn(t)
	t.Logf("%s rejoined %v after the heal", cutID, time.Since(restartAt).Round(time.Millisecond))
	running[cut] = true
	w.join(cut)
	w.check(t, running, "healed", true)

	wcancel()
	pwg.Wait()
	for _, p := range pointers {
		if p.Node == cutID && p.At.After(cutAt) && p.At.Before(restartAt) {
			t.Errorf("a checkpoint pointer of %s committed while it was cut off: %+v", cutID, p)
		}
	}
	t.Logf("%d checkpoint pointers committed from the cut on, none by %s while cut off", len(pointers), cutID)
}
