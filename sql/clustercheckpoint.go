package sql

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Cluster mode, third slice (docs/design/cluster.md, "Shared
// checkpoints"): with cluster storage (--cluster-storage s3://b/p) each
// node uploads its retained checkpoints to <storage>/nodes/<node id>, as
// checkpoint.storage does on one node, and after each upload publishes,
// for every job it runs, a pointer to that checkpoint in etcd, fenced by
// the job's assignment (ClusterCheckpoints.CommitPointer). A node given a
// job another node checkpointed restores the job's state, view rows and
// source offsets from the pointed-to snapshot before starting it, instead
// of recomputing the view from the start of its source.

// ClusterCheckpoints is the shared-checkpoint side of a Cluster; a Cluster
// that does not implement it (or returns "" from Storage) keeps each
// node's checkpoints to itself.
type ClusterCheckpoints interface {
	// NodeID is this node's id.
	NodeID() string
	// Storage is the checkpoint storage URL of node ("" without cluster
	// storage): the cluster's storage root, then nodes/<id>.
	Storage(node string) string
	// Claim is the assignment under which this node runs view now.
	Claim(view string) (ClusterClaim, bool)
	// CommitPointer publishes p as view's committed checkpoint if the
	// assignment is still claim (ErrPointerFenced otherwise).
	CommitPointer(ctx context.Context, view string, claim ClusterClaim, p CheckpointPointer) error
	// ReadPointer returns view's committed checkpoint, nil if none.
	ReadPointer(ctx context.Context, view string) (*CheckpointPointer, error)
}

// ClusterClaim identifies one assignment of a job to this node (etcd's
// revisions of its assignment key).
type ClusterClaim struct{ ModRev, CreateRev int64 }

// CheckpointPointer is a job's committed checkpoint in cluster storage.
type CheckpointPointer struct {
	Node         string // the node that took it
	CheckpointID uint64 // its id on that node
	Epoch        uint64
	Storage      string // that node's checkpoint storage URL
	Manifest     string // the snapshot's key prefix there
	JobID        uint64 // the job's id in the snapshot
}

// ErrPointerFenced is a pointer write refused by its fence: the job was
// given to another node (or dropped) since this node started it.
var ErrPointerFenced = errors.New("the job's assignment moved on: checkpoint pointer not written")

// clusterCkpt is the engine's record of the jobs it started in cluster
// mode: under which claim, after which checkpoint, and from which pointer.
type clusterCkpt struct {
	mu      sync.Mutex
	started map[string]clusterStart
	// failed holds, by checkpoint id, the first pointer of that checkpoint
	// that was not committed, for CHECKPOINT to report (clusterPointerErr).
	failed map[uint64]error
}

type clusterStart struct {
	claim     ClusterClaim
	afterCkpt uint64             // the last checkpoint begun before the start
	from      *CheckpointPointer // restored from; nil if started from local state
}

// clusterCheckpoints is e's ClusterCheckpoints, nil when the checkpoints
// are not shared.
func clusterCheckpoints(e *Engine) ClusterCheckpoints {
	if e.cluster == nil {
		return nil
	}
	cc, ok := e.cluster.(ClusterCheckpoints)
	if !ok || cc.Storage(cc.NodeID()) == "" {
		return nil
	}
	return cc
}

// clusterStorageURL is this node's checkpoint storage in cluster mode
// ("" without cluster storage): it stands in for checkpoint.storage.
func clusterStorageURL(e *Engine) string {
	if cc := clusterCheckpoints(e); cc != nil {
		return cc.Storage(cc.NodeID())
	}
	return ""
}

// clusterRestoreTimeout bounds the download of a job's checkpoint.
const clusterRestoreTimeout = 5 * time.Minute

// restoreClusterJob brings view's job, about to start on this node, to
// its committed checkpoint in cluster storage when another node took it:
// the snapshot is downloaded, checked against its manifest, and the job's
// state, offsets and rows replace this node's in one batch. It returns the
// pointer restored from, nil when there is nothing to restore (no
// pointer, or this node's own: its local commit is at least as new).
func restoreClusterJob(e *Engine, def *storage.TableDef, vp plan.Plan) (*CheckpointPointer, error) {
	cc := clusterCheckpoints(e)
	if cc == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterRestoreTimeout)
	defer cancel()
	p, err := cc.ReadPointer(ctx, def.Name)
	if err != nil || p == nil || p.Node == cc.NodeID() {
		return nil, err
	}
	if want := cc.Storage(p.Node); p.Storage != want {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "the checkpoint pointer of %s names storage %s, not node %s's %s", def.Name, p.Storage, p.Node, want)
	}
	dir := filepath.Join(e.db.Dir(), "cluster-restore", fmt.Sprintf("%s-chk-%d", p.Node, p.CheckpointID))
	defer os.RemoveAll(dir)
	if err := downloadClusterSnapshot(ctx, e, p.Storage, p.Manifest, dir); err != nil {
		return nil, err
	}
	snap, err := e.snapStore.openSnapshot(dir)
	if err != nil {
		return nil, err
	}
	defer e.snapStore.closeSnapshot(dir)
	jm, ok := snap.man.Job(def.Name)
	if !ok || jm.ID != p.JobID {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "checkpoint %s of node %s does not hold job %s", p.Manifest, p.Node, def.Name)
	}
	if jm.SQL != def.SQL {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "checkpoint %s of node %s holds another query for %s", p.Manifest, p.Node, def.Name)
	}
	if _, err := compatible(def.Name, jm, vp, false); err != nil {
		return nil, err
	}
	b := e.db.NewBatch()
	if err := e.db.State().CopyJob(b, snap.db, jm.ID, def.ID, true); err != nil {
		return nil, err
	}
	if err := restoreMemoryState(e.db, b, snap.db, jm.ID, def.ID); err != nil {
		return nil, err
	}
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	e.db.Epochs().DropReadPoints() // they show this node's older rows of the view
	return p, nil
}

// clusterRemote opens a node's checkpoint storage (url, under the
// cluster's storage root).
func clusterRemote(e *Engine, url string) (*checkpoint.Remote, error) {
	l, err := objstore.Parse(url)
	if err != nil {
		return nil, err
	}
	st, err := objstore.Open(l, e.remotes.cfg.S3)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return checkpoint.NewRemote(st), nil
}

// downloadClusterSnapshot downloads the snapshot under prefix of the
// checkpoint storage url into dir (replaced), checked against its
// manifest.
func downloadClusterSnapshot(ctx context.Context, e *Engine, url, prefix, dir string) error {
	rem, err := clusterRemote(e, url)
	if err != nil {
		return err
	}
	e.snapStore.closeSnapshot(dir)
	os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	_, err = rem.Download(ctx, prefix, dir)
	return err
}

// noteClusterStart records, with the round lock held, that view's job
// started here (restored from from, or not): the checkpoints begun after
// this moment hold its state under the current claim.
func noteClusterStart(e *Engine, view string, from *CheckpointPointer) {
	cc := clusterCheckpoints(e)
	if cc == nil {
		return
	}
	claim, ok := cc.Claim(view)
	if !ok {
		return // moved away already: no pointer will pass the fence
	}
	var last uint64
	for _, r := range e.coord.History() {
		last = max(last, r.ID)
	}
	e.ckShare.mu.Lock()
	defer e.ckShare.mu.Unlock()
	if e.ckShare.started == nil {
		e.ckShare.started = map[string]clusterStart{}
	}
	e.ckShare.started[view] = clusterStart{claim: claim, afterCkpt: last, from: from}
}

// noteClusterStop forgets view's start: its job stopped here.
func noteClusterStop(e *Engine, view string) {
	e.ckShare.mu.Lock()
	delete(e.ckShare.started, view)
	e.ckShare.mu.Unlock()
}

// publishClusterPointers publishes checkpoint m, just uploaded to rem, as
// the committed checkpoint of each job it holds that this node runs under
// the claim it started it with (the fence is in etcd: a job given to
// another node since is refused there and logged).
func publishClusterPointers(e *Engine, rem *checkpoint.Remote, m *checkpoint.Manifest) {
	cc := clusterCheckpoints(e)
	if cc == nil || rem.Store.URL() != cc.Storage(cc.NodeID()) {
		return
	}
	for _, jm := range m.Jobs {
		e.ckShare.mu.Lock()
		st, ok := e.ckShare.started[jm.Name]
		e.ckShare.mu.Unlock()
		if !ok || m.CheckpointID <= st.afterCkpt {
			continue // not run here, or begun before this run of the job
		}
		p := CheckpointPointer{CheckpointID: m.CheckpointID, Epoch: m.Epoch, Storage: rem.Store.URL(),
			Manifest: checkpoint.CheckpointKey(m.CheckpointID), JobID: jm.ID}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cc.CommitPointer(ctx, jm.Name, st.claim, p)
		cancel()
		switch {
		case errors.Is(err, ErrPointerFenced):
			e.log.Warn("cluster: checkpoint pointer fenced off", "view", jm.Name, "checkpoint", m.CheckpointID, "err", err)
			err = &sqlerr.Error{Code: "40001", Msg: fmt.Sprintf("the job of %s moved to another node during checkpoint %d: its pointer was fenced off", jm.Name, m.CheckpointID),
				Hint: "Retry the statement: the node that runs the job now checkpoints it."}
			go restartReassigned(e, jm.Name, st.claim)
		case err != nil:
			e.log.Warn("cluster: checkpoint pointer not written", "view", jm.Name, "checkpoint", m.CheckpointID, "err", err)
			err = sqlerr.New("58000", "the checkpoint pointer of %s (checkpoint %d) was not committed in etcd: %v", jm.Name, m.CheckpointID, err)
		default:
			e.log.Info("cluster: checkpoint committed", "view", jm.Name, "checkpoint", m.CheckpointID, "epoch", m.Epoch)
		}
		if err != nil {
			noteClusterPointerErr(e, m.CheckpointID, err)
		}
	}
}

// noteClusterPointerErr keeps the first pointer error of checkpoint id
// (and forgets those of checkpoints long past, which no CHECKPOINT waits for).
func noteClusterPointerErr(e *Engine, id uint64, err error) {
	e.ckShare.mu.Lock()
	defer e.ckShare.mu.Unlock()
	if e.ckShare.failed == nil {
		e.ckShare.failed = map[uint64]error{}
	}
	if _, ok := e.ckShare.failed[id]; !ok {
		e.ckShare.failed[id] = err
	}
	for fid := range e.ckShare.failed {
		if fid+100 < id {
			delete(e.ckShare.failed, fid)
		}
	}
}

// clusterPointerErr returns (and forgets) the first pointer of checkpoint
// id that was not committed; nil when every job's was, or outside cluster mode.
func clusterPointerErr(e *Engine, id uint64) error {
	e.ckShare.mu.Lock()
	defer e.ckShare.mu.Unlock()
	err := e.ckShare.failed[id]
	delete(e.ckShare.failed, id)
	return err
}

// addClusterColumns appends to SHOW JOBS the node that runs each job (”
// on a single node) and, in cluster mode, the checkpoint its run was
// restored from: restored_from (storage URL and snapshot) and
// restored_epoch, NULL when it started from this node's own state. In
// cluster mode the jobs on standby (run by other nodes) are left out.
func addClusterColumns(e *Engine, t *table) *table {
	t.cols = append(t.cols, Column{Name: "node", T: types.TText}, Column{Name: "restored_from", T: types.TText}, Column{Name: "restored_epoch", T: types.TInt64})
	parts, _ := e.cluster.(ClusterDistParts)
	if e.cluster != nil {
		t.cols = append(t.cols, Column{Name: "part", T: types.TText})
	}
	node := ""
	if cc, ok := e.cluster.(ClusterCheckpoints); ok {
		node = cc.NodeID()
	}
	e.mu.Lock()
	standby := map[string]bool{}
	if e.cluster != nil {
		for n, je := range e.mu.jobs {
			standby[n] = je.standby
		}
	}
	e.mu.Unlock()
	e.ckShare.mu.Lock()
	defer e.ckShare.mu.Unlock()
	rows := t.rows[:0]
	for _, r := range t.rows {
		from, epoch, part := types.Null, types.Null, types.Null
		if len(r) > 0 && standby[r[0].S] {
			// A distributed view's engine job is on standby everywhere:
			// the row shows this node's part of it instead.
			var p DistPartInfo
			ok := false
			if parts != nil {
				p, ok = parts.DistPart(r[0].S)
			}
			if !ok {
				continue
			}
			r[1], r[3], part = str(string(exec.JobStopped)), types.Int(p.RowsIn), str(p.Desc)
			if p.Running {
				r[1] = str(string(exec.JobRunning))
			}
			if p.RestoredEpoch > 0 {
				epoch = types.Int(int64(p.RestoredEpoch))
			}
		} else if st, ok := e.ckShare.started[r[0].S]; ok && st.from != nil {
			from = str(strings.TrimSuffix(st.from.Storage, "/") + "/" + st.from.Manifest)
			epoch = types.Int(int64(st.from.Epoch))
		}
		r = append(r, str(node), from, epoch)
		if e.cluster != nil {
			r = append(r, part)
		}
		rows = append(rows, r)
	}
	t.rows = rows
	return t
}

// restoredWhat names the checkpoint a job was restored from, for the log.
func restoredWhat(p *CheckpointPointer) string {
	if p == nil {
		return "local"
	}
	return fmt.Sprintf("%s/%s (node %s, epoch %d)", strings.TrimSuffix(p.Storage, "/"), p.Manifest, p.Node, p.Epoch)
}

// showClusterJobs is SHOW JOBS in cluster mode: this node's running jobs
// and, forwarded to each other live node, its own (a node answers a
// forwarded SHOW JOBS with its jobs alone), by node id.
func showClusterJobs(ctx context.Context, s sessionCluster, st *Stmt) (*Result, error) {
	local, err := sessionShow{s.Session}.showTable(planOf(st).impl.(parse.Statement))
	if err != nil {
		return nil, err
	}
	ms, err := s.e.cluster.Members(ctx)
	if err != nil {
		return nil, sqlerr.Wrap("58000", err) // system_error: etcd did not answer
	}
	self := ""
	if cc, ok := s.e.cluster.(ClusterCheckpoints); ok {
		self = cc.NodeID()
	}
	out := &table{cols: local.cols}
	for _, m := range ms {
		if m.ID == self {
			out.rows = append(out.rows, local.rows...)
			continue
		}
		rows, err := s.e.cluster.Forward(ctx, m.ID, s.user, "SHOW JOBS")
		if err != nil {
			return nil, err
		}
		err = appendRemoteRows(ctx, out, rows)
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out.result(st, fmt.Sprintf("SELECT %d", len(out.rows))), nil
}

// appendRemoteRows adds the rows of a forwarded SHOW JOBS to t, whose
// columns it must have.
func appendRemoteRows(ctx context.Context, t *table, rows Rows) error {
	for {
		rec, err := rows.Next(ctx)
		if err != nil || rec == nil {
			return err
		}
		if int(rec.NumCols()) != len(t.cols) {
			rec.Release()
			return sqlerr.New(sqlerr.ProtocolViolation, "a node answered SHOW JOBS with %d columns, this node has %d: the nodes run different versions", rec.NumCols(), len(t.cols))
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			r := make([]types.Datum, len(t.cols))
			for c := range t.cols {
				r[c] = types.DatumAt(rec.Column(c), i, t.cols[c].T)
			}
			t.rows = append(t.rows, r)
		}
		rec.Release()
	}
}
