package opkit

import (
	"sync/atomic"

	"github.com/streamdb/streamdb/exec/op"
)

// Node is what the runtime gives an instance of a keyed operator (a join,
// a rank) besides its spec: its id, its outlet, its state, its share of
// the state cache, and the job's counters it reports to.
type Node struct {
	ID    uint32    // the operator's id in its job
	Out   op.Outlet // where its rows go
	State State     // its state (Load may give another)
	// Budget is its share of the job's state cache in bytes (0: it never
	// evicts).
	Budget int64
	// Committed is the job's last committed epoch; Bytes adds up its
	// operators' state; Evicted counts the groups or partitions they
	// evicted.
	Committed      *atomic.Uint64
	Bytes, Evicted *atomic.Int64
	// TTL is the job's state.ttl in µs (0: none), read at each barrier.
	TTL func() int64
}
