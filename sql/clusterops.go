package sql

import (
	"context"
	"sort"
	"sync"

	"github.com/streamdb/streamdb/sqlerr"
)

// Cluster mode, fourth slice (docs/design/cluster.md, "Statements on every
// node"): CHECKPOINT, savepoints (clustersavepoint.go) and ALTER CLUSTER
// REBALANCE (clusterrebalance.go) act on the jobs of every node. The node
// that takes the statement drives it: it sends the statement to each live
// node's peer listener (POST /peer/exec, ClusterPeers.Exec), where a
// forwarded session runs it for the jobs that node runs (ServeExec), and
// answers once every node has.

// ClusterPeers runs one statement on another node: that node runs it in a
// forwarded session (ServeExec) and answers with its tag and notices, or
// its error with the SQLSTATE.
type ClusterPeers interface {
	Exec(ctx context.Context, node, user, text string) (*Result, error)
}

// ServeExec runs a statement another node sent here, as user, in a
// session that acts for this node alone (a CHECKPOINT of the jobs it runs,
// the part of a savepoint they make, ...). The statement must not return
// rows.
func ServeExec(ctx context.Context, e *Engine, user, text string) (*Result, error) {
	if _, _, _, ok := e.Role(user); !ok {
		return nil, sqlerr.New(sqlerr.InvalidAuthorization, "role %q does not exist on this node", user)
	}
	s := e.NewSession(user, BootstrapRole)
	defer s.Close()
	s.clusterForwarded = true
	stmts, err := s.PrepareAll(ctx, text)
	if err == nil && (len(stmts) != 1 || stmts[0].Empty) {
		err = sqlerr.New(sqlerr.FeatureNotSupported, "a statement sent to another node must be one statement")
	}
	var res *Result
	if err == nil {
		res, err = s.Execute(ctx, stmts[0], nil)
	}
	if err == nil && (res.Rows != nil || res.CopyIn != nil) {
		if res.Rows != nil {
			res.Rows.Close()
		}
		err = sqlerr.New(sqlerr.FeatureNotSupported, "a statement sent to another node must not return rows")
	}
	_ = s.Sync(err != nil)
	return res, err
}

// onEveryNode runs text on every live node, in parallel: here with local,
// on the others through their peer listeners. It returns each node's
// result by node id, or the first error (by node id), its message naming
// the node.
func onEveryNode(ctx context.Context, s sessionCluster, text string, local func(context.Context) (*Result, error)) (map[string]*Result, error) {
	ms, err := s.e.cluster.Members(ctx)
	if err != nil {
		return nil, sqlerr.Wrap("58000", err) // system_error: etcd did not answer
	}
	peers, _ := s.e.cluster.(ClusterPeers)
	self := clusterNodeID(s.e)
	out := map[string]*Result{}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			var res *Result
			var err error
			switch {
			case id == self:
				res, err = local(ctx)
			case peers == nil:
				err = notDistributed(statementText(text), "this node cannot reach its peers")
			default:
				res, err = peers.Exec(ctx, id, s.user, text)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[id] = err
			} else {
				out[id] = res
			}
		}(m.ID)
	}
	wg.Wait()
	if len(errs) > 0 {
		ids := make([]string, 0, len(errs))
		for id := range errs {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return nil, onNode(ids[0], errs[ids[0]])
	}
	return out, nil
}

// onNode prefixes err's message with the node it happened on, keeping its
// SQLSTATE.
func onNode(node string, err error) error {
	e := *sqlerr.As(err)
	e.Msg = "node " + node + ": " + e.Msg
	return &e
}

// statementText is text for a message: the statement's first words.
func statementText(text string) string {
	if len(text) > 40 {
		return text[:40] + "..."
	}
	return text
}

// clusterNodeID is this node's id ("" on a single node).
func clusterNodeID(e *Engine) string {
	if cc, ok := e.cluster.(ClusterCheckpoints); ok {
		return cc.NodeID()
	}
	return ""
}

// clusterCheckpoint is CHECKPOINT in cluster mode: every live node takes a
// checkpoint of the jobs it runs and, with cluster storage, uploads it and
// commits each job's pointer in etcd (fenced by the job's assignment)
// before it answers; the statement returns once every node has.
func clusterCheckpoint(ctx context.Context, s sessionCluster) (*Result, error) {
	if err := needClusterStorage(s.e, "CHECKPOINT"); err != nil {
		return nil, err
	}
	if _, err := onEveryNode(ctx, s, "CHECKPOINT", func(ctx context.Context) (*Result, error) {
		return localCheckpoint(ctx, s.e)
	}); err != nil {
		return nil, err
	}
	return &Result{Tag: "CHECKPOINT"}, nil
}

// localCheckpoint is this node's CHECKPOINT: a round over the jobs it
// runs, its upload, and (cluster mode) its pointers.
func localCheckpoint(ctx context.Context, e *Engine) (*Result, error) {
	if err := e.sup.catchUp(ctx); err != nil {
		return nil, err
	}
	return e.sup.checkpointStatement(ctx)
}

// needClusterStorage refuses what in cluster mode only makes sense with
// shared checkpoint storage: without it a node's checkpoints and
// savepoints are its own, and a survivor could not restore them.
func needClusterStorage(e *Engine, what string) error {
	if clusterCheckpoints(e) != nil {
		return nil
	}
	return &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
		Msg:    what + " is not supported in cluster mode without --cluster-storage",
		Detail: "Without shared checkpoint storage each node's checkpoints stay on its own disk, where no other node can restore them (docs/design/cluster.md).",
		Hint:   "Start every node with --cluster-storage s3://bucket/prefix."}
}
