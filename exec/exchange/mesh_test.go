package exchange

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/op"
)

// TestMeshGroupBy is the plan shape of a distributed GROUP BY at the
// exchange's level: three nodes, each with a source instance reading its
// own partition of (k, v) rows and an aggregate instance owning a third of
// the key groups; every source pre-shuffles its rows by key to the three
// aggregates (nine streams). Each aggregate commits count(*) and sum(v)
// per key at each aligned barrier. At every epoch the union of the three
// aggregates' committed states equals the batch query over the rows the
// sources sent before that epoch's barrier: the barriers cut all nodes
// consistently.
func TestMeshGroupBy(t *testing.T) {
	const nodes, epochs, batches, rows, keys = 3, 6, 5, 300, 97
	ns := make([]*node, nodes)
	for i := range ns {
		ns[i] = startNode(t)
	}
	type acc struct{ n, sum int64 }
	// input[src][epoch] are the batches source src sends in epoch.
	rng := rand.New(rand.NewPCG(1, 2))
	input := make([][][][2][]int64, nodes)
	for s := range input {
		input[s] = make([][][2][]int64, epochs)
		for e := range epochs {
			for range batches {
				var b [2][]int64
				for range rng.IntN(rows) {
					b[0] = append(b[0], rng.Int64N(keys))
					b[1] = append(b[1], rng.Int64N(1000)-500)
				}
				input[s][e] = append(input[s][e], b)
			}
		}
	}
	// A failure anywhere cancels ctx, so no instance waits forever.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fail := func(err error) {
		t.Error(err)
		cancel()
	}
	inboxes := make([]*Inbox, nodes)
	for a := range inboxes {
		var err error
		if inboxes[a], err = ns[a].srv.Open("mesh", 0, a, nodes, 3); err != nil {
			t.Fatal(err)
		}
		defer inboxes[a].Close()
	}
	var wg sync.WaitGroup
	for s := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ss []*Sender
			for a := range nodes {
				snd, err := Dial(ctx, ns[a].cc, StreamID{"mesh", 0, s, a}, schemaKV())
				if err != nil {
					fail(err)
					return
				}
				ss = append(ss, snd)
			}
			o := NewOutlet(ctx, ss, []int{0}, ts2)
			for e := range epochs {
				for _, b := range input[s][e] {
					if err := o.Emit(nil, op.Chunk{Rec: kvBatch(b[0], b[1])}); err != nil {
						fail(err)
						return
					}
				}
				if err := o.Barrier(&op.Barrier{Epoch: uint64(e + 1), Checkpoint: true}, op.Watermark{At: op.NoWatermark}); err != nil {
					fail(err)
					return
				}
			}
			if err := o.Close(ctx); err != nil {
				fail(err)
			}
		}()
	}
	// committed[a][e] is aggregate a's state committed at barrier e+1.
	committed := make([][]map[int64]acc, nodes)
	for a := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := map[int64]acc{}
			for {
				it, err := inboxes[a].Next(ctx)
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					fail(err)
					return
				}
				if it.Barrier != nil {
					snap := make(map[int64]acc, len(state))
					for k, v := range state {
						snap[k] = v
					}
					committed[a] = append(committed[a], snap)
					continue
				}
				k := it.Chunk.Rec.Column(0).(*array.Int64).Int64Values()
				v := it.Chunk.Rec.Column(1).(*array.Int64).Int64Values()
				for r := range k {
					x := state[k[r]]
					x.n++
					x.sum += v[r]
					state[k[r]] = x
				}
				it.Chunk.Rec.Release()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := map[int64]acc{}
	for e := range epochs {
		for s := range nodes {
			for _, b := range input[s][e] {
				for r, k := range b[0] {
					x := want[k]
					x.n++
					x.sum += b[1][r]
					want[k] = x
				}
			}
		}
		got := map[int64]acc{}
		for a := range nodes {
			if len(committed[a]) != epochs {
				t.Fatalf("aggregate %d committed %d epochs, want %d", a, len(committed[a]), epochs)
			}
			for k, v := range committed[a][e] {
				if _, dup := got[k]; dup {
					t.Fatalf("key %d held by two aggregates", k)
				}
				got[k] = v
			}
		}
		if len(got) != len(want) {
			t.Fatalf("epoch %d: %d keys, want %d", e+1, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("epoch %d key %d: %+v, want %+v", e+1, k, got[k], v)
			}
		}
	}
}
