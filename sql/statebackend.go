package sql

import (
	"context"
	"maps"
	"strconv"
	"strings"

	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Per-view job options: the state backend, its memory limit and the
// parallelism, set by CREATE MATERIALIZED VIEW ... WITH (...), ALTER
// MATERIALIZED VIEW ... SET (...) and START JOB ... WITH (...), and kept in
// the view's catalog options. Without them a view follows the database
// settings (state.backend, state.memory_limit) and the server's parallelism.

// jobOptionKeys are the per-view job options.
var jobOptionKeys = map[string]bool{"state.backend": true, "state.memory_limit": true, "parallelism": true}

// maxParallelism is the number of key groups: no more instances than that.
const maxParallelism = exec.KeyGroups

// validateJobOption normalizes one per-view job option (22023 if invalid).
func validateJobOption(k, v string) (string, error) {
	switch k {
	case "parallelism":
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 1 || n > maxParallelism {
			return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parallelism: %q (expected an integer from 1 to %d)", v, maxParallelism)
		}
		return strconv.FormatInt(n, 10), nil
	default:
		return validateSetting(k, v)
	}
}

// splitJobOptions takes the job options out of a WITH list: it returns
// them normalized and the remaining options.
func splitJobOptions(with map[string]string) (job, rest map[string]string, err error) {
	job, rest = map[string]string{}, map[string]string{}
	for k, v := range with {
		lk := strings.ToLower(k)
		if !jobOptionKeys[lk] {
			rest[k] = v
			continue
		}
		nv, err := validateJobOption(lk, v)
		if err != nil {
			return nil, nil, err
		}
		job[lk] = nv
	}
	return job, rest, nil
}

// memoryLimit checks state.memory_limit: 0 (no limit) or a memory value.
func memoryLimit(s string) (string, error) {
	if strings.TrimSpace(s) == "0" {
		return "0", nil
	}
	n, err := parseMemory(s)
	if err != nil {
		return "", err
	}
	return plan.FormatMemory(n), nil
}

// jobMemoryLimit checks job.memory_limit: auto (a quarter of physical
// memory, at least twice the state cache), 0 (no limit) or a memory value.
func jobMemoryLimit(s string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return "auto", nil
	}
	return memoryLimit(s)
}

// jobMemoryBytes is a job.memory_limit value in bytes (0: no limit) for
// jobs whose state cache is cacheBytes, in a process whose Go heap may
// hold goHeap bytes (--memory-limit; 0: no limit): 'auto' is then half of
// that heap (at least twice the cache) rather than a quarter of physical
// memory.
func jobMemoryBytes(s string, cacheBytes, goHeap int64) int64 {
	if s == "auto" {
		if goHeap > 0 {
			return max(goHeap/2, 2*cacheBytes)
		}
		return max(physicalMemory()/4, 2*cacheBytes)
	}
	return memoryLimitBytes(s)
}

// memoryLimitBytes is a state.memory_limit value in bytes.
func memoryLimitBytes(s string) int64 {
	if s == "0" || s == "" {
		return 0
	}
	n, _ := parseMemory(s)
	return n
}

// applyJobOptionsLocked sets spec's backend, memory limit and parallelism
// from the view's options or the database settings.
func (e *jobOptions) applyJobOptionsLocked(def *storage.TableDef, spec *exec.JobSpec) {
	opt := func(k string) string {
		if v, ok := def.Options[k]; ok {
			return v
		}
		return e.conf.settingLocked(k)
	}
	spec.State = exec.StateOptions{Backend: opt("state.backend"), MemoryLimit: memoryLimitBytes(opt("state.memory_limit"))}
	if spec.State.Backend == exec.BackendMemory {
		// State never leaves the heap: no eviction to Pebble.
		spec.StateCacheBytes = 0
		spec.MaxEpochGroups = exec.EpochGroups(0)
	}
	if p, err := strconv.Atoi(def.Options["parallelism"]); err == nil && p > 0 {
		spec.Parallelism = p
	}
}

// alterJobOptions is the part of ALTER MATERIALIZED VIEW v SET (...) that
// changes how its job runs: it takes a checkpoint (so the job loses no
// progress and its state is where its backend keeps it), stops the job,
// stores the options and starts it again; the restarted job converts its
// state to the new backend and redistributes its key groups over the new
// parallelism.
func (e *jobOptions) alterJobOptions(ctx context.Context, name string, vals map[string]string) error {
	if len(vals) == 0 {
		return nil
	}
	e.mu.Lock()
	je := e.mu.jobs[name]
	running := je != nil && je.job != nil && je.state == exec.JobRunning
	e.mu.Unlock()
	if running {
		if err := e.sup.catchUp(ctx); err != nil {
			return err
		}
		if _, err := e.coord.Trigger(ctx, "manual", nil); err != nil {
			return err
		}
	}
	def, err := e.viewDef(name)
	if err != nil {
		return err
	}
	plan, err := e.planView(def)
	if err != nil {
		return err
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	je = e.mu.jobs[name]
	running = je != nil && je.job != nil && je.state == exec.JobRunning
	if running {
		je.job.Stop()
	}
	nd := *e.mu.tables[name]
	nd.Options = maps.Clone(nd.Options)
	if nd.Options == nil {
		nd.Options = map[string]string{}
	}
	maps.Copy(nd.Options, vals)
	b := e.db.NewBatch()
	storage.PutTable(b, &nd)
	if err := e.db.Commit(b, true); err != nil {
		if running {
			_ = e.sup.startViewJobLocked(def, plan, false)
		}
		return err
	}
	e.mu.tables[name] = &nd
	if running {
		return e.sup.startViewJobLocked(&nd, plan, false)
	}
	return nil
}

// setViewOptionsLocked stores job options given with START JOB ... WITH.
func (e *jobOptions) setViewOptionsLocked(name string, vals map[string]string) error {
	for k, v := range vals {
		if err := e.sup.persistOptionLocked(e.mu.tables[name], k, v); err != nil {
			return err
		}
	}
	return nil
}

// addJobColumns appends each job's parallelism and state backend to SHOW
// JOBS (a change stream: NULL).
func (e *jobOptions) addJobColumns(t *table) *table {
	t.cols = append(t.cols, Column{Name: "parallelism", T: types.TInt64}, Column{Name: "state_backend", T: types.TText})
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, r := range t.rows {
		par, backend := types.Null, types.Null
		if len(r) > 0 {
			name := r[0].S
			if je, def := e.mu.jobs[name], e.mu.tables[name]; je != nil && def != nil {
				var spec exec.JobSpec
				if je.job != nil {
					spec = je.job.Spec()
				} else {
					spec = e.sup.jobSpecLocked(def, nil)
				}
				par, backend = types.Int(int64(max(1, spec.Parallelism))), str(orDefault(spec.State.Backend, exec.BackendPebble))
			}
		}
		t.rows[i] = append(r, par, backend)
	}
	return t
}

// addErrorRows appends to SHOW JOBS how many rows each view's job skipped
// because an expression failed on them (streamdb_job_errors holds them).
func (e *jobOptions) addErrorRows(t *table) (*table, error) {
	counts, err := e.db.Errors().JobErrorCounts()
	if err != nil {
		return nil, err
	}
	t.cols = append(t.cols, Column{Name: "error_rows", T: types.TInt64})
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, r := range t.rows {
		n := types.Int(0)
		if def := e.mu.tables[r[0].S]; def != nil && e.mu.jobs[r[0].S] != nil {
			n = types.Int(counts[def.ID])
		}
		t.rows[i] = append(r, n)
	}
	return t, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// restoreMemoryState adds to b, for RESTORE FROM CHECKPOINT, the state of
// a job that was on the memory backend at the checkpoint: the checkpoint
// holds its snapshot files (checkpoint.Capture), which become the job's s/
// range, the canonical form either backend loads when the job starts (its
// pointer is gone with the rest of its old data). A missing or altered file
// is refused with XX001 before anything changes.
func restoreMemoryState(db *storage.DB, b *storage.WriteBatch, snap *storage.DB, src, dst uint64) error {
	_, err := db.Memory().MaterializeSnapshot(b, snap, src, dst)
	return err
}

// startJobOptions validates and stores the options of START JOB ... WITH
// (...) before the job starts; it returns the view's updated entry.
func (e *jobOptions) startJobOptions(n *parse.StartJob, def *storage.TableDef) (*storage.TableDef, error) {
	opts, rest, err := splitJobOptions(n.Options)
	if err != nil {
		return nil, err
	}
	for k := range rest {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized START JOB option %q (allowed: state.backend, state.memory_limit, parallelism)", k)
	}
	if len(opts) == 0 {
		return def, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if je := e.mu.jobs[n.View]; n.Savepoint == "" && je != nil && je.state == exec.JobRunning {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrereqState, "job %q is already running", n.View)
	}
	if err := e.setViewOptionsLocked(n.View, opts); err != nil {
		return nil, err
	}
	return e.mu.tables[n.View], nil
}

// StateEntries counts the committed operator state entries of a view's
// job (storage.State.Entries), for benchmarks of state boundedness.
func (e engineStatus) StateEntries(view string) (int64, error) {
	def, err := e.viewDef(view)
	if err != nil {
		return 0, err
	}
	return e.db.State().Entries(def.ID)
}
