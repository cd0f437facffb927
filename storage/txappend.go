package storage

import (
	"cmp"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
)

// TxAppend is one stream partition's share of a transaction's appends:
// rows held in memory and stages (staged COPYs of the same table), in the
// order they were written.
type TxAppend struct {
	Table  uint64
	Part   uint32
	Recs   []arrow.RecordBatch
	Stages []*Stage
}

// CommitAppends makes every row of apps visible in one synced write: a
// reader, a statement's snapshot and a barrier cut see all of them or
// none. Partitions are locked in (table, partition) order, so concurrent
// commits cannot deadlock; MarkCut waits for commits in flight. The caller
// keeps ownership of the records. The stages are finished either way: on
// error they are aborted.
func (lg Log) CommitAppends(apps []TxAppend) (err error) {
	var stages []*Stage
	for _, a := range apps {
		stages = append(stages, a.Stages...)
	}
	defer func() {
		for _, s := range stages {
			if err != nil {
				s.Abort()
			}
		}
	}()
	for _, a := range apps {
		for _, s := range a.Stages {
			if s.done || s.table != a.Table {
				return sqlerr.New(sqlerr.Internal, "stage already finished or of another table")
			}
			if s.w != nil {
				if err := s.ingest(); err != nil {
					return err
				}
			}
		}
	}
	apps = slices.Clone(apps)
	slices.SortFunc(apps, func(a, b TxAppend) int {
		if c := cmp.Compare(a.Table, b.Table); c != 0 {
			return c
		}
		return cmp.Compare(a.Part, b.Part)
	})
	blocks := make([][][]byte, len(apps))
	pls := make([]*partitionLog, len(apps))
	for i, a := range apps {
		if i > 0 && a.Table == apps[i-1].Table && a.Part == apps[i-1].Part {
			return sqlerr.New(sqlerr.Internal, "partition %d of table %d appears twice in one commit", a.Part, a.Table)
		}
		for _, r := range a.Recs {
			if r.NumRows() == 0 {
				continue
			}
			v, err := EncodeBlock(r)
			if err != nil {
				return err
			}
			blocks[i] = append(blocks[i], v)
		}
		if pls[i], err = lg.partition(a.Table, a.Part); err != nil {
			return err
		}
	}
	for _, a := range apps {
		for _, s := range a.Stages {
			lg.db.tail.publish(s.table, s.id, a.Part, s.blocks)
		}
	}
	b := lg.db.pdb.NewBatch()
	defer b.Close()
	lg.db.appendsMu.RLock()
	for _, pl := range pls {
		pl.mu.Lock()
	}
	ends := make([]uint64, len(apps))
	now := nowMillis()
	for i, a := range apps {
		off := pls[i].next
		for _, v := range blocks[i] {
			b.Set(logBlockKey(a.Table, a.Part, off), v, nil)
			off += blockRows(v)
		}
		for _, s := range a.Stages {
			off = s.addRefs(b, a.Part, off, now)
		}
		ends[i] = off
	}
	err = lg.db.pdb.ApplyNoSyncWait(b, pebble.Sync)
	if err == nil {
		for _, s := range stages {
			s.done = true
		}
	}
	for i, pl := range pls {
		if err == nil {
			pl.advance(ends[i])
		}
		pl.mu.Unlock()
	}
	lg.db.appendsMu.RUnlock()
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	if err := b.SyncWait(); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}
