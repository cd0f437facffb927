package sql

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
)

// Batch queries run in a goroutine of their own and stream their batches to
// the reader through a small bounded channel, so a result is never held
// whole: only what the plan itself buffers (sorts, aggregates, build sides)
// and those few batches. Each query has a memory budget (work_mem) within
// the engine's pool (--query-memory-mb); see plan.Budget.

// queuedBatches bounds the batches produced but not yet read.
const queuedBatches = 2

// freeOSAbove is the peak memory of a finished query above which the freed
// heap is returned to the operating system at once rather than when the Go
// runtime's scavenger gets to it.
const freeOSAbove = 64 << 20

// runQuery starts a batch plan and returns its rows as they are produced.
// It waits for the first batch (or the end), so that an error before any
// row is returned here rather than after the row description. workMem is
// the query's budget in bytes (<= 0: none).
func (e *Engine) runQuery(ctx context.Context, lp planner.Node, snaps planner.Snapshots, ectx *expr.Ctx, workMem int64) (Rows, error) {
	phys, err := planner.Physical(lp, snaps)
	if err != nil {
		return nil, err
	}
	// The statement reads one committed epoch of everything: a snapshot
	// taken now (a cursor's or portal's at DECLARE or Execute) and held
	// until the plan has run (readSnapshot).
	snap, release, err := e.readSnapshot(ctx, phys)
	if err != nil {
		return nil, err
	}
	base := ctx
	if outlives(ctx) {
		// A cursor's rows are read by later FETCHes: its query runs on
		// after DECLARE (until CLOSE), while the wait for its first batch
		// below still ends with DECLARE's cancel or timeout.
		base = context.WithoutCancel(ctx)
	}
	pctx, cancel := context.WithCancel(base)
	budget := plan.NewBudget(workMem, e.queryMem)
	ectx.Mem = budget.Allocator()
	r := &streamRows{ch: make(chan arrow.RecordBatch, queuedBatches), done: make(chan struct{}), cancel: cancel, budget: budget}
	go func() {
		defer close(r.done)
		defer release()
		defer budget.Close()
		// A bug in an operator fails this statement with XX000, as a panic
		// on the connection's own goroutine does (wire), instead of taking
		// the server down: the query runs on a goroutine of its own.
		defer func() {
			if p := recover(); p != nil {
				e.log.Error("panic while running a query", "panic", p, "stack", string(debug.Stack()))
				r.err = sqlerr.New(sqlerr.Internal, "internal error: %v", p)
			}
		}()
		r.err = batch.Run(&plan.Ctx{Context: pctx, DB: e.db, Expr: ectx, Mem: budget, Snap: snap}, phys, func(rec arrow.RecordBatch) error {
			if rec.NumRows() == 0 {
				rec.Release()
				return nil
			}
			select {
			case r.ch <- rec:
				return nil
			case <-pctx.Done():
				rec.Release()
				return plan.ContextError(pctx)
			}
		})
	}()
	select {
	case rec := <-r.ch:
		r.first = rec
	case <-r.done:
		// The producer may have queued batches before it failed: those
		// rows are sent first and the error after them, as Next does (a
		// select with both ready picks either).
		select {
		case rec := <-r.ch:
			r.first = rec
			return r, nil
		default:
		}
		if r.err != nil {
			err := r.err
			r.Close()
			return nil, err
		}
	case <-ctx.Done():
		r.Close()
		return nil, plan.ContextError(ctx)
	}
	return r, nil
}

// streamRows reads the batches of a query running in its own goroutine.
type streamRows struct {
	ch     chan arrow.RecordBatch
	done   chan struct{} // closed when the producer has returned
	err    error         // the producer's error; read after done
	cancel context.CancelFunc
	budget *plan.Budget
	first  arrow.RecordBatch // read by runQuery, returned by the first Next
	ended  bool              // Next has returned the end or an error
	once   sync.Once
}

func (r *streamRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.first != nil {
		rec := r.first
		r.first = nil
		return rec, nil
	}
	if r.ended {
		return nil, nil
	}
	select {
	case rec := <-r.ch:
		return rec, nil
	case <-r.done:
		// Batches sent before the producer returned come first.
		select {
		case rec := <-r.ch:
			return rec, nil
		default:
		}
		r.ended = true
		return nil, r.err
	case <-ctx.Done():
		return nil, plan.ContextError(ctx)
	}
}

// Close stops the producer if it is still running, waits for it, and
// releases the batches it queued.
func (r *streamRows) Close() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
		if r.first != nil {
			r.first.Release()
			r.first = nil
		}
		for {
			select {
			case rec := <-r.ch:
				rec.Release()
				continue
			default:
			}
			break
		}
		if r.budget.Peak() > freeOSAbove {
			freeOSMemory()
		}
	})
}

var freeingOS atomic.Bool

// freeOSMemory returns freed heap to the operating system in the
// background (one at a time), so a big query's memory does not stay in the
// server's RSS.
func freeOSMemory() {
	if !freeingOS.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer freeingOS.Store(false)
		debug.FreeOSMemory()
	}()
}

// sliceRows yields batches held in memory.
type sliceRows struct {
	recs []arrow.RecordBatch
}

func (r *sliceRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if len(r.recs) == 0 {
		return nil, nil
	}
	rec := r.recs[0]
	r.recs = r.recs[1:]
	return rec, nil
}

func (r *sliceRows) Close() {
	for _, rec := range r.recs {
		rec.Release()
	}
	r.recs = nil
}

// workMem is the session's work_mem in bytes.
func (s *Session) workMem() int64 {
	n, err := parseMemory(s.vars["work_mem"])
	if err != nil {
		n, _ = parseMemory(sessionDefaults["work_mem"])
	}
	return n
}

// queryMemoryKey is the config-file key of the server-wide cap over the
// memory of running batch queries, in MB (the --query-memory-mb flag wins).
const queryMemoryKey = "query.memory_mb"

// queryMemoryCap returns the pool cap: flagBytes if set, else the config
// file's query.memory_mb, else a quarter of physical memory.
func queryMemoryCap(flagBytes int64, fileConf map[string]string) (int64, error) {
	if flagBytes > 0 {
		return flagBytes, nil
	}
	if v, ok := fileConf[queryMemoryKey]; ok {
		mb, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || mb <= 0 {
			return 0, &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
				Msg: fmt.Sprintf("invalid value for %s in the config file: %q", queryMemoryKey, v), Detail: "expected a positive number of megabytes"}
		}
		return mb << 20, nil
	}
	return physicalMemory() / 4, nil
}

// physicalMemory reads MemTotal from /proc/meminfo (4GB if unknown).
func physicalMemory() int64 {
	const unknown = 4 << 30
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return unknown
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(fs[1], 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return unknown
}

type outlivingKey struct{}

// outlivingStatement marks ctx as the context of a statement whose rows
// are read after it ends (DECLARE CURSOR).
func outlivingStatement(ctx context.Context) context.Context {
	return context.WithValue(ctx, outlivingKey{}, true)
}

func outlives(ctx context.Context) bool { return ctx.Value(outlivingKey{}) != nil }
