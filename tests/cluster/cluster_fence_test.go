package cluster

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterCheckpointFenced: a job's checkpoint pointer is fenced by its
// assignment. While the owner of per_channel is frozen (SIGSTOP), the
// test rewrites the job's assignment as a coordinator would when moving
// it away and back (jobs/per_channel to the other node, then to the owner
// again), so the owner never sees the move and keeps running the job
// under its old claim. Its next CHECKPOINT fails with 40001 and the
// pointer in etcd is left as it was: a write under a superseded
// assignment does not pass. The owner then restarts the job from its
// latest checkpoint under the current assignment, and CHECKPOINT
// succeeds again with a newer pointer.
func TestClusterCheckpointFenced(t *testing.T) {
	c := startCluster(t, "fence", 2, clusterConf{})
	ctx := context.Background()
	execAll(t, c.conns[0],
		bidSource(2000000, 5000),
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n FROM bid GROUP BY channel")
	owner := c.index(c.owners(t, c.conns[0], "per_channel")["per_channel"])
	other := 1 - owner
	waitUntil(t, 20*time.Second, "per_channel running", func() bool {
		jobs, err := clusterShowJobs(c.conns[owner])
		return err == nil && len(jobs) == 1 && jobs[0].state == "RUNNING"
	})
	if _, err := c.conns[owner].Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatalf("CHECKPOINT: %v", err)
	}
	before := readPointer(t, c.cli, c.name, "per_channel")
	if before == nil || before.Node != c.nodes[owner].id {
		t.Fatalf("pointer after CHECKPOINT: %+v, want one of %s", before, c.nodes[owner].id)
	}

	proc := c.nodes[owner].srv
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	key := "/streamdb/" + c.name + "/jobs/per_channel"
	_, err1 := c.cli.Put(ctx, key, c.nodes[other].id)
	_, err2 := c.cli.Put(ctx, key, c.nodes[owner].id)
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err1 != nil || err2 != nil {
		t.Fatalf("rewriting the assignment: %v %v", err1, err2)
	}
	if _, err := c.conns[owner].Exec(ctx, "CHECKPOINT"); sqlstate(err) != "40001" {
		t.Fatalf("CHECKPOINT under a superseded assignment: %v, want 40001", err)
	}
	if p := readPointer(t, c.cli, c.name, "per_channel"); p == nil || p.CheckpointID != before.CheckpointID || p.Node != before.Node {
		t.Fatalf("pointer after the fenced CHECKPOINT: %+v, want it unchanged (%+v)", p, before)
	}
	// The job restarts under the current assignment; a CHECKPOINT after
	// that commits a newer pointer.
	var p *ckptPointer
	waitUntil(t, 30*time.Second, "CHECKPOINT to commit a newer pointer once the job restarted", func() bool {
		if _, err := c.conns[owner].Exec(ctx, "CHECKPOINT"); err != nil {
			return false
		}
		p = readPointer(t, c.cli, c.name, "per_channel")
		return p != nil && p.Node == c.nodes[owner].id && p.CheckpointID > before.CheckpointID
	})
	if !strings.Contains(c.nodes[owner].srv.Output(), "job reassigned here since it started") {
		t.Fatalf("%s did not log restarting the job", c.nodes[owner].id)
	}
}
