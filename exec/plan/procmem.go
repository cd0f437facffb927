package plan

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
)

// The process's memory limit (--memory-limit, memory_limit in the config
// file).
//
// The limit is split once, when the server starts (SplitMemoryLimit):
// Pebble's block cache and memtables live outside the Go heap (C memory),
// so they get fixed shares; the rest is the Go heap's, which becomes Go's
// soft memory limit (debug.SetMemoryLimit: the collector runs harder as
// the heap nears it) and the bound against which new work is admitted.
// Each job's state cache is a share of the Go heap's part.
//
// Admission: once the live heap (what the last collection found
// reachable) passes the Go heap's share, new work is refused with 53200:
// CREATE MATERIALIZED VIEW, COPY FROM (at its start, and every few MB of
// input when it keeps its rows in memory: sql's admitKeptCopy), and batch
// queries that hold more than queryAllowance bytes at one of their budget
// checks; never INSERT ... VALUES. The live heap is the Go heap only:
// Pebble's C memory, stacks and garbage are outside it. Running jobs
// keep going: their state caches are bounded and evict to Pebble.

// MemorySplit is how a process memory limit is divided.
type MemorySplit struct {
	Limit        int64 // the whole process (bytes)
	BlockCache   int64 // Pebble's block cache
	MemTable     int64 // one Pebble memtable (MemTableStopWrites of them at most)
	GoHeap       int64 // Go's soft limit and the admission bound
	StateCache   int64 // each job's operator state cache (--state-cache-mb unless given)
	QueryMemory  int64 // all batch queries together (--query-memory-mb unless given)
	FixedOffHeap int64 // the allowance for what no setting bounds (stacks, runtime, C libraries)
}

// MemTableStopWrites is how many memtables Pebble may hold before it stops
// writes (storage.Open uses it).
const MemTableStopWrites = 4

// fixedAllowance is the part of the limit set aside for what nothing
// sizes: goroutine stacks, the runtime's own structures, Pebble's table
// readers and iterators, zstd and the binary itself.
const fixedAllowance = 48 << 20

// MinMemoryLimit is the smallest --memory-limit accepted.
const MinMemoryLimit = 128 << 20

// SplitMemoryLimit divides limit bytes among the process's consumers:
// an eighth to Pebble's block cache (at most 1 GiB), a sixteenth to its
// memtables (at most 4 x 64 MiB), the fixed allowance, and the rest to
// the Go heap; each job's state cache is a quarter of the Go heap's part,
// batch queries together may hold another quarter.
func SplitMemoryLimit(limit int64) (MemorySplit, error) {
	if limit < MinMemoryLimit {
		return MemorySplit{}, sqlerr.New(sqlerr.InvalidParameterValue, "memory limit %s is below the minimum of %s", FormatMemory(limit), FormatMemory(MinMemoryLimit))
	}
	s := MemorySplit{Limit: limit, FixedOffHeap: fixedAllowance}
	s.BlockCache = min(limit/8, 1<<30)
	s.MemTable = min(max(limit/16/MemTableStopWrites, 4<<20), 64<<20)
	s.GoHeap = limit - s.BlockCache - MemTableStopWrites*s.MemTable - s.FixedOffHeap
	s.StateCache = s.GoHeap / 4
	s.QueryMemory = s.GoHeap / 4
	return s, nil
}

// PebbleFromStateCache sizes Pebble's block cache and memtables from the
// state cache per job (--state-cache-mb) when no --memory-limit splits the
// process's memory: a quarter of it to the block cache (16 MiB to 256 MiB),
// an eighth to each memtable (32 MiB to 64 MiB; MemTableStopWrites of them
// at most). Zero (an unbounded state cache) keeps Pebble's sizes of
// storage.Open (64 MiB each). At the default 1024 MB that is a 256 MiB
// cache and 64 MiB memtables; at 256 MB, 64 MiB and 32 MiB: Pebble's C
// memory (outside the Go heap) is then 192 MiB at most, not 320. The
// 32 MiB floor keeps tiny state caches (tests use 1 MB: many small epochs)
// from flushing tiny memtables.
func PebbleFromStateCache(stateCache int64) (blockCache, memTable int64) {
	if stateCache <= 0 {
		return 0, 0
	}
	return min(max(stateCache/4, 16<<20), 256<<20), min(max(stateCache/8, 32<<20), 64<<20)
}

// ProcessMemory admits new work while the process's live heap is below
// its bound. A nil *ProcessMemory admits everything.
type ProcessMemory struct {
	bound  int64 // bytes of live Go heap
	limit  int64 // the whole process, for messages
	lastGC atomic.Int64
}

// NewProcessMemory sets Go's soft memory limit to s.GoHeap and returns the
// guard that admits work against it.
func NewProcessMemory(s MemorySplit) *ProcessMemory {
	debug.SetMemoryLimit(s.GoHeap)
	return &ProcessMemory{bound: s.GoHeap, limit: s.Limit}
}

// queryAllowance is what a batch query may hold while the process is over
// its bound (catalog lookups, SHOW, small reads go on).
const queryAllowance = 1 << 20

// LiveHeap returns the bytes of Go heap the last collection found live
// (runtime/metrics /gc/heap/live:bytes).
func LiveHeap() int64 {
	s := [1]metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// Admit returns nil, or a 53200 error naming what (the work refused) when
// the live heap is past the bound.
func (p *ProcessMemory) Admit(what string) error {
	if p == nil || p.bound <= 0 {
		return nil
	}
	live := LiveHeap()
	if live > p.bound && time.Since(time.Unix(0, p.lastGC.Load())) > time.Second {
		// The last collection's figure may be old (an idle server collects
		// nothing): collect now, at most once a second, and look again.
		p.lastGC.Store(time.Now().UnixNano())
		runtime.GC()
		live = LiveHeap()
	}
	if live <= p.bound {
		return nil
	}
	return &sqlerr.Error{Code: sqlerr.OutOfMemory, Msg: "out of memory: " + what + " refused",
		Detail: fmt.Sprintf("The server's live heap is %s, past the %s that --memory-limit %s leaves to it; running views go on, new work waits.",
			tenthsMB(live), tenthsMB(p.bound), FormatMemory(p.limit)),
		Hint: "Retry when views have caught up or been dropped, or start the server with a larger --memory-limit."}
}

// SetProcess makes the pool's budgets refuse a query holding more than
// queryAllowance bytes while p refuses new work.
func (p *MemPool) SetProcess(pm *ProcessMemory) { p.proc = pm }

// Process returns the process guard (nil: none).
func (p *MemPool) Process() *ProcessMemory {
	if p == nil {
		return nil
	}
	return p.proc
}

// tenthsMB renders n bytes in MB to a tenth, so a live heap just past the
// bound does not read as equal to it.
func tenthsMB(n int64) string { return fmt.Sprintf("%.1fMB", float64(n)/(1<<20)) }
