package sql

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Distributed views (docs/design/cluster.md, "Distributed jobs"): in
// cluster mode a materialized view whose plan has the distributable shape
// (exec.CheckDistShape: one source whose rows are the same on every node →
// [or two, joined by an inner equi-join below a GROUP BY by its key] →
// filters and projections → one GROUP BY) runs as a distributed job: every
// node runs a part of it (cmd/streamdb runs a distjob.Part per view), and
// the engine's own job of the view stays on standby on every node (it is
// kept out of ClusterJobs, so no node is assigned it). A read of the view
// on any node runs over its rows gathered from every node at the committed
// cluster epoch (ClusterDist.GatherView, through planner.ViewGatherer).
// WITH (distributed = false) keeps such a view's job on one node.

// distOption is the view option that records whether a view runs
// distributed ("true", "false"; absent: not).
const distOption = "distributed"

// defaultDistInstances is a distributed view's number of aggregate
// instances when it sets no parallelism: a placement over up to six nodes
// gives every node one (a node that reads splits needs one).
const defaultDistInstances = 6

// ClusterDist is implemented by a Cluster that runs distributed views.
type ClusterDist interface {
	// GatherView returns view's rows on every node at the committed
	// cluster epoch (55000 while none is readable).
	GatherView(ctx context.Context, view string) ([]arrow.RecordBatch, error)
}

// ClusterDistParts is implemented by a Cluster that runs parts of
// distributed views, for SHOW JOBS.
type ClusterDistParts interface {
	// DistPart describes this node's part of view (false: none here).
	DistPart(view string) (DistPartInfo, bool)
}

// DistPartInfo is this node's part of a distributed view.
type DistPartInfo struct {
	Running bool
	// Desc lists the generation, instances, splits and committed epoch:
	// "gen 3: instances 0 3; splits 1; epoch 40".
	Desc string
	// RestoredEpoch is the checkpoint the generation restored (0: none).
	RestoredEpoch uint64
	RowsIn        int64
}

// DistView is a distributed view as this node's catalog has it.
type DistView struct {
	Name string
	// Sources are the view's sources, in its job's order (a join's left
	// side first); Instances is the view's number of instances.
	Sources   []DistViewSource
	Instances int
	// Spec is the view's job, for a node's part (distjob.Part), over DB.
	Spec exec.JobSpec
	DB   *storage.DB
}

// DistViewSource is a source of a distributed view.
type DistViewSource struct {
	Name string // the table's
	ID   uint64 // the table's id here
	// Topic is the table's topic in the shared stream log: the same on
	// every node, and another for a table created again.
	Topic  string
	Splits int // its number of splits (partitions)
}

// tableOrNil is e's table name, or nil.
func tableOrNil(e *Engine, name string) *storage.TableDef {
	t, _ := e.Table(name)
	return t
}

// distributed reports whether view runs as a distributed job.
func distributed(view *storage.TableDef) bool {
	return view.Kind == storage.KindView && view.Options[distOption] == "true"
}

// distributedDefs lists e's distributed views, by name.
func distributedDefs(e *Engine) []*storage.TableDef {
	e.mu.Lock()
	var defs []*storage.TableDef
	for _, t := range e.mu.tables {
		if distributed(t) {
			defs = append(defs, t)
		}
	}
	e.mu.Unlock()
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

// DistributedViews lists the distributed views of e's catalog, by name.
// A view whose plan no longer compiles here is left out (logged).
func DistributedViews(e *Engine) []DistView {
	defs := distributedDefs(e)
	out := make([]DistView, 0, len(defs))
	for _, def := range defs {
		plan, err := e.planView(def)
		var srcs []exec.DistSource
		if err == nil {
			srcs, err = exec.DistSources(plan, 1)
		}
		if err != nil {
			e.log.Error("cluster: distributed view does not plan here", "view", def.Name, "err", err)
			continue
		}
		inst := defaultDistInstances
		if n, err := strconv.Atoi(def.Options["parallelism"]); err == nil {
			inst = n
		}
		e.mu.Lock()
		spec := e.sup.jobSpecLocked(def, plan)
		e.mu.Unlock()
		v := DistView{Name: def.Name, Instances: inst, Spec: spec, DB: e.db}
		for _, s := range srcs {
			vs := DistViewSource{Name: s.Name, Splits: s.Splits}
			if t := tableOrNil(e, s.Name); t != nil {
				vs.ID, vs.Topic = t.ID, logTopic(t)
			}
			v.Sources = append(v.Sources, vs)
		}
		out = append(out, v)
	}
	return out
}

// takeDistOption takes the distributed option out of a CREATE
// MATERIALIZED VIEW's WITH list: "true", "false" or "" (not given).
func takeDistOption(with map[string]string) (string, error) {
	for k, v := range with {
		if strings.ToLower(k) != distOption {
			continue
		}
		delete(with, k)
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "on", "1":
			return "true", nil
		case "false", "off", "0":
			return "false", nil
		}
		return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for distributed: %q (expected true or false)", v)
	}
	return "", nil
}

// decideDistributed records in def whether the new view runs distributed:
// in cluster mode, when its plan has the shape and its input is the same
// on every node, unless opt is "false". opt "true" for a view that cannot
// is refused (0A000), as is opt "true" on a single node.
func decideDistributed(e *Engine, def *storage.TableDef, phys plan.Plan, opt string) error {
	if e.cluster == nil {
		if opt == "true" {
			return sqlerr.New(sqlerr.FeatureNotSupported, "WITH (distributed = true) needs cluster mode: start the server with --cluster-etcd")
		}
		return nil // a view on one node is what distributed = false asks
	}
	if opt == "false" {
		def.Options[distOption] = "false"
		return nil
	}
	why := ""
	if _, ok := e.cluster.(ClusterDist); !ok {
		why = "this cluster does not run distributed views"
	} else if w := (clusterJobs{e}).perNodeInput(def); w != "" {
		why = "its input differs from node to node: " + w
	} else if src := viewSources(def); len(src) == 0 || slices.ContainsFunc(src, func(s string) bool { return logTopic(tableOrNil(e, s)) == "" }) {
		why = "only a view over tables in the shared stream log (--cluster-kafka) runs distributed for now"
	} else if _, err := exec.DistSources(phys, 1); err != nil {
		why = err.Error()
	}
	if why == "" {
		def.Options[distOption] = "true"
		return nil
	}
	if opt == "true" {
		return &sqlerr.Error{Code: sqlerr.FeatureNotSupported, Msg: "materialized view " + def.Name + " cannot run distributed: " + why,
			Hint: "Leave out WITH (distributed = true): its job then runs on one node."}
	}
	return nil
}

// readsDistributed decides about a read of views in cluster mode: handled
// false when none is distributed; else the read runs here over the rows
// gathered from every node (GatherView), and only a read of one view can.
func readsDistributed(views []*storage.TableDef) (handled bool, err error) {
	for _, v := range views {
		if !distributed(v) {
			continue
		}
		if slices.ContainsFunc(views, func(o *storage.TableDef) bool { return o.Name != v.Name }) {
			return true, notDistributed("reading distributed materialized view "+v.Name+" with other views in one statement",
				"each is gathered at its own committed cluster epoch")
		}
		return true, nil
	}
	return false, nil
}

// refuseDistributed refuses what (0A000) if it would read one of views
// that is distributed: it would see this node's part alone.
func refuseDistributed(views []*storage.TableDef, what string) error {
	for _, v := range views {
		if distributed(v) {
			return notDistributed(what+" of distributed materialized view "+v.Name, "it would read this node's part of the view alone")
		}
	}
	return nil
}

// distGatherTimeout bounds how long a read gathers a distributed view.
const distGatherTimeout = 30 * time.Second

// GatherView implements planner.ViewGatherer: a distributed view's rows
// come from every node (ClusterDist); every other view is read here.
func (x sessionSnapshots) GatherView(view *storage.TableDef) ([]arrow.RecordBatch, bool, error) {
	cd, ok := x.Engine.cluster.(ClusterDist)
	if !ok || !distributed(view) {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), distGatherTimeout)
	defer cancel()
	recs, err := cd.GatherView(ctx, view.Name)
	return recs, err == nil, err
}

// CheckpointInterval is the checkpoint.interval setting of e (0: off):
// in cluster mode, how often the coordinator makes a distributed view's
// barrier round a checkpoint round. SET of it is refused in cluster mode
// (database settings are per node), so it comes from the config file.
func CheckpointInterval(e *Engine) time.Duration {
	return e.conf.durationSetting("checkpoint.interval")
}
