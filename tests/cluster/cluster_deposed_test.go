package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestClusterRebalanceDeposed: a coordinator that has lost its role
// without noticing yet (here: its election key deleted behind its back,
// as when its lease lapsed and another node won; it notices at its next
// catalog request) still runs ALTER CLUSTER REBALANCE itself, and its move
// is refused by the fence on its leadership: the statement fails with
// 58000 naming the changed leader key, and the assignment in etcd is
// what it was. The same statement on the new coordinator moves the job.
func TestClusterRebalanceDeposed(t *testing.T) {
	c := startCluster(t, "deposed", 2, clusterConf{})
	ctx := context.Background()
	execAll(t, c.conns[0], bidSource(2000000, 5000),
		"CREATE MATERIALIZED VIEW v_a AS SELECT channel, count(*) AS n FROM bid GROUP BY channel",
		"CREATE MATERIALIZED VIEW v_b AS SELECT bidder % 10 AS b, max(price) AS top FROM bid GROUP BY bidder % 10")
	owners := c.owners(t, c.conns[0], "v_a", "v_b")
	// Both jobs on n2 (the coordinator leaves an assignment to a live node
	// as it is): 0 and 2, which a rebalance would even out.
	for _, v := range []string{"v_a", "v_b"} {
		if owners[v] == "n2" {
			continue // a put of the same value would still supersede n2's claim
		}
		if _, err := c.cli.Put(ctx, "/streamdb/deposed/jobs/"+v, "n2"); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 20*time.Second, "both jobs on n2", func() bool {
		n := jobCounts(t, c.conns[0])
		return n["n1"] == 0 && n["n2"] == 2
	})
	// Once n2 runs both under its claims, a CHECKPOINT (the handoff a
	// move starts with) succeeds.
	waitUntil(t, 30*time.Second, "a CHECKPOINT of both jobs on n2", func() bool {
		_, err := c.conns[0].Exec(ctx, "CHECKPOINT")
		return err == nil
	})
	coord := etcdLeader(t, c.cli, "deposed")
	ci := c.index(coord)
	if ci < 0 {
		t.Fatalf("coordinator %q", coord)
	}
	resp, err := c.cli.Get(ctx, "/streamdb/deposed/election/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("election key: %v %v", resp, err)
	}
	if _, err := c.cli.Delete(ctx, string(resp.Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	next := c.nodes[1-ci].id
	waitUntil(t, 20*time.Second, next+" to coordinate", func() bool { return etcdLeader(t, c.cli, "deposed") == next })
	before, err := c.cli.Get(ctx, "/streamdb/deposed/jobs/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}

	_, err = c.conns[ci].Exec(ctx, "ALTER CLUSTER REBALANCE")
	if sqlstate(err) != "58000" || !strings.Contains(err.Error(), "leader key changed") {
		t.Fatalf("ALTER CLUSTER REBALANCE on the deposed %s: %v, want 58000 (the fenced move refused)", coord, err)
	}
	after, err := c.cli.Get(ctx, "/streamdb/deposed/jobs/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for i, kv := range after.Kvs {
		if string(kv.Value) != "n2" || kv.ModRevision != before.Kvs[i].ModRevision {
			t.Fatalf("%s after the refused move: %s (mod revision %d, was %d)", kv.Key, kv.Value, kv.ModRevision, before.Kvs[i].ModRevision)
		}
	}

	// The new coordinator moves one job.
	if _, err := c.conns[1-ci].Exec(ctx, "ALTER CLUSTER REBALANCE"); err != nil {
		t.Fatalf("ALTER CLUSTER REBALANCE on the coordinator %s: %v", next, err)
	}
	waitUntil(t, 20*time.Second, "one job on each node", func() bool {
		n := jobCounts(t, c.conns[0])
		return n["n1"] == 1 && n["n2"] == 1
	})
}
