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
