package cluster_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/cluster/etcdtest"
)

// owned records the jobs OnAssign last gave a node.
type owned struct {
	mu   sync.Mutex
	jobs map[string]bool
}

func (o *owned) set(m map[string]bool) { o.mu.Lock(); o.jobs = m; o.mu.Unlock() }

func (o *owned) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for j := range o.jobs {
		out = append(out, j)
	}
	sort.Strings(out)
	return out
}

// TestJobAssignment: every job of the catalog is assigned to exactly one
// live node (each node's OnAssign sets partition the jobs, spread evenly);
// a dropped job loses its key; when a node leaves, its jobs move to the
// others, and the partition holds again.
func TestJobAssignment(t *testing.T) {
	ep := etcdtest.Start(t)
	var mu sync.Mutex
	var jobs []string // none until all three joined: a joining node takes no running job
	catalogJobs := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), jobs...) }
	ids := []string{"n1", "n2", "n3"}
	nodes := map[string]*cluster.Node{}
	own := map[string]*owned{}
	for _, id := range ids {
		o := &owned{}
		n, err := cluster.Join(context.Background(), cluster.Config{Endpoints: []string{ep}, Cluster: "jobs", NodeID: id,
			LeaseTTL: 2 * time.Second, Apply: (&catalog{}).apply, Jobs: catalogJobs, OnAssign: o.set})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id], own[id] = n, o
	}
	defer func() {
		for _, n := range nodes {
			_ = n.Close()
		}
	}()
	// partition says whether the live nodes' sets cover want exactly once,
	// at most maxPer each, and every node's Owner agrees.
	partition := func(live []string, want []string, maxPer int) bool {
		seen := map[string]string{}
		for _, id := range live {
			l := own[id].list()
			if len(l) > maxPer {
				return false
			}
			for _, j := range l {
				if _, dup := seen[j]; dup {
					return false
				}
				seen[j] = id
			}
		}
		if len(seen) != len(want) {
			return false
		}
		for _, j := range want {
			for _, id := range live {
				if o, ok := nodes[id].Owner(j); !ok || o != seen[j] {
					return false
				}
			}
		}
		return true
	}
	waitFor(t, "three members", func() bool { m, _ := coordinators(t, nodes["n1"]); return len(m) == 3 })
	mu.Lock()
	jobs = []string{"a", "b", "c", "d", "e", "f"}
	mu.Unlock()
	waitFor(t, "six jobs, two on each node", func() bool { return partition(ids, jobs, 2) })

	mu.Lock()
	jobs = []string{"a", "b", "c", "d", "e"}
	mu.Unlock()
	waitFor(t, "f's key deleted", func() bool {
		_, ok := nodes["n1"].Owner("f")
		return !ok && partition(ids, []string{"a", "b", "c", "d", "e"}, 2)
	})

	// n2 leaves (Close revokes its lease at once): its jobs move.
	gone := own["n2"].list()
	if err := nodes["n2"].Close(); err != nil {
		t.Fatal(err)
	}
	delete(nodes, "n2")
	live := []string{"n1", "n3"}
	waitFor(t, "n2's jobs "+strings.Join(gone, ",")+" moved to n1 and n3", func() bool {
		return partition(live, []string{"a", "b", "c", "d", "e"}, 3)
	})
	jo := nodes["n1"].JobsOf()
	if len(jo["n2"]) != 0 || len(jo["n1"])+len(jo["n3"]) != 5 {
		t.Fatalf("JobsOf after n2 left: %v", jo)
	}
}
