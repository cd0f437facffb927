package sql

import (
	"context"
	"maps"
	"slices"

	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// awaitCut waits until the committed cut covers every write acknowledged
// before the statement started to the streams it reads. A statement reads
// a stream that a running view reads at the committed cut, where the views
// are (exec scanStream), so that it sees one epoch of both; waiting first
// for the round that covers the writes acknowledged before it (a round is
// asked for at once) keeps read-your-writes, as a strict-serializable
// read does (Materialize's choice). Streams no running job reads are read
// whole and never waited for; a statement over views only never waits.
// It returns the ends it waited for in the partitions the cut covers.
func (e epochCut) awaitCut(ctx context.Context, p plan.Plan) (storage.Cut, error) {
	streams := plan.StreamsRead(p)
	if len(streams) == 0 {
		return nil, nil
	}
	cut, changed, err := e.db.Epochs().LastCut()
	if err != nil {
		return nil, err
	}
	ends := storage.Cut{}
	type target struct {
		lp  storage.LogPart
		end uint64
	}
	var want []target
	read := e.readByRunningViews()
	for _, t := range streams {
		if t.Kind != storage.KindStream {
			continue // a source's connector is read afresh: no log, no cut
		}
		for part := range uint32(max(1, t.Partitions)) {
			lp := storage.LogPart{Table: t.ID, Part: part}
			c, ok := cut[lp]
			if !ok && !read[t.ID] {
				continue
			}
			_, end, _, err := e.db.Log().Bounds(t.ID, part)
			if err != nil {
				return nil, err
			}
			ends[lp] = end
			if !ok || end > c {
				want = append(want, target{lp, end})
			}
		}
	}
	for len(want) > 0 {
		e.coord.Poke()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, plan.ContextError(ctx)
		}
		if cut, changed, err = e.db.Epochs().LastCut(); err != nil {
			return nil, err
		}
		read := e.readByRunningViews()
		want = slices.DeleteFunc(want, func(t target) bool {
			c, ok := cut[t.lp]
			return ok && c >= t.end || !ok && !read[t.lp.Table]
		})
	}
	maps.DeleteFunc(ends, func(lp storage.LogPart, _ uint64) bool {
		_, ok := cut[lp]
		return !ok // read whole: no cut to be past
	})
	return ends, nil
}

// readByRunningViews returns the ids of the logs that running views read
// directly (a view just created is in no committed cut yet: its streams
// wait for the first round that includes it).
func (e epochCut) readByRunningViews() map[uint64]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[uint64]bool{}
	for name, j := range e.mu.jobs {
		if j.state != exec.JobRunning || j.job == nil {
			continue
		}
		def := e.mu.tables[name]
		if def == nil {
			continue
		}
		for _, src := range viewSources(def) {
			if t := e.mu.tables[src]; t != nil {
				out[t.ID] = true
			}
		}
	}
	return out
}

// readSnapshot waits for the epoch a statement reads and returns the
// snapshot to run it on and what to call once it has run. A statement over
// one relation reads a new snapshot. One over several reads one epoch of
// all of them: the newest that every view it reads holds, at or after the
// round that covers the writes awaitCut waited for (storage.DB.PickRead);
// the scans of views whose rows held it only in a later round's snapshot
// are pointed at that one. A view on the memory backend holds the epoch
// of its last checkpoint whose snapshot is durable, so a statement that
// reads it with a stream waits for the checkpoint after its writes. If a
// view it reads keeps every epoch from it because its job is failing or
// restarting, or because it waits for a checkpoint that nothing will take,
// the statement fails with 55000 rather than wait or mix epochs.
func (e epochCut) readSnapshot(ctx context.Context, p plan.Plan) (storage.Reader, func(), error) {
	scans := plan.ViewScans(p)
	var ids []uint64
	for _, s := range scans {
		if !slices.Contains(ids, s.View.ID) {
			ids = append(ids, s.View.ID)
		}
	}
	if err := (backfills{e.Engine}).awaitViews(ctx, ids); err != nil {
		return nil, nil, err
	}
	ends, err := e.awaitCut(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	fresh := func() (storage.Reader, func(), error) {
		snap := e.db.Snapshot()
		return snap, func() { snap.Close() }, nil
	}
	if len(ids) == 0 || len(ids) == 1 && len(plan.StreamsRead(p)) == 0 {
		return fresh() // one relation, or streams read at one cut
	}
	minEpoch := uint64(0)
	if len(ends) > 0 {
		minEpoch = e.db.Epochs().CoveringEpoch(ends)
	}
	for {
		rs, ok, next, lagging := e.db.Epochs().PickRead(ids, minEpoch)
		if next == nil && !ok {
			return fresh() // no round since the start or a restore
		}
		if ok {
			for _, s := range scans {
				if r := rs.Views[s.View.ID]; r != nil {
					s.Snap = r
				}
			}
			release := rs.Release
			if !rs.InCut(plan.StreamsRead(p)) {
				// Streams no job read at that epoch are read whole, as
				// they are now.
				now := e.db.Snapshot()
				plan.ReadStreamsFrom(p, now, func(t uint64) bool { return !rs.CutHas(t) })
				release = func() { now.Close(); rs.Release() }
			}
			return rs.Base, release, nil
		}
		if err := e.behindError(lagging); err != nil {
			return nil, nil, err
		}
		// No poke: a memory job hands its epochs over in the first round
		// after its snapshot is synced, which rounds back to back would
		// not bring sooner.
		select {
		case <-next:
		case <-ctx.Done():
			return nil, nil, plan.ContextError(ctx)
		}
	}
}

// behindError is the error for a statement that reads views lagging the
// others if nothing will bring them level: a job failing or restarting, or
// a memory-backend job with no periodic checkpoint. Nil if they will be.
func (e epochCut) behindError(lagging []uint64) error {
	if len(lagging) == 0 {
		return nil
	}
	periodic := e.conf.setting("checkpoint.interval") != "off"
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, j := range e.mu.jobs {
		def := e.mu.tables[name]
		if def == nil || !slices.Contains(lagging, def.ID) {
			continue
		}
		switch {
		case j.state != exec.JobRunning:
			err := sqlerr.New(sqlerr.ObjectNotInPrereqState,
				"materialized view %q is behind the other relations of the statement: its job is %s, and no epoch they all hold is kept", name, j.state)
			err.Hint = "Read the view on its own, or once its job runs again (SHOW JOBS)."
			return err
		case j.job != nil && j.job.Spec().State.Backend == exec.BackendMemory && !periodic:
			err := sqlerr.New(sqlerr.ObjectNotInPrereqState,
				"materialized view %q (state.backend = 'memory') holds only what its last checkpoint committed, and checkpoint.interval is off", name)
			err.Hint = "Run CHECKPOINT first, or set checkpoint.interval."
			return err
		}
	}
	return nil
}
