package exec

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Barrier marks the end of an epoch in every stream of a job (the
// operator contract's, exec/op).
type Barrier = op.Barrier

// JobSpec describes a continuous query to run.
type JobSpec struct {
	ID   uint64
	Name string
	Plan plan.Plan
	// View receives the results; nil for a transient change stream, whose
	// changes go to Out instead.
	View        *storage.TableDef
	Out         chan<- Chunk
	Parallelism int
	AtLeastOnce bool
	// Now is the value of now() inside the job.
	Now int64
	// StateCacheBytes caps the memory of the job's aggregate state; beyond
	// it, groups whose state is committed are evicted and read back from
	// the state table when their keys return. 0: unbounded.
	StateCacheBytes int64
	// Changelog makes the view's sink write its changelog from the start
	// (the view has consumers); EnableChangelog turns it on later.
	Changelog bool
	// SkipErrors is job.error_policy = 'skip': rows that raise a data error
	// are recorded and skipped instead of failing the job.
	SkipErrors bool
	// RecordLate is job.late_rows = 'record': the rows operators drop as
	// late are recorded in streamdb_late_rows besides being counted.
	RecordLate bool
	// Reemit makes the job emit every restored group into the view at its
	// first barrier (after an upgrade whose view rows are rebuilt from state).
	Reemit bool
	// MaxEpochGroups, if set, bounds an epoch: once the aggregate holds
	// that many changed groups (counting rows on their way to it), the
	// sources stop reading until the next barrier has passed, and the job
	// calls EpochFull (it must not block) to ask for that barrier now. An
	// epoch's changes are held in memory and committed as one batch, so
	// this bounds both, and how long a checkpoint can take; larger epochs
	// write a group changed many times once (see EpochGroups). Once the
	// state no longer fits its cache the bound is halved (epochFull).
	MaxEpochGroups int64
	EpochFull      func()
	// StateTTL is state.ttl: idle keys of joins expire (ttl.go); nil: never.
	StateTTL *StateTTL
	// IdleTimeout is stream.idle_timeout: a source partition that has had
	// no rows for this long no longer holds the job's watermark back
	// (watermark.go). 0: partitions never count as idle.
	IdleTimeout time.Duration
	// OnWindowClose is EMIT ON WINDOW CLOSE: the window aggregate at the
	// root emits each window's row once, when the watermark closes it,
	// and nothing before (CheckEmitOnWindowClose).
	OnWindowClose bool
	// State is the job's state backend (statebackend.go).
	State StateOptions
	// MemoryLimit is job.memory_limit: past this many bytes of operator
	// state in memory plus the view writes of the epoch not yet committed
	// the job fails with 53200 (0: no limit). At half of it the sink asks
	// for the next barrier early (EpochFull), so an epoch's writes commit
	// before they reach it.
	MemoryLimit int64
	// Dist makes the job one node's part of a distributed job (dist.go);
	// nil: the whole job runs here.
	Dist *DistPart
}

// EpochGroups is the bound on an epoch's changed groups for a job whose
// aggregate state may use cacheBytes of memory (0: unbounded): one group
// per 512 bytes of the budget (an epoch's batch costs 300-400 bytes per
// changed group on top of the group itself, which cannot be evicted until
// the epoch commits), at least 64K. Unbounded state bounds epochs at 4M.
func EpochGroups(cacheBytes int64) int64 {
	if cacheBytes <= 0 {
		return 1 << 22
	}
	return max(1<<16, cacheBytes>>9)
}

// JobState is a job's lifecycle state.
type JobState string

const (
	JobStarting   JobState = "STARTING" // loading state after a restart of the server
	JobRunning    JobState = "RUNNING"
	JobRestarting JobState = "RESTARTING"
	JobFailed     JobState = "FAILED"
	JobStopped    JobState = "STOPPED"
)

// Job is a running continuous query: the instances of its graph's nodes,
// each a goroutine, joined by bounded channels (runtime.go wires them).
type Job struct {
	spec JobSpec
	g    *graph
	db   *storage.DB

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	barriers []chan *Barrier // one per source partition, of every source
	dist     *distWiring     // a distributed job's part: what runs here (nil: all of it)
	acks     chan ack
	late     *storage.Batch // epochs whose round gave up waiting for them (AwaitBarrier)
	failed   chan struct{}
	failOnce sync.Once
	err      error

	RowsIn atomic.Int64
	// RowsOut counts the change rows that reach the sink (view writes, or a
	// change stream's rows), each a row inserted, deleted or updated.
	RowsOut atomic.Int64
	srcs    []*jobSource
	// fresh makes the sources start from the beginning of their logs (an
	// upgraded view without state rebuilds its rows from its input).
	fresh bool
	// changelog is whether the sink writes the view's changelog; the sink
	// reads it at each barrier, so an epoch is written wholly or not at all.
	changelog atomic.Bool
	committed atomic.Uint64 // the last epoch whose commit included this job
	// Evicted counts groups evicted to the state table (as of the last
	// barrier).
	Evicted atomic.Int64
	// LostRows counts source records the source's system deleted before
	// the job read them (Kafka retention past a checkpointed offset):
	// rows the view never saw. Kept per split in the job's state, so it
	// counts since the job was created.
	LostRows atomic.Int64
	// mem accounts the job's memory: its state, the epoch's changes and
	// writes (memory.go).
	mem memAccount
	// et is the job's event time and late rows (watermark.go).
	et eventTime
	// errSeq numbers the rows skipped after an operator (rowerrors.go).
	errSeq atomic.Uint64
	hold   holdState // a memory job's epochs until a checkpoint (statebackend.go)
}

// jobSource is one source of a job: a stream's log or a view's changelog,
// read per partition.
type jobSource struct {
	n       *gnode
	offsets []atomic.Uint64
	// snap is the source view's rows to emit first (a new consumer of a view).
	snap storage.Snapshot
	// conn is a connector source's connection (CREATE SOURCE); its split
	// positions are the offsets.
	conn connector.Connector
	// wm is each partition's event time (watermark.go).
	wm []*partWatermark
}

// Err is the error the job failed with, once Failed is closed.
func (j *Job) Err() error { return j.err }

// Failed is closed when the job fails.
func (j *Job) Failed() <-chan struct{} { return j.failed }

// Name is the job's name.
func (j *Job) Name() string { return j.spec.Name }

// Spec returns the job's spec.
func (j *Job) Spec() JobSpec { return j.spec }

// Lag is how many rows of its sources the job has not read yet.
func (j *Job) Lag() int64 {
	var lag int64
	for _, s := range j.srcs {
		for p := range s.offsets {
			if s.conn != nil {
				lag += int64(s.connEnd(p)) - int64(s.offsets[p].Load())
				continue
			}
			_, end, _, err := j.db.Log().Bounds(s.n.src.ID, uint32(p))
			if err == nil {
				lag += int64(end) - int64(s.offsets[p].Load())
			}
		}
	}
	return lag
}

// Fail fails the job from outside (the coordinator, when checkpoints keep
// failing); it then restarts per its strategy.
func (j *Job) Fail(err error) { j.fail(err) }

func (j *Job) fail(err error) {
	j.failOnce.Do(func() {
		j.err = err
		close(j.failed)
		j.cancel()
	})
}

// task is one goroutine of a running job: a source split's reader
// (sourceRunner), an operator instance (opTask), the sink (viewSink), or a
// distributed job's exchange pump or drain (dist.go). The runtime starts
// each with start; the error run returns fails the job.
type task interface{ run() error }

// taskFunc makes a function a task.
type taskFunc func() error

func (f taskFunc) run() error { return f() }

// start runs t on a goroutine of the job; a panic fails the job too.
func (j *Job) start(t task) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				err := sqlerr.New(sqlerr.Internal, "job %s: panic: %v", j.spec.Name, r)
				err.Detail = string(debug.Stack())
				j.fail(err)
			}
		}()
		if err := t.run(); err != nil && j.ctx.Err() == nil {
			j.fail(err)
		}
	}()
}

// Stop cancels the job and waits for its goroutines to end.
func (j *Job) Stop() {
	j.cancel()
	j.wg.Wait()
}

// InjectBarrier hands barrier b to every source of the job. If ctx ends
// first (a source backpressured past the checkpoint timeout), some sources
// may have the barrier and others not, which no later barrier can align:
// the job fails and restarts from its last committed epoch.
func (j *Job) InjectBarrier(ctx context.Context, b *Barrier) error {
	b = j.hold.noteBarrier(b)
	for _, c := range j.barriers {
		select {
		case c <- b:
		case <-j.ctx.Done():
			return nil
		case <-ctx.Done():
			if ctx.Err() != context.DeadlineExceeded {
				return sqlerr.New(sqlerr.QueryCanceled, "job %s: barrier %d canceled", j.spec.Name, b.Epoch) // shutting down
			}
			err := sqlerr.New(sqlerr.QueryCanceled, "job %s: barrier %d not taken before the checkpoint timeout", j.spec.Name, b.Epoch)
			j.fail(err)
			return err
		}
	}
	return nil
}

// TryInjectBarrier hands b to every source that can take it without
// waiting (change streams: a slow client must not stall anyone).
func (j *Job) TryInjectBarrier(b *Barrier) {
	for _, c := range j.barriers {
		select {
		case c <- b:
		default:
		}
	}
}

// AwaitBarrier waits until barrier epoch has reached the job's sink and
// returns the epoch's writes.
//
// An earlier epoch's acknowledgement can arrive here when the round that
// waited for it gave up (checkpoint.timeout): the job already holds that
// epoch's changes in memory and its later offsets assume them, so its
// writes commit with this epoch, ahead of its own (storage.Batch.AbsorbEpoch
// keeps their order), never dropped.
func (j *Job) AwaitBarrier(ctx context.Context, epoch uint64) (*storage.Batch, error) {
	for {
		select {
		case a := <-j.acks:
			if a.epoch < epoch {
				if j.late == nil {
					j.late = a.w
				} else {
					j.late.AbsorbEpoch(a.w)
				}
				continue
			}
			if a.epoch != epoch {
				continue
			}
			w := a.w
			if j.late != nil {
				j.late.AbsorbEpoch(w)
				w, j.late = j.late, nil
			}
			w, err := j.hold.forCheckpoint(epoch, w)
			if err != nil {
				j.fail(err)
			}
			return w, err
		case <-j.failed:
			return nil, j.err
		case <-j.ctx.Done():
			return nil, sqlerr.New(sqlerr.QueryCanceled, "job %s stopped", j.spec.Name)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// LogEnds returns the current end offset of each partition of each source.
func (j *Job) LogEnds() [][]uint64 {
	ends := make([][]uint64, len(j.srcs))
	for i, s := range j.srcs {
		ends[i] = make([]uint64, len(s.offsets))
		for p := range ends[i] {
			if s.conn != nil {
				ends[i][p] = s.connEnd(p)
				continue
			}
			_, end, _, _ := j.db.Log().Bounds(s.n.src.ID, uint32(p))
			ends[i][p] = end
		}
	}
	return ends
}

// LogParts returns the log partitions the job's sources read.
func (j *Job) LogParts() []storage.LogPart {
	var out []storage.LogPart
	for _, s := range j.srcs {
		if s.conn != nil {
			continue // a connector has no log; its splits are not cut (see runConnector)
		}
		for p := range s.offsets {
			out = append(out, storage.LogPart{Table: s.n.src.ID, Part: uint32(p)})
		}
	}
	return out
}

// Reached reports whether the job has read every partition up to ends.
func (j *Job) Reached(ends [][]uint64) bool {
	for i, s := range j.srcs {
		for p, end := range ends[i] {
			if j.dist != nil && !j.dist.splitLocal(i, p) {
				continue // another node reads it
			}
			if s.offsets[p].Load() < end {
				return false
			}
		}
	}
	return true
}

// SourcePosition is how far a job has read one of its sources.
type SourcePosition struct {
	Table uint64
	Offs  []uint64 // per partition
}

// Positions returns, per source, the offsets the job has read up to.
func (j *Job) Positions() []SourcePosition {
	out := make([]SourcePosition, len(j.srcs))
	for i, s := range j.srcs {
		out[i].Table = s.n.src.ID
		for p := range s.offsets {
			out[i].Offs = append(out[i].Offs, s.offsets[p].Load())
		}
	}
	return out
}

// StateBytes estimates the job's operator state in memory (memAccount.stateBytes).
func (j *Job) StateBytes() int64 { return j.mem.stateBytes() }

// EnableChangelog makes the view's sink write its changelog from a later
// epoch on and returns that epoch: once the job has committed it, every
// change after a snapshot of the view is in the changelog.
func (j *Job) EnableChangelog() (fromEpoch uint64) {
	n := max(j.committed.Load(), j.hold.ackedEpoch())
	j.changelog.Store(true)
	// The sink may already hold barrier n+1; it reads the flag at the
	// barrier after, so epochs from n+3 on are written; n+2 commits them all.
	return n + 2
}

// CommittedEpoch is the last epoch whose commit included this job.
func (j *Job) CommittedEpoch() uint64 { return j.committed.Load() }

// ViewID is the id of the view the job maintains.
func (j *Job) ViewID() uint64 { return j.spec.ID }

// HoldsAfter is the epoch the view's rows hold once the job's changes up to
// epoch are committed (Committed(epoch) then records it).
func (j *Job) HoldsAfter(epoch uint64) uint64 { return j.hold.committedAs(epoch) }

// Committed tells the job that epoch's changes are in the database.
func (j *Job) Committed(epoch uint64) { j.committed.Store(j.hold.committedAs(epoch)) }

func (j *Job) send(out chan msg, m msg) error {
	select {
	case out <- m:
		return nil
	case <-j.ctx.Done():
		if m.c.Rec != nil {
			m.c.Rec.Release()
		}
		return j.ctx.Err()
	}
}

// durable says the job maintains a view (it writes state and offsets).
func (j *Job) durable() bool { return j.spec.View != nil }

func (j *Job) exprCtx() *expr.Ctx {
	v := j.spec.View
	raw := v != nil && v.KeyFormat < storage.KeyFormatCanonical
	rawJSONB := v != nil && v.KeyFormat < storage.KeyFormatJSONB
	return &expr.Ctx{Mem: memoryPool, Now: j.spec.Now, RawKeys: raw, RawJSONBKeys: rawJSONB}
}

// KeyGroups is the fixed number of key groups group keys hash into
// (exec/op).
const KeyGroups = op.KeyGroups

func keyGroup(h uint64) int { return op.KeyGroup(h) }

func instanceOf(kg, n int) int { return op.InstanceOf(kg, n) }
