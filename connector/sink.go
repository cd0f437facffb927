package connector

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/types"
)

// An exactly-once sink is a two-phase commit between streamdb's
// checkpoints and a transactional external system, as Flink's
// TwoPhaseCommittingSink is: a sink sends only changes that a durable
// (synced) checkpoint covers, never the epochs committed between
// checkpoints without fsync, which a crash can lose. Its steps:
//
//   - prepare, at a checkpoint's barrier (the runtime's half,
//     exec.SinkRunner, called by checkpoint.Coordinator): the runtime
//     fixes the transaction the sink will commit — the view's changes from
//     its committed position to the changelog's end now, or a snapshot of
//     the view — and the checkpoint stores it (storage.SinkCommit) in its
//     synced batch;
//   - commit, once that checkpoint is durable: the sink writes the
//     transaction (TwoPhaseSink.Write; a bounded number of changelog rows
//     each, never splitting an update's before- and after-image) and
//     commits it (TwoPhaseSink.Commit);
//   - recover, after a crash or an error (TwoPhaseSink.Recover, then the
//     stored SinkCommit): the external system aborts what the sink left
//     uncommitted, and the sink commits again what the last durable
//     checkpoint's SinkCommit covers and the external system lacks. The
//     position of the view's changelog, which may run ahead of what is
//     durable, never decides anything.
//
// Kafka cannot resume a transaction another producer session prepared
// (that takes KIP-939), so "commit again" writes the covered changes in a
// new transaction; they are the same records, as the changes up to the
// checkpoint's position are durable. See
// docs/decisions/2026-12-06-sink-two-phase-commit.md.

// TwoPhaseSink is the connector's half of an exactly-once sink; the
// runtime's half (exec.SinkRunner) drives it. Its methods are called from
// one goroutine.
type TwoPhaseSink interface {
	// Recover connects and fences the sink's earlier incarnation, so that
	// the external system aborts any transaction it left open, and
	// returns the changelog position the sink's last committed
	// transaction ended at (found false: the external system has none of
	// the sink's current generation).
	Recover(ctx context.Context) (pos uint64, found bool, err error)
	// Write writes one transaction, not yet visible to readers, and
	// returns how many records it holds.
	Write(ctx context.Context, t *SinkTxn) (int, error)
	// Commit makes the written transaction visible.
	Commit(ctx context.Context) error
	// Check reports whether the external system is reachable (the
	// runner calls it while idle, so an outage shows in SHOW SINKS).
	Check(ctx context.Context) error
	// Close releases the connection; an uncommitted transaction is left
	// to the next Recover to abort.
	Close()
}

// SinkTxn is one transaction of a sink: the view's changes [From, To) of
// its changelog or, Snapshot set, the view's rows as of changelog position
// To (Resync: as the changes that take what the external system holds to
// them, after RESTORE of the view).
type SinkTxn struct {
	From, To uint64
	Snapshot bool
	Resync   bool
	// Rows calls fn with the transaction's rows in batches, and releases
	// each batch when fn returns: the view's rows (Snapshot), else the
	// changelog's blocks, the view's columns then the op (an int64 Op).
	Rows func(ctx context.Context, fn func(arrow.RecordBatch) error) error
}

// Op is a row's change kind in a change stream (a changelog's op column);
// types defines it so the operator contract (exec/op) shares it.
type Op = types.ChangeOp

const (
	OpInsert       = types.ChangeInsert
	OpDelete       = types.ChangeDelete
	OpUpdateBefore = types.ChangeUpdateBefore
	OpUpdateAfter  = types.ChangeUpdateAfter
)

// SinkSpec is what a sink connector is made from: the sink, the view it
// writes and the runtime's stored position.
type SinkSpec struct {
	Name string // the sink's
	ID   uint64 // the sink's id
	View string // the view's name
	// Columns are the view's columns; KeyCols the ones that key its rows
	// (none: the whole row).
	Columns []Column
	KeyCols []int
	// AtLeastOnce writes without transactions (checkpoint.mode =
	// 'at_least_once' when the sink was created).
	AtLeastOnce bool
	// Options are the sink's WITH options and the catalog's own
	// (SinkGenOption, SinkFromOption).
	Options map[string]string
	// StoredPosition is the sink's changelog position as the runtime last
	// stored it (not synced: it pins the changelog's retention).
	StoredPosition func() (pos uint64, found bool, err error)
}

// SinkGenOption and SinkFromOption are a sink's catalog options that
// RESTORE of its view sets: the sink's generation (its records carry it
// where the system allows; a position is looked for only among the
// records of the current generation) and the view's changelog end when
// the restore was committed.
const (
	SinkGenOption  = "__gen"
	SinkFromOption = "__from"
)
