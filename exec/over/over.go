// Package over holds the kernels of window functions (the OVER clause):
// given the rows of one record sorted partition by partition, in each by
// its ORDER BY, they compute every function's column — row_number, rank
// and dense_rank, the value functions (lag, lead, first_value,
// last_value, nth_value) and aggregates over a frame (ROWS, RANGE with or
// without an offset, GROUPS). It also holds what describes a window
// function (Func, Frame, SortKey), which the planner builds.
//
// Two callers share it: the batch query's Window node (exec, window.go),
// over the whole input, and the rank operator family (exec/rank), over the
// rows of the partitions a barrier recomputes.
//
// Contract:
//  1. The kernels see an Env, not the runtime: an expression context, an
//     allocator, and optional cancellation and memory-budget hooks.
//  2. over imports from this module only exec/accum (the aggregates'
//     accumulators), exec/opkit, exec/expr, types and sqlerr; no operator family,
//     the runtime, nor storage.
package over

import (
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// SortKey is one sort term over the input's columns.
type SortKey struct {
	E          expr.Expr
	Desc       bool
	NullsFirst bool
}

// FuncKind is a window function.
type FuncKind uint8

const (
	RowNumber FuncKind = iota
	Rank
	DenseRank
	// Agg is an aggregate over the window (Func.Agg): the whole partition
	// without ORDER BY; with ORDER BY, PostgreSQL's default frame (RANGE
	// UNBOUNDED PRECEDING to the current row and its peers).
	Agg
	// Value functions (frame.go): Arg at another row of the partition.
	Lag
	Lead
	FirstValue
	LastValue
	NthValue
)

// Func is one window function; T is its result type.
type Func struct {
	Kind FuncKind
	Agg  accum.Spec // Agg only
	T    types.T
	// Value functions: Arg is the value (of type T); N is lag's and lead's
	// offset (NNull: a NULL offset) or nth_value's position; Default
	// (lag, lead; nil for NULL) is the value, of type T, when the offset row
	// is outside the partition. Frame is the frame of first_value,
	// last_value, nth_value and Agg.
	Arg     expr.Expr
	N       int64
	NNull   bool
	Default expr.Expr
	Frame   Frame
}

// RankOnly says every function of fs is row_number, rank or dense_rank,
// whose values only grow along the order.
func RankOnly(fs []Func) bool {
	for _, f := range fs {
		if f.Kind != RowNumber && f.Kind != Rank && f.Kind != DenseRank {
			return false
		}
	}
	return true
}

// Env is what the kernels need of the query that runs them.
type Env struct {
	Expr *expr.Ctx
	// Mem allocates the output arrays (nil: opkit.Mem).
	Mem memory.Allocator
	// Canceled returns the query's cancel error, Check that or the memory
	// budget's (nil: never).
	Canceled, Check func() error
	// Grow adds n bytes (n < 0: frees them) of the kernels' Go-heap
	// structures to the query's memory budget (nil: not counted).
	Grow func(n int64)
}

func (e *Env) alloc() memory.Allocator {
	if e.Mem == nil {
		return opkit.Mem
	}
	return e.Mem
}

func (e *Env) check() error {
	if e.Check == nil {
		return nil
	}
	return e.Check()
}

func (e *Env) canceled() error {
	if e.Canceled == nil {
		return nil
	}
	return e.Canceled()
}

// hold counts n bytes of Go-heap structures against the budget until
// the returned release is called.
func (e *Env) hold(n int64) (release func()) {
	if e.Grow == nil {
		return func() {}
	}
	e.Grow(n)
	return func() { e.Grow(-n) }
}

// stopper polls the query's cancellation from inside a loop (opkit.Stopper).
func (e *Env) stopper() *opkit.Stopper { return &opkit.Stopper{Canceled: e.canceled} }
