package join

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// pebbleState is an operator's state table in a storage.DB on Pebble, as
// a durable job's (exec/opstate.go), with its cursor.
type pebbleState struct{ db *storage.DB }

func (s pebbleState) Get(k []byte) ([]byte, error) { return s.db.State().Get(1, 1, k) }
func (s pebbleState) Scan(fn func(key, val []byte) error) error {
	return s.db.State().Scan(1, 1, fn)
}
func (s pebbleState) ScanPrefix(p []byte, fn func(key, val []byte) error) error {
	return s.db.State().ScanPrefix(1, 1, p, fn)
}
func (s pebbleState) Cursor() opkit.Cursor { return s.db.State().Cursor(1, 1) }
func (pebbleState) Loaded()                {}
func (pebbleState) Commit(w *storage.Batch, b *op.Barrier, c, t bool, write func(*opkit.Writer) error, e func(uint64) *opkit.Snapshot) (bool, error) {
	return writeState{}.Commit(w, b, c, t, write, e)
}

// TestInnerJoinReadsBackOneSide: an inner join whose state spills reads
// back only the side a row is matched against; its own side's changes are
// deltas until the barrier reads the stored counts (in key order, through
// one iterator) or a row of the other side reads the side back. Random
// inserts and deletes of both sides over many epochs, with a state budget
// of a few groups: the join's output, summed, is the join of what is left,
// and its state table holds every row's count.
func TestInnerJoinReadsBackOneSide(t *testing.T) {
	db := memDB(t)
	var ch chunkOutlet
	spec := kvJoinSpec(Inner)
	ts := spec.LeftTs
	committed := new(atomic.Uint64)
	nd := opkittest.Node(&ch, pebbleState{db})
	nd.Committed, nd.Budget = committed, 2000
	jo := New(spec, Node{Node: nd})
	ectx := &expr.Ctx{Mem: opkit.Mem}
	// model: the rows of each side, (k, v) -> count; got: the output summed.
	model := [2]map[[2]int64]int64{{}, {}}
	got := map[[4]int64]int64{}
	drain := func() {
		for _, m := range ch {
			rec := m.Rec
			cols := make([]*array.Int64, 4)
			for c := range cols {
				cols[c] = rec.Column(c).(*array.Int64)
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				s := int64(1)
				if m.Ops != nil {
					s = int64(m.Ops[i].Sign())
				}
				got[[4]int64{cols[0].Value(i), cols[1].Value(i), cols[2].Value(i), cols[3].Value(i)}] += s
			}
			rec.Release()
		}
		ch = ch[:0]
	}
	rng := rand.New(rand.NewPCG(7, 31))
	const keys, vals = 40, 3
	partials := 0
	for epoch := uint64(1); epoch <= 60; epoch++ {
		for range 6 {
			side := rng.IntN(2)
			var ins, del [][2]int64
			for range 1 + rng.IntN(12) {
				r := [2]int64{rng.Int64N(keys), rng.Int64N(vals)}
				if model[side][r] > 0 && rng.IntN(3) == 0 {
					del = append(del, r)
					model[side][r]--
					continue
				}
				ins = append(ins, r)
				model[side][r]++
			}
			if len(ins) > 0 {
				if err := jo.Push(ectx, op.Chunk{Rec: opkittest.KVRecord(ins)}, side); err != nil {
					t.Fatal(err)
				}
			}
			if len(del) > 0 {
				if err := jo.Push(ectx, signedChunk(del, types.ChangeDelete), side); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, g := range jo.store.groups {
			if g.partial[0] || g.partial[1] {
				partials++
			}
		}
		w := db.State().NewEpochBatch()
		if err := jo.Barrier(ectx, &op.Barrier{Epoch: epoch}, w); err != nil {
			t.Fatal(err)
		}
		if err := db.State().CommitEpoch([]*storage.Batch{w}, epoch, nil, false); err != nil {
			t.Fatal(err)
		}
		committed.Store(epoch)
	}
	drain()
	if jo.store.evictedN.Load() == 0 || partials == 0 {
		t.Fatalf("nothing evicted (%d) or read back partly (%d): the test did not test", jo.store.evictedN.Load(), partials)
	}
	want := map[[4]int64]int64{}
	for l, lc := range model[0] {
		for r, rc := range model[1] {
			if l[0] == r[0] && lc > 0 && rc > 0 {
				want[[4]int64{l[0], l[1], r[0], r[1]}] = lc * rc
			}
		}
	}
	for p, n := range got {
		if n != want[p] {
			t.Errorf("pair %v: output sums to %d, want %d", p, n, want[p])
		}
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("pair %v: output sums to %d, want %d", p, got[p], n)
		}
	}
	stored := [2]map[[2]int64]int64{{}, {}}
	err := db.State().Scan(1, 1, func(key, val []byte) error {
		side := int(key[1])
		klen, rest, _ := opkit.ReadUvarint(key[2:])
		kv, v := rest[:klen], rest[klen:]
		count, _, _, err := decodeJoinValue(val)
		if err != nil {
			return err
		}
		dk := opkit.DecodeRecord(ts[:1], []string{string(kv)})
		dv := opkit.DecodeRecord(ts, []string{string(v)})
		stored[side][[2]int64{dk.Column(0).(*array.Int64).Value(0), dv.Column(1).(*array.Int64).Value(0)}] = count
		dk.Release()
		dv.Release()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for side := range model {
		for r, n := range model[side] {
			if stored[side][r] != n {
				t.Errorf("side %d row %v: stored %d, want %d", side, r, stored[side][r], n)
			}
		}
		for r, n := range stored[side] {
			if model[side][r] != n {
				t.Errorf("side %d row %v: stored %d, want %d", side, r, n, model[side][r])
			}
		}
	}

	// A view restored from a savepoint rebuilds its rows from state
	// (Reemit): a join loaded over its budget re-emits every pair, those of
	// the groups its budget will evict too.
	re := New(spec, Node{Node: nd})
	re.DeferEviction()
	if err := re.Load(ectx, pebbleState{db}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := re.ReemitAll(ectx); err != nil {
		t.Fatal(err)
	}
	clear(got)
	drain()
	if len(got) != len(want) {
		t.Errorf("re-emitted %d pairs, want %d", len(got), len(want))
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("re-emitted pair %v %d times, want %d", p, got[p], n)
		}
	}
}
