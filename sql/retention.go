package sql

import (
	"path/filepath"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
)

// Log retention. A stream's log is the table: batch reads see every row it
// retains, so by default (stream.retention = 'unbounded') nothing is ever
// removed. With a duration, blocks written longer ago than that are
// removed, but never below an offset that something still needs:
//   - a view job's committed offset (it resumes there after a crash), or
//     the log's start for a view that has not committed one yet;
//   - the offsets recorded by every retained checkpoint and savepoint
//     (RESTORE replays the live log from them), pending exports included;
//   - a running change stream's read position.
// A view's changelog is read only by the jobs downstream of it, so it is
// kept only down to the oldest of those positions, whatever the setting.
// See docs/decisions/2026-11-30-stream-log-retention.md.

// truncateGap is the least time between two truncations after periodic
// checkpoints; manual checkpoints always truncate.
const truncateGap = 10 * time.Second

// afterCheckpoint runs in the round of every completed checkpoint (not
// savepoints): it exports the checkpoint, then truncates the logs.
func (e *supervisor) afterCheckpoint(rec *checkpoint.Record) error {
	err := e.exportCheckpoint(rec)
	if rec.Trigger != "periodic" || time.Since(e.lastTruncate) >= truncateGap {
		e.lastTruncate = time.Now()
		if terr := e.truncateLogs(time.Now()); terr != nil {
			e.log.Warn("log truncation failed", "err", terr)
		}
	}
	return err
}

type logPart struct {
	table uint64
	part  uint32
}

// truncateLogs removes what retention allows. It runs while the round
// holds roundMu, so no job starts, stops or commits meanwhile; it holds
// the change streams' lock so none starts either.
func (e *supervisor) truncateLogs(now time.Time) error {
	e.transient.Lock()
	defer e.transient.Unlock()

	pins := map[logPart]uint64{}
	pin := func(table uint64, part uint32, off uint64) {
		k := logPart{table, part}
		if cur, ok := pins[k]; !ok || off < cur {
			pins[k] = off
		}
	}
	offs, err := e.db.State().Offsets()
	if err != nil {
		return err
	}
	committed := map[storage.Offset]bool{}
	for _, o := range offs {
		pin(o.Table, o.Part, o.Off)
		committed[storage.Offset{Job: o.Job, Table: o.Table, Part: o.Part}] = true
	}
	root := e.snapStore.snapshotRoot()
	for _, kind := range []string{"checkpoints", "savepoints"} {
		for _, m := range checkpoint.List(filepath.Join(root, kind)) {
			if m.FormatVersion < 2 {
				return nil // written before snapshots recorded offsets: keep every log
			}
			for _, o := range m.Offsets {
				pin(o.Table, o.Part, o.Off)
			}
		}
	}
	e.exports.Lock()
	for _, os := range e.exports.offsets {
		for _, o := range os {
			pin(o.Table, o.Part, o.Off)
		}
	}
	e.exports.Unlock()
	for j := range e.transient.jobs {
		for _, src := range j.Positions() {
			for p, off := range src.Offs {
				pin(src.Table, uint32(p), off)
			}
		}
	}

	e.mu.Lock()
	tables := make(map[string]*storage.TableDef, len(e.mu.tables))
	for n, t := range e.mu.tables {
		tables[n] = t
	}
	e.mu.Unlock()
	for _, v := range tables {
		if v.Kind != storage.KindView {
			continue
		}
		for _, name := range viewSources(v) {
			src := tables[name]
			if src == nil {
				continue
			}
			for p := 0; p < max(1, src.Partitions); p++ {
				if !committed[storage.Offset{Job: v.ID, Table: src.ID, Part: uint32(p)}] {
					pin(src.ID, uint32(p), 0)
				}
			}
		}
	}

	retention := e.conf.setting("stream.retention")
	unbounded := retention == "unbounded"
	keep, _ := checkpoint.ParseDuration(retention) // validated when set; unused if unbounded
	for _, t := range tables {
		for p := uint32(0); p < uint32(max(1, t.Partitions)); p++ {
			var cut uint64
			switch t.Kind {
			case storage.KindStream:
				if unbounded || plan.Keyed(t) { // a keyed table's rows are its whole log
					continue
				}
				if cut, err = e.db.Log().OffsetAt(t.ID, p, now.Add(-keep)); err != nil {
					return err
				}
			case storage.KindView:
				if _, cut, _, err = e.db.Log().Bounds(t.ID, p); err != nil {
					return err
				}
			default:
				continue
			}
			if off, ok := pins[logPart{t.ID, p}]; ok && off < cut {
				cut = off
			}
			if cut == 0 {
				continue
			}
			if err := e.db.Log().Truncate(t.ID, p, cut); err != nil {
				return err
			}
		}
	}
	return nil
}
