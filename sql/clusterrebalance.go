package sql

import (
	"context"
	"errors"

	"github.com/streamdb/streamdb/sqlerr"
)

// ALTER CLUSTER REBALANCE (docs/design/cluster.md, "Rebalancing"): the
// coordinator moves jobs from the most loaded live node to the least
// loaded until they differ by one job at most, each at a checkpoint the
// old owner takes and commits first (cluster/rebalance.go). On another
// node the statement is sent to the coordinator.

// ClusterRebalancer rebalances the jobs over the live nodes; only the
// coordinator's does (ErrNotCoordinator elsewhere).
type ClusterRebalancer interface {
	// Rebalance returns one line per job it moved.
	Rebalance(ctx context.Context) ([]string, error)
}

// ErrNotCoordinator is a rebalance asked of a node that does not
// coordinate.
var ErrNotCoordinator = errors.New("this node is not the cluster's coordinator")

// clusterRebalance is ALTER CLUSTER REBALANCE: here if this node
// coordinates, else on the coordinator. Its notices name the moves.
func clusterRebalance(ctx context.Context, s sessionCluster) (*Result, error) {
	if err := needClusterStorage(s.e, "ALTER CLUSTER REBALANCE"); err != nil {
		return nil, err
	}
	rb, ok := s.e.cluster.(ClusterRebalancer)
	if !ok {
		return nil, notDistributed("ALTER CLUSTER REBALANCE", "this node cannot move jobs")
	}
	moves, err := rb.Rebalance(ctx)
	if errors.Is(err, ErrNotCoordinator) {
		if s.clusterForwarded {
			return nil, &sqlerr.Error{Code: "40001", Msg: "ALTER CLUSTER REBALANCE reached a node that no longer coordinates", Hint: "Retry."}
		}
		ms, merr := s.e.cluster.Members(ctx)
		if merr != nil {
			return nil, sqlerr.Wrap("58000", merr)
		}
		peers, _ := s.e.cluster.(ClusterPeers)
		for _, m := range ms {
			if m.Coordinator && peers != nil {
				res, err := peers.Exec(ctx, m.ID, s.user, "ALTER CLUSTER REBALANCE")
				if err != nil {
					return nil, onNode(m.ID, err)
				}
				return res, nil
			}
		}
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "the cluster has no coordinator right now; retry")
	}
	if err != nil {
		if sqlerr.Code(err) == sqlerr.Internal {
			err = sqlerr.Wrap("58000", err) // etcd, or a fenced move
		}
		return nil, err
	}
	return &Result{Tag: "ALTER CLUSTER", Notices: moves}, nil
}
