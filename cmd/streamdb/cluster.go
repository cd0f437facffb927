package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/distjob"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/sqlerr"
)

// clusterFlags are the cluster-mode options: the flags, else the config
// file's [cluster] section (etcd, node_id, peer_listen, name, lease_ttl).
type clusterFlags struct {
	etcd, nodeID, peerListen, name string
	leaseTTL                       time.Duration
	kafka                          string // the shared stream log's brokers (clusterstream.go in sql)
	storage                        string // --cluster-storage (clusterckpt.go)
}

// fromConfig takes the cluster.* keys out of the config file's settings
// (they are the server's, not database settings) where no flag set them.
func (c *clusterFlags) fromConfig(settings map[string]string, given map[string]bool) error {
	for k, v := range settings {
		if !strings.HasPrefix(k, "cluster.") {
			continue
		}
		delete(settings, k)
		switch k {
		case "cluster.etcd":
			if !given["cluster-etcd"] {
				c.etcd = v
			}
		case "cluster.node_id":
			if !given["node-id"] {
				c.nodeID = v
			}
		case "cluster.peer_listen":
			if !given["peer-listen"] {
				c.peerListen = v
			}
		case "cluster.name":
			if !given["cluster-name"] {
				c.name = v
			}
		case "cluster.kafka":
			if !given["cluster-kafka"] {
				c.kafka = v
			}
		case "cluster.lease_ttl":
			if !given["cluster-lease-ttl"] {
				d, err := time.ParseDuration(v)
				if err != nil {
					return fmt.Errorf("--config: cluster.lease_ttl: %w", err)
				}
				c.leaseTTL = d
			}
		case "cluster.storage":
			if !given["cluster-storage"] {
				c.storage = v
			}
		default:
			return fmt.Errorf("--config: unknown key %q (cluster.etcd, cluster.node_id, cluster.peer_listen, cluster.name, cluster.lease_ttl, cluster.kafka, cluster.storage)", k)
		}
	}
	if c.etcd == "" {
		if c.nodeID != "" || c.peerListen != "" || c.kafka != "" || c.storage != "" {
			return fmt.Errorf("--node-id, --peer-listen, --cluster-kafka and --cluster-storage need --cluster-etcd")
		}
		return nil
	}
	if c.nodeID == "" {
		return fmt.Errorf("--cluster-etcd needs --node-id")
	}
	if c.leaseTTL < time.Second {
		return fmt.Errorf("--cluster-lease-ttl %s: at least 1s", c.leaseTTL)
	}
	return c.checkStorage()
}

// clusterEngine is sql.Cluster over a cluster.Node. The node is set after
// sql.Open (joining applies the catalog log to the engine), before any
// session exists.
type clusterEngine struct {
	node    atomic.Pointer[cluster.Node] // set once Join returns; its callbacks may run before
	dist    atomic.Pointer[distParts]    // this node's parts of distributed views (clusterdist.go)
	storage string                       // the cluster's checkpoint storage root ("" for none)
	s3      objstore.S3Config            // its S3 endpoint and keys
}

// ddlTimeout bounds how long a DDL statement waits for the coordinator to
// log it and this node to apply it (no coordinator, etcd unreachable).
const ddlTimeout = 30 * time.Second

func (c *clusterEngine) SubmitDDL(ctx context.Context, user, text string) (*sql.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, ddlTimeout)
	defer cancel()
	res, err := c.node.Load().Submit(ctx, user, text)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil, &sqlerr.Error{Code: sqlerr.QueryCanceled, Msg: "canceling statement: the cluster's catalog log did not apply it in time",
			Detail: "The statement may still be applied on every node; check with \\d before running it again."}
	case errors.Is(err, cluster.ErrNotMember):
		return nil, sqlerr.Wrap(sqlerr.ConnectionException, err)
	case err != nil: // the statement's own error, else etcd's (58000 system_error)
		return nil, sqlerr.Wrap("58000", err)
	}
	r, _ := res.(*sql.Result)
	if r == nil {
		r = &sql.Result{}
	}
	return r, nil
}

// CatchUpCatalog implements sql's catalogCatchUp: it waits until this
// node has applied the catalog entries other nodes appended.
func (c *clusterEngine) CatchUpCatalog(ctx context.Context) error {
	n := c.node.Load()
	if n == nil {
		return nil
	}
	return n.WaitCatalog(ctx)
}

func (c *clusterEngine) Members(ctx context.Context) ([]sql.ClusterMember, error) {
	ms, err := c.node.Load().Members(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sql.ClusterMember, len(ms))
	for i, m := range ms {
		out[i] = sql.ClusterMember{ID: m.ID, PGAddr: m.PGAddr, PeerAddr: m.PeerAddr, State: m.State,
			LeaseExpiry: m.LeaseExpiry, Coordinator: m.Coordinator}
	}
	jobs := c.node.Load().JobsOf()
	var dist map[string][]string
	if d := c.dist.Load(); d != nil {
		dist = d.describe(ctx)
	}
	for i := range out {
		out[i].Jobs = append(jobs[out[i].ID], dist[out[i].ID]...)
	}
	return out, nil
}

// DistPart implements sql.ClusterDistParts.
func (c *clusterEngine) DistPart(view string) (sql.DistPartInfo, bool) {
	d := c.dist.Load()
	if d == nil {
		return sql.DistPartInfo{}, false
	}
	p := d.part(view)
	if p == nil {
		return sql.DistPartInfo{}, false
	}
	st := p.Status()
	if !st.Running && st.Gen > 0 && len(st.Instances) == 0 && len(st.Splits) == 0 {
		return sql.DistPartInfo{}, false // the placement gives this node no part
	}
	desc := fmt.Sprintf("gen %d: instances %s; splits %s; epoch %d", st.Gen, joinInts(st.Instances), joinInts(st.Splits), st.Epoch)
	return sql.DistPartInfo{Running: st.Running, Desc: desc, RestoredEpoch: st.Restored.Epoch, RowsIn: st.RowsIn}, true
}

// GatherView implements sql.ClusterDist.
func (c *clusterEngine) GatherView(ctx context.Context, view string) ([]arrow.RecordBatch, error) {
	d := c.dist.Load()
	if d == nil {
		return nil, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState, Msg: "this node does not run distributed views yet", Hint: "Retry."}
	}
	return d.gather(ctx, view)
}

// joinCluster joins eng's node to the cluster: it applies the catalog log
// and serves the peer listener (for now GET /peer/health, which says the
// node is up and how far it applied the log).
func joinCluster(c clusterFlags, ce *clusterEngine, eng *sql.Engine, pgAddr, dataDir string, log *slog.Logger) (*cluster.Node, net.Listener, error) {
	var pl net.Listener
	peerAddr := ""
	if c.peerListen != "" {
		l, err := net.Listen("tcp", c.peerListen)
		if err != nil {
			return nil, nil, fmt.Errorf("--peer-listen: %w", err)
		}
		pl, peerAddr = l, l.Addr().String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	node, err := cluster.Join(ctx, cluster.Config{Endpoints: strings.Split(c.etcd, ","), Cluster: c.name, NodeID: c.nodeID,
		PGAddr: pgAddr, PeerAddr: peerAddr, LeaseTTL: c.leaseTTL, AppliedFile: filepath.Join(dataDir, "cluster-applied"),
		Logger: log, Apply: func(ctx context.Context, e cluster.Entry) (any, error) {
			return sql.ApplyDDL(sql.WithLogSeq(ctx, e.Seq), eng, e.User, e.Text)
		},
		Jobs:     func() []string { return sql.ClusterJobs(eng) },
		OnAssign: func(mine map[string]bool) { sql.SetOwnedJobs(eng, mine) },
		Handoff: func(ctx context.Context, job, node string) error {
			// The old owner checkpoints (sql/clusterops.go): here, or on its node.
			var err error
			if node == c.nodeID {
				_, err = sql.ServeExec(ctx, eng, sql.BootstrapRole, "CHECKPOINT")
			} else {
				_, err = ce.Exec(ctx, node, sql.BootstrapRole, "CHECKPOINT")
			}
			return err
		},
		RebalanceOnJoin: true,
		Distributed:     func() []cluster.DistJob { return distJobs(eng) },
		DataflowRound:   distRound,
		// Checkpoints of distributed views only with --cluster-storage,
		// every checkpoint.interval of the coordinator's.
		DataflowCheckpoint: distCheckpointEvery(c.storage, eng),
		NodeLost:           func(ctx context.Context, node string) error { return sql.FenceLostNode(ctx, eng, node) }})
	if err != nil {
		if pl != nil {
			_ = pl.Close()
		}
		return nil, nil, err
	}
	ce.node.Store(node)
	dist := newDistParts(node, eng, log)
	dist.storage, dist.s3, dist.dataDir = c.storage, ce.s3, dataDir
	ce.dist.Store(dist)
	go dist.run(context.Background())
	if pl != nil {
		mux := http.NewServeMux()
		mux.Handle("GET "+distjob.PartPath, distjob.Handler(dist.part))
		mux.HandleFunc("GET /peer/health", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "node %s applied %d coordinator %t\n", c.nodeID, node.Applied(), node.IsCoordinator())
		})
		mux.HandleFunc("POST /peer/query", serveForward(eng))
		mux.HandleFunc("POST /peer/exec", serveExec(eng))
		go func() { _ = peerServer(mux).Serve(pl) }()
	}
	log.Info("joined the cluster", "cluster", c.name, "node", c.nodeID, "etcd", c.etcd, "peer", peerAddr, "applied", node.Applied())
	return node, pl, nil
}

// distRound is how often the coordinator asks for a barrier round of each
// distributed view: the staleness of its reads.
const distRound = 250 * time.Millisecond

// distCheckpointEvery is cluster.Config.DataflowCheckpoint: how often a
// round of a distributed view is a checkpoint round (each node uploads its
// part's snapshot; a new generation restores from the last committed one),
// the most a recovery replays from the stream log. It is the
// checkpoint.interval setting of the node that coordinates (its config
// file; off: none), and none without cluster storage.
func distCheckpointEvery(storage string, eng *sql.Engine) func() time.Duration {
	if storage == "" {
		return nil
	}
	return func() time.Duration { return sql.CheckpointInterval(eng) }
}

// streamLogConfig is the shared stream log of --cluster-kafka (nil: none).
func streamLogConfig(c clusterFlags) (*sql.StreamLogConfig, error) {
	if c.kafka == "" {
		return nil, nil
	}
	brokers, err := kafka.ParseBrokers(c.kafka)
	if err != nil {
		return nil, fmt.Errorf("--cluster-kafka: %w", err)
	}
	return &sql.StreamLogConfig{Brokers: brokers, Cluster: c.name, Node: c.nodeID}, nil
}
