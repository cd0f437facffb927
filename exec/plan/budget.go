package plan

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
)

// Memory accounting of batch queries.
//
// A Budget is one query's memory: the Arrow buffers allocated through its
// Allocator and not yet freed (counted by the allocator, one atomic add per
// buffer, never per row), plus the Go-heap structures its operators report
// (hash tables, sort indexes, aggregate groups). Operators call Ctx.check
// after each batch; it fails the query with 53200 when the budget's total
// passes its limit (work_mem) or when the reservations of all running
// queries pass the server-wide MemPool's cap. The pool is updated only at
// those checks, so the allocator's hot path touches one counter.

// MemPool is the server-wide cap over the memory of all running batch
// queries. It is safe for concurrent use.
type MemPool struct {
	cap  int64 // bytes; <= 0: no cap
	used atomic.Int64
	proc *ProcessMemory // --memory-limit (procmem.go); nil: none
}

// NewMemPool returns a pool capped at capBytes (<= 0: unlimited).
func NewMemPool(capBytes int64) *MemPool { return &MemPool{cap: capBytes} }

// Used returns the bytes the running queries hold, as of their last checks.
func (p *MemPool) Used() int64 { return p.used.Load() }

// Cap returns the pool's cap in bytes (<= 0: none).
func (p *MemPool) Cap() int64 { return p.cap }

// Budget accounts the memory of one query. Check, Grow and Close are called
// by the goroutine running the query; the allocator may free buffers from
// any goroutine (a batch sent to the client is released by the reader).
type Budget struct {
	limit    int64 // bytes; <= 0: no per-query limit
	pool     *MemPool
	arrow    atomic.Int64 // Arrow bytes allocated and not freed
	heap     atomic.Int64 // Go-heap bytes reported by operators
	reserved int64        // what the pool holds for this query
	peak     atomic.Int64
	alloc    countingAllocator
	closed   bool
}

// NewBudget makes a query's budget of limit bytes (<= 0: unlimited) within
// pool (nil: none).
func NewBudget(limit int64, pool *MemPool) *Budget {
	b := &Budget{limit: limit, pool: pool}
	b.alloc = countingAllocator{base: opkit.Mem, n: &b.arrow}
	return b
}

// Allocator returns the allocator whose buffers count against the budget.
func (b *Budget) Allocator() memory.Allocator { return &b.alloc }

// Limit returns the per-query limit in bytes (<= 0: none).
func (b *Budget) Limit() int64 { return b.limit }

// Used returns the bytes the query holds now.
func (b *Budget) Used() int64 { return b.arrow.Load() + b.heap.Load() }

// Peak returns the most the query held at any check.
func (b *Budget) Peak() int64 { return b.peak.Load() }

// Grow adds n bytes (negative: returns them) of Go-heap structures.
func (b *Budget) Grow(n int64) { b.heap.Add(n) }

// Check updates the query's share of the pool and fails with 53200 when the
// query is over its limit or the pool over its cap.
func (b *Budget) Check() error {
	used := b.Used()
	if used > b.peak.Load() {
		b.peak.Store(used)
	}
	if used > queryAllowance && b.pool != nil && b.pool.proc != nil && !b.closed {
		if err := b.pool.proc.Admit("a query holding " + RoughMemory(used)); err != nil {
			return err
		}
	}
	if b.limit > 0 && used > b.limit {
		return &sqlerr.Error{Code: sqlerr.OutOfMemory, Msg: "out of memory",
			Detail: fmt.Sprintf("The query's operators (hash tables, sorts, groups, collected rows) need more than work_mem = %s.", FormatMemory(b.limit)),
			Hint:   "Raise the budget with SET work_mem = '...' (e.g. '4GB'), or make the query hold fewer rows."}
	}
	if b.pool == nil || b.closed {
		return nil
	}
	total := b.pool.used.Add(used - b.reserved)
	b.reserved = used
	if b.pool.cap > 0 && total > b.pool.cap {
		return &sqlerr.Error{Code: sqlerr.OutOfMemory, Msg: "out of memory",
			Detail: fmt.Sprintf("All running queries together may hold %s (--query-memory-mb, or query.memory_mb in the config file); they held %s, this query %s.",
				FormatMemory(b.pool.cap), RoughMemory(total), RoughMemory(used)),
			Hint: "Retry when other queries have finished, or start the server with a larger --query-memory-mb."}
	}
	return nil
}

// Close returns the query's reservation to the pool. Buffers freed later
// (batches still held by a reader) no longer count against the pool.
func (b *Budget) Close() {
	if b.closed {
		return
	}
	b.closed = true
	if b.pool != nil {
		b.pool.used.Add(-b.reserved)
		b.reserved = 0
	}
}

// countingAllocator counts the bytes of the buffers it hands out.
type countingAllocator struct {
	base memory.Allocator
	n    *atomic.Int64
}

func (c *countingAllocator) Allocate(size int) []byte {
	c.n.Add(int64(size))
	return c.base.Allocate(size)
}

func (c *countingAllocator) Reallocate(size int, b []byte) []byte {
	c.n.Add(int64(size - len(b)))
	return c.base.Reallocate(size, b)
}

func (c *countingAllocator) Free(b []byte) {
	c.n.Add(-int64(len(b)))
	c.base.Free(b)
}

// HeapShare is one operator's Go-heap share of a budget: Set reports its
// current size (N), Release returns it.
type HeapShare struct {
	b *Budget
	N int64
}

func (h *HeapShare) Set(n int64) {
	if h.b != nil {
		h.b.Grow(n - h.N)
	}
	h.N = n
}

func (h *HeapShare) Release() { h.Set(0) }

// RoughMemory renders a measured byte count, rounded to a unit.
func RoughMemory(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%dGB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%dkB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// FormatMemory renders a byte count in PostgreSQL's memory units: the
// largest of kB, MB, GB, TB that divides it exactly (bytes below 1kB).
func FormatMemory(n int64) string {
	units := []string{"TB", "GB", "MB", "kB"}
	for i, u := range units {
		size := int64(1) << (10 * (len(units) - i))
		if n >= size && n%size == 0 {
			return fmt.Sprintf("%d%s", n/size, u)
		}
	}
	return fmt.Sprintf("%dB", n)
}
