// Package opkittest holds what the operator families' unit tests share: an
// outlet that keeps what it is given, a state table on the memory
// backend's terms, and two-column records. Tests only; it imports the
// contract and the kit.
package opkittest

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Outlet keeps the chunks it is given (Discard: releases them instead).
type Outlet struct {
	Chunks  []op.Chunk
	Discard bool
}

func (o *Outlet) Emit(_ *expr.Ctx, c op.Chunk) error {
	if o.Discard {
		c.Rec.Release()
		return nil
	}
	o.Chunks = append(o.Chunks, c)
	return nil
}

// SnapState is an empty state table on the memory backend's terms: it
// writes nothing per epoch and, at a checkpoint barrier, takes the
// operator's snapshot (and drops it).
type SnapState struct{ Snapshots int }

func (*SnapState) Get([]byte) ([]byte, error)                           { return nil, nil }
func (*SnapState) Scan(func(key, val []byte) error) error               { return nil }
func (*SnapState) ScanPrefix([]byte, func(key, val []byte) error) error { return nil }
func (*SnapState) Loaded()                                              {}
func (s *SnapState) Commit(w *storage.Batch, b *op.Barrier, _, _ bool, _ func(*opkit.Writer) error, encode func(uint64) *opkit.Snapshot) (bool, error) {
	if w != nil && b.Checkpoint {
		encode(b.Epoch)
		s.Snapshots++
	}
	return false, nil
}

// KVRecord is rows of (k, v) BIGINT columns.
func KVRecord(rows [][2]int64) arrow.RecordBatch {
	kb, vb := array.NewInt64Builder(opkit.Mem), array.NewInt64Builder(opkit.Mem)
	defer kb.Release()
	defer vb.Release()
	for _, r := range rows {
		kb.Append(r[0])
		vb.Append(r[1])
	}
	cols := []arrow.Array{kb.NewArray(), vb.NewArray()}
	return opkit.NewRecord([]types.T{types.TInt64, types.TInt64}, cols, len(rows))
}

// Node is operator 1 emitting into out over st, with fresh counters, no
// budget and no state.ttl.
func Node(out op.Outlet, st opkit.State) opkit.Node {
	return opkit.Node{ID: 1, Out: out, State: st, Committed: new(atomic.Uint64),
		Bytes: new(atomic.Int64), Evicted: new(atomic.Int64), TTL: func() int64 { return 0 }}
}

// Churn is a multiset of (k, v) rows and the random epochs that change
// it: none in a third of them, else inserts and retractions of present rows.
type Churn struct {
	rng  *rand.Rand
	rows map[[2]int64]int
}

func NewChurn(seed uint64) *Churn {
	return &Churn{rng: rand.New(rand.NewPCG(seed, 1)), rows: map[[2]int64]int{}}
}

// Epoch returns the epoch's inserts and retractions (both empty a third of
// the time) and applies them to the multiset.
func (c *Churn) Epoch() (ins, del [][2]int64) {
	if c.rng.IntN(3) == 0 {
		return nil, nil
	}
	for range c.rng.IntN(40) {
		r := [2]int64{c.rng.Int64N(30), c.rng.Int64N(6)}
		ins = append(ins, r)
		c.rows[r]++
	}
	for r, n := range c.rows {
		if c.rng.IntN(4) == 0 {
			del = append(del, r)
			if n == 1 {
				delete(c.rows, r)
			} else {
				c.rows[r] = n - 1
			}
		}
	}
	return ins, del
}

// Entries lists a snapshot's entries as "key=value" in hex.
func Entries(s storage.OpSnapshot) []string {
	var out []string
	for i := range s.Len() {
		k, v := s.Entry(i)
		out = append(out, fmt.Sprintf("%x=%x", k, v))
	}
	return out
}

// SameBuf says snapshots a and b share their entries (one was reused).
func SameBuf(a, b *opkit.Snapshot) bool { return a.Entries.SharesBuf(&b.Entries) }

// CheckSnap fails unless got, the snapshot handed over at epoch, holds
// exactly full's entries.
func CheckSnap(t testing.TB, epoch uint64, got, full storage.OpSnapshot) {
	t.Helper()
	g, f := Entries(got), Entries(full)
	if fmt.Sprint(g) != fmt.Sprint(f) {
		t.Fatalf("epoch %d: snapshot handed over (%d entries) differs from a full encode (%d entries)", epoch, len(g), len(f))
	}
}
