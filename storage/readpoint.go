package storage

import (
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Read points. Not every view's rows hold the epoch of the committed cut:
// a job on the memory backend hands its epochs over only with a snapshot
// (exec holdForCheckpoint), so its rows hold the last checkpoint whose
// snapshot is durable, and a job that failed a round, or is restarting,
// holds the last epoch it committed. A statement that read every relation
// in the newest commit would mix epochs. So each round's commit leaves a
// read point: a Pebble snapshot taken right after it, with the epoch each
// running (or failing) view job's rows hold in it. A statement over several
// relations picks the newest epoch E for which it can read every view it
// reads at E — from the point of round E (where the streams are read up to
// round E's cut) or, for a view that lagged, from a later point in which
// its rows hold E — so that it sees one epoch of all of them (PickRead).
//
// Points are kept while a statement may still pick them: the newest; the
// points of checkpoint rounds and those whose epoch some view's rows still
// hold (they may be a statement's base); the last point in which a lagging
// view held an epoch (it may provide that view's rows); none older than the
// newest epoch every view agrees on; and at most maxReadPoints.

// maxReadPoints bounds the points kept (each a Pebble snapshot).
const maxReadPoints = 64

type readPoint struct {
	epoch      uint64
	checkpoint bool
	cut        Cut
	snap       *pebble.Snapshot
	refs       int // statements reading it, plus one while kept
	// held is, per view job, the epoch its rows hold in snap.
	held map[uint64]uint64
}

type readPoints struct {
	list []*readPoint // oldest first
	// next is closed when the next point is added.
	next chan struct{}
}

// ReadPoint describes a round's commit for its read point.
type ReadPoint struct {
	Epoch      uint64
	Checkpoint bool
	Cut        Cut
	// Held gives, per view job, the epoch its rows hold once committed.
	Held map[uint64]uint64
}

// addReadPoint records the read point of a round just committed
// (CommitEpochAt), before the next round can commit.
func (ep Epochs) addReadPoint(rp *ReadPoint) {
	held := rp.Held
	p := &readPoint{epoch: rp.Epoch, checkpoint: rp.Checkpoint, cut: rp.Cut, snap: ep.db.pdb.NewSnapshot(), refs: 1, held: held}
	ep.db.reads.Lock()
	var drop []*readPoint
	l := ep.db.reads.p.list
	if n := len(l); n > 0 && !l[n-1].useful(p) {
		drop = append(drop, l[n-1])
		l = l[:n-1]
	}
	l = append(l, p)
	// The newest epoch every view agrees on: no statement picks an older one.
	if base, _, ok := pick(l, keys(held), 0); ok {
		i := slices.Index(l, base)
		drop = append(drop, l[:i]...)
		l = l[i:]
	}
	if len(l) > maxReadPoints {
		drop = append(drop, l[:len(l)-maxReadPoints]...)
		l = l[len(l)-maxReadPoints:]
	}
	ep.db.reads.p.list = slices.Clone(l)
	if ep.db.reads.p.next != nil {
		close(ep.db.reads.p.next)
	}
	ep.db.reads.p.next = make(chan struct{})
	for _, q := range drop {
		q.unrefLocked()
	}
	ep.db.reads.Unlock()
}

// useful reports whether p, the newest point until next came, is still
// worth keeping: a checkpoint round's, one whose epoch a view's rows hold
// in next, or the last in which a lagging view held its epoch.
func (p *readPoint) useful(next *readPoint) bool {
	if p.checkpoint {
		return true
	}
	for job, e := range next.held {
		if e == p.epoch {
			return true
		}
		if h, ok := p.held[job]; ok && h != e && h != p.epoch {
			return true
		}
	}
	return false
}

func (p *readPoint) unrefLocked() {
	if p.refs--; p.refs == 0 {
		_ = p.snap.Close()
	}
}

func keys(m map[uint64]uint64) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// pick returns the newest point whose epoch E every view in views (those
// the newest point tracks) holds in some point no older than minEpoch
// requires, and for each view the point that provides its rows at E.
func pick(l []*readPoint, views []uint64, minEpoch uint64) (*readPoint, map[uint64]*readPoint, bool) {
	if len(l) == 0 {
		return nil, nil, false
	}
	newest := l[len(l)-1]
	var tracked []uint64
	for _, v := range views {
		if _, ok := newest.held[v]; ok {
			tracked = append(tracked, v)
		}
	}
bases:
	for i := len(l) - 1; i >= 0 && l[i].epoch >= minEpoch; i-- {
		base := l[i]
		from := map[uint64]*readPoint{}
		for _, v := range tracked {
			if base.held[v] == base.epoch {
				from[v] = base
				continue
			}
			var q *readPoint
			for j := len(l) - 1; j > i; j-- {
				if h, ok := l[j].held[v]; ok && h == base.epoch {
					q = l[j]
					break
				}
			}
			if q == nil {
				continue bases
			}
			from[v] = q
		}
		return base, from, true
	}
	return nil, nil, false
}

// ReadSet is what one statement reads: Base for the streams (up to its
// committed cut) and every view not in Views; Views[v] for view v.
type ReadSet struct {
	Epoch uint64
	Base  *pebble.Snapshot
	cut   Cut
	Views map[uint64]*pebble.Snapshot
	refs  []*readPoint
	db    *DB
}

// CutHas reports whether the set's cut has a place in table's log: a job
// read it at that epoch, and the statement reads it up to there.
func (r *ReadSet) CutHas(table uint64) bool {
	for lp := range r.cut {
		if lp.Table == table {
			return true
		}
	}
	return false
}

// InCut reports whether the set's cut has a place in every one of streams.
func (r *ReadSet) InCut(streams []*TableDef) bool {
	for _, t := range streams {
		if !r.CutHas(t.ID) {
			return false
		}
	}
	return true
}

// Release lets the set's points go.
func (r *ReadSet) Release() {
	r.db.reads.Lock()
	for _, p := range r.refs {
		p.unrefLocked()
	}
	r.db.reads.Unlock()
	r.refs = nil
}

// PickRead returns the newest epoch at or after minEpoch at which every
// one of views can be read, with the snapshots to read them from. If there
// is none, ok is false and next is closed when the next point is added;
// lagging lists the views that held an older epoch than the newest point's
// in every candidate (those that keep the statement from reading it).
func (ep Epochs) PickRead(views []uint64, minEpoch uint64) (rs *ReadSet, ok bool, next <-chan struct{}, lagging []uint64) {
	ep.db.reads.Lock()
	defer ep.db.reads.Unlock()
	if ep.db.reads.p.next == nil {
		ep.db.reads.p.next = make(chan struct{})
	}
	l := ep.db.reads.p.list
	if len(l) == 0 {
		return nil, false, nil, nil
	}
	base, from, ok := pick(l, views, minEpoch)
	if !ok {
		if len(l) > 0 {
			newest := l[len(l)-1]
			for _, v := range views {
				if h, ok := newest.held[v]; ok && (h < newest.epoch || h < minEpoch) {
					lagging = append(lagging, v)
				}
			}
		}
		return nil, false, ep.db.reads.p.next, lagging
	}
	rs = &ReadSet{Epoch: base.epoch, Base: base.snap, cut: base.cut, Views: map[uint64]*pebble.Snapshot{}, db: ep.db}
	seen := map[*readPoint]bool{base: true}
	rs.refs = append(rs.refs, base)
	for v, p := range from {
		if p != base {
			rs.Views[v] = p.snap
		}
		if !seen[p] {
			seen[p] = true
			rs.refs = append(rs.refs, p)
		}
	}
	for _, p := range rs.refs {
		p.refs++
	}
	return rs, true, nil, nil
}

// CoveringEpoch is the epoch of the oldest kept read point from which on
// every cut is at or past ends in each partition (0: no point does): a
// statement that must see the writes up to ends reads no older epoch.
func (ep Epochs) CoveringEpoch(ends Cut) uint64 {
	ep.db.reads.Lock()
	defer ep.db.reads.Unlock()
	l := ep.db.reads.p.list
	e := uint64(0)
	for i := len(l) - 1; i >= 0; i-- {
		for lp, end := range ends {
			if c, ok := l[i].cut[lp]; !ok || c < end {
				return e
			}
		}
		e = l[i].epoch
	}
	return e
}

// HeldEpochs returns, per view job, the epoch its rows hold at the newest
// read point (nil: none yet), for the coordinator to carry over the jobs
// that did not commit the next round.
func (ep Epochs) HeldEpochs() map[uint64]uint64 {
	ep.db.reads.Lock()
	defer ep.db.reads.Unlock()
	if n := len(ep.db.reads.p.list); n > 0 {
		return ep.db.reads.p.list[n-1].held
	}
	return nil
}

// DropReadPoints forgets every read point (the data they show was replaced,
// or the database closes); statements reading them keep theirs until done.
func (ep Epochs) DropReadPoints() {
	ep.db.reads.Lock()
	for _, p := range ep.db.reads.p.list {
		p.unrefLocked()
	}
	ep.db.reads.p.list = nil
	ep.db.reads.Unlock()
}
