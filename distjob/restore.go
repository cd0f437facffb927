package distjob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/storage"
)

// Checkpoints of a distributed view (docs/design/cluster.md, step 6). A
// node's snapshot of its part at a checkpoint round's epoch is the same
// snapshot as a single node's checkpoint (checkpoint.Capture and Seal: a
// Pebble checkpoint of its database, hard links) uploaded with the same
// incremental uploader (checkpoint.Remote.Upload: only the files the
// storage lacks, then the manifest) under checkpoints/chk-<epoch> of the
// node's storage of the view (Part.Storage). Its manifest names the job
// (id and query) and the part's source positions at the epoch. The node
// keeps the snapshot of the last committed checkpoint on disk too, so it
// restores its own instances without a download; older ones go, here and
// in the storage, once a later checkpoint committed.

// Restored says what a generation of a part started from.
type Restored struct {
	Epoch     uint64            // the checkpoint's epoch; 0: the sources' start
	Instances []int             // the instances whose state was restored here
	Offsets   map[uint32]uint64 // each split's position restored here
	From      []string          // the nodes whose snapshots were read
	Entries   int               // keys copied
	Took      time.Duration
}

// Status is a part as SHOW JOBS shows it.
type Status struct {
	Running   bool // a generation's job runs here
	Gen       uint64
	Instances []int  // the instances it runs
	Splits    []int  // the splits of its (first) source it reads
	Epoch     uint64 // the last committed cluster epoch it saw
	Restored  Restored
	RowsIn    int64
}

// Status returns what the part runs now.
func (p *Part) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Running: p.job != nil, Gen: p.gen, Epoch: p.committed, Restored: p.restored}
	if p.pl != nil {
		st.Instances, st.Splits = p.pl.InstancesOf(p.Self), p.pl.SplitsOf(p.Self)[p.Sources[0].Name]
	}
	if p.job != nil {
		st.RowsIn = p.job.RowsIn.Load()
	}
	return st
}

// restoreTimeout bounds the downloads of a restore.
const restoreTimeout = 5 * time.Minute

// errOtherView is a snapshot of another view of the same name (the view
// was replaced since): the part starts from its sources' start.
var errOtherView = errors.New("the snapshot holds another query of the view")

// restore replaces this node's data of the view by what placement pl's
// part starts from: the instances' state and view rows and the splits'
// positions at checkpoint ck, each from the snapshot of the node that held
// it then; nothing when there is no checkpoint (or no storage), or ck is
// of another shape or query.
func (p *Part) restore(pl *cluster.Placement, ck *cluster.DataflowCheckpoint) (Restored, error) {
	start := time.Now()
	why := ""
	switch {
	case p.Storage == nil:
		why = "no cluster storage"
	case ck == nil:
		why = "no checkpoint committed yet"
	case len(ck.Instances) != len(pl.Instances) || slices.ContainsFunc(p.Sources, func(src Source) bool { return len(ck.Splits[src.Name]) != len(pl.Splits[src.Name]) }):
		why = "the checkpoint has another number of instances or splits"
	case p.Spec.State.Backend == exec.BackendMemory:
		why = "the memory state backend keeps its state outside the snapshot's keys"
	}
	if why == "" {
		r, err := p.restoreFrom(pl, ck)
		if err == nil {
			r.Took = time.Since(start)
			p.info("distributed job part restored", "gen", pl.Gen, "epoch", r.Epoch, "instances", r.Instances,
				"offsets", fmtOffsets(r.Offsets), "from", r.From, "keys", r.Entries, "took", r.Took.Round(time.Millisecond))
			return r, nil
		}
		if !errors.Is(err, errOtherView) {
			return Restored{}, err
		}
		why = err.Error()
	}
	if ck != nil {
		p.logf("distributed job part starts from its sources' start", "gen", pl.Gen, "why", why)
	}
	return Restored{}, p.DB.State().ResetJob(p.Spec.ID)
}

func (p *Part) restoreFrom(pl *cluster.Placement, ck *cluster.DataflowCheckpoint) (Restored, error) {
	ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
	defer cancel()
	b := p.DB.NewBatch()
	defer b.Close()
	storage.DeleteJobData(b, p.Spec.ID)
	r := Restored{Epoch: ck.Epoch, Offsets: map[uint32]uint64{}}
	nodes := make([]string, 0, len(ck.Snapshots))
	for id := range ck.Snapshots {
		nodes = append(nodes, id)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		var inst []int
		for i, id := range pl.Instances {
			if id == p.Self && ck.Instances[i] == node {
				inst = append(inst, i)
			}
		}
		splits := make([][]int, len(p.Sources))
		some := len(inst) > 0
		for i, src := range p.Sources {
			oldSplits := ck.Splits[src.Name]
			for s, id := range pl.Splits[src.Name] {
				if id == p.Self && oldSplits[s] == node {
					splits[i] = append(splits[i], s)
					some = true
				}
			}
		}
		if !some {
			continue
		}
		n, err := p.copyFrom(ctx, b, node, ck.Snapshots[node], ck.Epoch, inst, len(pl.Instances), splits)
		if err != nil {
			return Restored{}, err
		}
		r.Instances = append(r.Instances, inst...)
		r.From = append(r.From, node)
		r.Entries += n
	}
	if err := p.DB.Commit(b, true); err != nil {
		return Restored{}, err
	}
	sort.Ints(r.Instances)
	for _, s := range pl.SplitsOf(p.Self)[p.Sources[0].Name] {
		off, _, err := p.DB.State().LoadOffset(p.Spec.ID, p.Sources[0].ID, uint32(s))
		if err != nil {
			return Restored{}, err
		}
		r.Offsets[uint32(s)] = off
	}
	return r, nil
}

// copyFrom adds to b the state and rows of instances (of n) and the
// positions of splits (by source) in node's snapshot under prefix at
// epoch: this node's own from its disk if it still has it, else
// downloaded.
func (p *Part) copyFrom(ctx context.Context, b *storage.WriteBatch, node, prefix string, epoch uint64, instances []int, n int, splits [][]int) (int, error) {
	dir := p.snapDir(epoch)
	if _, err := os.Stat(dir); node != p.Self || err != nil {
		rem, err := p.Storage(node)
		if err != nil {
			return 0, err
		}
		dir = filepath.Join(p.SnapDir, "restore", fmt.Sprintf("%s-%d", node, epoch))
		os.RemoveAll(dir)
		if _, err := rem.Download(ctx, prefix, dir); err != nil {
			return 0, fmt.Errorf("distjob: %s's snapshot %s of %s: %w", node, prefix, p.View, err)
		}
		defer os.RemoveAll(dir)
	}
	m, sdb, err := checkpoint.Open(dir)
	if err != nil {
		return 0, err
	}
	defer sdb.Close()
	jm, ok := m.Job(p.View)
	if !ok || jm.SQL != p.Spec.View.SQL {
		return 0, errOtherView
	}
	// Each source's table id in the snapshot: by name in its catalog;
	// else, for one source, the table of the job's offsets.
	cat, err := sdb.Catalog().Load()
	if err != nil {
		return 0, err
	}
	copied := 0
	for i, s := range p.Sources {
		src := s.ID
		if j := slices.IndexFunc(cat, func(t *storage.TableDef) bool { return t.Name == s.Name }); j >= 0 {
			src = cat[j].ID
		} else if len(p.Sources) == 1 {
			for _, o := range m.Offsets {
				if o.Job == jm.ID {
					src = o.Table
				}
			}
		}
		// The state and rows of the instances come with the first
		// source; each source adds its splits' positions.
		if i > 0 {
			instances = nil
		}
		c, err := p.DB.State().CopyJobPart(b, sdb, jm.ID, p.Spec.ID, exec.DistRestoreFilter(instances, n, splits[i], src, s.ID))
		if err != nil {
			return copied, err
		}
		copied += c
	}
	return copied, nil
}

// snapDir is where this node keeps its snapshot of the part at epoch.
func (p *Part) snapDir(epoch uint64) string {
	return filepath.Join(p.SnapDir, fmt.Sprintf("chk-%d", epoch))
}

// snapshot takes this node's snapshot of the part at epoch (just
// committed: nothing of the part commits until it returns), uploads it to
// the node's storage and returns its key prefix there ("" without
// storage). Snapshots older than the last committed checkpoint go.
func (p *Part) snapshot(ctx context.Context, epoch uint64) (string, error) {
	if p.Storage == nil {
		return "", nil
	}
	rem, err := p.Storage(p.Self)
	if err != nil || rem == nil {
		return "", err
	}
	dir := p.snapDir(epoch)
	os.RemoveAll(dir) // a leftover of a crash
	tmp, err := checkpoint.Capture(p.DB, dir, false)
	if err != nil {
		return "", err
	}
	var offs []storage.Offset
	all, err := p.DB.State().Offsets()
	if err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	for _, o := range all {
		if o.Job == p.Spec.ID {
			offs = append(offs, o)
		}
	}
	m, err := checkpoint.Seal(tmp, dir, checkpoint.Manifest{Kind: "checkpoint", Name: p.View, CheckpointID: epoch, Epoch: epoch,
		CreatedAt: time.Now().UTC(), Jobs: []checkpoint.JobManifest{{Name: p.View, ID: p.Spec.ID, SQL: p.Spec.View.SQL}}, Offsets: offs})
	if err != nil {
		return "", err
	}
	prefix := checkpoint.CheckpointKey(epoch)
	if _, err := rem.Upload(ctx, dir, prefix, m); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	p.prune(ctx, rem, epoch)
	return prefix, nil
}

// prune removes this node's snapshots of the part older than the last
// committed checkpoint, on disk and in rem (keeping cur, just taken).
func (p *Part) prune(ctx context.Context, rem *checkpoint.Remote, cur uint64) {
	p.mu.Lock()
	keep := p.ckpt
	p.mu.Unlock()
	ents, _ := os.ReadDir(p.SnapDir)
	for _, e := range ents {
		ep, err := strconv.ParseUint(strings.TrimPrefix(e.Name(), "chk-"), 10, 64)
		if err == nil && strings.HasPrefix(e.Name(), "chk-") && ep != cur && ep != keep {
			os.RemoveAll(filepath.Join(p.SnapDir, e.Name()))
		}
	}
	if keep == 0 {
		return
	}
	ms, err := rem.Manifests(ctx, "checkpoints")
	if err != nil {
		p.logf("distributed job part: listing old snapshots", "err", err)
		return
	}
	var old []string
	for _, m := range ms {
		if m.Epoch < keep {
			old = append(old, checkpoint.CheckpointKey(m.CheckpointID))
		}
	}
	if len(old) > 0 {
		if err := rem.Delete(ctx, old...); err != nil {
			p.logf("distributed job part: deleting old snapshots", "err", err)
		}
	}
}

// DropSnapshots deletes this node's snapshots of the view, on disk and in
// its storage: the view was dropped (the part must be stopped).
func (p *Part) DropSnapshots(ctx context.Context) error {
	os.RemoveAll(p.SnapDir)
	if p.Storage == nil {
		return nil
	}
	rem, err := p.Storage(p.Self)
	if err != nil || rem == nil {
		return err
	}
	ms, err := rem.Manifests(ctx, "checkpoints")
	if err != nil {
		return err
	}
	prefixes := make([]string, len(ms))
	for i, m := range ms {
		prefixes[i] = checkpoint.CheckpointKey(m.CheckpointID)
	}
	return rem.Delete(ctx, prefixes...)
}

func fmtOffsets(offs map[uint32]uint64) string {
	parts := make([]string, 0, len(offs))
	for s, o := range offs {
		parts = append(parts, fmt.Sprintf("%d:%d", s, o))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func (p *Part) info(msg string, args ...any) {
	if p.Log != nil {
		p.Log.Info(msg, append([]any{"view", p.View, "node", p.Self}, args...)...)
	}
}
