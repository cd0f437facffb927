package storage

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
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
func (ep Epochs) MarkCut(epoch uint64, parts []LogPart) (Cut, error) {
	cut := make(Cut, len(parts))
	ep.db.appendsMu.Lock()
	defer ep.db.appendsMu.Unlock()
	for _, lp := range parts {
		if _, dup := cut[lp]; dup {
			continue
		}
		pl, err := ep.db.Log().partition(lp.Table, lp.Part)
		if err != nil {
			ep.ReleaseCut(epoch)
			return nil, err
		}
		pl.mu.Lock()
		pl.marks = append(pl.marks, cutMark{epoch, pl.next})
		cut[lp] = pl.next
		pl.mu.Unlock()
		ep.db.cuts.Lock()
		if ep.db.cuts.marked == nil {
			ep.db.cuts.marked = map[*partitionLog]bool{}
		}
		ep.db.cuts.marked[pl] = true
		ep.db.cuts.Unlock()
	}
	return cut, nil
}

// ReleaseCut drops the marks of every epoch up to epoch (its round has
// ended) and wakes the readers that waited at them.
func (ep Epochs) ReleaseCut(epoch uint64) {
	ep.db.cuts.Lock()
	pls := make([]*partitionLog, 0, len(ep.db.cuts.marked))
	for pl := range ep.db.cuts.marked {
		pls = append(pls, pl) // partitions ever marked: as many as the logs jobs read
	}
	ep.db.cuts.Unlock()
	for _, pl := range pls {
		pl.mu.Lock()
		if n := len(pl.marks); n > 0 {
			pl.marks = slices.DeleteFunc(pl.marks, func(m cutMark) bool { return m.epoch <= epoch })
			if len(pl.marks) < n {
				pl.wake()
			}
		}
		pl.mu.Unlock()
	}
}

// CutLimit is how far an aligned reader that has passed on the barriers up
// to epoch may read a partition: the first marked position of a later
// epoch, or no limit.
func (ep Epochs) CutLimit(table uint64, part uint32, epoch uint64) (uint64, error) {
	pl, err := ep.db.Log().partition(table, part)
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

// The committed cut. Each round commits the cut its barrier sat at with
// its epoch (key x/cut), so a statement's snapshot holds, with the views,
// the stream positions they cover: it reads each stream up to there, and
// sees one committed epoch of views and streams alike. In memory, the last
// committed cut and a channel closed at each commit let a statement wait
// for the round that covers the writes acknowledged before it started.

var committedCutKey = []byte("x/cut")

func encodeCut(c Cut) []byte {
	parts := make([]LogPart, 0, len(c))
	for lp := range c {
		parts = append(parts, lp)
	}
	slices.SortFunc(parts, func(a, b LogPart) int {
		if a.Table != b.Table {
			return cmpU64(a.Table, b.Table)
		}
		return cmpU64(uint64(a.Part), uint64(b.Part))
	})
	v := make([]byte, 0, len(parts)*20)
	for _, lp := range parts {
		v = binary.BigEndian.AppendUint64(v, lp.Table)
		v = binary.BigEndian.AppendUint32(v, lp.Part)
		v = binary.BigEndian.AppendUint64(v, c[lp])
	}
	return v
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func decodeCut(v []byte) (Cut, error) {
	if len(v)%20 != 0 {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "malformed committed cut")
	}
	c := make(Cut, len(v)/20)
	for ; len(v) > 0; v = v[20:] {
		c[LogPart{binary.BigEndian.Uint64(v), binary.BigEndian.Uint32(v[8:])}] = binary.BigEndian.Uint64(v[12:])
	}
	return c, nil
}

// CommittedCut reads the cut committed with the last epoch through r (a
// statement's snapshot; nil: the live database). A partition not in it is
// read by no running job.
func (ep Epochs) CommittedCut(r Reader) (Cut, error) {
	if r == nil {
		r = ep.db.pdb
	}
	v, closer, err := r.Get(committedCutKey)
	if err == pebble.ErrNotFound {
		return Cut{}, nil
	}
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	defer closer.Close()
	return decodeCut(v)
}

func (ep Epochs) setCommittedCut(c Cut) {
	ep.db.cuts.Lock()
	ep.db.cuts.committed = c
	ep.db.cuts.loaded = true
	if ep.db.cuts.commit != nil {
		close(ep.db.cuts.commit)
	}
	ep.db.cuts.commit = make(chan struct{})
	ep.db.cuts.Unlock()
}

// LastCut returns the last committed cut and a channel closed at the next
// commit of one.
func (ep Epochs) LastCut() (Cut, <-chan struct{}, error) {
	ep.db.cuts.Lock()
	defer ep.db.cuts.Unlock()
	if !ep.db.cuts.loaded {
		c, err := ep.CommittedCut(nil)
		if err != nil {
			return nil, nil, err
		}
		ep.db.cuts.committed, ep.db.cuts.loaded = c, true
	}
	if ep.db.cuts.commit == nil {
		ep.db.cuts.commit = make(chan struct{})
	}
	return ep.db.cuts.committed, ep.db.cuts.commit, nil
}
