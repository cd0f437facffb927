package cluster_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/cluster/etcdtest"
)

// TestNodeLost: when a node's membership key goes, every other live node
// calls Config.NodeLost with its id once (and never for itself).
func TestNodeLost(t *testing.T) {
	ep := etcdtest.Start(t)
	dir := t.TempDir()
	var mu sync.Mutex
	lost := map[string][]string{} // by the node that saw it
	nodes := map[string]*cluster.Node{}
	for _, id := range []string{"a", "b", "c"} {
		n, err := cluster.Join(context.Background(), cluster.Config{Endpoints: []string{ep}, Cluster: "lost", NodeID: id,
			LeaseTTL: 2 * time.Second, Apply: (&catalog{}).apply, AppliedFile: filepath.Join(dir, id),
			NodeLost: func(_ context.Context, node string) error {
				mu.Lock()
				lost[id] = append(lost[id], node)
				mu.Unlock()
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
	}
	defer nodes["a"].Close()
	defer nodes["b"].Close()
	if err := nodes["c"].Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a and b to see c lost", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(lost["a"], []string{"c"}) && slices.Equal(lost["b"], []string{"c"})
	})
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(lost["a"]) != 1 || len(lost["b"]) != 1 || len(lost["c"]) != 0 {
		t.Fatalf("NodeLost calls: %v, want c once on a and on b", lost)
	}
}
