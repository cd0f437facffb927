// Package op is the operator contract of streamdb's runtime: the messages
// on a job's edges and the interface a stateful operator implements. It
// imports neither the runtime (exec) nor the connectors, so an operator
// family can live in a package of its own and be driven by the runtime
// without either reaching into the other (Arroyo's arroyo-operator,
// RisingWave's executor trait).
//
// Contract:
//  1. One message type on every edge: a data Chunk, a Barrier, or a
//     Watermark that travels with a barrier. Chunks carry an optional
//     change op per row.
//  2. The runtime, not the operator, aligns barriers across inputs and
//     forwards them. An operator sees its inputs' chunks (Push) and, once
//     per aligned barrier, first the input watermark (WatermarkHandler, if
//     it acts on event time) and then the barrier itself (Barrier).
//  3. At a barrier an operator emits the epoch's changes and, for a
//     durable job, writes the state that changed in the epoch (or, on a
//     backend that snapshots, its snapshot when Barrier.Snapshots) into the
//     batch it is given; the runtime commits that batch with the epoch.
//  4. Ownership: Push takes ownership of the chunk's record; an operator
//     releases what it does not pass on.
//  5. Operators never see Pebble nor the backend: an instance's state is
//     reached through the opkit.State the runtime gives it (exec/opkit).
//  6. An operator emits through the Outlet it is given, so the runtime may
//     put a local edge or a network exchange behind it.
package op

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Chunk is a batch of rows with an optional change op per row (nil: all inserts).
type Chunk struct {
	Rec arrow.RecordBatch
	Ops []types.ChangeOp
	// Groups holds each row's key group, for an aggregate's changes (the
	// sink keys view rows by it); nil otherwise.
	Groups []uint8
}

// Signs returns the rows' signs, or nil if all are inserts.
func (c Chunk) Signs() []int8 {
	if c.Ops == nil {
		return nil
	}
	s := make([]int8, len(c.Ops))
	for i, o := range c.Ops {
		s[i] = o.Sign()
	}
	return s
}

// Barrier marks the end of an epoch in every stream of a job.
type Barrier struct {
	Epoch      uint64
	Checkpoint bool
	// CatchUp makes each source read everything written to its stream
	// before the barrier was injected, so the epoch covers all input
	// acknowledged before it (CHECKPOINT; reads that must see every write).
	CatchUp bool
	// Savepoint marks a savepoint's round: memory-backend jobs then also
	// write their state where the savepoint's copy of Pebble holds it.
	Savepoint bool
	// NoSnapshot, on a memory-backend job's periodic checkpoint barrier,
	// tells its operators to take no snapshot: the job's previous one is
	// still being written, so this checkpoint writes none (the runtime
	// decides it once per job and barrier, so all instances agree).
	NoSnapshot bool
	// Cut is where the barrier sits in each log partition the round's jobs
	// read (storage.DB.MarkCut): a durable job's source passes it on at
	// exactly that offset, so every view is at the same input position at
	// every epoch. Nil for a change stream's barrier.
	Cut storage.Cut
}

// Snapshots reports whether the operators of a job on a snapshotting
// (memory) backend take their snapshot at barrier b.
func (b *Barrier) Snapshots() bool { return b.Checkpoint && !b.NoSnapshot }

// NoWatermark is the watermark of a stream without event time, and of a
// job before its first row.
const NoWatermark int64 = math.MinInt64

// Watermark is an input's watermark as an operator sees it at a barrier.
type Watermark struct {
	At   int64 // event time, µs; NoWatermark if none
	Idle bool  // every input behind it was idle
}

// CombineWatermarks is the watermark of a step with inputs ws: the least
// of the inputs that are not idle, or, if all are, the largest, idle.
func CombineWatermarks(ws []Watermark) Watermark {
	out := Watermark{At: math.MaxInt64}
	active := false
	for _, w := range ws {
		if !w.Idle {
			active = true
			out.At = min(out.At, w.At)
		}
	}
	if active {
		return out
	}
	out = Watermark{At: NoWatermark, Idle: true}
	for _, w := range ws {
		out.At = max(out.At, w.At)
	}
	return out
}

// Operator is one instance of a stateful node of a job's graph. The
// runtime calls it from one goroutine only.
type Operator interface {
	// Push takes a chunk from input in (a join's side; 0 for one input).
	// It owns c.Rec and may emit rows.
	Push(ectx *expr.Ctx, c Chunk, in int) error
	// Barrier emits the epoch's changes and, for a durable job, writes the
	// state that changed in the epoch into w (nil for a job without
	// state). The runtime commits w with the epoch and forwards b.
	Barrier(ectx *expr.Ctx, b *Barrier, w *storage.Batch) error
}

// Outlet takes an operator instance's output. The runtime gives each
// instance one: today the local edge to the next node (its stateless
// stages, then routing each row to the instance that owns its key group);
// a network exchange can stand in for it without the operator knowing.
type Outlet interface {
	// Emit takes ownership of c.Rec.
	Emit(ectx *expr.Ctx, c Chunk) error
}

// WatermarkHandler is implemented by operators that act on event time
// (window aggregates, interval and window joins, top-N per window): the
// runtime calls AdvanceWatermark at each aligned barrier, before Barrier,
// with the input watermark as of that barrier. The operator closes what
// the watermark passed and returns how many rows it dropped as late since
// the last call; the count travels to the sink with the barrier.
type WatermarkHandler interface {
	AdvanceWatermark(ectx *expr.Ctx, wm Watermark) (late int64, err error)
}

// KeyGroups is the fixed number of key groups keys hash into; a key group
// is the unit of state that moves between parallel instances. An
// operator's state key starts with its key group.
const KeyGroups = 128

// KeyGroup is the key group of a key of hash h.
func KeyGroup(h uint64) int { return int(h % KeyGroups) }

// InstanceOf is the instance, of n, that owns key group kg.
func InstanceOf(kg, n int) int { return kg * n / KeyGroups }
