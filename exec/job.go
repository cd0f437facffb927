package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// KeyGroups is the fixed number of key groups group keys hash into; a key
// group is the unit of state that moves between parallel instances.
const KeyGroups = 128

// Barrier marks the end of an epoch in every stream of a job.
type Barrier struct {
	Epoch      uint64
	Checkpoint bool
	// CatchUp makes each source read everything written to its stream
	// before the barrier was injected, so the epoch covers all input
	// acknowledged before it (CHECKPOINT; reads that must see every write).
	CatchUp bool
}

// msg is what flows on a job's edges: a chunk or a barrier.
type msg struct {
	c       Chunk
	rowIDs  []uint64 // source positions of the rows (views without aggregation)
	barrier *Barrier
	// w, with a barrier, holds the epoch's writes of the operators the
	// barrier has passed: each writes its part of an epoch into a batch of
	// its own and hands it on with the barrier, so nothing can write into
	// an epoch after passing its barrier on.
	w *storage.Batch
}

// ack is a sink's acknowledgement of a barrier, with the epoch's writes.
type ack struct {
	epoch uint64
	w     *storage.Batch
}

// JobSpec describes a continuous query to run.
type JobSpec struct {
	ID   uint64
	Name string
	Plan Plan
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

// shape is a plan as a dataflow: source → pre stages → [aggregate → post stages].
type shape struct {
	src *storage.TableDef
	// changelog is set when src is a view: the job reads the view's
	// changelog, whose rows carry change ops.
	changelog bool
	pre       []Plan // Filter/Project, bottom-up
	agg       *HashAgg
	post      []Plan
}

// analyse checks that p can run continuously and splits it into stages.
func analyse(p Plan) (*shape, error) {
	var s shape
	var stages []Plan // top-down
	for {
		switch n := p.(type) {
		case *Filter:
			stages = append(stages, n)
			p = n.In
			continue
		case *Project:
			stages = append(stages, n)
			p = n.In
			continue
		case *HashAgg:
			if s.agg != nil {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "continuous queries with more than one level of aggregation are not supported yet")
			}
			s.agg = n
			for i := len(stages) - 1; i >= 0; i-- {
				s.post = append(s.post, stages[i])
			}
			stages = nil
			p = n.In
			continue
		case *ScanStream:
			s.src = n.Table
		case *ScanView:
			if n.Snap != nil {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "continuous queries cannot read AS OF snapshots")
			}
			s.src, s.changelog = n.View, true
		default:
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "continuous queries do not support %s yet (supported: WHERE, expressions, GROUP BY, aggregates, HAVING over one stream)", planName(p))
		}
		break
	}
	for i := len(stages) - 1; i >= 0; i-- {
		s.pre = append(s.pre, stages[i])
	}
	return &s, nil
}

func planName(p Plan) string {
	switch p.(type) {
	case *HashJoin:
		return "joins"
	case *Sort:
		return "ORDER BY"
	case *Limit:
		return "LIMIT/OFFSET"
	case *Union:
		return "UNION"
	case *Values, *Batches:
		return "queries without a stream"
	}
	return fmt.Sprintf("%T", p)
}

// StateOperators names the stateful operators of a continuous plan by their
// stable ids, each with a fingerprint of what its state means (group keys
// and aggregates with their types). Restoring state into a plan requires
// equal fingerprints for equal ids.
func StateOperators(p Plan) (map[string]string, error) {
	sh, err := analyse(p)
	if err != nil {
		return nil, err
	}
	ops := map[string]string{}
	if sh.agg != nil {
		var b strings.Builder
		b.WriteString("keys(")
		for i, k := range sh.agg.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k.Type().String())
		}
		b.WriteString(") aggs(")
		for i, a := range sh.agg.Aggs {
			if i > 0 {
				b.WriteString(", ")
			}
			name := [...]string{"count(*)", "count", "sum", "avg", "min", "max"}[a.Kind]
			if a.Distinct {
				name += " distinct"
			}
			if a.Arg != nil {
				name += " " + a.Arg.Type().String()
			}
			b.WriteString(name + " -> " + a.T.String())
		}
		b.WriteString(")")
		ops["aggregate#0"] = b.String()
	}
	return ops, nil
}

// Check reports whether p can run as a continuous query.
func Check(p Plan) error {
	_, err := analyse(p)
	return err
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

// Job is a running continuous query.
type Job struct {
	spec  JobSpec
	shape *shape
	db    *storage.DB

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	barriers []chan *Barrier // one per source partition
	acks     chan ack
	failed   chan struct{}
	failOnce sync.Once
	err      error

	RowsIn  atomic.Int64
	offsets []atomic.Uint64
	// changelog is whether the sink writes the view's changelog; the sink
	// reads it at each barrier, so an epoch is written wholly or not at all.
	changelog atomic.Bool
	committed atomic.Uint64 // the last epoch whose commit included this job
	// StateBytes estimates the aggregate state held in memory, per instance;
	// Evicted counts groups evicted to the state table (both as of the last barrier).
	stateBytes []atomic.Int64
	Evicted    atomic.Int64
	spilling   atomic.Bool // some instance's state is partly only in the state table
	// dirty is each aggregate instance's count of groups changed in the
	// current epoch; inflight counts rows sent to the instances and not yet
	// aggregated. Together they bound the epoch's changes (epochFull).
	dirty    []atomic.Int64
	inflight atomic.Int64

	// fallible are the aggregate's key and argument expressions that can
	// raise an error (anything but a column or a constant).
	fallible []expr.Expr

	// snap is the source view's rows to emit first (a new consumer of a view).
	snap storage.Snapshot
}

// Err is the error the job failed with, once Failed is closed.
func (j *Job) Err() error { return j.err }

// Failed is closed when the job fails.
func (j *Job) Failed() <-chan struct{} { return j.failed }

// Name is the job's name.
func (j *Job) Name() string { return j.spec.Name }

// Spec returns the job's spec.
func (j *Job) Spec() JobSpec { return j.spec }

// Lag is how many rows of its stream the job has not read yet.
func (j *Job) Lag() int64 {
	var lag int64
	for p := range j.offsets {
		_, end, _, err := j.db.LogBounds(j.shape.src.ID, uint32(p))
		if err == nil {
			lag += int64(end) - int64(j.offsets[p].Load())
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

// StartJob starts a continuous query. Durable jobs resume from their
// committed offsets and state.
func StartJob(db *storage.DB, spec JobSpec) (*Job, error) {
	sh, err := analyse(spec.Plan)
	if err != nil {
		return nil, err
	}
	if spec.Parallelism < 1 || sh.agg == nil {
		spec.Parallelism = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &Job{spec: spec, shape: sh, db: db, ctx: ctx, cancel: cancel,
		acks: make(chan ack, 1), failed: make(chan struct{})}
	j.changelog.Store(spec.Changelog)
	if sh.agg != nil {
		for _, e := range sh.agg.Keys {
			j.addFallible(e)
		}
		for _, a := range sh.agg.Aggs {
			j.addFallible(a.Arg)
		}
	}
	parts := max(1, sh.src.Partitions)
	j.offsets = make([]atomic.Uint64, parts)
	for p := 0; p < parts; p++ {
		start, _, _, err := db.LogBounds(sh.src.ID, uint32(p))
		if err != nil {
			cancel()
			return nil, err
		}
		off := start
		resumed := false
		if spec.View != nil {
			committed, ok, err := db.LoadOffset(spec.ID, sh.src.ID, uint32(p))
			if err != nil {
				cancel()
				return nil, err
			}
			off, resumed = max(off, committed), ok
		}
		if sh.changelog && !resumed {
			// A new consumer of a view starts from a snapshot of its rows
			// and follows its changelog from the same instant.
			snap, end, err := db.ViewSnapshot(sh.src.ID)
			if err != nil {
				cancel()
				return nil, err
			}
			j.snap, off = snap, end
		}
		j.offsets[p].Store(off)
	}

	// Wire the dataflow: sources → [agg instances] → sink.
	n := spec.Parallelism
	sinkIns := make([]chan msg, 0, n)
	var aggIns [][]chan msg // [instance][source]
	if sh.agg != nil {
		aggIns = make([][]chan msg, n)
		aggs := make([]*aggOp, n)
		for i := 0; i < n; i++ {
			aggs[i] = newAggOp(sh.agg, sh.changelog)
			// A view without readers needs no old rows (changesOf).
			aggs[i].outValid = spec.View == nil || spec.Changelog
			if spec.View != nil {
				if err := j.loadState(aggs[i], i); err != nil {
					cancel()
					return nil, err
				}
				if spec.Reemit {
					aggs[i].reemitAll()
				}
			}
			for p := 0; p < parts; p++ {
				aggIns[i] = append(aggIns[i], make(chan msg, 4))
			}
			sinkIns = append(sinkIns, make(chan msg, 4))
		}
		j.stateBytes = make([]atomic.Int64, n)
		j.dirty = make([]atomic.Int64, n)
		for i := 0; i < n; i++ {
			j.stateBytes[i].Store(aggs[i].bytes)
			j.goRun(func() error { return j.runAgg(i, aggs[i], aggIns[i], sinkIns[i]) })
		}
	} else {
		for p := 0; p < parts; p++ {
			sinkIns = append(sinkIns, make(chan msg, 4))
		}
	}
	for p := 0; p < parts; p++ {
		bc := make(chan *Barrier, 1)
		j.barriers = append(j.barriers, bc)
		var outs []chan msg
		if sh.agg != nil {
			for i := 0; i < n; i++ {
				outs = append(outs, aggIns[i][p])
			}
		} else {
			outs = []chan msg{sinkIns[p]}
		}
		j.goRun(func() error { return j.runSource(uint32(p), bc, outs) })
	}
	j.goRun(func() error { return j.runSink(sinkIns) })
	return j, nil
}

func (j *Job) goRun(fn func() error) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				j.fail(sqlerr.New(sqlerr.Internal, "job %s: panic: %v", j.spec.Name, r))
			}
		}()
		if err := fn(); err != nil && j.ctx.Err() == nil {
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

// LogEnds returns the current end offset of each partition the job reads.
func (j *Job) LogEnds() []uint64 {
	ends := make([]uint64, len(j.offsets))
	for p := range ends {
		_, end, _, _ := j.db.LogBounds(j.shape.src.ID, uint32(p))
		ends[p] = end
	}
	return ends
}

var errEpochFull = errors.New("epoch full")

// epochFull reports whether the current epoch holds as many changes as
// one epoch may (JobSpec.MaxEpochGroups). While the state fits its cache,
// an epoch's batch takes memory the cache leaves free; once the state
// spills, the cache is full and the batch comes on top of it, so the bound
// is halved: the job then stays within about 1.4 times its budget instead
// of 1.8, and each checkpoint commits half as much.
func (j *Job) epochFull() bool {
	limit := j.spec.MaxEpochGroups
	if limit <= 0 || j.dirty == nil {
		return false
	}
	if j.spilling.Load() {
		limit /= 2
	}
	n := j.inflight.Load()
	for i := range j.dirty {
		n += j.dirty[i].Load()
	}
	return n >= limit
}

// Positions returns the log the job reads and, per partition, the offset
// it has read up to.
func (j *Job) Positions() (table uint64, offs []uint64) {
	offs = make([]uint64, len(j.offsets))
	for p := range offs {
		offs[p] = j.offsets[p].Load()
	}
	return j.shape.src.ID, offs
}

// Reached reports whether the job has read every partition up to ends.
func (j *Job) Reached(ends []uint64) bool {
	for p, end := range ends {
		if j.offsets[p].Load() < end {
			return false
		}
	}
	return true
}

// StateBytes estimates the job's aggregate state in memory.
func (j *Job) StateBytes() int64 {
	var n int64
	for i := range j.stateBytes {
		n += j.stateBytes[i].Load()
	}
	return n
}

// EnableChangelog makes the view's sink write its changelog from a later
// epoch on and returns that epoch: once the job has committed it, every
// change after a snapshot of the view is in the changelog.
func (j *Job) EnableChangelog() (fromEpoch uint64) {
	n := j.committed.Load()
	j.changelog.Store(true)
	// The sink may already hold barrier n+1; it reads the flag at the
	// barrier after, so epochs from n+3 on are written; n+2 commits them all.
	return n + 2
}

// CommittedEpoch is the last epoch whose commit included this job.
func (j *Job) CommittedEpoch() uint64 { return j.committed.Load() }

// Committed tells the job that epoch's changes are in the database.
func (j *Job) Committed(epoch uint64) { j.committed.Store(epoch) }

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
// returns the epoch's writes; a fresh batch takes their place.
func (j *Job) AwaitBarrier(ctx context.Context, epoch uint64) (*storage.Batch, error) {
	for {
		select {
		case a := <-j.acks:
			if a.epoch != epoch {
				continue
			}
			return a.w, nil
		case <-j.failed:
			return nil, j.err
		case <-j.ctx.Done():
			return nil, sqlerr.New(sqlerr.QueryCanceled, "job %s stopped", j.spec.Name)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (j *Job) send(out chan msg, m msg) error {
	select {
	case out <- m:
		return nil
	case <-j.ctx.Done():
		return j.ctx.Err()
	}
}

// runSource reads one partition of the stream from the job's offset on,
// applies the stages below the aggregate and routes rows by key group.
func (j *Job) runSource(part uint32, barriers chan *Barrier, outs []chan msg) error {
	sh := j.shape
	ectx := &expr.Ctx{Mem: memoryPool, Now: j.spec.Now}
	// w holds this source's writes of the current epoch (its offset,
	// skipped rows); it goes on with the barrier.
	w := j.db.NewEpochBatch()
	off := j.offsets[part].Load()
	const maxRows = 64 << 10
	// read processes the rows [off, to), or stops after a block once the
	// epoch is full.
	read := func(to uint64) error {
		err := j.db.ReadLog(memoryPool, sh.src.ID, part, off, to, func(first uint64, rec arrow.RecordBatch) error {
			n := rec.NumRows()
			j.RowsIn.Add(n)
			if err := j.route(ectx, w, part, first, rec, outs); err != nil {
				return err
			}
			off = first + uint64(n)
			j.offsets[part].Store(off)
			if j.epochFull() {
				return errEpochFull
			}
			return nil
		})
		if err == errEpochFull {
			return nil
		}
		return err
	}
	if j.snap != nil {
		err := j.emitSnapshot(ectx, w, part, outs)
		j.snap.Close()
		j.snap = nil
		if err != nil {
			return err
		}
	}
	onBarrier := func(b *Barrier) error {
		if b.CatchUp {
			start, end, _, err := j.db.LogBounds(sh.src.ID, part)
			if err != nil {
				return err
			}
			if off < start {
				off = start
				j.offsets[part].Store(off)
			}
			for off < end {
				if err := read(min(end, off+maxRows)); err != nil {
					return err
				}
			}
		}
		if j.spec.View != nil {
			w.SetOffset(j.spec.ID, sh.src.ID, part, off)
		}
		for i, o := range outs {
			m := msg{barrier: b}
			if i == 0 {
				m.w = w
			}
			if err := j.send(o, m); err != nil {
				return err
			}
		}
		w = j.db.NewEpochBatch()
		return nil
	}
	for {
		select {
		case b := <-barriers:
			if err := onBarrier(b); err != nil {
				return err
			}
			continue
		case <-j.ctx.Done():
			return nil
		default:
		}
		start, end, changed, err := j.db.LogBounds(sh.src.ID, part)
		if err != nil {
			return err
		}
		if off < start {
			// Retention removed rows no checkpoint, savepoint or committed
			// offset needed (a job that never committed starts at the
			// oldest retained offset, wherever that has moved).
			off = start
			j.offsets[part].Store(off)
		}
		if off < end && j.epochFull() {
			// Wait for the barrier that ends this epoch (asked for) and for
			// the aggregate to take it; poll, since a barrier may already
			// be on its way.
			if j.spec.EpochFull != nil {
				j.spec.EpochFull()
			}
			select {
			case b := <-barriers:
				if err := onBarrier(b); err != nil {
					return err
				}
			case <-j.ctx.Done():
				return nil
			case <-time.After(time.Millisecond):
			}
			continue
		}
		if off < end {
			if err := read(min(end, off+maxRows)); err != nil {
				return err
			}
			continue
		}
		select {
		case b := <-barriers:
			if err := onBarrier(b); err != nil {
				return err
			}
		case <-changed:
		case <-j.ctx.Done():
			return nil
		}
	}
}

// emitSnapshot sends the source view's snapshot rows on as inserts.
func (j *Job) emitSnapshot(ectx *expr.Ctx, w *storage.Batch, part uint32, outs []chan msg) error {
	ctx := &Ctx{Context: j.ctx, DB: j.db, Expr: ectx}
	scan := &ScanView{View: j.shape.src, Snap: j.snap}
	ts := scan.Types()
	return scanView(ctx, scan, func(rec arrow.RecordBatch) error {
		// route expects a changelog block: the view's columns, then an op.
		ob := types.NewBuilder(memoryPool, types.TInt64)
		for i := 0; i < int(rec.NumRows()); i++ {
			types.AppendDatum(ob, types.Int(int64(OpInsert)), types.TInt64)
		}
		cols := make([]arrow.Array, 0, len(ts)+1)
		for c := range ts {
			col := rec.Column(c)
			col.Retain()
			cols = append(cols, col)
		}
		cols = append(cols, ob.NewArray())
		ob.Release()
		n := int(rec.NumRows())
		rec.Release()
		j.RowsIn.Add(int64(n))
		return j.route(ectx, w, part, 0, newRecord(append(append([]types.T(nil), ts...), types.TInt64), cols, n), outs)
	})
}

// route applies the pre-aggregate stages to rec and sends its rows on.
func (j *Job) route(ectx *expr.Ctx, w *storage.Batch, part uint32, first uint64, rec arrow.RecordBatch, outs []chan msg) error {
	if err := failpoint(j.spec.Name, "source"); err != nil {
		rec.Release()
		return err
	}
	var inOps []Op
	if j.shape.changelog {
		rec, inOps = splitOps(rec)
	}
	out, kept, err := j.transform(ectx, w, part, first, rec)
	rec.Release()
	if err != nil {
		return err
	}
	if out.NumRows() == 0 {
		out.Release()
		return nil
	}
	var ops []Op
	if inOps != nil {
		ops = make([]Op, len(kept))
		for i, k := range kept {
			ops[i] = inOps[k]
		}
	}
	var ids []uint64
	if j.shape.agg == nil {
		ids = make([]uint64, len(kept))
		for i, k := range kept {
			ids[i] = uint64(part)<<48 | (first + uint64(k))
		}
	}
	if j.dirty != nil {
		j.inflight.Add(out.NumRows())
	}
	if len(outs) == 1 {
		return j.send(outs[0], msg{c: Chunk{Rec: out, Ops: ops}, rowIDs: ids})
	}
	// Hash-partition by group key.
	defer out.Release()
	n := int(out.NumRows())
	keys := make([]arrow.Array, len(j.shape.agg.Keys))
	defer releaseAll(keys)
	for i, k := range j.shape.agg.Keys {
		if keys[i], err = expr.Eval(ectx, k, out); err != nil {
			return err
		}
	}
	h := hashColumns(nil, keys, n)
	idx := make([][]int, len(outs))
	for r := 0; r < n; r++ {
		inst := instanceOf(keyGroup(h[r]), len(outs))
		idx[inst] = append(idx[inst], r)
	}
	ts := exprTypes(plannedExprs(out))
	for i, rows := range idx {
		if len(rows) == 0 {
			continue
		}
		var sub []Op
		if ops != nil {
			sub = make([]Op, len(rows))
			for x, r := range rows {
				sub[x] = ops[r]
			}
		}
		if err := j.send(outs[i], msg{c: Chunk{Rec: takeRecord(out, rows, ts), Ops: sub}}); err != nil {
			return err
		}
	}
	return nil
}

// transform applies the pre-aggregate stages to rec. On a data error it
// finds the rows that raise it: with job.error_policy = 'skip' it records
// each in the epoch's error log and goes on without them; otherwise the job
// fails with the first one's stream offset.
func (j *Job) transform(ectx *expr.Ctx, w *storage.Batch, part uint32, first uint64, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	out, kept, err := j.tryStages(ectx, rec)
	if err == nil || !isDataError(err) {
		return out, kept, err
	}
	n := int(rec.NumRows())
	good := make([]int, 0, n)
	for i := 0; i < n; i++ {
		one := rec.NewSlice(int64(i), int64(i+1))
		o, _, e := j.tryStages(ectx, one)
		one.Release()
		if o != nil {
			o.Release()
		}
		if e == nil {
			good = append(good, i)
			continue
		}
		se := sqlerr.As(e)
		off := first + uint64(i)
		if !j.spec.SkipErrors {
			return nil, nil, &sqlerr.Error{Code: se.Code, Msg: se.Msg,
				Detail: fmt.Sprintf("stream %s, partition %d, offset %d: row %s", j.shape.src.Name, part, off, rowText(rec, i))}
		}
		w.PutJobError(j.spec.ID, storage.JobError{Job: j.spec.Name, Stream: j.shape.src.Name,
			Partition: part, Offset: off, Code: se.Code, Message: se.Msg, Row: rowText(rec, i), At: time.Now().UTC()})
	}
	sub := takeRecord(rec, good, exprTypes(plannedExprs(rec)))
	defer sub.Release()
	out, kept, err = j.tryStages(ectx, sub)
	if err != nil {
		return nil, nil, err
	}
	for i, k := range kept {
		kept[i] = good[k]
	}
	return out, kept, nil
}

// tryStages runs the pre-aggregate stages and also evaluates the
// aggregate's expressions that can raise errors, so a bad row is caught
// here, with its stream offset.
func (j *Job) tryStages(ectx *expr.Ctx, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	out, kept, err := applyStages(ectx, j.shape.pre, rec, true)
	if err != nil || j.shape.agg == nil {
		return out, kept, err
	}
	for _, e := range j.fallible {
		a, err := expr.Eval(ectx, e, out)
		if err != nil {
			out.Release()
			return nil, nil, err
		}
		a.Release()
	}
	return out, kept, nil
}

func (j *Job) addFallible(e expr.Expr) {
	switch e.(type) {
	case nil, *expr.ColRef, *expr.Const, *expr.Param:
		return
	}
	j.fallible = append(j.fallible, e)
}

// isDataError reports whether err is about a value (SQLSTATE class 22).
func isDataError(err error) bool { return strings.HasPrefix(sqlerr.Code(err), "22") }

// rowText renders row i of rec as (v1, v2, ...).
func rowText(rec arrow.RecordBatch, i int) string {
	var b strings.Builder
	b.WriteByte('(')
	for c := 0; c < int(rec.NumCols()); c++ {
		if c > 0 {
			b.WriteString(", ")
		}
		col := rec.Column(c)
		if col.IsNull(i) {
			b.WriteString("NULL")
			continue
		}
		t := typeOfArrow(col)
		b.WriteString(types.TextOf(types.DatumAt(col, i, t), t))
	}
	b.WriteByte(')')
	return b.String()
}

func keyGroup(h uint64) int    { return int(h % KeyGroups) }
func instanceOf(kg, n int) int { return kg * n / KeyGroups }
func plannedExprs(rec arrow.RecordBatch) []expr.Expr {
	es := make([]expr.Expr, rec.NumCols())
	for i := range es {
		es[i] = &expr.ColRef{Idx: i, T: typeOfArrow(rec.Column(i))}
	}
	return es
}

// typeOfArrow recovers a SQL type that has rec's physical layout.
func typeOfArrow(a arrow.Array) types.T {
	switch dt := a.DataType().(type) {
	case *arrow.BooleanType:
		return types.TBool
	case *arrow.Int64Type:
		return types.TInt64
	case *arrow.Float64Type:
		return types.TFloat64
	case *arrow.Decimal128Type:
		return types.NumericOf(38, dt.Scale)
	case *arrow.StringType:
		return types.TText
	case *arrow.MonthDayNanoIntervalType:
		return types.TInterval
	}
	return types.TUnknown
}

// applyStages runs Filter/Project stages over rec; with track it also
// returns, for each output row, the index of the input row it came from.
func applyStages(ectx *expr.Ctx, stages []Plan, rec arrow.RecordBatch, track bool) (arrow.RecordBatch, []int, error) {
	rec.Retain()
	var kept []int
	if track {
		kept = make([]int, rec.NumRows())
		for i := range kept {
			kept[i] = i
		}
	}
	for _, st := range stages {
		switch st := st.(type) {
		case *Filter:
			mask, err := expr.Eval(ectx, st.Pred, rec)
			if err != nil {
				rec.Release()
				return nil, nil, err
			}
			b := mask.(*array.Boolean)
			var rows []int
			for i := 0; i < b.Len(); i++ {
				if b.IsValid(i) && b.Value(i) {
					rows = append(rows, i)
				}
			}
			mask.Release()
			if len(rows) == int(rec.NumRows()) {
				continue
			}
			if track {
				for i, r := range rows {
					kept[i] = kept[r]
				}
				kept = kept[:len(rows)]
			}
			out := takeRecord(rec, rows, exprTypes(plannedExprs(rec)))
			rec.Release()
			rec = out
		case *Project:
			out, err := project(ectx, st.Exprs, st.Types(), rec)
			rec.Release()
			if err != nil {
				return nil, nil, err
			}
			rec = out
		}
	}
	return rec, kept, nil
}

// aligner merges a task's inputs and aligns barriers: in exactly-once mode an
// input that delivered barrier N is not read again until all inputs have.
type aligner struct {
	ins         []chan msg
	blocked     []bool
	arrived     int
	atLeastOnce bool
	cases       []reflect.SelectCase
	idx         []int
	done        <-chan struct{}
	w           *storage.Batch // writes carried by the barriers of the epoch being aligned
}

func newAligner(ins []chan msg, atLeastOnce bool, done <-chan struct{}) *aligner {
	return &aligner{ins: ins, blocked: make([]bool, len(ins)), atLeastOnce: atLeastOnce, done: done}
}

// next returns the next chunk, or an aligned barrier, or ok=false when done.
func (a *aligner) next() (m msg, ok bool) {
	for {
		if len(a.ins) == 1 {
			select {
			case m := <-a.ins[0]:
				return m, true
			case <-a.done:
				return msg{}, false
			}
		}
		a.cases = a.cases[:0]
		a.idx = a.idx[:0]
		a.cases = append(a.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a.done)})
		for i, c := range a.ins {
			if a.blocked[i] && !a.atLeastOnce {
				continue
			}
			a.cases = append(a.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
			a.idx = append(a.idx, i)
		}
		chosen, v, _ := reflect.Select(a.cases)
		if chosen == 0 {
			return msg{}, false
		}
		i := a.idx[chosen-1]
		m := v.Interface().(msg)
		if m.barrier == nil {
			return m, true
		}
		if m.w != nil {
			if a.w == nil {
				a.w = m.w
			} else {
				a.w.Absorb(m.w)
			}
		}
		if !a.blocked[i] {
			a.blocked[i] = true
			a.arrived++
		}
		if a.arrived == len(a.ins) {
			for k := range a.blocked {
				a.blocked[k] = false
			}
			a.arrived = 0
			m.w, a.w = a.w, nil
			return m, true
		}
	}
}

// runAgg is one parallel instance of the aggregate.
func (j *Job) runAgg(inst int, op *aggOp, ins []chan msg, out chan msg) error {
	ectx := &expr.Ctx{Mem: memoryPool, Now: j.spec.Now}
	al := newAligner(ins, j.spec.AtLeastOnce, j.ctx.Done())
	for {
		m, ok := al.next()
		if !ok {
			return nil
		}
		if m.barrier == nil {
			if err := failpoint(j.spec.Name, "agg"); err != nil {
				m.c.Rec.Release()
				return err
			}
			n := m.c.Rec.NumRows()
			err := op.push(ectx, m.c.Rec, m.c.Signs(), true)
			m.c.Rec.Release()
			if err != nil {
				return err
			}
			j.dirty[inst].Store(int64(len(op.dirty)))
			j.inflight.Add(-n)
			continue
		}
		if j.spec.View != nil {
			// Changed groups in state-key order: the state writes and the
			// view rows (keyed alike) then reach storage sorted.
			prepareSave(op, m.barrier.Epoch)
		}
		// Old rows (update_before, deletes' values) are only needed by a
		// changelog or a change stream. The changelog flag only ever turns
		// on, and a reader that turns it on with epoch n committed reads
		// the changelog only from epoch n+3 (EnableChangelog); barrier n+2
		// is injected after that, so every epoch it reads has them.
		before := j.spec.View == nil || j.changelog.Load()
		if err := op.changesOf(before, func(c Chunk) error { return j.send(out, msg{c: c}) }); err != nil {
			return err
		}
		if j.spec.View != nil {
			w := j.db.NewEpochBatch()
			j.saveState(w, op)
			if m.w == nil {
				m.w = w
			} else {
				m.w.Absorb(w)
			}
		}
		op.epoch = m.barrier.Epoch + 1
		j.dirty[inst].Store(0)
		if err := j.send(out, m); err != nil {
			return err
		}
		// Eviction is about memory, not this epoch's contents: done after
		// the barrier has gone on, it does not delay the checkpoint.
		if j.spec.View != nil {
			j.Evicted.Add(int64(op.evict(j.spec.StateCacheBytes/int64(j.spec.Parallelism), j.committed.Load(), m.barrier.Epoch)))
			if op.spilled {
				j.spilling.Store(true)
			}
			j.stateBytes[inst].Store(op.bytes)
		}
	}
}

// State of an aggregate group: key = key group byte + encoded group key;
// value = each accumulator's state (decodeGroup), or none for a group that
// emptied (deleted). prepareSave has encoded both.
func (j *Job) saveState(w *storage.Batch, op *aggOp) {
	ks := &op.saveKeys
	r := w.NewRun()
	for _, k := range ks.keys {
		if val := ks.val(k); len(val) > 0 {
			r.PutState(j.spec.ID, 0, ks.key(k), val)
		} else {
			r.DeleteState(j.spec.ID, 0, ks.key(k))
		}
	}
	w.AddRun(r)
}

// prepareSave encodes the state key and value of each changed group into
// op.saveKeys, sorted by key, and puts op.dirty in that order; the groups'
// state is the epoch's. It reads the groups in id order, so the per-group
// arrays are read front to back rather than at random: at hundreds of
// thousands of changed groups that is most of the time it takes.
func prepareSave(op *aggOp, epoch uint64) {
	slices.Sort(op.dirty)
	ks := &op.saveKeys
	ks.reset()
	for _, g := range op.dirty {
		op.lastSave[g] = epoch
		ks.add(g, func(buf []byte) []byte { return appendStateKey(op, g, buf) }, func(buf []byte) []byte {
			if op.count.n[g] <= 0 && len(op.spec.Keys) > 0 {
				return buf // emptied: deleted
			}
			buf = op.count.encode(buf, g)
			for _, acc := range op.accs {
				buf = acc.encode(buf, g)
			}
			return buf
		})
	}
	ks.sort()
	op.byID = append(op.byID[:0], op.dirty...)
	op.perm = op.perm[:0]
	for i, k := range ks.keys {
		op.dirty[i] = k.ref
		op.perm = append(op.perm, int(k.idx()))
	}
}

// stateKeyOf is group g's key in the state table: its key group, then its
// encoded key.
func stateKeyOf(op *aggOp, g int32, buf []byte) []byte { return appendStateKey(op, g, buf[:0]) }

func appendStateKey(op *aggOp, g int32, buf []byte) []byte {
	buf = append(buf, byte(keyGroup(op.gt.hashes[g])))
	for c, t := range op.keyTs {
		buf = encodeDatum(buf, op.gt.keyDatum(c, g), t)
	}
	return buf
}

// decodeGroup restores group g's accumulators. The row the group last
// emitted is not stored: saved at a barrier, right after the group's
// changes were emitted, it always equals the row its accumulators give, so
// restoreOut recomputes it. (State written before this change carries the
// row after the accumulators; it is skipped.)
func decodeGroup(op *aggOp, g int32, val []byte) error {
	var err error
	if val, err = op.count.decode(val, g); err != nil {
		return err
	}
	for _, acc := range op.accs {
		if val, err = acc.decode(val, g); err != nil {
			return err
		}
	}
	if len(val) > 0 {
		n, k := binary.Uvarint(val)
		if k <= 0 || uint64(len(val)-k) != n {
			return errCorruptState
		}
	}
	return nil
}

// restoreOut sets the last emitted row of restored groups from their
// accumulators (see decodeGroup), if the operator keeps them (outValid).
func restoreOut(op *aggOp, gids []int32) error {
	if !op.outValid {
		return nil
	}
	alive := gids[:0:0]
	for _, g := range gids {
		if op.count.n[g] > 0 || len(op.spec.Keys) == 0 {
			alive = append(alive, g)
		}
	}
	for len(alive) > 0 {
		chunk := alive[:min(len(alive), 16<<10)]
		alive = alive[len(chunk):]
		rec, err := op.build(chunk)
		if err != nil {
			return err
		}
		var buf []byte
		for i, g := range chunk {
			buf = encodeRow(buf[:0], rec, i, op.outTs)
			op.bytes -= int64(len(op.lastOut[g]))
			op.lastOut[g] = string(buf)
			op.bytes += int64(len(buf))
		}
		rec.Release()
	}
	return nil
}

// loadState restores the groups of the key groups instance inst owns, up to
// the instance's share of the state cache; the rest are read when their
// keys come (op.load).
func (j *Job) loadState(op *aggOp, inst int) error {
	limit := j.spec.StateCacheBytes / int64(j.spec.Parallelism)
	var key []byte
	var found []int32
	op.load = func(gids []int32) error {
		found = found[:0]
		for _, g := range gids {
			key = stateKeyOf(op, g, key)
			v, err := j.db.GetState(j.spec.ID, 0, key)
			if err != nil {
				return err
			}
			if v != nil {
				if err := decodeGroup(op, g, v); err != nil {
					return err
				}
				found = append(found, g)
			}
		}
		return restoreOut(op, found)
	}
	loaded := make([]int32, 0, 4096)
	err := j.db.ScanState(j.spec.ID, 0, func(key, val []byte) error {
		if len(key) == 0 || instanceOf(int(key[0]), j.spec.Parallelism) != inst {
			return nil
		}
		rest := key[1:]
		ds := make([]types.Datum, len(op.keyTs))
		for c, t := range op.keyTs {
			var err error
			if ds[c], rest, err = decodeDatum(rest, t); err != nil {
				return err
			}
		}
		if limit > 0 && op.bytes > limit {
			// The rest stays in the state table until its keys come.
			op.spilled = true
			op.evicted.add(hashDatums(ds, op.keyTs))
			return nil
		}
		var g int32
		if len(op.keyTs) > 0 {
			g = op.gt.insertDatums(ds)
			op.grow()
			op.live[g] = true
			op.bytes += groupBytes + op.gt.keyBytes(g)
		}
		if err := decodeGroup(op, g, val); err != nil {
			return err
		}
		// Rows are restored in chunks, so op.bytes stays close enough to
		// the truth for the cache limit above.
		if loaded = append(loaded, g); len(loaded) == cap(loaded) {
			err := restoreOut(op, loaded)
			loaded = loaded[:0]
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return restoreOut(op, loaded)
}

// runSink applies changes to the view's rows (or hands them to a change
// stream) and acknowledges each aligned barrier.
func (j *Job) runSink(ins []chan msg) error {
	ectx := &expr.Ctx{Mem: memoryPool, Now: j.spec.Now}
	al := newAligner(ins, j.spec.AtLeastOnce, j.ctx.Done())
	var outTs []types.T
	if v := j.spec.View; v != nil {
		for _, c := range v.Columns {
			outTs = append(outTs, c.Type)
		}
	}
	var key, row []byte
	var survived []int32
	writeLog := j.changelog.Load()
	// w holds the sink's writes of the current epoch; the acknowledgement
	// of the epoch's barrier carries it away, and a new one takes its place.
	w := j.db.NewEpochBatch()
	var bag map[string]int64 // multiset counts of a view over a changelog
	if j.spec.View != nil && j.shape.agg == nil && j.shape.changelog {
		bag = map[string]int64{}
		if err := j.db.ScanView(nil, j.spec.View.ID, func(k, v []byte) error {
			rest := v[len(k):]
			n, _, err := readUvarint(rest)
			bag[string(k)] = int64(n)
			return err
		}); err != nil {
			return err
		}
	}
	for {
		m, ok := al.next()
		if !ok {
			return nil
		}
		if m.barrier != nil {
			if j.spec.View == nil {
				continue // change streams flush at barriers but commit nothing
			}
			writeLog = j.changelog.Load()
			w.Absorb(m.w)
			select {
			case j.acks <- ack{m.barrier.Epoch, w}:
			case <-j.ctx.Done():
				return nil
			}
			w = j.db.NewEpochBatch()
			continue
		}
		rec := m.c.Rec
		if j.shape.agg == nil {
			if err := j.sinkRows(w, m, outTs, bag, writeLog); err != nil {
				return err
			}
			continue
		}
		out, kept, err := applyStages(ectx, j.shape.post, rec, true)
		if err != nil {
			rec.Release()
			return err
		}
		ops := make([]Op, len(kept))
		for i, k := range kept {
			ops[i] = m.c.Ops[k]
		}
		if j.spec.View == nil {
			rec.Release()
			if err := j.emitOut(Chunk{Rec: out, Ops: ops}); err != nil {
				return err
			}
			continue
		}
		// Upsert by group key: the last change of a group in the epoch wins.
		// A view row's key is its group's state key (key group, then the
		// encoded group key), and an instance emits its changes in that
		// order, so each chunk's writes are one sorted run.
		run := w.NewRun()
		nk := len(j.shape.agg.Keys)
		keyTs := exprTypes(j.shape.agg.Keys)
		// survived[r] is input row r's output row, or -1 if HAVING dropped it.
		survived = survived[:0]
		for r := 0; r < int(rec.NumRows()); r++ {
			survived = append(survived, -1)
		}
		for i, k := range kept {
			survived[k] = int32(i)
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			op := m.c.Ops[r]
			if op == OpUpdateBefore {
				continue
			}
			key = append(key[:0], m.c.Groups[r])
			for c := 0; c < nk; c++ {
				key = encodeDatum(key, types.DatumAt(rec.Column(c), r, keyTs[c]), keyTs[c])
			}
			if i := survived[r]; i >= 0 && op != OpDelete {
				row = encodeRow(row[:0], out, int(i), outTs)
				run.PutViewRow(j.spec.View.ID, key, row)
			} else {
				run.DeleteViewRow(j.spec.View.ID, key)
			}
		}
		w.AddRun(run)
		rec.Release()
		if writeLog {
			err = j.appendChangelog(w, Chunk{Rec: out, Ops: ops})
		}
		out.Release()
		if err != nil {
			return err
		}
	}
}

// sinkRows applies the rows of a view without aggregation. Rows from a
// stream are keyed by their source position; rows from a changelog, which
// may be retracted, are kept as a multiset keyed by their content.
func (j *Job) sinkRows(b *storage.Batch, m msg, outTs []types.T, bag map[string]int64, writeLog bool) error {
	rec := m.c.Rec
	defer rec.Release()
	if j.spec.View == nil {
		rec.Retain()
		return j.emitOut(Chunk{Rec: rec, Ops: m.c.Ops})
	}
	var key, row []byte
	for i := 0; i < int(rec.NumRows()); i++ {
		row = encodeRow(row[:0], rec, i, outTs)
		if !j.shape.changelog {
			key = binary.BigEndian.AppendUint64(key[:0], m.rowIDs[i])
			b.PutViewRow(j.spec.View.ID, key, row)
			continue
		}
		n := bag[string(row)] + int64(m.c.Ops[i].Sign())
		bag[string(row)] = n
		if n <= 0 {
			delete(bag, string(row))
			b.DeleteViewRow(j.spec.View.ID, row)
		} else {
			b.PutViewRow(j.spec.View.ID, row, binary.AppendUvarint(append([]byte(nil), row...), uint64(n)))
		}
	}
	if !writeLog {
		return nil
	}
	return j.appendChangelog(b, m.c)
}

// appendChangelog queues a view's changes for its changelog, which views
// and change streams over the view read. Columns are the view's, then __op.
func (j *Job) appendChangelog(w *storage.Batch, c Chunk) error {
	n := int(c.Rec.NumRows())
	if n == 0 {
		return nil
	}
	ob := types.NewBuilder(memoryPool, types.TInt64)
	defer ob.Release()
	for i := 0; i < n; i++ {
		op := OpInsert
		if c.Ops != nil {
			op = c.Ops[i]
		}
		types.AppendDatum(ob, types.Int(int64(op)), types.TInt64)
	}
	cols := make([]arrow.Array, 0, c.Rec.NumCols()+1)
	ts := make([]types.T, 0, c.Rec.NumCols()+1)
	for i := 0; i < int(c.Rec.NumCols()); i++ {
		col := c.Rec.Column(i)
		col.Retain()
		cols = append(cols, col)
		ts = append(ts, j.spec.View.Columns[i].Type)
	}
	cols = append(cols, ob.NewArray())
	ts = append(ts, types.TInt64)
	rec := newRecord(ts, cols, n)
	defer rec.Release()
	return w.AppendLog(j.spec.View.ID, 0, rec)
}

// splitOps separates a changelog block's trailing op column.
func splitOps(rec arrow.RecordBatch) (arrow.RecordBatch, []Op) {
	nc := int(rec.NumCols()) - 1
	opsCol := rec.Column(nc).(*array.Int64).Int64Values()
	ops := make([]Op, len(opsCol))
	for i, v := range opsCol {
		ops[i] = Op(v)
	}
	cols := make([]arrow.Array, nc)
	ts := make([]types.T, nc)
	for i := 0; i < nc; i++ {
		cols[i] = rec.Column(i)
		cols[i].Retain()
		ts[i] = typeOfArrow(cols[i])
	}
	out := newRecord(ts, cols, int(rec.NumRows()))
	rec.Release()
	return out, ops
}

func (j *Job) emitOut(c Chunk) error {
	select {
	case j.spec.Out <- c:
		return nil
	case <-j.ctx.Done():
		c.Rec.Release()
		return nil
	}
}
