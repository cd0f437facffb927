package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Distributed jobs (docs/design/cluster.md, "Distributed jobs"): one
// view's operator instances and source splits placed on several nodes,
// with one epoch across them. Keys, under dataflow/<view>/:
//
//	placement       the coordinator, fenced by its leadership: the generation,
//	                the node of each keyed instance and of each source split
//	round           the coordinator, fenced: the barrier {gen, epoch} every
//	                node of the placement injects at its source splits
//	acks/<node>     the node, under its lease, conditioned on the placement's
//	                mod revision: the last epoch its part made durable
//	epoch           the coordinator, fenced by leadership, the placement's and
//	                its own mod revision: the committed cluster epoch
//	rollback/<node> the node, under its lease: the generation whose part
//	                failed on it, so the coordinator starts the next one
//	checkpoint      the coordinator, with the epoch it commits: the last
//	                committed epoch whose round was a checkpoint round, the
//	                placement it ran under and, per node, where its
//	                snapshot of that epoch is in its storage (pointers only)
//
// A placement is one key, so it changes as one unit: any move (a node's
// lease expired) is a new generation, and every node of the job rolls its
// part back to the committed cluster epoch and starts the new generation
// from there (global rollback, as Flink and RisingWave v1). The committed
// epoch is the one every node of the placement acknowledged; it never goes
// backwards, and it is what readers read on every node.

// DistJob is a view whose job runs distributed: Instances keyed instances
// of its operators (spread over the live nodes) and, per source, its
// splits (partitions), each read by one node.
type DistJob struct {
	View      string
	Instances int
	Splits    map[string]int // source -> number of splits
}

// Placement is where a distributed job's parts run.
type Placement struct {
	// Gen counts placements of the view: a new one is a global rollback.
	Gen       uint64              `json:"gen"`
	Instances []string            `json:"instances"` // instance -> node
	Splits    map[string][]string `json:"splits"`    // source -> split -> node
	// Rev is the placement key's mod revision (acks are conditioned on it).
	Rev int64 `json:"-"`
}

// Nodes lists the nodes the placement uses, by id.
func (p *Placement) Nodes() []string {
	seen := map[string]bool{}
	for _, id := range p.Instances {
		seen[id] = true
	}
	for _, s := range p.Splits {
		for _, id := range s {
			seen[id] = true
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// InstancesOf lists the keyed instances placed on node.
func (p *Placement) InstancesOf(node string) []int {
	var out []int
	for i, id := range p.Instances {
		if id == node {
			out = append(out, i)
		}
	}
	return out
}

// SplitsOf lists, per source, the splits placed on node.
func (p *Placement) SplitsOf(node string) map[string][]int {
	out := map[string][]int{}
	for src, s := range p.Splits {
		for i, id := range s {
			if id == node {
				out[src] = append(out[src], i)
			}
		}
	}
	return out
}

// Epoch is a barrier round (the round key), a node's ack (acks/<node>)
// or a committed cluster epoch (the epoch key) of a generation.
type Epoch struct {
	Gen   uint64 `json:"gen"`
	Epoch uint64 `json:"epoch"`
	// Checkpoint marks a round whose every node snapshots its part to its
	// storage before it acks (Config.DataflowCheckpoint).
	Checkpoint bool `json:"checkpoint,omitempty"`
	// Snapshot, in an ack of a checkpoint round, is the key prefix of the
	// node's snapshot of the epoch in its storage.
	Snapshot string `json:"snapshot,omitempty"`
	// Positions, per stream (as the parts name their source's input: the
	// shared log's topic) and split, is where the node's splits were at
	// the epoch (in an ack), or, in the committed epoch, the highest
	// position of each split any committed epoch has read to: a new
	// generation's first round reads each split at least that far before
	// it commits, so the rows a read sees never go backwards across
	// generations (a restore from an older checkpoint catches up first).
	Positions map[string]map[int]uint64 `json:"positions,omitempty"`
}

// DataflowCheckpoint is a distributed job's committed checkpoint: an
// epoch every node of its placement snapshotted, the placement then, and
// each node's snapshot (a key prefix in that node's storage). A new
// generation restores each instance and split from the snapshot of the
// node that held it then.
type DataflowCheckpoint struct {
	Gen       uint64              `json:"gen"`
	Epoch     uint64              `json:"epoch"`
	Instances []string            `json:"instances"`
	Splits    map[string][]string `json:"splits"`
	Snapshots map[string]string   `json:"snapshots"` // node -> key prefix
}

// Dataflow is a distributed job's state in etcd, as read at one revision.
type Dataflow struct {
	Placement *Placement // nil before the coordinator placed the job
	Round     Epoch      // the last barrier round asked for
	Committed Epoch      // the committed cluster epoch (0: none yet)
	// Checkpoint is the last committed checkpoint (nil: none yet).
	Checkpoint *DataflowCheckpoint
	Acks       map[string]Epoch
	// Rollbacks are the generations nodes asked to roll back (RequestRollback).
	Rollbacks map[string]uint64
	epochRev  int64
	rev       int64 // the revision read at
}

func (n *Node) dataflowKey(view string) string { return n.prefix + "dataflow/" + view + "/" }

// ReadDataflow reads view's distributed job state in one range read.
func (n *Node) ReadDataflow(ctx context.Context, view string) (Dataflow, error) {
	pfx := n.dataflowKey(view)
	resp, err := n.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return Dataflow{}, fmt.Errorf("cluster: dataflow of %s: %w", view, err)
	}
	d := Dataflow{Acks: map[string]Epoch{}, Rollbacks: map[string]uint64{}, rev: resp.Header.Revision}
	for _, kv := range resp.Kvs {
		k := strings.TrimPrefix(string(kv.Key), pfx)
		switch {
		case k == "placement":
			p := new(Placement)
			err = json.Unmarshal(kv.Value, p)
			p.Rev = kv.ModRevision
			d.Placement = p
		case k == "round":
			err = json.Unmarshal(kv.Value, &d.Round)
		case k == "checkpoint":
			d.Checkpoint = new(DataflowCheckpoint)
			err = json.Unmarshal(kv.Value, d.Checkpoint)
		case k == "epoch":
			err = json.Unmarshal(kv.Value, &d.Committed)
			d.epochRev = kv.ModRevision
		case strings.HasPrefix(k, "acks/"):
			var e Epoch
			err = json.Unmarshal(kv.Value, &e)
			d.Acks[strings.TrimPrefix(k, "acks/")] = e
		case strings.HasPrefix(k, "rollback/"):
			var g uint64
			g, err = strconv.ParseUint(string(kv.Value), 10, 64)
			d.Rollbacks[strings.TrimPrefix(k, "rollback/")] = g
		}
		if err != nil {
			return Dataflow{}, fmt.Errorf("cluster: dataflow of %s: key %s: %w", view, k, err)
		}
	}
	return d, nil
}

// WatchDataflow sends view's distributed job state on the returned
// channel whenever one of its keys changes (and once at the start), until
// ctx ends. A slow reader gets the latest state, not every one.
func (n *Node) WatchDataflow(ctx context.Context, view string) <-chan Dataflow {
	out := make(chan Dataflow, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			d, err := n.ReadDataflow(ctx, view)
			if err != nil {
				select {
				case <-time.After(assignPoll):
				case <-ctx.Done():
				}
				continue
			}
			select { // replace what the reader has not taken yet
			case <-out:
			default:
			}
			out <- d
			wctx, cancel := context.WithCancel(ctx)
			wch := n.cli.Watch(wctx, n.dataflowKey(view), clientv3.WithPrefix(), clientv3.WithRev(d.rev+1))
			select {
			case <-wch:
			case <-time.After(time.Second): // a lost watch costs at most this
			case <-ctx.Done():
			}
			cancel()
		}
	}()
	return out
}

// ErrStalePlacement is an ack for a placement the coordinator replaced.
var ErrStalePlacement = errors.New("cluster: the job's placement changed: roll back to the committed cluster epoch")

// AckEpoch reports that this node's part of view's job, under placement
// p, made epoch durable (its state at that barrier is in checkpoint
// storage). The ack is under the node's lease and holds only while p is
// the placement (ErrStalePlacement otherwise).
func (n *Node) AckEpoch(ctx context.Context, view string, p *Placement, epoch uint64) error {
	return n.AckPositions(ctx, view, p, Epoch{Epoch: epoch})
}

// AckPositions is AckEpoch of a.Epoch with the positions of the node's
// splits at that epoch (a.Positions) and, for a checkpoint round, the key
// prefix of the node's snapshot of the epoch in its storage (a.Snapshot;
// "": none, and then the epoch is no checkpoint). a.Gen is p's.
func (n *Node) AckPositions(ctx context.Context, view string, p *Placement, a Epoch) error {
	epoch := a.Epoch
	a.Gen, a.Checkpoint = p.Gen, false
	v, _ := json.Marshal(a)
	pk := n.dataflowKey(view) + "placement"
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(pk), "=", p.Rev)).
		Then(clientv3.OpPut(n.dataflowKey(view)+"acks/"+n.cfg.NodeID, string(v), clientv3.WithLease(n.sess.Lease()))).Commit()
	if err != nil {
		return fmt.Errorf("cluster: ack epoch %d of %s: %w", epoch, view, err)
	}
	if !resp.Succeeded {
		return ErrStalePlacement
	}
	return nil
}

// RequestRollback asks the coordinator for a new generation of view's
// job because this node's part of generation gen failed without a node
// going (a stream broke, an operator failed): every node then restarts its
// part from the committed cluster epoch, on the same nodes.
func (n *Node) RequestRollback(ctx context.Context, view string, gen uint64) error {
	_, err := n.cli.Put(ctx, n.dataflowKey(view)+"rollback/"+n.cfg.NodeID, strconv.FormatUint(gen, 10), clientv3.WithLease(n.sess.Lease()))
	if err != nil {
		return fmt.Errorf("cluster: rollback of %s: %w", view, err)
	}
	return nil
}

// place returns job's placement on the live nodes (sorted): each list
// (the keyed instances, each source's splits) keeps its parts whose node
// is live, gives the others to the node with the fewest parts of that list
// (ties: the fewest parts in all, then the smallest id), then moves parts
// from the most to the least loaded node until they differ by at most
// one, so a node that joins gets its share. Splits go only to nodes that
// run an instance, so with fewer instances than live nodes some nodes
// hold no part. changed reports whether it differs from old (nil: none
// yet); a change is a new generation.
func place(job DistJob, live []string, old *Placement) (p *Placement, changed bool) {
	total := map[string]int{}
	p = &Placement{Splits: map[string][]string{}}
	var prevInst []string
	prevSplits := map[string][]string{}
	if old != nil {
		p.Gen, prevInst, prevSplits = old.Gen, old.Instances, old.Splits
	}
	p.Instances = placeList(prevInst, job.Instances, live, total)
	changed = old == nil || !slices.Equal(p.Instances, prevInst) || len(prevSplits) != len(job.Splits)
	srcs := make([]string, 0, len(job.Splits))
	for src := range job.Splits {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	// Splits go to nodes that run an instance: a node's split positions
	// commit with its own instances' state. With fewer instances than
	// live nodes, the others hold no part of the job.
	readers := live
	if job.Instances < len(live) {
		readers = p.Nodes()
	}
	for _, src := range srcs {
		p.Splits[src] = placeList(prevSplits[src], job.Splits[src], readers, total)
		changed = changed || !slices.Equal(p.Splits[src], prevSplits[src])
	}
	if changed {
		p.Gen++
	}
	return p, changed
}

// placeList places the n parts of one list (prev: their nodes before)
// on live, counting them into total.
func placeList(prev []string, n int, live []string, total map[string]int) []string {
	load := make(map[string]int, len(live))
	for _, id := range live {
		load[id] = 0
	}
	out := make([]string, n)
	for i := range out {
		if i < len(prev) {
			if _, ok := load[prev[i]]; ok {
				out[i] = prev[i]
				load[prev[i]]++
			}
		}
	}
	less := func(a, b string) bool { // a has fewer parts than b
		if load[a] != load[b] {
			return load[a] < load[b]
		}
		if total[a] != total[b] {
			return total[a] < total[b]
		}
		return a < b
	}
	least := func() string {
		best := live[0]
		for _, id := range live[1:] {
			if less(id, best) {
				best = id
			}
		}
		return best
	}
	for i := range out {
		if out[i] == "" {
			b := least()
			out[i] = b
			load[b]++
		}
	}
	for {
		hi, lo := live[0], least()
		for _, id := range live[1:] {
			if less(hi, id) {
				hi = id
			}
		}
		if load[hi]-load[lo] <= 1 {
			break
		}
		for i := len(out) - 1; i >= 0; i-- {
			if out[i] == hi {
				out[i] = lo
				break
			}
		}
		load[hi]--
		load[lo]++
	}
	for _, id := range out {
		total[id]++
	}
	return out
}

// dataflowPass is one pass of the coordinator over the distributed jobs:
// place each (again, if a node of its placement is gone), commit the
// epoch every node of its placement acknowledged, and ask for the next
// barrier round when the last one committed (or belongs to an older
// placement) and Config.DataflowRound has passed since it was asked.
func (n *Node) dataflowPass(ctx context.Context, l *leadership, asked map[string]time.Time) error {
	if n.cfg.Distributed == nil {
		return nil
	}
	resp, err := n.cli.Get(ctx, n.prefix+"nodes/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	var live []string
	for _, kv := range resp.Kvs {
		live = append(live, strings.TrimPrefix(string(kv.Key), n.prefix+"nodes/"))
	}
	sort.Strings(live)
	if len(live) == 0 {
		return nil
	}
	jobs := n.cfg.Distributed()
	want := map[string]bool{}
	var errs []error
	for _, job := range jobs {
		want[job.View] = true
		errs = append(errs, n.dataflowJob(ctx, l, job, live, asked))
	}
	// The state of views that no longer run distributed goes.
	all, err := n.cli.Get(ctx, n.prefix+"dataflow/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	for _, kv := range all.Kvs {
		v, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), n.prefix+"dataflow/"), "/")
		if !want[v] {
			gone[v] = true
		}
	}
	for v := range gone {
		if _, err := n.fenced(ctx, l.key, l.rev, nil, clientv3.OpDelete(n.dataflowKey(v), clientv3.WithPrefix())); err != nil {
			errs = append(errs, err)
		}
		delete(asked, v)
	}
	return errors.Join(errs...)
}

func (n *Node) dataflowJob(ctx context.Context, l *leadership, job DistJob, live []string, asked map[string]time.Time) error {
	if strings.Contains(job.View, "/") || job.Instances < 1 {
		return fmt.Errorf("cluster: distributed job %q: a view name without '/' and at least one instance", job.View)
	}
	d, err := n.ReadDataflow(ctx, job.View)
	if err != nil {
		return err
	}
	pk := n.dataflowKey(job.View) + "placement"
	p, changed := place(job, live, d.Placement)
	if !changed {
		for _, g := range d.Rollbacks {
			if g == p.Gen { // the same parts, a new generation
				p.Gen++
				changed = true
				break
			}
		}
	}
	if changed {
		var rev int64
		if d.Placement != nil {
			rev = d.Placement.Rev
		}
		v, _ := json.Marshal(p)
		ok, err := n.fenced(ctx, l.key, l.rev, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(pk), "=", rev)}, clientv3.OpPut(pk, string(v)),
			clientv3.OpDelete(n.dataflowKey(job.View)+"rollback/", clientv3.WithPrefix()))
		if err != nil || !ok {
			return err
		}
		n.log.Info("cluster: distributed job placed", "job", job.View, "gen", p.Gen, "instances", p.Instances, "splits", p.Splits)
		return nil // commit and rounds at the next pass, against the new revision
	}
	p.Rev = d.Placement.Rev
	// Commit the epoch every node of the placement made durable.
	low := uint64(0)
	for i, id := range p.Nodes() {
		a, ok := d.Acks[id]
		if !ok || a.Gen != p.Gen {
			low = 0
			break
		}
		if i == 0 || a.Epoch < low {
			low = a.Epoch
		}
	}
	if low > d.Committed.Epoch && low <= d.Round.Epoch {
		ek := n.dataflowKey(job.View) + "epoch"
		v, _ := json.Marshal(Epoch{Gen: p.Gen, Epoch: low, Positions: floorPositions(d, p)})
		ops := []clientv3.Op{clientv3.OpPut(ek, string(v))}
		if ck := checkpointOf(p, d, low); ck != nil {
			cv, _ := json.Marshal(ck)
			ops = append(ops, clientv3.OpPut(n.dataflowKey(job.View)+"checkpoint", string(cv)))
		}
		ok, err := n.fenced(ctx, l.key, l.rev, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(pk), "=", p.Rev),
			clientv3.Compare(clientv3.ModRevision(ek), "=", d.epochRev)}, ops...)
		if err != nil || !ok {
			return err
		}
		d.Committed = Epoch{Gen: p.Gen, Epoch: low}
	}
	// Ask for the next round.
	if n.cfg.DataflowRound <= 0 {
		return nil
	}
	pending := d.Round.Gen == p.Gen && d.Round.Epoch > d.Committed.Epoch
	if pending || time.Since(asked[job.View]) < n.cfg.DataflowRound {
		return nil
	}
	// A round is a checkpoint round at most every Config.DataflowCheckpoint
	// (views cannot hold '/': "ckpt/<view>" is no view's entry).
	every := time.Duration(0)
	if n.cfg.DataflowCheckpoint != nil {
		every = n.cfg.DataflowCheckpoint()
	}
	ckpt := every > 0 && time.Since(asked["ckpt/"+job.View]) >= every
	_, err = n.startRound(ctx, l, job.View, p, d, ckpt)
	if err == nil {
		asked[job.View] = time.Now()
		if ckpt {
			asked["ckpt/"+job.View] = time.Now()
		}
	}
	return err
}

// floorPositions is what the committed epoch records as its positions:
// per split, the highest of the last committed epoch's and of the acks of
// placement p's nodes (an ack may be of a later epoch than the one
// committed: its positions are a floor all the same, since a split only
// moves forward).
func floorPositions(d Dataflow, p *Placement) map[string]map[int]uint64 {
	out := map[string]map[int]uint64{}
	add := func(ps map[string]map[int]uint64) {
		for src, m := range ps {
			if out[src] == nil {
				out[src] = map[int]uint64{}
			}
			for split, pos := range m {
				out[src][split] = max(out[src][split], pos)
			}
		}
	}
	add(d.Committed.Positions)
	for _, id := range p.Nodes() {
		if a, ok := d.Acks[id]; ok && a.Gen == p.Gen {
			add(a.Positions)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// checkpointOf is the checkpoint that committing epoch under placement p
// commits too: the round at epoch was a checkpoint round and every node
// of p acked it with a snapshot (nil otherwise).
func checkpointOf(p *Placement, d Dataflow, epoch uint64) *DataflowCheckpoint {
	if !d.Round.Checkpoint || d.Round.Gen != p.Gen || d.Round.Epoch != epoch {
		return nil
	}
	ck := &DataflowCheckpoint{Gen: p.Gen, Epoch: epoch, Instances: p.Instances, Splits: p.Splits, Snapshots: map[string]string{}}
	for _, id := range p.Nodes() {
		a := d.Acks[id]
		if a.Gen != p.Gen || a.Epoch != epoch || a.Snapshot == "" {
			return nil
		}
		ck.Snapshots[id] = a.Snapshot
	}
	return ck
}

// startRound writes the next barrier round of view under placement p
// (ckpt: a checkpoint round).
func (n *Node) startRound(ctx context.Context, l *leadership, view string, p *Placement, d Dataflow, ckpt bool) (Epoch, error) {
	r := Epoch{Gen: p.Gen, Epoch: max(d.Round.Epoch, d.Committed.Epoch) + 1, Checkpoint: ckpt}
	v, _ := json.Marshal(r)
	ok, err := n.fenced(ctx, l.key, l.rev, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(n.dataflowKey(view)+"placement"), "=", p.Rev)},
		clientv3.OpPut(n.dataflowKey(view)+"round", string(v)))
	if err != nil {
		return Epoch{}, err
	}
	if !ok {
		return Epoch{}, ErrStalePlacement
	}
	return r, nil
}

// StartRound asks every node of view's placement to inject the next
// barrier round now (only the coordinator can: ErrNotCoordinator).
func (n *Node) StartRound(ctx context.Context, view string) (Epoch, error) {
	n.rebal.lead.Lock()
	l := n.rebal.lead.cur
	n.rebal.lead.Unlock()
	if l == nil {
		return Epoch{}, ErrNotCoordinator
	}
	d, err := n.ReadDataflow(ctx, view)
	if err != nil {
		return Epoch{}, err
	}
	if d.Placement == nil {
		return Epoch{}, fmt.Errorf("cluster: distributed job %s is not placed yet", view)
	}
	return n.startRound(ctx, l, view, d.Placement, d, false)
}

// dataflowLoop runs dataflowPass while this node coordinates.
func (n *Node) dataflowLoop(ctx context.Context, l *leadership) {
	if n.cfg.Distributed == nil {
		return
	}
	every := assignPoll
	if n.cfg.DataflowRound > 0 && n.cfg.DataflowRound/2 < every {
		every = max(n.cfg.DataflowRound/2, 10*time.Millisecond)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	asked := map[string]time.Time{}
	for ctx.Err() == nil {
		if err := n.dataflowPass(ctx, l, asked); err != nil && ctx.Err() == nil {
			n.log.Warn("cluster: distributed jobs", "err", err)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}
