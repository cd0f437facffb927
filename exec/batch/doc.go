// Package batch runs a batch query: Run walks the plan tree (package
// exec/plan), each node running its input to the end with a callback of
// its own and passing every batch it makes to its parent's emit callback,
// which owns it. Sort (and top-N), Window, LIMIT, set-returning functions,
// and the hash aggregate, join, SESSION, HOP and versioned-join families
// over whole inputs run here, as do index and bounded connector scans and
// the table-index catch-up that writes take.
//
// It does not import the streaming runtime (package exec), and the runtime
// does not import it (TestBatchApartFromRuntime in tests/lint): what both
// need lives in exec/plan.
package batch
