package join

import (
	"math/bits"

	"github.com/streamdb/streamdb/exec/opkit"
)

// What an inner join's state cache evicts: a side of a group, not the
// group.
//
// An inner join reads back, for a row of one side, only the other side's
// rows of its key (readBack), and a row stored on a side whose rows are
// not in memory is a delta settled at the barrier (writeDirty). So a side
// can leave memory on its own: the group stays with that side partial.
// Which sides go first follows from what a read back costs, about one seek
// whatever the side's size (its rows are adjacent in key order): among
// sides not matched against for as long, the larger go first, as they free
// the most memory per read they may cost later. A side is ranked by its
// age (barriers since a row of the other side was last matched against
// it, or since its first row if none was) times its bytes; sides matched
// against in this epoch or the last go last.
//
// Nexmark q4 and q9 (auctions joined with their bids) show why: the
// auction source runs ahead of the bid source, so an auction waits in
// memory, unmatched, until its bids come, while the bids of the auctions
// already closed are never matched against again (their auction came
// first). Evicting whole groups by last use sent the waiting auctions out
// with the closed auctions' bids, and every auction was read back from
// Pebble when its bids came: at 5M events, 28 % of the CPU in those seeks,
// and the cost per event grew with the input. Evicting the bids' sides,
// many rows each, keeps the auctions, one row each, in memory.

// sideHotAge is the age below which a side counts as in use: matched
// against (or made) in this epoch or the last.
const sideHotAge = 2

// sideRankBytes caps the bytes a side's rank counts: reading back a side
// larger than this costs more than a seek, in proportion to its size.
const sideRankBytes = 1 << 20

// sideRank is side s of g's rank for eviction (opkit.EvictAges: higher
// goes first), with the bytes evicting it frees: rank 0 for a side in use,
// else its age times its bytes on a log scale of four steps per doubling.
func (ks *store) sideRank(g *joinGroup, s int) (int, int64) {
	var n int64
	for _, r := range g.rows[s] {
		n += joinRowBytes + int64(len(r.enc))
	}
	freed := n
	if len(g.rows[1-s]) == 0 { // the group goes with it
		freed += joinGroupBytes + int64(len(g.key))
	}
	age := opkit.EvictAgeOf(ks.tick, g.need[s])
	if age < sideHotAge {
		return 0, freed
	}
	x := uint64(min(n, sideRankBytes)) * uint64(age)
	l := bits.Len64(x) // at most 27: 2^20 bytes times age 63
	frac := 0
	if l > 2 {
		frac = int(x>>(l-3)) & 3 // the two bits after the leading one
	}
	return min(4*l+frac, opkit.EvictRanks-1), freed
}

// evictSides (inner joins) drops the rows of committed groups' sides, the
// highest ranked first, until the estimate is at most target bytes; a
// group left with no rows in memory goes too (evictGroup).
func (ks *store) evictSides(committed uint64, target int64) {
	evictable := func(k string, g *joinGroup) bool { return g.saved <= committed && k != nullKey }
	var ranks opkit.EvictAges
	for k, g := range ks.groups {
		if !evictable(k, g) {
			continue
		}
		for s := range g.rows {
			if len(g.rows[s]) > 0 {
				r, freed := ks.sideRank(g, s)
				g.rank[s] = uint8(r)
				ranks.Add(r, freed)
			}
		}
	}
	cut := ranks.Cut(ks.bytes - target)
	for _, above := range []bool{true, false} {
		for k, g := range ks.groups {
			if !above && ks.bytes <= target {
				return
			}
			if !evictable(k, g) {
				continue
			}
			for s := range g.rows {
				if len(g.rows[s]) == 0 {
					continue
				}
				if r := int(g.rank[s]); above && r > cut || !above && r == cut && ks.bytes > target {
					ks.evictSide(k, g, s)
				}
			}
		}
	}
}

// evictSide drops side s's rows of group g (key k), committed, from
// memory: the side becomes partial, its key and rows go into the filters
// a later read back asks (evicted, rowsOut), and the group goes if it has
// no rows left in memory.
func (ks *store) evictSide(k string, g *joinGroup, s int) {
	for _, r := range g.rows[s] {
		ks.rowsOut[s].Add(rowHash(g.key, r.enc))
		ks.bytes -= joinRowBytes + int64(len(r.enc))
	}
	ks.evicted[s].Add(g.hash)
	g.rows[s], g.idx[s] = nil, nil
	g.partial[s] = true
	ks.spilled = true
	if len(g.rows[1-s]) == 0 {
		ks.evictGroup(k, g)
	}
}
