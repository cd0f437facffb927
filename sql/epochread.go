package sql

import (
	"context"
	"slices"

	"github.com/streamdb/streamdb/exec"
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
func (e *Engine) awaitCut(ctx context.Context, p exec.Plan) error {
	streams := exec.StreamsRead(p)
	if len(streams) == 0 {
		return nil
	}
	cut, changed, err := e.db.LastCut()
	if err != nil {
		return err
	}
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
			_, end, _, err := e.db.LogBounds(t.ID, part)
			if err != nil {
				return err
			}
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
			return exec.ContextError(ctx)
		}
		if cut, changed, err = e.db.LastCut(); err != nil {
			return err
		}
		read := e.readByRunningViews()
		want = slices.DeleteFunc(want, func(t target) bool {
			c, ok := cut[t.lp]
			return ok && c >= t.end || !ok && !read[t.lp.Table]
		})
	}
	return nil
}

// readByRunningViews returns the ids of the logs that running views read
// directly (a view just created is in no committed cut yet: its streams
// wait for the first round that includes it).
func (e *Engine) readByRunningViews() map[uint64]bool {
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
