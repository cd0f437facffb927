package rank

import (
	"encoding/binary"
	"iter"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
)

// state.ttl for top-N partitions (ROW_NUMBER/RANK/DENSE_RANK OVER
// (PARTITION BY ...)): a partition no row changed for the TTL is expired as
// a join key is — its rows leave memory and the state table, nothing is
// emitted, so the view keeps the top rows it had; a later row of its key
// starts a new partition, whose top rows are inserted beside them.
// Partitions of a top-N per window are freed by the watermark instead;
// ORDER BY ... LIMIT has one partition, which never expires. The idle
// clock rides on the row entries the barrier writes anyway: while the TTL
// is on, a row's value is its count followed by the clock (8 bytes, µs,
// big-endian; readers of the count ignore it), and a loaded partition's
// clock is the latest of its rows'. A partition evicted to the state table
// while queued stays queued; when it comes up and its key has not been
// read back since (evicted lists those), it is read back with its stored
// clock and expires if that is due too, else it is queued anew.

// rankTTL is a rank's expiry bookkeeping.
type rankTTL struct {
	touched []*rankPart
	queue   opkit.IdleHeap[*rankPart]
	on      bool
	never   bool // a windowed Top-N: partitions end by the watermark instead
	expired int64
	// evicted holds the queued partitions evicted to the state table by
	// key, until they or a partition of their key are read back.
	evicted map[string]*rankPart
}

// noteEvicted notes that queued partition p went to the state table.
func (t *rankTTL) noteEvicted(p *rankPart) {
	if t.evicted == nil {
		t.evicted = map[string]*rankPart{}
	}
	t.evicted[p.key] = p
}

// noteReloaded notes that the partition of key is read back.
func (t *rankTTL) noteReloaded(key string) {
	if p := t.evicted[key]; p != nil {
		p.reloaded = true
		delete(t.evicted, key)
	}
}

// touch notes that a row changed p in this epoch.
func (t *rankTTL) touch(p *rankPart) {
	if !p.touched && p.key != "" && !t.never {
		p.touched = true
		t.touched = append(t.touched, p)
	}
}

// expireIdle, at a barrier whose changes are out, restarts the idle clock
// of the partitions changed in the epoch and expires those idle for the
// TTL: their rows are listed as changed with no count left.
func (o *Op) expireIdle(ectx *expr.Ctx, now int64) error {
	t := &o.ttl
	ttl := o.ttlOf()
	for _, p := range t.touched {
		p.touched, p.idle = false, now
		if ttl > 0 && !p.queued && !p.gone {
			opkit.QueueIdle(&t.queue, p, now)
		}
	}
	clear(t.touched)
	t.touched = t.touched[:0]
	if ttl <= 0 || o.spec.Win != nil {
		t.on = false
		return nil
	}
	// A partition gone from memory is stale unless it was evicted and no
	// partition of its key was read back since.
	gone := func(p *rankPart, _ int64) bool {
		return p.gone && (!p.evicted || p.reloaded || o.parts[p.key] != nil)
	}
	return opkit.SweepIdle(&t.queue, &t.on, now, ttl, keyedParts(o.parts), gone, func(p *rankPart, at int64) (bool, error) {
		if p.gone { // evicted: read it back with its stored clock
			var err error
			if p, err = o.reload(ectx, p.key, p.kg, p.hash); err != nil || p == nil {
				return false, err
			}
			if p.idle == 0 {
				p.idle = at // stored while the TTL was off
			}
			if p.idle+ttl > now {
				opkit.QueueIdle(&t.queue, p, p.idle)
				return true, nil
			}
		}
		for enc := range p.rows {
			o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
		}
		o.bytes -= mapBytes(p.rows) + p.outBytes + rankPartBytes + int64(len(p.key))
		delete(o.parts, p.key)
		p.gone = true
		t.expired++
		return true, nil
	})
}

// keyedParts yields the partitions that may expire: all but the one of
// ORDER BY ... LIMIT (key "").
func keyedParts(parts map[string]*rankPart) iter.Seq[*rankPart] {
	return func(yield func(*rankPart) bool) {
		for k, p := range parts {
			if k != "" && !yield(p) {
				return
			}
		}
	}
}

// IdleState is p's idle clock and whether it is queued (opkit.SweepIdle).
func (p *rankPart) IdleState() (*int64, *bool) { return &p.idle, &p.queued }

// appendClock ends a row entry's value with the idle clock while the TTL
// is on.
func (t *rankTTL) appendClock(b []byte, p *rankPart) []byte {
	if !t.on {
		return b
	}
	return binary.BigEndian.AppendUint64(b, uint64(p.idle))
}

// clockOf is the idle clock after a row entry's count (rest), 0 if none.
func clockOf(rest []byte) int64 {
	if len(rest) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(rest))
}
