// Package crash holds streamdb's crash tests: they start the real server
// binary, load it over the wire, kill it (kill -9, or SIGTERM for the
// graceful path) at random points, restart it on the same data directory
// and check the exactly-once guarantee of docs/design/CONTRACT.md §3
// against two independent oracles:
//
//   - the client-side ledger of acknowledged input: a row counts as
//     acknowledged only when its INSERT or COPY returned CommandComplete;
//   - the batch query over the stream (the same SELECT ... GROUP BY run as a
//     batch query), which reads the durable log.
//
// Every view must equal both once its job has caught up. See
// docs/design/crash-tests.md for what each test proves and how to run it.
//
// The package has no non-test code; this file only carries the comment.
package crash
