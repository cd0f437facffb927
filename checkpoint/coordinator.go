// Package checkpoint is the coordinator of aligned barrier checkpoints: one
// barrier stream for every running job. Each round it injects barrier N
// into every job, waits until every job's sink has seen it, and commits all
// jobs' state changes, their source offsets and (for a checkpoint) the
// checkpoint record in one Pebble batch — synced for a checkpoint. So the
// database always equals the last committed epoch plus the stream logs.
//
// Rounds that are not checkpoints ("epochs") keep views fresh between
// checkpoints; they are committed without fsync. Pebble may hold unsynced
// commits in memory until a later synced write, so after kill -9 or power
// loss jobs resume from the last checkpoint or some later epoch — always a
// committed, consistent cut, and the logs replay the rest.
package checkpoint

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Task is the coordinator's view of a running durable job.
type Task interface {
	Name() string
	InjectBarrier(context.Context, *exec.Barrier) error
	AwaitBarrier(ctx context.Context, epoch uint64) (*storage.Batch, error)
	// Committed tells the job its changes up to epoch are in the database.
	Committed(epoch uint64)
	// ViewID is the view the job maintains; HoldsAfter the epoch its rows
	// hold once its changes up to epoch are committed (an earlier one on
	// the memory backend, whose epochs wait for a durable snapshot).
	ViewID() uint64
	HoldsAfter(epoch uint64) uint64
	// LogParts lists the log partitions the job reads; each round marks its
	// barrier's place in them (storage.DB.MarkCut).
	LogParts() []storage.LogPart
}

// Committer is the runtime's side of an exactly-once sink's two-phase
// commit (connector.TwoPhaseSink, driven by exec.SinkRunner). At a checkpoint's
// barrier, after every job has acknowledged, the coordinator asks each
// committer to prepare: it adds to the checkpoint's batch the transaction
// it will commit (storage.SinkCommit), covering only changes already in
// the database, which the checkpoint's synced commit makes durable. Once
// that commit is synced the coordinator calls CheckpointDurable, and the
// sink commits its transaction outside; if the commit fails,
// CheckpointAborted. Plain epochs, committed without fsync, never prepare.
type Committer interface {
	PrepareCommit(checkpoint uint64, b *storage.Batch)
	CheckpointDurable(checkpoint uint64)
	CheckpointAborted(checkpoint uint64)
}

// Registry lists the durable jobs a barrier must cover.
type Registry interface {
	Tasks() []Task
	// Committers lists the exactly-once sinks a checkpoint prepares.
	Committers() []Committer
	// Lock and Unlock keep the set of jobs fixed during a round.
	Lock()
	Unlock()
	// Behind lists the views whose jobs are failing or restarting: their
	// rows stay at the last epoch those jobs committed.
	Behind() []uint64
	// FailAll fails every running job (they restart per their strategy)
	// when more consecutive checkpoints failed than checkpoint.tolerable_failures.
	FailAll(err error)
}

// Config is the checkpoint configuration (the checkpoint.* settings).
type Config struct {
	Interval time.Duration // 0: no periodic checkpoints
	// BarrierInterval is how often a round (an epoch) runs; 0: EpochInterval.
	BarrierInterval time.Duration
	MinPause        time.Duration
	Timeout         time.Duration
	MaxConcurrent   int
	Retained        int
	AtLeastOnce     bool
	// TolerableFailures is how many consecutive checkpoints may fail (by
	// timeout or a storage error; a failing job restarts on its own) before
	// every job is failed and restarted from the last completed checkpoint.
	TolerableFailures int
}

// EpochInterval is how often barriers flow when no checkpoint is due, by
// default (Config.BarrierInterval: SET barrier.interval).
const EpochInterval = 100 * time.Millisecond

// Status of a checkpoint.
type Status string

const (
	Completed  Status = "COMPLETED"
	Failed     Status = "FAILED"
	Aborted    Status = "ABORTED"
	InProgress Status = "IN_PROGRESS"
)

// Record describes one checkpoint.
type Record struct {
	ID        uint64
	Epoch     uint64
	Status    Status
	Trigger   string // periodic, manual, savepoint
	StartedAt time.Time
	Duration  time.Duration
	Alignment time.Duration
	Size      int64 // bytes the checkpoint wrote (the delta since the last epoch)
	StateSize int64 // estimated bytes of all state and view rows once committed
	Jobs      []string
	Error     string `json:",omitempty"`
}

// Coordinator runs barrier rounds.
type Coordinator struct {
	db     *storage.DB
	reg    Registry
	config func() Config

	requests chan request
	poke     chan struct{} // an epoch is full: run the next round now (Poke)
	// exported, if set, runs after every completed checkpoint (retention).
	exported func(*Record) error
	// rounds, if set, sees every round's record as it ends (monitor/).
	rounds atomic.Pointer[func(Record)]
	// retained, if set, returns the ids of the checkpoints that are kept
	// (retained or a savepoint's): their records outlive HistoryKept.
	retained func() map[uint64]bool

	mu struct {
		sync.Mutex
		epoch   uint64
		lastID  uint64
		history []Record
		lastEnd time.Time
		// consecutive counts checkpoints failed in a row not by a job failure.
		consecutive int
	}
}

type request struct {
	trigger string
	after   func(*Record) error
	done    chan result
}

type result struct {
	rec Record
	err error
}

// New returns a coordinator; config is read at every round so settings take
// effect without restarting anything.
func New(db *storage.DB, reg Registry, config func() Config) (*Coordinator, error) {
	c := &Coordinator{db: db, reg: reg, config: config, requests: make(chan request), poke: make(chan struct{}, 1)}
	recs, err := db.State().LoadRecords(0)
	if err != nil {
		return nil, err
	}
	for _, v := range recs {
		var r Record
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, sqlerr.New(sqlerr.DataCorrupted, "checkpoint record: %v", err)
		}
		c.mu.history = append(c.mu.history, r)
		c.mu.lastID = max(c.mu.lastID, r.ID)
		c.mu.epoch = max(c.mu.epoch, r.Epoch)
	}
	c.mu.lastEnd = time.Now()
	return c, nil
}

// OnCompleted sets a hook run, inside the round, after each completed
// checkpoint (the engine exports retained checkpoints there). Call before Run.
func (c *Coordinator) OnCompleted(fn func(*Record) error) { c.exported = fn }

// HistoryKept is how many of the latest checkpoint records are kept,
// besides those of retained checkpoints and savepoints: older records are
// deleted, from memory and from the database, so SHOW CHECKPOINTS and the
// history loaded at startup stay bounded.
const HistoryKept = 50

// OnRetained sets fn to report the ids of the checkpoints that are kept
// (retained checkpoints and savepoints' checkpoints), whose records stay
// beyond HistoryKept. fn must not call the coordinator. Call before Run.
func (c *Coordinator) OnRetained(fn func() map[uint64]bool) { c.retained = fn }

// prune deletes the records beyond HistoryKept that are not retained.
func (c *Coordinator) prune() {
	c.mu.Lock()
	over := len(c.mu.history) > HistoryKept
	c.mu.Unlock()
	if !over {
		return
	}
	var keep map[uint64]bool
	if c.retained != nil {
		keep = c.retained()
	}
	c.mu.Lock()
	h := c.mu.history
	cut := len(h) - HistoryKept
	var drop []uint64
	out := make([]Record, 0, HistoryKept+len(keep))
	for i, r := range h {
		if i < cut && !keep[r.ID] {
			drop = append(drop, r.ID)
			continue
		}
		out = append(out, r)
	}
	c.mu.history = out
	c.mu.Unlock()
	// Best effort: a record left behind is deleted by a later round.
	_ = c.db.State().DeleteRecords(drop)
}

// OnRound sets fn to see each round as it ends: a plain epoch's record
// (ID 0, Trigger "") or a checkpoint's. fn runs on the coordinator's
// goroutine and must return quickly. It may be set while rounds run.
func (c *Coordinator) OnRound(fn func(Record)) { c.rounds.Store(&fn) }

func (c *Coordinator) noteRound(rec Record) {
	if fn := c.rounds.Load(); fn != nil {
		(*fn)(rec)
	}
}

// Run drives rounds until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	every := func() time.Duration {
		if d := c.config().BarrierInterval; d > 0 {
			return d
		}
		return EpochInterval
	}
	t := time.NewTimer(every())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case req := <-c.requests:
			rec, err := c.round(ctx, req.trigger, req.after)
			req.done <- result{rec, err}
		case <-t.C:
			c.tick(ctx)
			t.Reset(every())
		case <-c.poke:
			c.tick(ctx)
		}
	}
}

// tick runs a plain epoch round, or the periodic checkpoint when it is due.
func (c *Coordinator) tick(ctx context.Context) {
	cfg := c.config()
	c.mu.Lock()
	since := time.Since(c.mu.lastEnd)
	c.mu.Unlock()
	trigger := ""
	if cfg.Interval > 0 && since >= cfg.Interval && since >= cfg.MinPause {
		trigger = "periodic"
	}
	_, _ = c.round(ctx, trigger, nil)
}

// Poke asks for the next round now instead of at the next epoch tick: a
// job's epoch holds as many changes as one should (exec.JobSpec.MaxEpochGroups)
// and its sources wait for the barrier. It never blocks.
func (c *Coordinator) Poke() {
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

// Trigger takes a checkpoint now and returns when it is complete. If after
// is set it runs once the checkpoint is committed, before any later round
// (savepoints export the cut there); its error fails the request.
func (c *Coordinator) Trigger(ctx context.Context, trigger string, after func(*Record) error) (Record, error) {
	req := request{trigger: trigger, after: after, done: make(chan result, 1)}
	select {
	case c.requests <- req:
	case <-ctx.Done():
		return Record{}, sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
	}
	select {
	case r := <-req.done:
		return r.rec, r.err
	case <-ctx.Done():
		return Record{}, sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
	}
}

// NoteExportFailure records that checkpoint id, committed, could not be
// exported to checkpoint.dir (the export finishes after the round).
func (c *Coordinator) NoteExportFailure(id uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.mu.history {
		if c.mu.history[i].ID == id {
			c.mu.history[i].Error = "checkpoint committed; export to checkpoint.dir failed: " + err.Error()
		}
	}
}

// FailUpload fails checkpoint id, committed, whose upload to checkpoint
// storage failed (the upload finishes after the round). The jobs' data is
// untouched: their state is committed in the database either way; what
// failed is the copy that outlives the machine. It counts towards
// checkpoint.tolerable_failures like a checkpoint that timed out.
func (c *Coordinator) FailUpload(id uint64, err error) {
	cfg := c.config()
	var meta []byte
	c.mu.Lock()
	for i := range c.mu.history {
		if r := &c.mu.history[i]; r.ID == id {
			r.Status, r.Error = Failed, "checkpoint storage upload failed: "+err.Error()
			meta, _ = json.Marshal(r)
		}
	}
	c.mu.consecutive++
	tooMany := c.mu.consecutive > cfg.TolerableFailures
	if tooMany {
		c.mu.consecutive = 0
	}
	c.mu.Unlock()
	if meta != nil {
		_ = c.db.State().PutRecord(id, meta)
	}
	if tooMany {
		c.reg.FailAll(sqlerr.New(sqlerr.ObjectNotInPrereqState,
			"more than %d consecutive checkpoints failed (checkpoint.tolerable_failures); last: checkpoint %d: %v", cfg.TolerableFailures, id, err))
	}
}

// History returns the checkpoint records, oldest first.
func (c *Coordinator) History() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), c.mu.history...)
}

// held is, per view job, the epoch its rows hold once the round of epoch
// is committed: for the jobs that acked, what their commit holds (never
// older than before: a job restarted on the memory backend holds its
// predecessor's rows until its first checkpoint); for the jobs that are
// running but did not ack, or are failing or restarting, what they held
// (0 if they never committed: their rows hold no epoch yet).
func (c *Coordinator) held(epoch uint64, acked []Task) map[uint64]uint64 {
	prev := c.db.Epochs().HeldEpochs()
	out := map[uint64]uint64{}
	for _, t := range c.reg.Tasks() {
		out[t.ViewID()] = prev[t.ViewID()] // 0: its rows hold no epoch yet
	}
	for _, id := range c.reg.Behind() {
		out[id] = prev[id]
	}
	for _, t := range acked {
		out[t.ViewID()] = max(out[t.ViewID()], t.HoldsAfter(epoch))
	}
	return out
}

// round runs one barrier round; trigger "" is a plain epoch.
func (c *Coordinator) round(ctx context.Context, trigger string, after func(*Record) error) (Record, error) {
	cfg := c.config()
	c.reg.Lock()
	defer c.reg.Unlock()
	tasks := c.reg.Tasks()
	var sinks []Committer
	if trigger != "" {
		sinks = c.reg.Committers()
	}
	if len(tasks) == 0 && (trigger == "" || trigger == "periodic") {
		// Nothing runs, so there is nothing to checkpoint; no stream is
		// behind a view, so reads are no longer held at the last cut.
		if last, _, err := c.db.Epochs().LastCut(); err == nil && len(last) > 0 {
			c.mu.Lock()
			c.mu.epoch++
			epoch := c.mu.epoch
			c.mu.Unlock()
			_ = c.db.State().CommitEpochAt(nil, 0, nil, false, storage.Cut{}, &storage.ReadPoint{Epoch: epoch, Held: c.held(0, nil)})
		}
		return Record{}, nil
	}
	c.mu.Lock()
	c.mu.epoch++
	epoch := c.mu.epoch
	id := c.mu.lastID
	if trigger != "" {
		id++
		c.mu.lastID = id
	}
	c.mu.Unlock()

	rec := Record{ID: id, Epoch: epoch, Status: InProgress, Trigger: trigger, StartedAt: time.Now()}
	b := &exec.Barrier{Epoch: epoch, Checkpoint: trigger != "", CatchUp: trigger == "manual" || trigger == "savepoint",
		Savepoint: trigger == "savepoint"}
	wctx := ctx
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	var batches []*storage.Batch
	var acked []Task
	var failure error
	// The barrier's place in every log the jobs read: marked before any
	// job gets the barrier, released once the round's acks are in.
	var parts []storage.LogPart
	for _, t := range tasks {
		parts = append(parts, t.LogParts()...)
	}
	cut, err := c.db.Epochs().MarkCut(epoch, parts)
	if err != nil {
		failure = err
	}
	b.Cut = cut
	injected := make([]bool, len(tasks))
	for i, t := range tasks {
		if cut == nil {
			break
		}
		rec.Jobs = append(rec.Jobs, t.Name())
		if err := t.InjectBarrier(wctx, b); err != nil {
			if failure == nil {
				failure = err
			}
			continue
		}
		injected[i] = true
	}
	for i, t := range tasks {
		if !injected[i] {
			continue
		}
		batch, err := t.AwaitBarrier(wctx, epoch)
		if err != nil {
			if failure == nil {
				failure = err
			}
			continue
		}
		batches = append(batches, batch)
		acked = append(acked, t)
		rec.Size += int64(batch.Len())
	}
	c.db.Epochs().ReleaseCut(epoch)
	rec.Alignment = time.Since(rec.StartedAt)
	switch {
	case failure != nil && wctx.Err() != nil && ctx.Err() == nil:
		rec.Status, rec.Error = Aborted, "checkpoint expired before completing (checkpoint.timeout)"
	case failure != nil:
		rec.Status, rec.Error = Failed, failure.Error()
	default:
		rec.Status = Completed
	}
	var meta []byte
	if trigger != "" {
		rec.Duration = time.Since(rec.StartedAt)
		if rec.Status == Completed {
			meta, _ = json.Marshal(rec)
		}
	}
	// Jobs that acknowledged commit their epoch even if another job failed:
	// jobs are independent, and a failed job restarts from its own last commit.
	if cut == nil {
		cut = storage.Cut{}
	}
	rp := &storage.ReadPoint{Epoch: epoch, Checkpoint: trigger != "", Cut: cut, Held: c.held(epoch, acked)}
	durable := trigger != "" && rec.Status == Completed
	if durable && len(sinks) > 0 {
		// Phase one of the sinks' two-phase commit: their transactions
		// go into this checkpoint's synced batch.
		sb := c.db.State().NewEpochBatch()
		for _, s := range sinks {
			s.PrepareCommit(id, sb)
		}
		batches = append(batches, sb)
	}
	if err := c.db.State().CommitEpochAt(batches, id, meta, durable, cut, rp); err == nil {
		for _, t := range acked {
			t.Committed(epoch)
		}
		if durable {
			// Phase two: the checkpoint is durable, the sinks commit.
			for _, s := range sinks {
				s.CheckpointDurable(id)
			}
		}
		if trigger != "" {
			rec.StateSize = c.db.State().Size()
			c.db.MaybeFlush()
		}
	} else {
		if durable {
			for _, s := range sinks {
				s.CheckpointAborted(id)
			}
		}
		rec.Status, rec.Error = Failed, err.Error()
		// The jobs hold this epoch's changes only in memory now; restart them
		// from the last commit so stored state and memory cannot diverge.
		c.reg.FailAll(sqlerr.New(sqlerr.IOError, "epoch %d could not be committed: %v", epoch, err))
	}
	if trigger == "" {
		rec.Duration = time.Since(rec.StartedAt)
		c.noteRound(rec)
		return rec, failure
	}
	jobFailed := failure != nil && rec.Status == Failed && rec.Error == failure.Error()
	var afterErr error
	c.mu.Lock()
	switch {
	case rec.Status == Completed:
		c.mu.consecutive = 0
	case !jobFailed:
		c.mu.consecutive++
	}
	tooMany := c.mu.consecutive > cfg.TolerableFailures
	if tooMany {
		c.mu.consecutive = 0
	}
	c.mu.Unlock()
	if tooMany {
		c.reg.FailAll(sqlerr.New(sqlerr.ObjectNotInPrereqState,
			"more than %d consecutive checkpoints failed (checkpoint.tolerable_failures); last: %s", cfg.TolerableFailures, rec.Error))
	}
	if rec.Status == Completed {
		if after != nil {
			afterErr = after(&rec)
		}
		if c.exported != nil && trigger != "savepoint" {
			if err := c.exported(&rec); err != nil {
				rec.Error = "checkpoint committed; export to checkpoint.dir failed: " + err.Error()
			}
		}
	}
	rec.Duration = time.Since(rec.StartedAt)
	c.mu.Lock()
	c.mu.history = append(c.mu.history, rec)
	if len(c.mu.history) > 1000 {
		c.mu.history = c.mu.history[len(c.mu.history)-1000:]
	}
	c.mu.lastEnd = time.Now()
	c.mu.Unlock()
	c.prune()
	c.noteRound(rec)
	if rec.Status != Completed {
		return rec, sqlerr.New(sqlerr.ObjectNotInPrereqState, "checkpoint %d %s: %s", id, rec.Status, rec.Error)
	}
	return rec, afterErr
}
