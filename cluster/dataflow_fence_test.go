package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/cluster/etcdtest"
)

// TestDataflowCommitRule: the coordinator commits the cluster epoch only
// once every node of the placement acknowledged it under the current
// generation, and never backwards; an
// ack for a replaced placement is refused; only the coordinator starts a
// round; a node's rollback request starts a new generation on the same
// parts.
func TestDataflowCommitRule(t *testing.T) {
	ep := etcdtest.Start(t)
	job := cluster.DistJob{View: "w", Instances: 2, Splits: map[string]int{"s": 2}}
	var nodes []*cluster.Node
	for _, id := range []string{"n1", "n2"} {
		n, err := cluster.Join(context.Background(), cluster.Config{Endpoints: []string{ep}, Cluster: "rule", NodeID: id,
			LeaseTTL: 5 * time.Second, Apply: (&catalog{}).apply,
			Distributed: func() []cluster.DistJob { return []cluster.DistJob{job} }})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes = append(nodes, n)
	}
	ctx := context.Background()
	read := func() cluster.Dataflow {
		t.Helper()
		d, err := nodes[0].ReadDataflow(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	waitFor := func(what string, ok func(cluster.Dataflow) bool) cluster.Dataflow {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if d := read(); ok(d) {
				return d
			}
		}
		t.Fatalf("%s: still %+v", what, read())
		return cluster.Dataflow{}
	}
	// The first coordinator places the job (generation 1) once both joined
	// (both joined before its first pass, or a join moves parts later).
	d := waitFor("placed on both", func(d cluster.Dataflow) bool { return d.Placement != nil && len(d.Placement.Nodes()) == 2 })
	p := d.Placement
	var coord, other *cluster.Node
	for _, n := range nodes {
		if n.IsCoordinator() {
			coord = n
		} else {
			other = n
		}
	}
	if coord == nil || other == nil {
		t.Fatal("no coordinator among the two nodes")
	}
	if _, err := other.StartRound(ctx, "w"); !errors.Is(err, cluster.ErrNotCoordinator) {
		t.Fatalf("StartRound on a follower: %v", err)
	}
	r, err := coord.StartRound(ctx, "w")
	if err != nil || r.Epoch != 1 || r.Gen != p.Gen {
		t.Fatalf("first round: %+v, %v", r, err)
	}
	// One node's ack does not commit the epoch.
	if err := coord.AckEpoch(ctx, "w", p, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // two coordinator passes
	if c := read().Committed; c.Epoch != 0 {
		t.Fatalf("committed %+v with one node's ack", c)
	}
	if err := other.AckEpoch(ctx, "w", p, 1); err != nil {
		t.Fatal(err)
	}
	waitFor("epoch 1 committed", func(d cluster.Dataflow) bool { return d.Committed.Gen == p.Gen && d.Committed.Epoch == 1 })
	// A stale placement's ack is refused.
	stale := *p
	stale.Rev--
	if err := other.AckEpoch(ctx, "w", &stale, 2); !errors.Is(err, cluster.ErrStalePlacement) {
		t.Fatalf("ack under a stale placement: %v", err)
	}
	// A rollback request: the same parts, the next generation; the old
	// generation's acks no longer commit, and the committed epoch stays.
	if err := other.RequestRollback(ctx, "w", p.Gen); err != nil {
		t.Fatal(err)
	}
	d = waitFor("a new generation", func(d cluster.Dataflow) bool { return d.Placement.Gen == p.Gen+1 })
	if len(d.Rollbacks) != 0 || d.Committed.Epoch != 1 {
		t.Fatalf("after the rollback: %+v", d)
	}
	for i := range p.Instances {
		if d.Placement.Instances[i] != p.Instances[i] {
			t.Fatalf("a rollback moved instance %d: %v -> %v", i, p.Instances, d.Placement.Instances)
		}
	}
	if err := coord.AckEpoch(ctx, "w", p, 2); !errors.Is(err, cluster.ErrStalePlacement) {
		t.Fatalf("ack of the old generation: %v", err)
	}
	r, err = coord.StartRound(ctx, "w")
	if err != nil || r.Epoch != 2 || r.Gen != d.Placement.Gen {
		t.Fatalf("round of the new generation: %+v, %v", r, err)
	}
	for _, n := range nodes {
		if err := n.AckEpoch(ctx, "w", d.Placement, 2); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("epoch 2 committed", func(d2 cluster.Dataflow) bool { return d2.Committed.Epoch == 2 && d2.Committed.Gen == d.Placement.Gen })
	// Lower acks never move it back.
	for _, n := range nodes {
		if err := n.AckEpoch(ctx, "w", d.Placement, 1); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(600 * time.Millisecond)
	if c := read().Committed; c.Epoch != 2 {
		t.Fatalf("committed went back to %+v", c)
	}
}
