package cluster

import (
	"slices"
	"testing"
)

// TestPlace: a new job spreads its instances and splits over the live
// nodes; placing it again on the same nodes changes nothing; when a node
// goes, only its parts move (to the least loaded survivors) and the
// generation grows; a node that joins gets its share of each list (a new
// generation: a rollback).
func TestPlace(t *testing.T) {
	job := DistJob{View: "v", Instances: 3, Splits: map[string]int{"a": 4, "b": 2}}
	p, changed := place(job, []string{"n1", "n2", "n3"}, nil)
	if !changed || p.Gen != 1 || !slices.Equal(p.Instances, []string{"n1", "n2", "n3"}) {
		t.Fatalf("first placement: %+v (changed %v)", p, changed)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		if n := len(p.InstancesOf(id)) + len(p.SplitsOf(id)["a"]) + len(p.SplitsOf(id)["b"]); n != 3 {
			t.Fatalf("node %s has %d parts, want 3: %+v", id, n, p)
		}
	}
	if q, changed := place(job, []string{"n1", "n2", "n3"}, p); changed || q.Gen != 1 {
		t.Fatalf("same nodes: %+v (changed %v)", q, changed)
	}
	q, changed := place(job, []string{"n1", "n3"}, p)
	if !changed || q.Gen != 2 || slices.Contains(q.Nodes(), "n2") {
		t.Fatalf("n2 gone: %+v (changed %v)", q, changed)
	}
	for i, id := range p.Instances {
		if id != "n2" && q.Instances[i] != id {
			t.Fatalf("instance %d moved from live %s to %s", i, id, q.Instances[i])
		}
	}
	r, changed := place(job, []string{"n1", "n3", "n4"}, q)
	if !changed || r.Gen != 3 || !slices.Contains(r.Nodes(), "n4") {
		t.Fatalf("n4 joined: %+v (changed %v)", r, changed)
	}
	for _, l := range [][]string{r.Instances, r.Splits["a"], r.Splits["b"]} {
		n := map[string]int{}
		for _, id := range l {
			n[id]++
		}
		for _, a := range []string{"n1", "n3", "n4"} {
			for _, b := range []string{"n1", "n3", "n4"} {
				if n[a]-n[b] > 1 {
					t.Fatalf("n4 joined: %v is not balanced", l)
				}
			}
		}
	}
	if r, changed := place(DistJob{View: "v", Instances: 4, Splits: job.Splits}, []string{"n1", "n3"}, q); !changed || r.Gen != 3 || len(r.Instances) != 4 {
		t.Fatalf("more instances: %+v (changed %v)", r, changed)
	}
}

// TestCheckpointOf: committing a checkpoint round's epoch commits the
// checkpoint only when every node of the placement acked that epoch of
// that generation with a snapshot; an ordinary round, another epoch or
// generation, or one ack without a snapshot commits none.
func TestCheckpointOf(t *testing.T) {
	p := &Placement{Gen: 2, Instances: []string{"n1", "n2"}, Splits: map[string][]string{"s": {"n2", "n3"}}}
	acks := func(snap3 string) map[string]Epoch {
		return map[string]Epoch{"n1": {Gen: 2, Epoch: 7, Snapshot: "checkpoints/chk-7"},
			"n2": {Gen: 2, Epoch: 7, Snapshot: "checkpoints/chk-7"}, "n3": {Gen: 2, Epoch: 7, Snapshot: snap3}}
	}
	d := Dataflow{Round: Epoch{Gen: 2, Epoch: 7, Checkpoint: true}, Acks: acks("checkpoints/chk-7")}
	ck := checkpointOf(p, d, 7)
	if ck == nil || ck.Epoch != 7 || ck.Gen != 2 || len(ck.Snapshots) != 3 || !slices.Equal(ck.Instances, p.Instances) ||
		!slices.Equal(ck.Splits["s"], p.Splits["s"]) {
		t.Fatalf("every node snapshotted: %+v", ck)
	}
	for what, d := range map[string]Dataflow{
		"an ordinary round":     {Round: Epoch{Gen: 2, Epoch: 7}, Acks: acks("checkpoints/chk-7")},
		"a node without one":    {Round: Epoch{Gen: 2, Epoch: 7, Checkpoint: true}, Acks: acks("")},
		"an older generation's": {Round: Epoch{Gen: 1, Epoch: 7, Checkpoint: true}, Acks: acks("checkpoints/chk-7")},
		"another epoch's round": {Round: Epoch{Gen: 2, Epoch: 8, Checkpoint: true}, Acks: acks("checkpoints/chk-7")},
	} {
		if ck := checkpointOf(p, d, 7); ck != nil {
			t.Fatalf("%s: checkpoint %+v, want none", what, ck)
		}
	}
}

// TestPlaceFewerInstances: with fewer instances than live nodes, the
// splits go only to the nodes that run an instance (a node's split
// positions commit with its own instances' state); the other nodes hold
// no part, and a node that joins changes nothing.
func TestPlaceFewerInstances(t *testing.T) {
	job := DistJob{View: "v", Instances: 2, Splits: map[string]int{"a": 3}}
	p, _ := place(job, []string{"n1", "n2", "n3"}, nil)
	if !slices.Equal(p.Nodes(), []string{"n1", "n2"}) {
		t.Fatalf("2 instances on 3 nodes: parts on %v, want n1 and n2: %+v", p.Nodes(), p)
	}
	for _, id := range p.Splits["a"] {
		if len(p.InstancesOf(id)) == 0 {
			t.Fatalf("split on %s, which runs no instance: %+v", id, p)
		}
	}
	if q, changed := place(job, []string{"n1", "n2", "n3", "n4"}, p); changed || q.Gen != p.Gen {
		t.Fatalf("n4 joined: %+v (changed %v), want no change", q, changed)
	}
	q, changed := place(job, []string{"n1", "n3"}, p)
	if !changed || !slices.Equal(q.Nodes(), []string{"n1", "n3"}) || q.InstancesOf("n1")[0] != p.InstancesOf("n1")[0] {
		t.Fatalf("n2 gone: %+v (changed %v), want its instance and splits on n3", q, changed)
	}
}

// TestFloorPositions: the committed epoch records, per split, the highest
// position of the last committed epoch and of the current generation's
// acks; an ack of a node outside the placement adds nothing.
func TestFloorPositions(t *testing.T) {
	p := &Placement{Gen: 3, Instances: []string{"n1", "n2"}, Splits: map[string][]string{"s": {"n1", "n2"}}}
	d := Dataflow{
		Committed: Epoch{Gen: 2, Epoch: 9, Positions: map[string]map[int]uint64{"s": {0: 50, 1: 70}}},
		Acks: map[string]Epoch{
			"n1": {Gen: 3, Epoch: 10, Positions: map[string]map[int]uint64{"s": {0: 40}}},
			"n2": {Gen: 3, Epoch: 10, Positions: map[string]map[int]uint64{"s": {1: 90}}},
			"n3": {Gen: 2, Epoch: 9, Positions: map[string]map[int]uint64{"s": {0: 999}}},
		},
	}
	got := floorPositions(d, p)
	if len(got) != 1 || got["s"][0] != 50 || got["s"][1] != 90 {
		t.Fatalf("floor positions %v, want s: 0 at 50, 1 at 90", got)
	}
}
