package exec

import (
	"hash/maphash"

	"github.com/streamdb/streamdb/exec/opkit"
)

// viewBag holds the multiplicities of the rows of a view kept as a
// multiset (rowSink's retracting layout: key = row, value = row + count).
//
// On the Pebble backend with a state cache the bag is a cache, as the join
// and rank operators' state (evictage.go): it takes one share of the
// job's state cache, and once past it, at a barrier, it evicts the rows
// whose last change is committed, those changed longest ago first. An
// evicted row's hash goes into a Bloom filter; a row whose hash may be
// there is read back from the view's committed rows before it changes.
// A row whose count fell to zero stays in memory, with count 0, until the
// epoch that deleted it commits: until then the state table still has it,
// and reading it back would revive it. Rows are only evicted once their
// change is committed, so the committed row is always the latest one.
//
// Without a budget (the memory backend, or --state-cache-mb 0) the bag
// keeps every row, and drops a row as its count reaches zero.
//
// The bag holds the view's rows, not operator state: its bytes are not in
// the job's state_bytes (opBytes), which stays the state of the operators
// (bounded by watermarks, TTLs and the cache), as before the bag spilled.
type viewBag struct {
	j       *Job
	view    uint64
	m       map[string]*bagEntry
	budget  int64 // bytes; 0: unbounded
	bytes   int64
	spilled bool
	evicted opkit.EvictedFilter
	seed    maphash.Seed
	// tick counts barriers from 1; an entry notes the tick of its last
	// change. Entries changed at or before committedTick are committed
	// (loaded entries carry tick 0). pending maps the ticks not yet known
	// to be committed to the epochs that close them.
	tick, committedTick uint64
	pending             []bagTick
}

type bagEntry struct {
	count int64
	used  uint64 // the tick of the last change
	size  int64  // bagEntryBytes + the key's length
}

type bagTick struct{ tick, epoch uint64 }

// bagEntryBytes estimates an entry's memory besides its key: the map slot
// (key header, pointer, control byte, load factor), the entry's own
// allocation and the string's size class.
const bagEntryBytes = 80

func newViewBag(j *Job, view uint64, budget int64) *viewBag {
	b := &viewBag{j: j, view: view, m: map[string]*bagEntry{}, budget: budget, seed: maphash.MakeSeed(), tick: 1}
	b.evicted.Refill = b.refill
	return b
}

// loaded adds a committed row (at startup); past the budget only its hash
// is kept.
func (b *viewBag) loaded(row []byte, count int64) {
	if b.budget > 0 && b.bytes > b.budget*8/10 {
		b.evicted.Add(b.hash(row))
		b.spilled = true
		return
	}
	e := &bagEntry{count: count, size: bagEntryBytes + int64(len(row))}
	b.m[string(row)] = e
	b.bytes += e.size
}

func (b *viewBag) hash(row []byte) uint64 { return maphash.Bytes(b.seed, row) }

// get returns row's multiplicity, reading it back from the view's rows if
// it may have been evicted.
func (b *viewBag) get(row []byte) (int64, error) {
	if e, ok := b.m[bytesView(row)]; ok {
		return e.count, nil
	}
	if !b.spilled || !b.evicted.MayContain(b.hash(row)) {
		return 0, nil
	}
	v, err := b.j.db.Views().Get(b.view, row)
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) < len(row) {
		return 0, errCorruptState
	}
	n, _, err := readUvarint(v[len(row):])
	if err != nil {
		return 0, err
	}
	return int64(n), nil
}

// set records row's multiplicity c, changed in the current epoch.
func (b *viewBag) set(row []byte, c int64) {
	if e, ok := b.m[bytesView(row)]; ok {
		if c <= 0 && b.budget <= 0 {
			delete(b.m, bytesView(row))
			b.bytes -= e.size
			return
		}
		// In place: assigning to an existing string key would store the
		// key given (Go updates string keys on overwrite), and row is the
		// encoder's buffer.
		e.count, e.used = c, b.tick
		return
	}
	if c <= 0 && b.budget <= 0 {
		return
	}
	// A copy, not bytesView: assigning to a string key stores the key
	// given, and a row's own copy pins no other rows.
	e := &bagEntry{count: c, used: b.tick, size: bagEntryBytes + int64(len(row))}
	b.m[string(row)] = e
	b.bytes += e.size
}

// barrier closes the epoch: it dates the entries changed in it, learns
// which ticks are committed, and evicts down to 80 % of the budget.
func (b *viewBag) barrier(epoch, committed uint64) error {
	b.pending = append(b.pending, bagTick{b.tick, epoch})
	b.tick++
	n := 0
	for ; n < len(b.pending) && b.pending[n].epoch <= committed; n++ {
		b.committedTick = b.pending[n].tick
	}
	b.pending = b.pending[:copy(b.pending, b.pending[n:])]
	if b.budget > 0 && b.bytes > b.budget {
		target := b.budget * 8 / 10
		opkit.EvictOldest(b.m, b.tick, b.bytes-target,
			func(_ string, e *bagEntry) bool { return e.used <= b.committedTick },
			func(e *bagEntry) uint64 { return e.used },
			func(e *bagEntry) int64 { return e.size },
			b.evict, func() bool { return b.bytes <= target })
		if err := b.evicted.RefreshIfFull(); err != nil {
			return err
		}
	}
	return nil
}

// evict drops committed entry k from memory; a row still in the view
// (count > 0) may be read back.
func (b *viewBag) evict(k string, e *bagEntry) {
	delete(b.m, k)
	b.bytes -= e.size
	if e.count > 0 {
		b.evicted.Add(maphash.String(b.seed, k))
		b.spilled = true
		b.j.Evicted.Add(1)
	}
}

// refill lists the hashes of every row of the view for a rebuild of the
// full filter (rows in memory too: a false positive costs a read only).
func (b *viewBag) refill(add func(uint64)) error {
	return b.j.db.Views().Scan(nil, b.view, func(k, _ []byte) error {
		add(b.hash(k))
		return nil
	})
}
