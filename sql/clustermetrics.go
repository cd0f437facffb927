package sql

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/storage"
)

// Cluster figures for /metrics (monitor/metrics.go): this node's role,
// the jobs it runs, and the reads it forwarded to other nodes with the
// bytes of the batches it relayed back.

// clusterCounters counts this node's forwarded reads (clusterjobs.go).
type clusterCounters struct {
	forwardedReads, forwardedBytes atomic.Int64
}

// ClusterStat is one node's cluster figures.
type ClusterStat struct {
	Node           string
	Coordinator    bool
	OwnedJobs      int
	ForwardedReads int64
	ForwardedBytes int64
}

// ClusterCoordinator says whether this node coordinates (cmd/streamdb's
// Cluster implements it).
type ClusterCoordinator interface{ IsCoordinator() bool }

// ClusterStats returns e's cluster figures; ok is false on a single node.
func ClusterStats(e *Engine) (st ClusterStat, ok bool) {
	if e.cluster == nil {
		return st, false
	}
	st.Node = clusterNodeID(e)
	if c, ok := e.cluster.(ClusterCoordinator); ok {
		st.Coordinator = c.IsCoordinator()
	}
	for _, v := range ClusterJobs(e) {
		if (clusterJobs{e}).runsHere(v) {
			st.OwnedJobs++
		}
	}
	st.ForwardedReads = e.clusterStat.forwardedReads.Load()
	st.ForwardedBytes = e.clusterStat.forwardedBytes.Load()
	return st, true
}

// countedRows relays a forwarded read's batches, adding their bytes (the
// Arrow buffers', per batch) to the node's count.
type countedRows struct {
	Rows
	c *clusterCounters
}

func (r *countedRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := r.Rows.Next(ctx)
	if rec != nil {
		r.c.forwardedBytes.Add(int64(storage.PaddedBufferBytes(rec, 0)))
	}
	return rec, err
}
