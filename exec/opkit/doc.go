// Package opkit holds what the operator families share beneath the
// operator contract (exec/op): the encodings of rows, keys and state
// values (codec.go, rowenc.go), sorted keys for an epoch's writes
// (sortkeys.go), the builder of an operator's output rows (rowsout.go),
// the state an operator instance reads and writes (state.go), and the
// pieces several families run alike: the late-row log, the evicted-groups
// filter, evict-oldest, state.ttl's idle queue and sweep (idle.go), when
// a window closes (windowclose.go), a HOP row's last window, and the typed
// row comparator and cancel poller of sorts (compare.go). Package
// opkittest holds what the families' unit tests share.
//
// Contract:
//  1. An operator reaches its state only through State: get and scan the
//     entries of its key groups, and at each barrier hand the epoch's
//     changes to State.Commit, which either writes them (a backend that
//     writes per epoch) or takes the operator's snapshot at checkpoints (a
//     backend that holds state in the operator's own tables). No operator
//     asks which backend it is on.
//  2. opkit imports neither the runtime (exec) nor an operator family nor
//     Pebble; the runtime adapts its backends to State (exec/opstate.go).
//  3. Arrays are allocated from Mem unless a function takes an allocator.
package opkit
