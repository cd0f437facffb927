package plan

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/streamdb/streamdb/sqlerr"
)

// Failpoints inject transient failures into jobs, for tests only. They are
// read once from the environment variable STREAMDB_FAILPOINTS and cannot be
// set from SQL:
//
//	STREAMDB_FAILPOINTS="view:stage:count[:panic|:kill][,...]"
//
// makes the given stage (source, agg) of the named view's job fail on its
// next count batches (the job name "query" with stage "run": the next count
// batch queries) — with an error (SQLSTATE XX000) or a panic — and then
// never again in this process, so restarts recover. Kill sends the process
// SIGKILL (a crash at exactly that point) at the count-th pass instead. A sink (the job name
// is the sink's) has the stages of its two-phase commit (twophase.go):
// sink_durable (its checkpoint is synced, nothing sent yet), sink_precommit
// (a transaction written, not committed), sink_postcommit (committed, not
// yet noted) and sink_recover (the earlier incarnation fenced, nothing
// committed again yet).
var failpoints struct {
	once  sync.Once
	armed bool // set once at load; read-only after
	mu    sync.Mutex
	left  map[string]int
	kind  map[string]string
}

func loadFailpoints() {
	failpoints.left = map[string]int{}
	failpoints.kind = map[string]string{}
	for _, spec := range strings.Split(os.Getenv("STREAMDB_FAILPOINTS"), ",") {
		f := strings.Split(strings.TrimSpace(spec), ":")
		if len(f) < 3 {
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		key := f[0] + ":" + f[1]
		failpoints.left[key] = n
		failpoints.armed = true
		if len(f) > 3 {
			failpoints.kind[key] = f[3]
		}
	}
}

// Failpoint returns an injected error (or panics) if one is armed for
// job's stage. Besides the runtime and batch queries, a CDC source's
// ingester in sql uses it (stages cdc_received, a transaction read and not
// yet stored, and cdc_stored, stored and not yet confirmed to the slot;
// and CREATE SOURCE's cdc_snapshot, a snapshot batch stored and the
// snapshot not yet complete).
func Failpoint(job, stage string) error {
	failpoints.once.Do(loadFailpoints)
	if !failpoints.armed {
		return nil
	}
	key := job + ":" + stage
	failpoints.mu.Lock()
	n := failpoints.left[key]
	if n > 0 {
		failpoints.left[key] = n - 1
	}
	kind := failpoints.kind[key]
	failpoints.mu.Unlock()
	if n <= 0 || kind == "kill" && n > 1 {
		return nil
	}
	switch kind {
	case "panic":
		panic("failpoint " + key)
	case "kill":
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
			select {} // SIGKILL is not handled: the process ends here
		}
	}
	return sqlerr.New(sqlerr.Internal, "failpoint %s: injected failure", key)
}
