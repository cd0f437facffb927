package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCheckpointPointerFencing: the node a job is assigned to commits
// checkpoint pointers under its claim; once the job is given to another
// node (here by a write to jobs/<view>, as the coordinator's move makes
// it), the old owner's commit under its old claim is refused with
// ErrFenced and the pointer stays the new owner's; a pointer of an earlier
// job of the same name (another create revision) is not returned.
func TestCheckpointPointerFencing(t *testing.T) {
	ep := etcdtest.Start(t)
	ctx := context.Background()
	nodes := map[string]*cluster.Node{}
	for _, id := range []string{"n1", "n2"} {
		n, err := cluster.Join(ctx, cluster.Config{Endpoints: []string{ep}, Cluster: "ck", NodeID: id,
			LeaseTTL: 2 * time.Second, Apply: (&catalog{}).apply, Jobs: func() []string { return []string{"v"} }})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
		defer n.Close()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	claim := func(n *cluster.Node) (int64, int64, bool) { return n.Assignment("v") }
	var owner, other *cluster.Node
	deadline := time.Now().Add(15 * time.Second)
	for owner == nil {
		for id, n := range nodes {
			if _, _, ok := claim(n); ok {
				owner = n
				other = nodes[map[string]string{"n1": "n2", "n2": "n1"}[id]]
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("job v never assigned")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mod, create, _ := claim(owner)
	p := cluster.Pointer{AssignRev: mod, JobCreateRev: create, CheckpointID: 7, Epoch: 70, Storage: "s3://b/p/nodes/" + owner.ID(),
		Manifest: "checkpoints/chk-7", JobID: 3}
	if err := owner.CommitPointer(ctx, "v", p); err != nil {
		t.Fatalf("owner's commit: %v", err)
	}
	if got, err := other.ReadPointer(ctx, "v"); err != nil || got == nil || got.Node != owner.ID() || got.Epoch != 70 {
		t.Fatalf("pointer read by the other node: %+v %v", got, err)
	}
	// A non-owner cannot commit under a claim it does not hold.
	if err := other.CommitPointer(ctx, "v", p); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("the other node's commit: %v, want ErrFenced", err)
	}
	// The job moves; the old owner's late commit is fenced off.
	if _, err := cli.Put(ctx, "/streamdb/ck/jobs/v", other.ID()); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, ok := claim(other); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the move was never read")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mod2, create2, _ := claim(other)
	if create2 != create || mod2 == mod {
		t.Fatalf("after the move: revisions %d/%d, were %d/%d", mod2, create2, mod, create)
	}
	p2 := p
	p2.AssignRev, p2.CheckpointID, p2.Epoch, p2.Storage = mod2, 2, 20, "s3://b/p/nodes/"+other.ID()
	if err := other.CommitPointer(ctx, "v", p2); err != nil {
		t.Fatalf("new owner's commit: %v", err)
	}
	late := p
	late.CheckpointID, late.Epoch = 8, 80
	if err := owner.CommitPointer(ctx, "v", late); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("old owner's late commit: %v, want ErrFenced", err)
	}
	if got, err := owner.ReadPointer(ctx, "v"); err != nil || got == nil || got.Node != other.ID() || got.Epoch != 20 {
		t.Fatalf("pointer after the fenced write: %+v %v", got, err)
	}
	// Another job of the same name: the old pointer does not apply.
	if _, err := cli.Delete(ctx, "/streamdb/ck/jobs/v"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/streamdb/ck/jobs/v", owner.ID()); err != nil {
		t.Fatal(err)
	}
	if got, err := owner.ReadPointer(ctx, "v"); err != nil || got != nil {
		t.Fatalf("pointer of an earlier job of the same name: %+v %v", got, err)
	}
}
