package sql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Backfill. A new materialized view first reads the log its streams
// already hold. CREATE MATERIALIZED VIEW returns once the view's committed
// rows cover every row acknowledged before it (RisingWave's foreground
// DDL): it records, when the job starts, the end of each log partition the
// job reads, and waits until the offsets the job commits with its epochs
// reach those ends. The wait is bounded by statement_timeout and ends on a
// cancel request (57014); the job then goes on. With background_ddl on,
// CREATE returns at once and the first read of the view waits instead.
// SHOW JOBS reports the rows read of the rows to backfill while it runs.
// See docs/decisions/2026-12-06-backfill-wait-and-column-defaults.md.

// backfill is the position a new view's job must commit to be current
// with what was acknowledged before its CREATE.
type backfill struct {
	viewID uint64
	parts  []storage.LogPart
	start  []uint64 // oldest retained offset when the job started
	end    []uint64 // end of the log when the job started
	// snapshot: the job reads a view, whose rows it takes from a
	// snapshot emitted before its first barrier; the backfill also
	// needs a commit after epoch.
	snapshot bool
	epoch    uint64
}

// backfills tracks the views whose backfill has not completed.
type backfills struct{ *Engine }

// noteLocked records the backfill target of the view whose job has just
// started (e.mu held, so no other statement sees the job before the target).
func (b backfills) noteLocked(name string, def *storage.TableDef) error {
	je := b.mu.jobs[name]
	if je == nil || je.job == nil {
		return nil
	}
	bf := &backfill{viewID: def.ID, epoch: je.job.CommittedEpoch()}
	for _, src := range viewSources(def) {
		if t := b.mu.tables[src]; t != nil && t.Kind == storage.KindView {
			bf.snapshot = true
		}
	}
	for _, lp := range je.job.LogParts() {
		start, end, _, err := b.db.Log().Bounds(lp.Table, lp.Part)
		if err != nil {
			return err
		}
		if end <= start {
			continue
		}
		bf.parts = append(bf.parts, lp)
		bf.start = append(bf.start, start)
		bf.end = append(bf.end, end)
	}
	if len(bf.parts) > 0 || bf.snapshot {
		je.backfill = bf
	}
	return nil
}

// done reports whether the view's committed offsets reach the target
// (and, over a view, whether job has committed since it started).
func (b backfills) done(bf *backfill, job *exec.Job) (bool, error) {
	if bf.snapshot && (job == nil || job.CommittedEpoch() <= bf.epoch) {
		return false, nil
	}
	for i, lp := range bf.parts {
		off, ok, err := b.db.State().LoadOffset(bf.viewID, lp.Table, lp.Part)
		if err != nil {
			return false, err
		}
		if !ok || off < bf.end[i] {
			return false, nil
		}
	}
	return true, nil
}

// await waits until the backfill of the view name (if any) has completed,
// asking for barrier rounds meanwhile. It fails with 57014 when ctx ends
// (statement_timeout or a cancel request), leaving the job running, and
// with 55000 if the job fails (restarting, failed or stopped) or the view
// is dropped. A read (read true) of a view whose job is not running reads
// it as it stands instead, as reads of such views do.
func (b backfills) await(ctx context.Context, name string, read bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b.mu.Lock()
		je := b.mu.jobs[name]
		var bf *backfill
		var state exec.JobState
		var lastErr string
		var job *exec.Job
		if je != nil {
			bf, state, lastErr, job = je.backfill, je.state, je.lastErr, je.job
		}
		b.mu.Unlock()
		if je == nil {
			return sqlerr.New(sqlerr.ObjectNotInPrereqState, "materialized view %q was dropped while it was backfilling", name)
		}
		if bf == nil {
			return nil
		}
		if read && state != exec.JobRunning && state != exec.JobStarting {
			return nil // read as it stands, with the NOTICE a read of a failing job gets
		}
		if state == exec.JobFailed || state == exec.JobStopped || state == exec.JobRestarting {
			// A job that failed on the backlog may fail again at each
			// restart: end the wait rather than hold the statement until
			// statement_timeout. The view stays; SHOW JOBS says why.
			// The job's own cause, with its SQLSTATE (53200 for a job
			// over its memory limit), says more than 55000 would.
			if code, msg, ok := strings.Cut(lastErr, ": "); ok && len(code) == 5 && state == exec.JobFailed {
				return sqlerr.New(code, "materialized view %q did not finish its backfill: its job is %s after %s", name, state, msg)
			}
			err := sqlerr.New(sqlerr.ObjectNotInPrereqState, "materialized view %q did not finish its backfill: its job is %s", name, state)
			if lastErr != "" {
				err.Hint = lastErr
			}
			return err
		}
		ok, err := b.done(bf, job)
		if err != nil {
			return err
		}
		if ok {
			b.mu.Lock()
			if je.backfill == bf {
				je.backfill = nil
			}
			b.mu.Unlock()
			return nil
		}
		_, changed, err := b.db.Epochs().LastCut()
		if err != nil {
			return err
		}
		b.coord.Poke()
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			err := plan.ContextError(ctx)
			if e, ok := err.(*sqlerr.Error); ok {
				e.Detail = fmt.Sprintf("materialized view %q was created and its job keeps backfilling (SHOW JOBS shows its progress).", name)
			}
			return err
		}
	}
}

// awaitViews waits for the backfill of every view among the ids a
// statement reads (a view created with background_ddl, or whose CREATE
// timed out), so that a read sees every row acknowledged before the view
// was created.
func (b backfills) awaitViews(ctx context.Context, ids []uint64) error {
	b.mu.Lock()
	var names []string
	for name, je := range b.mu.jobs {
		if je.backfill == nil {
			continue
		}
		for _, id := range ids {
			if je.backfill.viewID == id {
				names = append(names, name)
			}
		}
	}
	b.mu.Unlock()
	for _, n := range names {
		if err := b.await(ctx, n, true); err != nil {
			return err
		}
	}
	return nil
}

// progressLocked returns, for SHOW JOBS, the rows the job has read of the
// rows it has to backfill; ok is false once the backfill has completed
// (whose record it then drops, as a waiting CREATE or read would).
// Rows read are counted from the job's read position (the committed
// position follows at the next round).
func (b backfills) progressLocked(je *jobEntry) (done, total int64, ok bool) {
	bf := je.backfill
	if bf == nil || je.job == nil {
		return 0, 0, false
	}
	if fin, err := b.done(bf, je.job); err == nil && fin {
		je.backfill = nil
		return 0, 0, false
	}
	pos := map[storage.LogPart]uint64{}
	for _, p := range je.job.Positions() {
		for part, off := range p.Offs {
			pos[storage.LogPart{Table: p.Table, Part: uint32(part)}] = off
		}
	}
	for i, lp := range bf.parts {
		total += int64(bf.end[i] - bf.start[i])
		if off := pos[lp]; off > bf.start[i] {
			done += int64(min(off, bf.end[i]) - bf.start[i])
		}
	}
	return done, total, true
}

// backgroundDDL reports whether the session asked for background DDL.
func backgroundDDL(s *Session) bool {
	return s.vars["background_ddl"] == "on"
}

// boolSetting normalizes a PostgreSQL boolean setting to on or off.
func boolSetting(v string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true", "yes", "1", "t", "y":
		return "on", nil
	case "off", "false", "no", "0", "f", "n":
		return "off", nil
	}
	return "", fmt.Errorf("Valid values are on and off.")
}
