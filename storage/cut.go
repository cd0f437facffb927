package storage

import (
	"math"
	"slices"
)

// Cuts. A barrier round places its barrier at one offset of every log
// partition its jobs read: the partition's end when the round starts. Every
// job that takes part passes barrier N on exactly at that offset, so all
// views over the same input are at the same input position at every
// committed epoch (a consistent cut, as RisingWave places a barrier in a
// table's DML stream). The position is marked in the partition before the
// barrier is handed to any job, and an aligned reader never reads past a
// marked position of an epoch it has not passed on yet.

// LogPart names one partition of a log (a stream's or a view's changelog).
type LogPart struct {
	Table uint64
	Part  uint32
}

// Cut is where one round's barrier sits in each log partition.
type Cut map[LogPart]uint64

type cutMark struct {
	epoch uint64
	off   uint64
}

// MarkCut marks epoch's barrier at the current end of each partition and
// returns the positions. Each mark is placed under its partition's lock,
// so every offset a reader has seen is below it.
func (db *DB) MarkCut(epoch uint64, parts []LogPart) (Cut, error) {
	cut := make(Cut, len(parts))
	db.appendsMu.Lock()
	defer db.appendsMu.Unlock()
	for _, lp := range parts {
		if _, dup := cut[lp]; dup {
			continue
		}
		pl, err := db.partition(lp.Table, lp.Part)
		if err != nil {
			db.ReleaseCut(epoch)
			return nil, err
		}
		pl.mu.Lock()
		pl.marks = append(pl.marks, cutMark{epoch, pl.next})
		cut[lp] = pl.next
		pl.mu.Unlock()
		db.cuts.Lock()
		if db.cuts.marked == nil {
			db.cuts.marked = map[*partitionLog]bool{}
		}
		db.cuts.marked[pl] = true
		db.cuts.Unlock()
	}
	return cut, nil
}

// ReleaseCut drops the marks of every epoch up to epoch (its round has
// ended) and wakes the readers that waited at them.
func (db *DB) ReleaseCut(epoch uint64) {
	db.cuts.Lock()
	pls := make([]*partitionLog, 0, len(db.cuts.marked))
	for pl := range db.cuts.marked {
		pls = append(pls, pl) // partitions ever marked: as many as the logs jobs read
	}
	db.cuts.Unlock()
	for _, pl := range pls {
		pl.mu.Lock()
		if n := len(pl.marks); n > 0 {
			pl.marks = slices.DeleteFunc(pl.marks, func(m cutMark) bool { return m.epoch <= epoch })
			if len(pl.marks) < n {
				close(pl.notify)
				pl.notify = make(chan struct{})
			}
		}
		pl.mu.Unlock()
	}
}

// CutLimit is how far an aligned reader that has passed on the barriers up
// to epoch may read a partition: the first marked position of a later
// epoch, or no limit.
func (db *DB) CutLimit(table uint64, part uint32, epoch uint64) (uint64, error) {
	pl, err := db.partition(table, part)
	if err != nil {
		return 0, err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, m := range pl.marks {
		if m.epoch > epoch {
			return m.off, nil
		}
	}
	return math.MaxUint64, nil
}
