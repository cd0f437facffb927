package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Savepoints in cluster mode (docs/design/cluster.md, "Savepoints"): a
// savepoint is made of parts, one per node that runs some of its views'
// jobs: that node's own savepoint of those jobs (CREATE SAVEPOINT sent to
// it, ServeExec), uploaded under its prefix of the cluster storage. The
// node that took the statement reads the parts' manifests from the
// storage, checks that they cover every view once, and records them in
// etcd under the savepoint's name (savepoints/<name>). RESTORE is sent to
// the node that runs each view's job now, which downloads the part that
// holds the view from whichever node's prefix it is in, so a savepoint
// taken while one node ran a job restores after the job moved to another.

// ClusterSavepoints keeps the savepoint records in etcd; a Cluster that
// does not implement it refuses savepoints.
type ClusterSavepoints interface {
	// PutSavepoint records a new savepoint (false if the name is taken).
	PutSavepoint(ctx context.Context, name string, v []byte) (bool, error)
	// Savepoints returns every record by name.
	Savepoints(ctx context.Context) (map[string][]byte, error)
	// DeleteSavepoint deletes a record (false if there was none).
	DeleteSavepoint(ctx context.Context, name string) (bool, error)
}

// clusterSavepoint is the record of a savepoint in etcd.
type clusterSavepoint struct {
	Name      string          `json:"name"`
	CreatedAt time.Time       `json:"created_at"`
	Parts     []savepointPart `json:"parts"`
}

// savepointPart is one node's part of a savepoint.
type savepointPart struct {
	Node         string   `json:"node"`
	Storage      string   `json:"storage"`  // the node's checkpoint storage
	Manifest     string   `json:"manifest"` // the part's key prefix there (savepoints/<name>)
	Views        []string `json:"views"`    // the views this part restores
	CheckpointID uint64   `json:"checkpoint_id"`
	Epoch        uint64   `json:"epoch"`
	Size         int64    `json:"size"`
}

// part returns the part of sp that holds view.
func (sp *clusterSavepoint) part(view string) (*savepointPart, bool) {
	for i := range sp.Parts {
		for _, v := range sp.Parts[i].Views {
			if v == view {
				return &sp.Parts[i], true
			}
		}
	}
	return nil, false
}

// clusterSavepoints is e's savepoint records with cluster storage, or the
// 0A000 for what.
func clusterSavepoints(e *Engine, what string) (ClusterSavepoints, error) {
	if err := needClusterStorage(e, what); err != nil {
		return nil, err
	}
	cs, ok := e.cluster.(ClusterSavepoints)
	if !ok {
		return nil, notDistributed(what, "this node keeps no savepoint records")
	}
	return cs, nil
}

// readClusterSavepoints returns the savepoint records by name.
func readClusterSavepoints(ctx context.Context, cs ClusterSavepoints) (map[string]*clusterSavepoint, error) {
	raw, err := cs.Savepoints(ctx)
	if err != nil {
		return nil, sqlerr.Wrap("58000", err)
	}
	out := map[string]*clusterSavepoint{}
	for name, v := range raw {
		var sp clusterSavepoint
		if err := json.Unmarshal(v, &sp); err != nil {
			return nil, sqlerr.New(sqlerr.DataCorrupted, "the record of savepoint %q in etcd: %v", name, err)
		}
		out[name] = &sp
	}
	return out, nil
}

// clusterSavepointNamed returns savepoint name's record (42704 if none).
func clusterSavepointNamed(ctx context.Context, cs ClusterSavepoints, name string) (*clusterSavepoint, error) {
	all, err := readClusterSavepoints(ctx, cs)
	if err != nil {
		return nil, err
	}
	sp, ok := all[name]
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not exist", name)
	}
	return sp, nil
}

// clusterCreateSavepoint is CREATE SAVEPOINT in cluster mode, on the node
// that took it.
func clusterCreateSavepoint(ctx context.Context, s sessionCluster, n *parse.CreateSavepoint) (*Result, error) {
	cs, err := clusterSavepoints(s.e, "CREATE SAVEPOINT")
	if err != nil {
		return nil, err
	}
	if err := checkSavepointName(n.Name); err != nil {
		return nil, err
	}
	if _, err := clusterSavepointNamed(ctx, cs, n.Name); err == nil {
		return nil, sqlerr.New(sqlerr.DuplicateObject, "savepoint %q already exists", n.Name)
	} else if sqlerr.Code(err) != sqlerr.UndefinedObject {
		return nil, err
	}
	views := n.Views
	var notices []string
	if len(views) == 0 {
		views = ClusterJobs(s.e)
		// Not silently: the distributed views it leaves out are named.
		for _, d := range distributedDefs(s.e) {
			notices = append(notices, fmt.Sprintf("savepoint %q does not cover distributed materialized view %s (its parts are not saved at one cluster epoch yet)", n.Name, d.Name))
		}
	}
	if len(views) == 0 {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "there are no materialized views to take a savepoint of")
	}
	quoted := make([]string, len(views))
	for i, v := range views {
		def, err := s.e.viewDef(v)
		if err != nil {
			return nil, err
		}
		if distributed(def) {
			return nil, notDistributed("a savepoint of distributed materialized view "+v, "its parts are not saved at one cluster epoch yet")
		}
		quoted[i] = quoteIdent(v)
	}
	text := "CREATE SAVEPOINT " + quoteIdent(n.Name) + " FOR " + strings.Join(quoted, ", ")
	res, err := onEveryNode(ctx, s, text, func(ctx context.Context) (*Result, error) {
		return savepointPartHere(ctx, s.e, n.Name, views)
	})
	if err != nil {
		clusterDropParts(ctx, s, n.Name)
		return nil, err
	}
	sp, err := collectSavepointParts(ctx, s.e, n.Name, views, res)
	if err != nil {
		clusterDropParts(ctx, s, n.Name)
		return nil, err
	}
	v, _ := json.Marshal(sp)
	ok, err := cs.PutSavepoint(ctx, n.Name, v)
	if err != nil {
		clusterDropParts(ctx, s, n.Name)
		return nil, sqlerr.Wrap("58000", err)
	}
	if !ok {
		return nil, sqlerr.New(sqlerr.DuplicateObject, "savepoint %q already exists", n.Name)
	}
	return &Result{Tag: "CREATE SAVEPOINT", Notices: notices}, nil
}

// savepointPartHere makes this node's part of savepoint name: its own
// savepoint of the views among views whose jobs it runs (none: no part).
func savepointPartHere(ctx context.Context, e *Engine, name string, views []string) (*Result, error) {
	var mine []string
	for _, v := range views {
		if (clusterJobs{e}).runsHere(v) {
			mine = append(mine, v)
		}
	}
	if len(mine) > 0 {
		if _, err := e.sup.createSavepoint(ctx, name, mine); err != nil {
			return nil, err
		}
	}
	return &Result{Tag: "CREATE SAVEPOINT"}, nil
}

// collectSavepointParts reads the parts the nodes made (their manifests
// in each node's storage) and checks that they cover every view; a view
// in two parts (its job moved while they were taken) is restored from
// the first by node id.
func collectSavepointParts(ctx context.Context, e *Engine, name string, views []string, nodes map[string]*Result) (*clusterSavepoint, error) {
	cc := clusterCheckpoints(e)
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	want := map[string]bool{}
	for _, v := range views {
		want[v] = true
	}
	sp := &clusterSavepoint{Name: name, CreatedAt: time.Now().UTC()}
	for _, id := range ids {
		url := cc.Storage(id)
		rem, err := clusterRemote(e, url)
		if err != nil {
			return nil, err
		}
		m, err := rem.ReadManifest(ctx, checkpoint.SavepointKey(name))
		if sqlerr.Code(err) == sqlerr.UndefinedObject {
			continue // the node runs none of the views
		}
		if err != nil {
			return nil, err
		}
		p := savepointPart{Node: id, Storage: url, Manifest: checkpoint.SavepointKey(name), CheckpointID: m.CheckpointID,
			Epoch: m.Epoch, Size: m.Size()}
		for _, j := range m.Jobs {
			if want[j.Name] {
				p.Views = append(p.Views, j.Name)
				delete(want, j.Name)
			}
		}
		if len(p.Views) > 0 {
			sp.Parts = append(sp.Parts, p)
		}
	}
	if len(want) > 0 {
		var missing []string
		for v := range want {
			missing = append(missing, v)
		}
		sort.Strings(missing)
		return nil, &sqlerr.Error{Code: "40001",
			Msg:  fmt.Sprintf("no node ran the job of %s while the savepoint was taken", strings.Join(missing, ", ")),
			Hint: "Its job is moving between nodes (or has no live owner yet); retry."}
	}
	return sp, nil
}

// clusterDropParts removes the parts of savepoint name on every live node
// (best effort: what a node keeps of a failed savepoint is dropped by the
// next DROP SAVEPOINT of the name).
func clusterDropParts(ctx context.Context, s sessionCluster, name string) {
	text := "DROP SAVEPOINT IF EXISTS " + quoteIdent(name)
	_, err := onEveryNode(ctx, s, text, func(context.Context) (*Result, error) {
		return s.e.sup.dropSavepoint([]string{name}, true)
	})
	if err != nil {
		s.e.log.Warn("cluster: dropping the parts of a savepoint", "savepoint", name, "err", err)
	}
}

// clusterDropSavepoint is DROP SAVEPOINT in cluster mode: the record goes
// first (the savepoint no longer exists for RESTORE), then every live
// node drops its part, and the parts of nodes that are not live are
// deleted from their storage here.
func clusterDropSavepoint(ctx context.Context, s sessionCluster, n *parse.Drop) (*Result, error) {
	cs, err := clusterSavepoints(s.e, "DROP SAVEPOINT")
	if err != nil {
		return nil, err
	}
	all, err := readClusterSavepoints(ctx, cs)
	if err != nil {
		return nil, err
	}
	var notices []string
	for _, name := range n.Names {
		sp, ok := all[name]
		if !ok {
			if n.IfExists {
				notices = append(notices, fmt.Sprintf("savepoint %q does not exist, skipping", name))
				continue
			}
			return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not exist", name)
		}
		if _, err := cs.DeleteSavepoint(ctx, name); err != nil {
			return nil, sqlerr.Wrap("58000", err)
		}
		text := "DROP SAVEPOINT IF EXISTS " + quoteIdent(name)
		done, err := onEveryNode(ctx, s, text, func(context.Context) (*Result, error) {
			return s.e.sup.dropSavepoint([]string{name}, true)
		})
		if err != nil {
			return nil, err
		}
		for _, p := range sp.Parts {
			if _, live := done[p.Node]; live {
				continue
			}
			rem, err := clusterRemote(s.e, p.Storage)
			if err == nil {
				err = rem.Delete(ctx, p.Manifest)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return &Result{Tag: "DROP SAVEPOINT", Notices: notices}, nil
}

// clusterShowSavepoints is SHOW SAVEPOINTS in cluster mode, from the
// records in etcd: the columns of a single node's, checkpoint_id NULL
// (each part has its node's own) and size the parts' sum.
func clusterShowSavepoints(ctx context.Context, s sessionCluster, st *Stmt) (*Result, error) {
	cs, err := clusterSavepoints(s.e, "SHOW SAVEPOINTS")
	if err != nil {
		return nil, err
	}
	all, err := readClusterSavepoints(ctx, cs)
	if err != nil {
		return nil, err
	}
	sps := make([]*clusterSavepoint, 0, len(all))
	for _, sp := range all {
		sps = append(sps, sp)
	}
	sort.Slice(sps, func(i, j int) bool {
		if !sps[i].CreatedAt.Equal(sps[j].CreatedAt) {
			return sps[i].CreatedAt.Before(sps[j].CreatedAt)
		}
		return sps[i].Name < sps[j].Name
	})
	t := (savepointStore{s.e}).showSavepoints()
	t.rows = nil
	for _, sp := range sps {
		var views []string
		var size int64
		for _, p := range sp.Parts {
			views = append(views, p.Views...)
			size += p.Size
		}
		sort.Strings(views)
		t.add(str(sp.Name), str(strings.Join(views, ",")), types.Null, types.Int(sp.CreatedAt.UnixMicro()), types.Int(size))
	}
	return t.result(st, fmt.Sprintf("SELECT %d", len(t.rows))), nil
}

// clusterRestore is RESTORE ... FROM SAVEPOINT in cluster mode, on the
// node that took it: each view is restored by the node that runs its job
// now (RESTORE view FROM SAVEPOINT sent to it).
func clusterRestore(ctx context.Context, s sessionCluster, n *parse.Restore) (*Result, error) {
	if n.Savepoint == "" {
		return nil, notDistributed("RESTORE ... FROM CHECKPOINT", "checkpoint ids are per node; restore a savepoint instead")
	}
	cs, err := clusterSavepoints(s.e, "RESTORE")
	if err != nil {
		return nil, err
	}
	sp, err := clusterSavepointNamed(ctx, cs, n.Savepoint)
	if err != nil {
		return nil, err
	}
	var views []string
	if n.View != "" {
		if _, err := s.e.viewDef(n.View); err != nil {
			return nil, err
		}
		if _, ok := sp.part(n.View); !ok {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not cover materialized view %q", n.Savepoint, n.View)
		}
		views = []string{n.View}
	} else {
		for _, p := range sp.Parts {
			views = append(views, p.Views...)
		}
		sort.Strings(views)
	}
	peers, _ := s.e.cluster.(ClusterPeers)
	for _, v := range views {
		owner, self := s.e.cluster.Owner(v)
		var err error
		switch {
		case owner == "":
			err = sqlerr.New(sqlerr.ObjectNotInPrereqState, "no node runs the job of materialized view %s yet; retry", v)
		case self:
			_, err = restoreViewHere(ctx, s.e, v, n.Savepoint)
		case peers == nil:
			err = notDistributed("RESTORE", "this node cannot reach its peers")
		default:
			_, err = peers.Exec(ctx, owner, s.user, "RESTORE "+quoteIdent(v)+" FROM SAVEPOINT "+quoteIdent(n.Savepoint))
		}
		if err != nil {
			return nil, onNode(owner, err)
		}
	}
	return &Result{Tag: "RESTORE"}, nil
}

// restoreViewHere restores view, whose job this node runs, from the part
// of savepoint name that holds it (downloaded from the storage of the
// node that made it), then checkpoints, so the job's pointer in etcd
// names a checkpoint after the restore: a node that takes the job over
// later restores the restored state, not the one before.
func restoreViewHere(ctx context.Context, e *Engine, view, name string) (*Result, error) {
	if !(clusterJobs{e}).runsHere(view) {
		owner, _ := e.cluster.Owner(view)
		return nil, &sqlerr.Error{Code: "40001", Msg: "the job of " + view + " runs on node " + owner + ", not here", Hint: "It is moving; retry."}
	}
	cs, err := clusterSavepoints(e, "RESTORE")
	if err != nil {
		return nil, err
	}
	sp, err := clusterSavepointNamed(ctx, cs, name)
	if err != nil {
		return nil, err
	}
	p, ok := sp.part(view)
	if !ok {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "savepoint %q does not cover materialized view %q", name, view)
	}
	dir := filepath.Join(e.snapStore.snapshotRoot(), "cluster-savepoints", p.Node, name)
	defer func() { e.snapStore.closeSnapshot(dir); os.RemoveAll(dir) }()
	if err := downloadClusterSnapshot(ctx, e, p.Storage, p.Manifest, dir); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("savepoint %q (taken on node %s)", name, p.Node)
	if _, err := restoreFrom(ctx, e.sup, &parse.Restore{View: view, Savepoint: name}, dir, what); err != nil {
		return nil, err
	}
	// Without the catch-up: the restored job may be behind its source's
	// end for long (and a source whose records after the savepoint are gone
	// never reports reaching it); the round covers it where it is.
	if _, err := e.sup.checkpointStatement(ctx); err != nil {
		return nil, err
	}
	return &Result{Tag: "RESTORE"}, nil
}
