package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/distjob"
	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sql"
)

// Distributed views (docs/design/cluster.md, "Distributed jobs"): every
// node runs a distjob.Part of each view sql.DistributedViews lists, with
// its exchange streams over the peers' Flight services (exchange.Conns
// over their peer addresses), serves its part at an epoch on the peer
// listener (distjob.Handler) and answers reads with distjob.Gather over
// every node's part (GatherView).

// distParts are this node's parts of the distributed views.
type distParts struct {
	node  *cluster.Node
	eng   *sql.Engine
	log   *slog.Logger
	conns *exchange.Conns
	// storage is the cluster's storage root ("": none), s3 its keys;
	// each view's snapshots go to nodes/<node>/dist/<view> there and to
	// dataDir/distjob/<view>-<job id> here.
	storage string
	s3      objstore.S3Config
	dataDir string
	mu      sync.Mutex
	parts   map[string]*runningPart
	remotes map[string]*checkpoint.Remote // by storage URL
}

// runningPart is one view's part and how to stop it.
type runningPart struct {
	part *distjob.Part
	sql  string // the view's query it runs (a replaced view starts again)
	stop context.CancelFunc
	done chan struct{}
}

func newDistParts(node *cluster.Node, eng *sql.Engine, log *slog.Logger) *distParts {
	d := &distParts{node: node, eng: eng, log: log, parts: map[string]*runningPart{}}
	d.conns = &exchange.Conns{Addr: func(id string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
		defer cancel()
		addr, err := node.PeerAddr(ctx, id)
		if err == nil && addr == "" {
			err = fmt.Errorf("node %s has no peer listener (--peer-listen)", id)
		}
		return addr, err
	}}
	return d
}

// distJobs is cluster.Config.Distributed: the views the coordinator places.
func distJobs(eng *sql.Engine) []cluster.DistJob {
	vs := sql.DistributedViews(eng)
	out := make([]cluster.DistJob, len(vs))
	for i, v := range vs {
		splits := map[string]int{}
		for _, s := range v.Sources {
			splits[s.Name] = s.Splits
		}
		out[i] = cluster.DistJob{View: v.Name, Instances: v.Instances, Splits: splits}
	}
	return out
}

// run keeps one part running per distributed view until ctx ends.
func (d *distParts) run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		d.reconcile()
		select {
		case <-ctx.Done():
			d.mu.Lock()
			parts := d.parts
			d.parts = map[string]*runningPart{}
			d.mu.Unlock()
			for _, rp := range parts {
				rp.stop()
				<-rp.done
			}
			d.conns.Close()
			return
		case <-t.C:
		}
	}
}

// reconcile starts the parts of new (or replaced) distributed views and
// stops those of views that are gone.
func (d *distParts) reconcile() {
	want := map[string]sql.DistView{}
	for _, v := range sql.DistributedViews(d.eng) {
		want[v.Name] = v
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var stopped []*runningPart
	for name, rp := range d.parts {
		if v, ok := want[name]; !ok || v.Spec.View.SQL != rp.sql || v.Spec.ID != rp.part.Spec.ID {
			rp.stop()
			stopped = append(stopped, rp)
			delete(d.parts, name)
		}
	}
	if len(stopped) > 0 {
		d.mu.Unlock()
		for _, rp := range stopped {
			<-rp.done
			// A dropped view's snapshots go (not those of a view that
			// only failed to plan here: a checkpoint may still name them).
			if _, ok := d.eng.Table(rp.part.View); !ok {
				ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
				if err := rp.part.DropSnapshots(ctx); err != nil {
					d.log.Warn("cluster: deleting a dropped distributed view's snapshots", "view", rp.part.View, "err", err)
				}
				cancel()
			}
		}
		d.mu.Lock()
	}
	for name, v := range want {
		if d.parts[name] != nil {
			continue
		}
		p := &distjob.Part{Node: d.node, Self: d.node.ID(), View: name, Sources: partSources(v.Sources), DB: v.DB, Spec: v.Spec,
			Server: exchangeServer, Conn: d.conns.Get, Log: d.log,
			SnapDir: filepath.Join(d.dataDir, "distjob", fmt.Sprintf("%s-%d", name, v.Spec.ID))}
		if d.storage != "" {
			p.Storage = func(node string) (*checkpoint.Remote, error) { return d.remote(node, name) }
		}
		ctx, cancel := context.WithCancel(context.Background())
		rp := &runningPart{part: p, sql: v.Spec.View.SQL, stop: cancel, done: make(chan struct{})}
		go func() { defer close(rp.done); p.Run(ctx) }()
		d.parts[name] = rp
		d.log.Info("cluster: running this node's part of a distributed view", "view", name, "sources", v.Sources, "instances", v.Instances)
	}
}

// remote is the storage of node's snapshots of view (one Remote per
// location, so its uploads know what the storage holds).
func (d *distParts) remote(node, view string) (*checkpoint.Remote, error) {
	l, err := objstore.Parse(d.storage)
	if err != nil {
		return nil, err
	}
	l = l.Join("nodes/" + node + "/dist/" + view)
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.remotes[l.String()]; r != nil {
		return r, nil
	}
	st, err := objstore.Open(l, d.s3)
	if err != nil {
		return nil, err
	}
	if d.remotes == nil {
		d.remotes = map[string]*checkpoint.Remote{}
	}
	r := checkpoint.NewRemote(st)
	d.remotes[l.String()] = r
	return r, nil
}

// part is the part of view running here (nil: none), for distjob.Handler.
func (d *distParts) part(view string) *distjob.Part {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rp := d.parts[view]; rp != nil {
		return rp.part
	}
	return nil
}

// gather reads view at the committed cluster epoch from every node of its
// placement, this one included, over their peer listeners.
func (d *distParts) gather(ctx context.Context, view string) ([]arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	release := func() {
		for _, r := range recs {
			r.Release()
		}
		recs = recs[:0]
	}
	_, err := distjob.Gather(ctx, d.node, view, func(id string, gen, epoch uint64) error {
		addr, err := d.conns.Addr(id)
		if err != nil {
			return err
		}
		return distjob.Fetch(ctx, peerClient, addr, view, gen, epoch, func(rec arrow.RecordBatch) error {
			recs = append(recs, rec)
			return nil
		})
	}, release)
	if err != nil {
		release()
		return nil, err
	}
	return recs, nil
}

// describe lists, per node, the instances and splits of each distributed
// view placed on it, for SHOW CLUSTER: "v[instances 0,3; splits 1]".
func (d *distParts) describe(ctx context.Context) map[string][]string {
	out := map[string][]string{}
	for _, v := range sql.DistributedViews(d.eng) {
		df, err := d.node.ReadDataflow(ctx, v.Name)
		if err != nil || df.Placement == nil {
			continue
		}
		for _, id := range df.Placement.Nodes() {
			var parts []string
			if inst := df.Placement.InstancesOf(id); len(inst) > 0 {
				parts = append(parts, "instances "+joinInts(inst))
			}
			for src, s := range df.Placement.SplitsOf(id) {
				parts = append(parts, "splits of "+src+" "+joinInts(s))
			}
			sort.Strings(parts)
			if df.Checkpoint != nil {
				parts = append(parts, fmt.Sprintf("checkpoint %d", df.Checkpoint.Epoch))
			}
			out[id] = append(out[id], fmt.Sprintf("%s[gen %d: %s]", v.Name, df.Placement.Gen, strings.Join(parts, "; ")))
		}
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

// partSources are a distributed view's sources as its part takes them.
func partSources(srcs []sql.DistViewSource) []distjob.Source {
	out := make([]distjob.Source, len(srcs))
	for i, s := range srcs {
		out[i] = distjob.Source{Name: s.Name, ID: s.ID, Stream: s.Topic}
	}
	return out
}
