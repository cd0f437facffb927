package sql

import "context"

// Cluster mode: leaving cleanly and starting assigned jobs
// (docs/design/cluster.md, "Leaving cleanly").

// ClusterHandoff is a clean leave's first step (SIGTERM in cluster mode,
// before the node revokes its lease): the node checkpoints the jobs it
// runs and commits their pointers (fenced, as a CHECKPOINT does), so the
// nodes that take them over once its lease is gone restore them from this
// checkpoint, not an older one. Without cluster storage it does nothing:
// a job's new owner replays its source.
func ClusterHandoff(ctx context.Context, e *Engine) error {
	if clusterCheckpoints(e) == nil {
		return nil
	}
	_, err := localCheckpoint(ctx, e)
	return err
}

// startsByAssignment says whether a job assigned here must be started by
// SetOwnedJobs rather than where its entry is made (a new view's CREATE
// applied from the catalog log, the start after a restart): with cluster
// storage, so
// that it restores the last checkpoint any node committed for it. A node
// that replays the catalog while the assignment already names it (it
// joined and was given the job at once) would otherwise start the job
// from the beginning of its source, or from its own older epoch.
func startsByAssignment(e *Engine) bool {
	return e.cluster != nil && clusterCheckpoints(e) != nil
}

// restartReassigned handles a pointer of view fenced off while the
// assignment names this node again under a newer claim than the one its
// job started with: the job was given to another node and back (or the
// assignment was rewritten) without this node stopping it, so its state
// may be older than a pointer committed meanwhile, and none of its own
// pointers would pass the fence again. It goes to standby; the next pass
// over the assignment (SetOwnedJobs) starts it from the latest pointer
// under the current claim.
func restartReassigned(e *Engine, view string, started ClusterClaim) {
	cc := clusterCheckpoints(e)
	if cc == nil {
		return
	}
	if now, ok := cc.Claim(view); ok && now != started {
		toStandby(e, view, "cluster: job reassigned here since it started; restarting it from its latest checkpoint")
	}
}
