package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// catalog is a node's applied log: the statements in the order applied.
type catalog struct {
	mu   sync.Mutex
	stmt []string
}

func (c *catalog) apply(_ context.Context, e cluster.Entry) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasPrefix(e.Text, "fail") {
		return nil, errors.New("refused: " + e.Text)
	}
	c.stmt = append(c.stmt, e.Text)
	return fmt.Sprintf("applied %d", e.Seq), nil
}

func (c *catalog) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.stmt...)
}

func join(t *testing.T, ep, id string, cat *catalog, dir string) *cluster.Node {
	t.Helper()
	n, err := cluster.Join(context.Background(), cluster.Config{Endpoints: []string{ep}, Cluster: "t", NodeID: id,
		PGAddr: "pg-" + id, PeerAddr: "peer-" + id, LeaseTTL: 2 * time.Second, Apply: cat.apply,
		AppliedFile: filepath.Join(dir, id+".applied")})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func coordinators(t *testing.T, n *cluster.Node) (ids []string, coord string) {
	t.Helper()
	ms, err := n.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		ids = append(ids, m.ID)
		if m.Coordinator {
			coord = m.ID
		}
	}
	return ids, coord
}

// TestLogOrderAndFailover: statements submitted concurrently on three
// nodes are applied in one order on all of them; the leaving coordinator is
// replaced, and a node that joins later (or rejoins) catches up.
func TestLogOrderAndFailover(t *testing.T) {
	ep := etcdtest.Start(t)
	dir := t.TempDir()
	cats := []*catalog{{}, {}, {}}
	nodes := []*cluster.Node{join(t, ep, "a", cats[0], dir), join(t, ep, "b", cats[1], dir), join(t, ep, "c", cats[2], dir)}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	}()
	waitFor(t, "a coordinator", func() bool { _, c := coordinators(t, nodes[0]); return c != "" })
	ids, coord := coordinators(t, nodes[1])
	if strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("members %v, want a,b,c", ids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	const per = 10
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per; j++ {
				res, err := n.Submit(ctx, "u", fmt.Sprintf("n%d-%d", i, j))
				if err != nil || !strings.HasPrefix(res.(string), "applied ") {
					t.Errorf("submit: %v %v", res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, err := nodes[0].Submit(ctx, "u", "fail me"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("the applier's error did not come back: %v", err)
	}
	want := cats[0].snapshot()
	if len(want) != 3*per {
		t.Fatalf("node a applied %d entries, want %d", len(want), 3*per)
	}
	for i := range nodes {
		waitFor(t, "every node to apply the log", func() bool { return nodes[i].Applied() == 3*per+1 })
		if got := cats[i].snapshot(); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("node %d applied %v, node a %v", i, got, want)
		}
	}

	// The coordinator leaves; another takes over and the log goes on.
	ci := int(coord[0] - 'a')
	if err := nodes[ci].Close(); err != nil {
		t.Fatal(err)
	}
	nodes[ci] = nil
	other := nodes[(ci+1)%3]
	waitFor(t, "a new coordinator", func() bool {
		ids, c := coordinators(t, other)
		return c != "" && c != coord && len(ids) == 2
	})
	if _, err := other.Submit(ctx, "u", "after failover"); err != nil {
		t.Fatal(err)
	}
	// The departed node rejoins from its applied file: it applies only
	// the entry it missed.
	cats[ci] = &catalog{}
	nodes[ci] = join(t, ep, coord, cats[ci], dir)
	if got := cats[ci].snapshot(); len(got) != 1 || got[0] != "after failover" {
		t.Fatalf("rejoined node applied %v, want only the missed entry", got)
	}
	// A new node replays the whole log.
	late := &catalog{}
	d := join(t, ep, "d", late, dir)
	nodes = append(nodes, d)
	if got := late.snapshot(); len(got) != 3*per+1 || strings.Join(got[:3*per], ",") != strings.Join(want, ",") {
		t.Fatalf("new node applied %d entries, want %d", len(got), 3*per+1)
	}
}

// TestLeaseExpiry: a node that stops renewing (as after kill -9) leaves the
// membership when its lease expires, and its coordinator role passes on.
func TestLeaseExpiry(t *testing.T) {
	ep := etcdtest.Start(t)
	dir := t.TempDir()
	a := join(t, ep, "a", &catalog{}, dir)
	defer a.Close()
	waitFor(t, "a to coordinate", a.IsCoordinator)
	b := join(t, ep, "b", &catalog{}, dir)
	defer b.Close()
	// While a lives, its id cannot be taken by a second process.
	if _, err := cluster.Join(context.Background(), cluster.Config{Endpoints: []string{ep}, Cluster: "t", NodeID: "a",
		LeaseTTL: 2 * time.Second, Apply: (&catalog{}).apply}); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Fatalf("a second node a: %v, want refused", err)
	}
	ms, err := b.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.State != "alive" || time.Until(m.LeaseExpiry) <= 0 || time.Until(m.LeaseExpiry) > 3*time.Second {
			t.Fatalf("member %+v: want alive with a lease expiring within the 2s TTL", m)
		}
	}
	// Revoke a's lease as etcd does when it expires: a leaves, b coordinates
	// and a notices it is no longer a member.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(context.Background(), "/streamdb/t/nodes/a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("node key of a: %v %v", resp, err)
	}
	if _, err := cli.Revoke(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a did not notice the loss of its lease")
	}
	if _, err := a.Submit(context.Background(), "u", "x"); !errors.Is(err, cluster.ErrNotMember) {
		t.Fatalf("submit after the lease is lost: %v", err)
	}
	waitFor(t, "b to coordinate", b.IsCoordinator)
	ids, coord := coordinators(t, b)
	if strings.Join(ids, ",") != "b" || coord != "b" {
		t.Fatalf("members %v coordinator %q, want b alone", ids, coord)
	}
	if _, err := b.Submit(context.Background(), "u", "still works"); err != nil {
		t.Fatal(err)
	}
}
