package exec

import (
	"sync/atomic"
	"time"
)

// state.ttl: the keys of an unwindowed join that no row has touched for
// the TTL (processing time) are expired (exec/join, ttl.go); aggregates
// and top-N partitions expire idle groups likewise (exec/agg, exec/rank).

// StateTTL is a job's state.ttl; the engine changes it while the job runs
// (SET state.ttl, ALTER MATERIALIZED VIEW ... SET (state.ttl = ...)).
type StateTTL struct{ us atomic.Int64 }

// NewStateTTL returns a TTL of d (0: keys never expire).
func NewStateTTL(d time.Duration) *StateTTL {
	t := &StateTTL{}
	t.Set(d)
	return t
}

// Set changes the TTL; 0 turns expiry off.
func (t *StateTTL) Set(d time.Duration) { t.us.Store(max(0, d.Microseconds())) }

// micros is the TTL in µs; 0 for none (t may be nil).
func (t *StateTTL) micros() int64 {
	if t == nil {
		return 0
	}
	return t.us.Load()
}

// StateTTL is the job's state.ttl (nil for a change stream).
func (j *Job) StateTTL() *StateTTL { return j.spec.StateTTL }
