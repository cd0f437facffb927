package exec

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// memAccount is a job's memory accounting: the state its operators hold in
// memory, the changes of the current epoch and the view writes not yet
// committed. From these it bounds an epoch (epochFull: the sources stop
// reading until the next barrier), shares the state cache among the
// stateful instances (cacheShare) and enforces state.memory_limit and
// job.memory_limit (check).
type memAccount struct {
	db   *storage.DB
	spec *JobSpec
	// aggBytes estimates the aggregate state held in memory, per
	// aggregate instance (as of the last barrier, or the last batch when
	// memory is limited). Joins and ranks add theirs to opBytes.
	aggBytes []atomic.Int64
	opBytes  atomic.Int64
	spilling atomic.Bool // some instance's state is partly only in the state table
	// dirty is each aggregate instance's count of groups changed in the
	// current epoch; inflight counts rows sent to aggregates and not yet
	// aggregated. Together they bound the epoch's changes (epochFull).
	dirty    []atomic.Int64
	inflight atomic.Int64
	// stateful is the number of stateful operator instances, which share
	// the state cache evenly.
	stateful int
	// epochBytes is the size of the view rows the sink has written in
	// the current epoch, not yet committed (job.memory_limit).
	epochBytes atomic.Int64
}

// cacheShare is each stateful instance's share of the state cache.
func (m *memAccount) cacheShare() int64 { return m.spec.StateCacheBytes / int64(max(1, m.stateful)) }

var errEpochFull = errors.New("epoch full")

// epochFull reports whether the current epoch holds as many changes as
// one epoch may (JobSpec.MaxEpochGroups). While the state fits its cache,
// an epoch's batch takes memory the cache leaves free; once the state
// spills, the cache is full and the batch comes on top of it, so the bound
// is halved: the job then stays within about 1.4 times its budget instead
// of 1.8, and each checkpoint commits half as much.
func (m *memAccount) epochFull() bool {
	limit := m.spec.MaxEpochGroups
	if limit <= 0 || len(m.dirty) == 0 {
		return false
	}
	if m.spilling.Load() {
		limit /= 2
	}
	n := m.inflight.Load()
	for i := range m.dirty {
		n += m.dirty[i].Load()
	}
	return n >= limit
}

// stateBytes estimates the job's operator state in memory: the operators'
// accounted bytes and, on the memory backend, the state map that holds the
// entries of operators that do not snapshot themselves.
func (m *memAccount) stateBytes() int64 {
	n := m.opBytes.Load()
	for i := range m.aggBytes {
		n += m.aggBytes[i].Load()
	}
	if m.spec.memBackend() {
		// The state map of the operators that do not hold their state
		// once (storage/memstate.go): what state.memory_limit counts.
		n += m.db.Memory().Bytes(m.spec.ID)
	}
	return n
}

// limited reports whether the job's memory has a bound to check:
// state.memory_limit on the memory backend, job.memory_limit on either.
func (m *memAccount) limited() bool {
	s := m.spec
	return s.View != nil && (s.State.memory() && s.State.MemoryLimit > 0 || s.MemoryLimit > 0)
}

// check fails with 53200 if the job's state (its operators' accounted
// bytes plus its state map) exceeds state.memory_limit on the memory
// backend, or if that state plus the epoch's uncommitted view writes
// exceed job.memory_limit. Besides each barrier, operators call it after
// every input batch (sizedOp) and the sink after every chunk, so one epoch
// cannot carry the job far past the limit: the overshoot is at most one
// batch's growth. It reads a few atomics and the map's size.
func (m *memAccount) check() error {
	if !m.limited() {
		return nil
	}
	s := m.spec
	state := m.stateBytes()
	if lim := s.State.MemoryLimit; s.State.memory() && lim > 0 && state > lim {
		return sqlerr.New(sqlerr.OutOfMemory, "job %s: state of %s exceeds state.memory_limit (%s) on the memory backend",
			s.Name, plan.FormatMemory(state), plan.FormatMemory(lim))
	}
	if lim, writes := s.MemoryLimit, m.epochBytes.Load(); lim > 0 && state+writes > lim {
		return &sqlerr.Error{Code: sqlerr.OutOfMemory,
			Msg: fmt.Sprintf("view %s: its job needs more than job.memory_limit (%s)", s.Name, plan.FormatMemory(lim)),
			Detail: fmt.Sprintf("%s of operator state in memory and %s of view rows not yet committed; "+
				"a join without equality keys (a cross join) pairs every row of one input with every row of the other", plan.FormatMemory(state), plan.FormatMemory(writes))}
	}
	return nil
}

// sizedOp is an operator that can report its state's size between
// barriers (into the job's accounting), for memAccount.check.
type sizedOp interface{ reportBytes() }
