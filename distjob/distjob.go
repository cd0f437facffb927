// Package distjob runs this node's part of a distributed materialized
// view's job (docs/design/cluster.md, "Distributed jobs"): it follows the
// view's placement and barrier rounds in etcd (cluster.Node.WatchDataflow),
// starts the part of each generation (exec.JobSpec.Dist: the node's source
// splits and aggregate instances, the others reached over the Flight
// exchange), injects each round's barrier, commits the node's part of the
// epoch into its own database, acknowledges it with its splits' positions (cluster.Node.AckPositions) and
// keeps a snapshot of each epoch a reader may still ask for, so a read at
// the committed cluster epoch gathers every node's rows at that one epoch
// (Gather).
//
// Recovery is a global rollback to the last committed checkpoint
// (restore.go): in a checkpoint round (cluster.Epoch.Checkpoint) every
// node snapshots its part at the epoch into its storage
// (--cluster-storage, checkpoint.Remote: the files S3 lacks, then a
// manifest) before it acks, and the coordinator commits the epoch with a
// pointer to each node's snapshot. A new generation (a node lost or
// joined, a part failed) makes every node replace its part's data with
// the state and view rows of the instances and the source positions of
// the splits the new placement gives it, each taken from the snapshot of
// the node that held it at the checkpoint, and resume from there. Without
// cluster storage or a checkpoint yet, the new placement starts from its
// sources' beginning. The first round of a generation is a catch-up
// barrier; until it commits reads are refused (55000), never answered
// from a mix of generations.
package distjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"google.golang.org/grpc"
)

// Part is one node's part of a distributed view's job.
type Part struct {
	Node *cluster.Node
	Self string
	View string
	// Sources are the view's sources, in the order of its job's graph
	// (a join's left side first).
	Sources []Source
	DB      *storage.DB
	// Spec is the view's job (its Dist and Parallelism are set per
	// generation).
	Spec   exec.JobSpec
	Server *exchange.Server
	Conn   func(node string) (grpc.ClientConnInterface, error)
	Log    *slog.Logger
	// Storage returns the storage of node's snapshots of this view (nil,
	// or a nil Storage: no checkpoints, a new generation starts from its
	// sources' beginning). SnapDir is where this node keeps its own
	// snapshots and downloads others' to restore.
	Storage func(node string) (*checkpoint.Remote, error)
	SnapDir string

	mu        sync.Mutex
	gen       uint64             // the generation running here
	snaps     map[uint64]*held   // this node's part at each epoch a reader may ask for
	prev      uint64             // the committed epoch before the current one (kept for readers)
	ckpt      uint64             // the last committed checkpoint's epoch (its snapshot is kept)
	pl        *cluster.Placement // the running generation's placement
	committed uint64             // the running generation's last committed epoch seen
	restored  Restored           // what the running generation was restored from
	job       *exec.Job
	// rounds hands the running part's driver the round to run; driven is
	// closed when the driver returned.
	rounds      chan round
	driven      chan struct{}
	cancelDrive context.CancelFunc
}

// Source is one source of a distributed view.
type Source struct {
	// Name is the source's name in the placement's splits (and in the
	// catalog, where a restore finds its table id in a snapshot).
	Name string
	// ID is the id of the source table here (its positions are keyed by
	// it).
	ID uint64
	// Stream names what the source reads the same on every node (the
	// shared stream log's topic; "": Name): the committed epoch's split
	// positions are kept under it, so a source created again under the
	// same name inherits no positions of the old one.
	Stream string
}

// stream is the key of the source's split positions in etcd.
func (s Source) stream() string {
	if s.Stream != "" {
		return s.Stream
	}
	return s.Name
}

// ErrEpochGone is a read of an epoch this node no longer keeps (the
// cluster committed a later one, or a new generation began): read the
// committed epoch again.
var ErrEpochGone = errors.New("distjob: the epoch is no longer kept here")

// Run follows the view's job in etcd until ctx ends.
func (p *Part) Run(ctx context.Context) {
	var gen, asked uint64
	var failed <-chan struct{}
	defer p.stop()
	ch := p.Node.WatchDataflow(ctx, p.View)
	for {
		var d cluster.Dataflow
		select {
		case <-ctx.Done():
			return
		case <-failed:
			// The part failed while its generation stands (a broken stream,
			// an operator's error): every node rolls back.
			p.logf("distributed job part failed", "gen", gen, "err", p.jobErr())
			p.stop()
			failed = nil
			_ = p.Node.RequestRollback(ctx, p.View, gen)
			continue
		case dd, ok := <-ch:
			if !ok {
				return
			}
			d = dd
		}
		pl := d.Placement
		if pl == nil {
			continue
		}
		if pl.Gen != gen {
			gen, failed = pl.Gen, nil
			asked = max(d.Committed.Epoch, d.Round.Epoch)
			if d.Round.Gen == pl.Gen {
				asked = d.Committed.Epoch // the new generation's round is open
			}
			job, err := p.start(pl, d.Checkpoint, d.Committed.Positions)
			if err == nil && job == nil {
				continue // no part of this generation here
			}
			if err != nil {
				// Another generation tries again (the same parts).
				p.logf("distributed job part did not start", "gen", gen, "err", err)
				_ = p.Node.RequestRollback(ctx, p.View, gen)
				continue
			}
			failed = job.Failed()
		}
		p.noteCommitted(d.Committed, pl.Gen)
		if d.Checkpoint != nil {
			p.mu.Lock()
			p.ckpt = max(p.ckpt, d.Checkpoint.Epoch)
			p.mu.Unlock()
		}
		if d.Round.Gen == gen && d.Round.Epoch > asked {
			asked = d.Round.Epoch
			p.ask(round{epoch: d.Round.Epoch, checkpoint: d.Round.Checkpoint})
		}
	}
}

// ask hands the round epoch to the part's driver (the latest wins: a
// round asked while the last one runs replaces the one waiting).
func (p *Part) ask(epoch round) {
	p.mu.Lock()
	rounds := p.rounds
	p.mu.Unlock()
	if rounds == nil {
		return
	}
	select {
	case <-rounds:
	default:
	}
	rounds <- epoch
}

// drive runs the rounds asked of job, a part of placement pl, until the
// job stops: the watch loop never waits for a round, so a new placement
// always reaches it (a round can wait forever for a peer that skipped the
// generation; stopping the job ends that wait).
func (p *Part) drive(ctx context.Context, job *exec.Job, pl *cluster.Placement, floor storage.Cut, rounds chan round, done chan struct{}) {
	defer close(done)
	first := true
	for {
		var e round
		select {
		case e = <-rounds:
		case <-ctx.Done():
			return
		}
		// The first round of a generation catches up with the sources:
		// each split reads at least to its position in the last committed
		// epoch, so it commits at least what that one did (reads never go
		// back across generations).
		if first {
			e.floor = floor
		}
		if err := p.round(ctx, job, pl, e, first); err != nil {
			if ctx.Err() == nil {
				job.Fail(err)
			}
			return
		}
		first = false
	}
}

// round is a barrier round the part is asked to run.
type round struct {
	epoch      uint64
	checkpoint bool        // snapshot the part to storage before the ack
	floor      storage.Cut // the first round's: where each local split reads to at least
}

// start replaces this node's data of the view by what placement pl's part
// starts from (the committed checkpoint ck's, or nothing) and starts it;
// its first round reads each of its splits at least to its position in
// floor (the committed epoch's, by stream and split). A node pl gives no part starts
// nothing (nil job).
func (p *Part) start(pl *cluster.Placement, ck *cluster.DataflowCheckpoint, floor map[string]map[int]uint64) (*exec.Job, error) {
	p.stop()
	if !slices.Contains(pl.Nodes(), p.Self) {
		// No instance and no split here (fewer instances than nodes):
		// nothing runs, nothing acks, no read asks this node.
		p.mu.Lock()
		p.gen, p.pl, p.restored, p.committed = pl.Gen, pl, Restored{}, 0
		p.mu.Unlock()
		return nil, p.DB.State().ResetJob(p.Spec.ID)
	}
	r, err := p.restore(pl, ck)
	if err != nil {
		return nil, err
	}
	spec := p.Spec
	spec.Parallelism = len(pl.Instances)
	splits := make([][]string, len(p.Sources))
	for i, src := range p.Sources {
		splits[i] = pl.Splits[src.Name]
	}
	spec.Dist = &exec.DistPart{Job: fmt.Sprintf("%s.%d", p.View, pl.Gen), Self: p.Self, Instances: pl.Instances,
		Splits: splits, Server: p.Server, Conn: p.Conn}
	job, err := exec.StartJob(p.DB, spec)
	if err != nil {
		return nil, err
	}
	rounds, done := make(chan round, 1), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.gen, p.job, p.rounds, p.driven, p.cancelDrive, p.restored, p.pl, p.committed = pl.Gen, job, rounds, done, cancel, r, pl, 0
	p.mu.Unlock()
	cut := storage.Cut{}
	for _, src := range p.Sources {
		for _, split := range pl.SplitsOf(p.Self)[src.Name] {
			if pos, ok := floor[src.stream()][split]; ok {
				cut[storage.LogPart{Table: src.ID, Part: uint32(split)}] = pos
			}
		}
	}
	go p.drive(ctx, job, pl, cut, rounds, done)
	return job, nil
}

// stop stops the running part and drops the snapshots it kept.
func (p *Part) stop() {
	p.mu.Lock()
	job, driven, cancel := p.job, p.driven, p.cancelDrive
	p.job, p.rounds, p.driven, p.cancelDrive = nil, nil, nil, nil
	for e, h := range p.snaps {
		h.drop()
		delete(p.snaps, e)
	}
	p.mu.Unlock()
	if job != nil {
		cancel()
		job.Stop()
		<-driven
	}
}

func (p *Part) current() *exec.Job {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.job
}

func (p *Part) jobErr() error {
	if j := p.current(); j != nil {
		return j.Err()
	}
	return nil
}

// round runs barrier epoch through this node's part, commits the part's
// writes here, keeps a snapshot of them for readers and acknowledges it.
func (p *Part) round(ctx context.Context, job *exec.Job, pl *cluster.Placement, r round, catchUp bool) error {
	epoch := r.epoch
	if err := job.InjectBarrier(ctx, &exec.Barrier{Epoch: epoch, CatchUp: catchUp, Cut: r.floor}); err != nil {
		return err
	}
	w, err := job.AwaitBarrier(ctx, epoch)
	if err != nil {
		return err
	}
	if err := p.DB.State().CommitEpoch([]*storage.Batch{w}, 0, nil, true); err != nil {
		return err
	}
	job.Committed(epoch)
	snap := p.DB.Snapshot()
	p.mu.Lock()
	if p.job != job {
		p.mu.Unlock()
		snap.Close()
		return nil
	}
	if p.snaps == nil {
		p.snaps = map[uint64]*held{}
	}
	p.snaps[epoch] = &held{s: snap}
	p.mu.Unlock()
	var prefix string
	if r.checkpoint {
		// Nothing of this part commits before the snapshot: the next
		// round's commit is this goroutine's too.
		if prefix, err = p.snapshot(ctx, epoch); err != nil {
			p.logf("distributed job part: snapshot not taken (the epoch is no checkpoint)", "epoch", epoch, "err", err)
		}
	}
	pos, err := p.positions(pl)
	if err != nil {
		return err
	}
	err = p.Node.AckPositions(ctx, p.View, pl, cluster.Epoch{Epoch: epoch, Snapshot: prefix, Positions: pos})
	if errors.Is(err, cluster.ErrStalePlacement) {
		return nil // the next placement rolls this part back
	}
	return err
}

// positions reads where this node's splits of placement pl are in its
// database (as the epoch just committed left them), for its ack.
func (p *Part) positions(pl *cluster.Placement) (map[string]map[int]uint64, error) {
	var out map[string]map[int]uint64
	for _, src := range p.Sources {
		splits := pl.SplitsOf(p.Self)[src.Name]
		if len(splits) == 0 {
			continue
		}
		m := make(map[int]uint64, len(splits))
		for _, split := range splits {
			off, ok, err := p.DB.State().LoadOffset(p.Spec.ID, src.ID, uint32(split))
			if err != nil {
				return nil, err
			}
			if ok {
				m[split] = off
			}
		}
		if out == nil {
			out = map[string]map[int]uint64{}
		}
		out[src.stream()] = m
	}
	return out, nil
}

// noteCommitted releases the snapshots no reader needs: those below the
// committed epoch before the current one.
func (p *Part) noteCommitted(c cluster.Epoch, gen uint64) {
	if c.Gen != gen {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != gen {
		return
	}
	p.committed = max(p.committed, c.Epoch)
	keep := p.prev
	for e, h := range p.snaps {
		if e < keep {
			h.drop()
			delete(p.snaps, e)
		}
	}
	if c.Epoch > p.prev {
		// The epoch committed before c stays one more commit, for a
		// reader that read the committed epoch just before c.
		for e := range p.snaps {
			if e < c.Epoch && e > keep {
				keep = e
			}
		}
		p.prev = keep
	}
}

// ReadAt calls fn with this node's part of the view at epoch of
// generation gen (ErrEpochGone if it is not kept here).
func (p *Part) ReadAt(gen, epoch uint64, fn func(storage.Reader) error) error {
	p.mu.Lock()
	h := p.snaps[epoch]
	if p.gen != gen || h == nil {
		p.mu.Unlock()
		return ErrEpochGone
	}
	h.readers++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		h.readers--
		if h.dropped && h.readers == 0 {
			h.s.Close()
		}
		p.mu.Unlock()
	}()
	return fn(h.s)
}

// held is a kept snapshot and its readers (under Part.mu): one no longer
// kept closes when its last reader is done.
type held struct {
	s       storage.Snapshot
	readers int
	dropped bool
}

func (h *held) drop() {
	h.dropped = true
	if h.readers == 0 {
		h.s.Close()
	}
}

func (p *Part) logf(msg string, args ...any) {
	if p.Log != nil {
		p.Log.Warn(msg, append([]any{"view", p.View, "node", p.Self}, args...)...)
	}
}

// Gather reads view at the committed cluster epoch from every node that
// runs instances of it: read(node, gen, epoch) reads that node's part
// (Part.ReadAt there, or Fetch over its peer listener). A node's epoch
// gone (the cluster committed the next one meanwhile) or a node that does
// not answer restarts the read at the committed epoch then; after 20
// tries it is refused with 55000. While a
// new generation has committed nothing yet (after a node loss or a
// failure, as its parts start again), the read is refused with 55000.
func Gather(ctx context.Context, n *cluster.Node, view string, read func(node string, gen, epoch uint64) error, reset func()) (cluster.Epoch, error) {
	for attempt := 0; ; attempt++ {
		d, err := n.ReadDataflow(ctx, view)
		if err != nil {
			return cluster.Epoch{}, sqlerr.Wrap("58000", err)
		}
		pl := d.Placement
		if pl == nil || d.Committed.Gen != pl.Gen || d.Committed.Epoch == 0 {
			return cluster.Epoch{}, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState,
				Msg:    fmt.Sprintf("distributed materialized view %s has no committed epoch on its current placement yet", view),
				Detail: "Its job is starting, or starting again on the live nodes after a node was lost or a part failed.",
				Hint:   "Retry once the cluster has committed an epoch (within a few rounds)."}
		}
		nodes := map[string]bool{}
		for _, id := range pl.Instances {
			nodes[id] = true
		}
		ids := make([]string, 0, len(nodes))
		for id := range nodes {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		reset()
		err = nil
		for _, id := range ids {
			if err = read(id, d.Committed.Gen, d.Committed.Epoch); err != nil {
				break
			}
		}
		if err == nil {
			return d.Committed, nil
		}
		if ctx.Err() != nil {
			return cluster.Epoch{}, ctx.Err()
		}
		// A node that no longer keeps the epoch, or does not answer (lost,
		// until the coordinator places its parts elsewhere): read again.
		if attempt >= 20 {
			return cluster.Epoch{}, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState,
				Msg:    fmt.Sprintf("distributed materialized view %s: a node of its placement does not serve the committed epoch", view),
				Detail: "A node was lost or its part is starting again (" + err.Error() + "); the coordinator places its parts on the live nodes.",
				Hint:   "Retry once the cluster has committed an epoch on its new placement."}
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return cluster.Epoch{}, ctx.Err()
		}
	}
}
