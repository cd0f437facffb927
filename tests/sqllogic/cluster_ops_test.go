package sqllogic

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// opsCluster is a cluster of streamdb processes on an embedded etcd and a
// fake S3 (--cluster-storage), for the tests of statements that act on
// every node's jobs (CHECKPOINT, savepoints, ALTER CLUSTER REBALANCE).
type opsCluster struct {
	name, ep, storage string
	s3                *fakeS3
	cli               *clientv3.Client
	extra             []string // more flags for every node (--cluster-kafka)
	nodes             []*clusterNode
	conns             []*pgx.Conn
}

func startOpsCluster(t *testing.T, name string, n int, extra ...string) *opsCluster {
	t.Helper()
	c := &opsCluster{name: name, ep: etcdtest.Start(t), s3: newFakeS3(t, "ops"), storage: "s3://ops/" + name, extra: extra}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	c.cli = cli
	for i := 0; i < n; i++ {
		c.add(t)
	}
	return c
}

// add starts node n<k> (k = the number of nodes so far + 1) and returns its index.
func (c *opsCluster) add(t *testing.T) int {
	t.Helper()
	peer, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("n%d", len(c.nodes)+1)
	args := append([]string{"--http", "", "--cluster-etcd", c.ep, "--node-id", id, "--peer-listen", peer,
		"--cluster-name", c.name, "--cluster-lease-ttl", "2s", "--cluster-storage", c.storage}, c.extra...)
	n := &clusterNode{id: id, peer: peer, srv: startWithEnv(t, c.s3.env(), "", args...)}
	c.nodes = append(c.nodes, n)
	c.conns = append(c.conns, n.srv.Conn(t))
	return len(c.nodes) - 1
}

// index is the position of node id.
func (c *opsCluster) index(id string) int {
	for i, n := range c.nodes {
		if n.id == id {
			return i
		}
	}
	return -1
}

// owners waits until every view has one owner by SHOW CLUSTER on conn and
// returns them.
func (c *opsCluster) owners(t *testing.T, conn *pgx.Conn, views ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	waitUntil(t, 20*time.Second, "every view assigned to one node", func() bool {
		o := jobOwners(t, conn)
		for _, v := range views {
			if len(o[v]) != 1 {
				return false
			}
			out[v] = o[v][0]
		}
		return true
	})
	return out
}

// TestClusterCheckpointStatement: CHECKPOINT on a node that runs no job
// makes every node that runs one checkpoint it, upload it to the shared
// storage and commit its pointer in etcd before the statement returns:
// right after it, each view's pointer names its owner and was committed
// after the statement was sent. Without --cluster-storage CHECKPOINT stays
// refused (TestClusterCatalog).
func TestClusterCheckpointStatement(t *testing.T) {
	c := startOpsCluster(t, "ckstmt", 3)
	ctx := context.Background()
	execAll(t, c.conns[0],
		`CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, date_time TIMESTAMP)
		  WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = 2000000, nexmark.rate = 5000)`,
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n FROM bid GROUP BY channel",
		"CREATE MATERIALIZED VIEW per_bidder AS SELECT bidder, max(price) AS top FROM bid GROUP BY bidder")
	views := []string{"per_channel", "per_bidder"}
	owners := c.owners(t, c.conns[0], views...)
	if owners["per_channel"] == owners["per_bidder"] {
		t.Fatalf("both jobs on %s: want them spread", owners["per_channel"])
	}
	idle := 0
	for i, n := range c.nodes {
		if n.id != owners["per_channel"] && n.id != owners["per_bidder"] {
			idle = i
		}
	}
	waitUntil(t, 20*time.Second, "both jobs running", func() bool {
		jobs, err := clusterShowJobs(c.conns[idle])
		return err == nil && len(jobs) == 2 && jobs[0].state == "RUNNING" && jobs[1].state == "RUNNING"
	})
	for round := 0; round < 2; round++ {
		sent := time.Now()
		if _, err := c.conns[idle].Exec(ctx, "CHECKPOINT"); err != nil {
			t.Fatalf("CHECKPOINT on %s: %v", c.nodes[idle].id, err)
		}
		for _, v := range views {
			p := readPointer(t, c.cli, c.name, v)
			if p == nil || p.Node != owners[v] || p.At.Before(sent.Add(-time.Second)) {
				t.Fatalf("round %d: the pointer of %s after CHECKPOINT: %+v, want one of %s committed after %s", round, v, p, owners[v], sent)
			}
			if !strings.HasSuffix(p.Storage, "/nodes/"+owners[v]) {
				t.Fatalf("pointer %+v: not in %s's storage", p, owners[v])
			}
		}
	}
	_ = filepath.Join
	_ = sort.Strings
}
