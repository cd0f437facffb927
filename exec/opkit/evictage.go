package opkit

// What the join and rank operators' state caches evict first.
//
// Once an operator's state passes its share of the state cache, it evicts
// committed entries (join groups, rank partitions) at a barrier until it is
// below 80 % of the share. It evicts the entries used longest ago first:
// each entry notes the barrier count (tick) when a row last touched it, and
// a pass over the entries adds up their bytes by age, in barriers, so the
// cut between the ages evicted and those kept is found without sorting.
// Evicting in the map's random order instead evicted the hot entries (the
// auctions that still get bids) as often as the cold ones, and every row of
// a hot key then read its whole group back from Pebble.

// evictAgeBuckets is how many ages are told apart; older entries count as
// the oldest age.
const evictAgeBuckets = 64

// EvictAges adds up the bytes of the evictable entries by age (or by any
// rank below evictAgeBuckets: the join ranks a side of a group by its age
// and size, evictside.go).
type EvictAges struct{ bytes [EvictRanks]int64 }

// EvictRanks is how many ranks EvictAges tells apart (ages use the first
// evictAgeBuckets).
const EvictRanks = 128

// EvictAgeOf is the age, in barriers, of an entry last used at barrier
// count used, now that the count is tick (the oldest ages count as one).
func EvictAgeOf(tick, used uint64) int { return evictAge(tick, used) }

// evictAge is the age of an entry last used at barrier count used, now
// that the count is tick.
func evictAge(tick, used uint64) int {
	if used >= tick {
		return 0
	}
	return int(min(tick-used, evictAgeBuckets-1))
}

// Add counts n bytes at age (rank).
func (a *EvictAges) Add(age int, n int64) { a.bytes[age] += n }

// Cut returns the youngest age whose entries and all older ones hold at
// least need bytes (0 when only all of them do): entries older than the cut
// go, then entries of the cut's age until enough went.
func (a *EvictAges) Cut(need int64) int {
	var sum int64
	for age := EvictRanks - 1; age > 0; age-- {
		if sum += a.bytes[age]; sum >= need {
			return age
		}
	}
	return 0
}

// EvictOldest evicts, with evict, the evictable entries of m that were used
// longest ago (used: the tick an entry notes; size: its bytes) until need
// bytes went: every entry older than the cut, then entries of the cut's age
// until done says enough went.
func EvictOldest[V any](m map[string]V, tick uint64, need int64, evictable func(string, V) bool,
	used func(V) uint64, size func(V) int64, evict func(string, V), done func() bool) {
	var ages EvictAges
	for k, v := range m {
		if evictable(k, v) {
			ages.Add(evictAge(tick, used(v)), size(v))
		}
	}
	cut := ages.Cut(need)
	for k, v := range m {
		if evictable(k, v) && evictAge(tick, used(v)) > cut {
			evict(k, v)
		}
	}
	for k, v := range m {
		if done() {
			break
		}
		if evictable(k, v) && evictAge(tick, used(v)) == cut {
			evict(k, v)
		}
	}
}
