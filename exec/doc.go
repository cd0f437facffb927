// Package exec is the streaming runtime: it runs a continuous query (a
// view's job, StartJob in runtime.go). The query is compiled into a graph
// (graph.go) of sources, stateful nodes partitioned by their keys, and one
// sink, connected by channels; stateless steps run inside the edges
// (outlet.go). Every edge carries one message type: a data Chunk, or a
// Barrier that ends an epoch and carries the watermark.
//
// A batch query is package exec/batch (batch.Run); the plan nodes both
// run, the query context and reading stored views, keyed tables and
// indexes are package exec/plan. exec does not import exec/batch, nor
// exec/batch exec (TestBatchApartFromRuntime in tests/lint).
//
// Contract of a job (the operator side is package exec/op, what operators
// share beneath it exec/opkit; an operator family may live in a package of
// its own, as exec/agg, exec/join and the others do, importing neither
// exec nor another family):
//  1. The runtime, not the operator, aligns barriers across inputs
//     (aligner, watermark.go) and forwards them with the epoch's writes.
//  2. Aggregates, joins, top-N, session windows, temporal filters and
//     union run through op.Operator (opTask): Push for each chunk; at each
//     aligned barrier AdvanceWatermark (op.WatermarkHandler) if they act
//     on event time, then Barrier, which emits the epoch's changes and
//     commits its state into the epoch's batch. Each goroutine of a job
//     is a task (job.go) the runtime starts: an operator instance
//     (opTask), a source split's reader (sourceRunner, source.go and
//     connector.go), which passes each barrier on with its position, and
//     the sink (sinkTask, sink.go), which drives an epochSink (viewSink:
//     the view's rows) through the first phase of each epoch's commit,
//     write then prepare at the aligned barrier, and hands the prepared
//     batch over with the barrier's acknowledgement (AwaitBarrier) for
//     the checkpoint coordinator to commit.
//  3. Ownership: Push takes ownership of the chunk's record; an operator
//     releases what it does not pass on. An outlet (op.Outlet, outlet.go)
//     takes ownership of what it is given likewise.
//  4. Operators never import Pebble nor ask which backend holds their
//     state: each instance gets an opkit.State (opstate.go) to scan and
//     get its entries and, at each barrier, to commit the epoch's changes,
//     which the Pebble backend writes and the memory backend replaces by
//     a snapshot at checkpoints (statebackend.go).
//  5. Job keeps the lifecycle: start, barriers and epochs, commits, stop,
//     errors. Event time and late rows are eventTime (watermark.go,
//     late.go), memory accounting memAccount (memory.go), the state
//     backend's commits holdState (statebackend.go), the building of
//     operators opFactory (opstate.go); no type of exec has more than 30
//     methods (TestExecTypesStaySmall in tests/lint).
package exec
