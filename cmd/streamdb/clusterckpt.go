package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sql"
)

// Shared checkpoints (sql/clustercheckpoint.go): clusterEngine implements
// sql.ClusterCheckpoints over the node's checkpoint pointers in etcd
// (cluster/checkpoints.go) and the --cluster-storage root, under which
// each node's checkpoints go to nodes/<node id>.

// checkStorage validates --cluster-storage (cluster.storage).
func (c *clusterFlags) checkStorage() error {
	if c.storage == "" {
		return nil
	}
	l, err := objstore.Parse(c.storage)
	if err != nil {
		return fmt.Errorf("--cluster-storage: %w", err)
	}
	c.storage = l.String()
	return nil
}

func (c *clusterEngine) NodeID() string {
	if c.node.Load() == nil {
		return ""
	}
	return c.node.Load().ID()
}

func (c *clusterEngine) Storage(node string) string {
	if c.storage == "" || node == "" {
		return ""
	}
	l, err := objstore.Parse(c.storage)
	if err != nil {
		return "" // checked at startup
	}
	return l.Join("nodes/" + node).String()
}

func (c *clusterEngine) Claim(view string) (sql.ClusterClaim, bool) {
	if c.node.Load() == nil {
		return sql.ClusterClaim{}, false
	}
	mod, create, ok := c.node.Load().Assignment(view)
	return sql.ClusterClaim{ModRev: mod, CreateRev: create}, ok
}

func (c *clusterEngine) CommitPointer(ctx context.Context, view string, claim sql.ClusterClaim, p sql.CheckpointPointer) error {
	err := c.node.Load().CommitPointer(ctx, view, cluster.Pointer{AssignRev: claim.ModRev, JobCreateRev: claim.CreateRev,
		CheckpointID: p.CheckpointID, Epoch: p.Epoch, Storage: p.Storage, Manifest: p.Manifest, JobID: p.JobID})
	if errors.Is(err, cluster.ErrFenced) {
		return fmt.Errorf("%w: %v", sql.ErrPointerFenced, err)
	}
	return err
}

func (c *clusterEngine) ReadPointer(ctx context.Context, view string) (*sql.CheckpointPointer, error) {
	p, err := c.node.Load().ReadPointer(ctx, view)
	if err != nil || p == nil {
		return nil, err
	}
	return &sql.CheckpointPointer{Node: p.Node, CheckpointID: p.CheckpointID, Epoch: p.Epoch, Storage: p.Storage,
		Manifest: p.Manifest, JobID: p.JobID}, nil
}

func (c *clusterEngine) PutSavepoint(ctx context.Context, name string, v []byte) (bool, error) {
	return c.node.Load().PutSavepoint(ctx, name, v)
}

func (c *clusterEngine) Savepoints(ctx context.Context) (map[string][]byte, error) {
	return c.node.Load().Savepoints(ctx)
}

func (c *clusterEngine) DeleteSavepoint(ctx context.Context, name string) (bool, error) {
	return c.node.Load().DeleteSavepoint(ctx, name)
}

func (c *clusterEngine) Rebalance(ctx context.Context) ([]string, error) {
	moves, err := c.node.Load().Rebalance(ctx)
	out := make([]string, len(moves))
	for i, m := range moves {
		out[i] = fmt.Sprintf("job %s moved from node %s to node %s", m.Job, m.From, m.To)
	}
	if errors.Is(err, cluster.ErrNotCoordinator) {
		err = sql.ErrNotCoordinator
	}
	return out, err
}

func (c *clusterEngine) IsCoordinator() bool {
	n := c.node.Load()
	return n != nil && n.IsCoordinator()
}
